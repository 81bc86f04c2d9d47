// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Symbolization with libdwfl: one Dwfl per distinct file, reported at base 0
 * so it is queried with ELF vaddrs, whatever address the target loaded it
 * at. Results are kept in an arena with interned strings, because a trace
 * resolves every distinct address once and keeps all the answers.
 */
#include "symbolizer.h"
#include "arena.h"
#include "strtab.h"
#include "elf_util.h"
#include "target_file.h"
#include "util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FRAMES 64 /* inline depth kept per address; deeper is truncated */

/* A CU's address range, for DWARF without .debug_aranges (clang's default),
 * where libdw 0.188 cannot map an address to its CU by itself. */
struct cu_range {
	uint64_t lo, hi; /* DWARF addresses */
	Dwarf_Off die;   /* offset of the CU DIE */
};

/* A function symbol by address: dwfl_module_addrinfo scans the whole
 * symbol table per call, far too slow for thousands of addresses. */
struct addr_sym {
	uint64_t addr, size;
	const char *name; /* owned by the Dwfl */
	int rank;         /* among aliases, lower is the better name */
};

struct shared_dwfl;

struct sym_file {
	char *path; /* as the target sees it */
	struct shared_dwfl *sh; /* DWFL, MOD and ELF are another's, shared (NULL: its own) */
	char *mapped; /* where the mapped file itself is reachable (map_files), or NULL */
	uint8_t build_id[32];
	uint32_t build_id_len;
	int state;       /* 0: not tried yet, 1: loaded, -1: unusable */
	bool debug_only; /* only a separate debug file was found: no file offsets */
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf; /* owned by dwfl */
	struct cu_range *cus; /* built on the first address libdw cannot place */
	size_t nr_cus;
	bool cus_built;
	int strings_ok; /* dwarf_strings_end's verdict: 0 not asked yet, 1, -1 */
	struct addr_sym *syms; /* sorted by addr, one per address */
	size_t nr_syms;
	bool syms_built;
};

struct sym_map {
	uint64_t start, end, file_offset;
	size_t file; /* index into files */
};

struct symbolizer {
	bool from_root; /* find_debuginfo_target took a debug file from the target's root */
	char *root; /* "" for none */
	bool target;  /* a live target's: only held files and debug files by build-id */
	int root_fd;  /* target: its root, O_PATH (-1: none) */
	symbolizer_find_fn find; /* target: where a module's file is now (NULL: its MAPPED) */
	void *find_ctx;
	char *debuginfo_path;
	Dwfl_Callbacks cb;
	struct sym_map *maps;
	size_t nr_maps, cap_maps;
	size_t *order; /* map indices by start address, rebuilt when maps change */
	bool order_stale;
	struct sym_file *files;
	size_t nr_files, cap_files;
	struct arena arena;    /* results: frame arrays */
	struct strtab strs;    /* file and function names, each once */
};

/* ---- arena and interned strings ---- */

static void *arena_alloc(struct symbolizer *s, size_t size)
{
	return arena__alloc(&s->arena, size);
}

/* File names and functions repeat across addresses; store each once. */
static const char *str_intern(struct symbolizer *s, const char *str)
{
	int64_t i;

	if (!str)
		return NULL;
	i = strtab__intern(&s->strs, str);
	return i < 0 ? NULL : s->strs.strs[i];
}

char *symbolizer_demangle(const char *name)
{
	/* Only Itanium C++ (_Z) and Rust v0 (_R) names; legacy Rust is _Z too. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}

static const char *intern_demangled(struct symbolizer *s, const char *name)
{
	char *d = symbolizer_demangle(name);
	const char *r;

	if (!d)
		return str_intern(s, name);
	r = str_intern(s, d);
	free(d);
	return r;
}

/* ---- construction ---- */

/* Debug files fetched for build-ids (debuginfod): process-wide, since
 * libdwfl's find_debuginfo callback knows only the module. */
struct known_debug {
	uint8_t id[32];
	uint32_t len;
	char *path;
};

static struct known_debug *known_debug;
static size_t nr_known_debug, cap_known_debug;

static void shared_stale(const uint8_t *id, uint32_t len);

int symbolizer_add_debug_file(const uint8_t *id, uint32_t len, const char *path)
{
	struct known_debug *v;

	if (!len || len > sizeof(v->id))
		return -EINVAL;
	if (array_reserve((void **)&known_debug, &cap_known_debug, nr_known_debug + 1, sizeof(*known_debug)))
		return -ENOMEM;
	v = &known_debug[nr_known_debug];
	memcpy(v->id, id, len);
	v->len = len;
	v->path = strdup(path);
	if (!v->path)
		return -ENOMEM;
	nr_known_debug++;
	shared_stale(id, len);
	return 0;
}

static const char *known_debug_file(const uint8_t *id, uint32_t len)
{
	for (size_t i = 0; i < nr_known_debug; i++) {
		if (known_debug[i].len == len && !memcmp(known_debug[i].id, id, len))
			return known_debug[i].path;
	}
	return NULL;
}

/*
 * memtrace agent: the symbolizers of its targets share the libdwfl state of
 * a file they all map (symbolizer_share_files). Each target's symbolizer had
 * its own, and naming the first stack of each loaded the C library's debug
 * info again: 10 MB of the agent's memory a target (5.7 MB decompressed
 * DWARF, 4 MB of the debug file mapped). Shared only by the same file, its
 * device and inode (what each target maps, whatever its build-id says), and
 * only with debug info memtrace chose (the host's, a fetched one): a debug
 * file from a target's root names that target's frames alone. libdw is not
 * thread-safe: each query holds the file's lock.
 */
struct shared_dwfl {
	uint64_t dev, ino;
	uint8_t build_id[32];
	uint32_t build_id_len;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Elf *elf;
	unsigned refs;        /* the symbolizers' files that use it (shared_lock) */
	bool stale;           /* a debug file was fetched for its build-id since: not taken again */
	pthread_mutex_t lock; /* libdw's queries on it */
};

static bool share_files;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER; /* loads of files to share, one at a time */
static struct shared_dwfl **shared;
static size_t nr_shared, cap_shared;

void symbolizer_share_files(void)
{
	share_files = true;
}

/* The shared state of the file at PATH with F's build-id, a reference
 * taken; NULL if none. */
static struct shared_dwfl *shared_take(const struct sym_file *f, const char *path)
{
	struct shared_dwfl *sh = NULL;
	struct stat st;

	if (!path || stat(path, &st))
		return NULL;
	pthread_mutex_lock(&shared_lock);
	for (size_t i = 0; i < nr_shared && !sh; i++)
		if (shared[i]->dev == st.st_dev && shared[i]->ino == st.st_ino && !shared[i]->stale &&
		    shared[i]->build_id_len == f->build_id_len && !memcmp(shared[i]->build_id, f->build_id, f->build_id_len))
			sh = shared[i];
	if (sh)
		sh->refs++;
	pthread_mutex_unlock(&shared_lock);
	return sh;
}

/* F's own state, loaded from PATH, offered to the other symbolizers: F then
 * holds a reference like theirs. Nothing done if it cannot be. */
static void shared_offer(struct sym_file *f, const char *path)
{
	struct shared_dwfl *sh;
	struct stat st;

	if (stat(path, &st) || !(sh = calloc(1, sizeof(*sh))))
		return;
	*sh = (struct shared_dwfl){ .dev = st.st_dev, .ino = st.st_ino, .build_id_len = f->build_id_len,
				    .dwfl = f->dwfl, .mod = f->mod, .elf = f->elf, .refs = 1 };
	memcpy(sh->build_id, f->build_id, f->build_id_len);
	pthread_mutex_init(&sh->lock, NULL);
	pthread_mutex_lock(&shared_lock);
	if (array_reserve((void **)&shared, &cap_shared, nr_shared + 1, sizeof(*shared))) {
		pthread_mutex_unlock(&shared_lock);
		pthread_mutex_destroy(&sh->lock);
		free(sh);
		return;
	}
	shared[nr_shared++] = sh;
	f->sh = sh;
	pthread_mutex_unlock(&shared_lock);
}

static void shared_release(struct shared_dwfl *sh)
{
	bool last;

	pthread_mutex_lock(&shared_lock);
	last = !--sh->refs;
	for (size_t i = 0; last && i < nr_shared; i++)
		if (shared[i] == sh) {
			shared[i] = shared[--nr_shared];
			break;
		}
	pthread_mutex_unlock(&shared_lock);
	if (!last)
		return;
	dwfl_end(sh->dwfl);
	pthread_mutex_destroy(&sh->lock);
	free(sh);
}

/* A debug file fetched for build-id ID: the shared states loaded without it
 * are not taken again (a renewed symbolizer loads its own). */
static void shared_stale(const uint8_t *id, uint32_t len)
{
	pthread_mutex_lock(&shared_lock);
	for (size_t i = 0; i < nr_shared; i++)
		if (shared[i]->build_id_len == len && !memcmp(shared[i]->build_id, id, len))
			shared[i]->stale = true;
	pthread_mutex_unlock(&shared_lock);
}

/* A debug file at a path memtrace chose (fetched, or the host's
 * /usr/lib/debug): opened without waiting on a FIFO, and kept only if it is
 * a regular file. */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd >= 0 && target_file_check_fd(fd)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static void build_id_debug_path(const uint8_t *id, uint32_t len, char *path, size_t cap)
{
	char hex[2 * 32 + 1];

	for (uint32_t i = 0; i < len && i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(path, cap, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
}

/* A live target's module: its debug file only by build-id (a fetched one,
 * the target's root's, the host's), never by the names its ELF gives
 * (.gnu_debuglink is the target's to choose: a FIFO, a root-only file). The
 * host's lookup is libdwfl's own without a debuglink, so a host debug file's
 * own dwz alternate still resolves. */
static int find_debuginfo_target(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
				 const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
				 char **debuginfo_file_name)
{
	struct symbolizer *s = *userdata;
	const unsigned char *bits;
	char path[PATH_MAX];
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr), fd;
	const char *known = n > 0 ? known_debug_file(bits, (uint32_t)n) : NULL;

	if (n <= 0 || n > 32)
		return -1;
	if (known && (fd = open_regular(known)) >= 0) {
		*debuginfo_file_name = strdup(known);
		return fd;
	}
	build_id_debug_path(bits, (uint32_t)n, path, sizeof(path));
	if (s && s->root_fd >= 0 && (fd = target_file_open_in_root(s->root_fd, path, 0)) >= 0) {
		struct stat in_root, host;

		*debuginfo_file_name = strdup(path);
		/* the target's own unless it is the host's file at that path
		 * (a target whose root is the host's) */
		if (fstat(fd, &in_root) || stat(path, &host) || in_root.st_dev != host.st_dev ||
		    in_root.st_ino != host.st_ino)
			s->from_root = true;
		return fd;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, NULL, NULL, 0, debuginfo_file_name);
}

/* libdwfl asks where a module's DWARF is: a fetched debug file first. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	const char *known = n > 0 ? known_debug_file(bits, (uint32_t)n) : NULL;
	int fd;

	if (known && (fd = open(known, O_RDONLY | O_CLOEXEC)) >= 0) {
		*debuginfo_file_name = strdup(known);
		return fd;
	}
	return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
					    debuglink_crc, debuginfo_file_name);
}

struct symbolizer *symbolizer__new(const char *root)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int n;

	if (!s)
		return NULL;
	s->root_fd = -1;
	s->root = strdup(root ? root : "");
	if (!s->root)
		goto err_free;
	/* Debug files of a container's libraries live in the container. */
	if (*s->root)
		n = asprintf(&s->debuginfo_path, ":.debug:%s/usr/lib/debug:/usr/lib/debug", s->root);
	else
		n = asprintf(&s->debuginfo_path, ":.debug:/usr/lib/debug");
	if (n < 0)
		goto err_root;
	s->cb.find_elf = dwfl_build_id_find_elf;
	s->cb.find_debuginfo = find_debuginfo;
	s->cb.section_address = dwfl_offline_section_address;
	s->cb.debuginfo_path = &s->debuginfo_path;
	return s;

err_root:
	free(s->root);
err_free:
	free(s);
	errno = ENOMEM;
	return NULL;
}

struct symbolizer *symbolizer__new_target(const char *root)
{
	struct symbolizer *s = symbolizer__new(NULL);

	if (!s)
		return NULL;
	s->target = true;
	/* The root is the target's: opened once (shared with the targets
	 * whose root is the same directory), and only ever resolved in. */
	s->root_fd = root && *root ? target_root_hold(root) : -1;
	if (s->root_fd < 0)
		s->root_fd = -1;
	free(s->debuginfo_path);
	s->debuginfo_path = strdup("/usr/lib/debug");
	if (!s->debuginfo_path) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->cb.find_debuginfo = find_debuginfo_target;
	return s;
}

void symbolizer__set_finder(struct symbolizer *s, symbolizer_find_fn find, void *ctx)
{
	s->find = find;
	s->find_ctx = ctx;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	target_root_release(s->root_fd);
	for (size_t i = 0; i < s->nr_files; i++) {
		if (s->files[i].sh)
			shared_release(s->files[i].sh);
		else if (s->files[i].dwfl)
			dwfl_end(s->files[i].dwfl);
		free(s->files[i].cus);
		free(s->files[i].syms);
		free(s->files[i].path);
		free(s->files[i].mapped);
	}
	arena__free(&s->arena);
	strtab__free(&s->strs);
	free(s->files);
	free(s->maps);
	free(s->order);
	free(s->debuginfo_path);
	free(s->root);
	free(s);
}

static int file_index(struct symbolizer *s, const struct trace_module *m, size_t *out)
{
	struct sym_file *f;

	for (size_t i = 0; i < s->nr_files; i++) {
		f = &s->files[i];
		if (strcmp(f->path, m->path) == 0 && f->build_id_len == m->build_id_len &&
		    memcmp(f->build_id, m->build_id, m->build_id_len) == 0) {
			*out = i;
			return 0;
		}
	}
	if (s->nr_files == s->cap_files) {
		size_t cap = s->cap_files ? s->cap_files * 2 : 16;

		f = realloc(s->files, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		s->files = f;
		s->cap_files = cap;
	}
	f = &s->files[s->nr_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(m->path);
	if (!f->path)
		return -ENOMEM;
	f->build_id_len = m->build_id_len > sizeof(f->build_id) ? 0 : m->build_id_len;
	memcpy(f->build_id, m->build_id, f->build_id_len);
	*out = s->nr_files++;
	return 0;
}

int symbolizer__add_module(struct symbolizer *s, const struct trace_module *m)
{
	return symbolizer__add_mapped_module(s, m, NULL);
}

int symbolizer__add_mapped_module(struct symbolizer *s, const struct trace_module *m, const char *mapped)
{
	struct sym_map *map;
	size_t file;
	int err;

	if (!m->path || m->end <= m->start)
		return -EINVAL;
	err = file_index(s, m, &file);
	if (err)
		return err;
	if (mapped && !s->files[file].mapped && !(s->files[file].mapped = strdup(mapped)))
		return -ENOMEM;
	if (s->nr_maps == s->cap_maps) {
		size_t cap = s->cap_maps ? s->cap_maps * 2 : 16;

		map = realloc(s->maps, cap * sizeof(*map));
		if (!map)
			return -ENOMEM;
		s->maps = map;
		s->cap_maps = cap;
	}
	map = &s->maps[s->nr_maps++];
	map->start = m->start;
	map->end = m->end;
	map->file_offset = m->file_offset;
	map->file = file;
	s->order_stale = true;
	return 0;
}

/* ---- loading a file's debug info ---- */

static bool build_id_matches(const struct sym_file *f, Dwfl_Module *mod)
{
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n;

	if (!f->build_id_len)
		return true; /* nothing recorded to check against */
	n = dwfl_module_build_id(mod, &bits, &vaddr);
	return n == (int)f->build_id_len && memcmp(bits, f->build_id, (size_t)n) == 0;
}

static int file_try(struct symbolizer *s, struct sym_file *f, const char *path)
{
	const char *name = strrchr(f->path, '/');
	Dwarf_Addr bias = 0;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (target_file_check_fd(fd)) {
		close(fd); /* a FIFO or a device where a file was: never read */
		return -EINVAL;
	}
	dwfl = dwfl_begin(&s->cb);
	if (!dwfl) {
		close(fd);
		return -ENOMEM;
	}
	dwfl_report_begin(dwfl);
	/* Base 0 plus p_vaddr: module addresses are the file's own vaddrs. */
	mod = dwfl_report_elf(dwfl, name ? name + 1 : f->path, path, fd, 0, true);
	if (!mod) {
		close(fd); /* consumed only on success */
		goto err_end;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	{
		void **user = NULL;

		/* find_debuginfo_target's way back to this symbolizer */
		dwfl_module_info(mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
		if (user)
			*user = s;
	}
	f->elf = dwfl_module_getelf(mod, &bias);
	if (!f->elf || bias != 0 || !build_id_matches(f, mod))
		goto err_end;
	f->dwfl = dwfl;
	f->mod = mod;
	return 0;

err_end:
	dwfl_end(dwfl);
	f->elf = NULL;
	return -ENOENT;
}

static int file_try_debug(struct symbolizer *s, struct sym_file *f, const char *prefix)
{
	char path[PATH_MAX], hex[2 * sizeof(f->build_id) + 1];
	uint32_t i;

	for (i = 0; i < f->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", f->build_id[i]);
	if (snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", prefix, hex,
		     hex + 2) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return file_try(s, f, path);
}

/* A live target's file: the one held for its mapping (procmaps.h), else
 * its debug file by build-id, the target's root's or the host's. Never a
 * path the target named. */
static int file_load_target(struct symbolizer *s, struct sym_file *f)
{
	char path[PATH_MAX];
	char *now = s->find ? s->find(s->find_ctx, f->path, f->build_id, f->build_id_len) : NULL;
	/* Asked when first needed: a file given when the module was added may
	 * have been let go since (a deleted copy the target dropped). */
	const char *file = now ? now : f->mapped;
	bool share = share_files && f->build_id_len && file, found;

	/* one load at a time: the targets name their first stacks at once,
	 * and each loaded its own before any was offered */
	if (share)
		pthread_mutex_lock(&load_lock);
	if (share && (f->sh = shared_take(f, file))) {
		pthread_mutex_unlock(&load_lock);
		f->dwfl = f->sh->dwfl;
		f->mod = f->sh->mod;
		f->elf = f->sh->elf;
		f->state = 1;
		free(now);
		return 0;
	}
	s->from_root = false;
	found = now && file_try(s, f, now) == 0;
	if (!found) {
		file = f->mapped;
		found = f->mapped && file_try(s, f, f->mapped) == 0;
	}
	if (found && share) {
		Dwarf_Addr bias;
		void **user = NULL;

		/* its debug file found now, while this symbolizer is the one
		 * libdwfl calls back: a shared state is never asked again */
		dwfl_module_getdwarf(f->mod, &bias);
		dwfl_module_info(f->mod, &user, NULL, NULL, NULL, NULL, NULL, NULL);
		if (user && !s->from_root) {
			*user = NULL;
			shared_offer(f, file);
		}
	}
	if (share)
		pthread_mutex_unlock(&load_lock);
	free(now);
	if (!found && f->build_id_len) {
		const char *known = known_debug_file(f->build_id, f->build_id_len);
		int fd = -1;

		build_id_debug_path(f->build_id, f->build_id_len, path, sizeof(path));
		found = known && file_try(s, f, known) == 0;
		if (!found && s->root_fd >= 0 && (fd = target_file_open_in_root(s->root_fd, path, 0)) >= 0) {
			char self[32];

			snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
			found = file_try(s, f, self) == 0;
			close(fd);
		}
		found = found || file_try(s, f, path) == 0;
		f->debug_only = found;
	}
	f->state = found ? 1 : -1;
	return found ? 0 : -ENOENT;
}

/* The file under the root, then the plain path; failing both (stripped
 * binaries on another machine), a debug file found by build-id alone. */
static int file_load(struct symbolizer *s, struct sym_file *f)
{
	char path[PATH_MAX];
	bool found;

	if (f->state)
		return f->state > 0 ? 0 : -ENOENT;
	if (s->target)
		return file_load_target(s, f);
	found = f->mapped && file_try(s, f, f->mapped) == 0;
	found = found || (*s->root &&
		snprintf(path, sizeof(path), "%s%s", s->root, f->path) < (int)sizeof(path) &&
		file_try(s, f, path) == 0);
	if (!found)
		found = file_try(s, f, f->path) == 0;
	if (!found && f->build_id_len) {
		const char *known = known_debug_file(f->build_id, f->build_id_len);

		found = (known && file_try(s, f, known) == 0) ||
			(*s->root && file_try_debug(s, f, s->root) == 0) || file_try_debug(s, f, "") == 0;
		f->debug_only = found;
	}
	f->state = found ? 1 : -1;
	return found ? 0 : -ENOENT;
}

/* A separate debug file keeps p_vaddr but not the file layout, so place the
 * mapping at the start of the one executable PT_LOAD (our modules are the
 * executable mappings, and the text segment is mapped from its first page). */
static int debug_vaddr(Elf *elf, const struct sym_map *map, uint64_t addr, uint64_t *vaddr)
{
	size_t phnum, i, found = 0;
	GElf_Phdr ph, text;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return -EINVAL;
	for (i = 0; i < phnum; i++) {
		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			text = ph;
			found++;
		}
	}
	if (found != 1)
		return -ERANGE;
	*vaddr = (text.p_vaddr & ~(uint64_t)0xfff) + (addr - map->start);
	return 0;
}

/* ---- resolving ---- */

static int cmp_start(const void *a, const void *b, void *arg)
{
	const struct sym_map *maps = arg;
	uint64_t x = maps[*(const size_t *)a].start, y = maps[*(const size_t *)b].start;

	return x < y ? -1 : x > y;
}

static long map_find(struct symbolizer *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr_maps;

	if (s->order_stale) {
		size_t *order = realloc(s->order, (s->nr_maps ? s->nr_maps : 1) * sizeof(*order));

		if (!order)
			return -ENOMEM;
		for (size_t i = 0; i < s->nr_maps; i++)
			order[i] = i;
		qsort_r(order, s->nr_maps, sizeof(*order), cmp_start, s->maps);
		s->order = order;
		s->order_stale = false;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sym_map *m = &s->maps[s->order[mid]];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return (long)s->order[mid];
	}
	return -ESRCH;
}

/* Prefer the linkage name (qualified once demangled) over DW_AT_name, and
 * follow abstract_origin/specification: inlined instances carry neither. */
static const char *die_name(struct symbolizer *s, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (name)
		return intern_demangled(s, name);
	return str_intern(s, dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr)));
}

static uint32_t die_udata(Dwarf_Die *die, int at)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, at, &attr), &v) != 0)
		return 0;
	return (uint32_t)v;
}

/* FILE as DWARF names it, made absolute with the compilation directory of
 * CU when it is relative (gcc records "tests/progs/x.c" for a file it was
 * given so): pprof -list, editors and a report read on another machine's
 * checkout then find it. */
static const char *source_path(struct symbolizer *s, Dwarf_Die *cu, const char *file)
{
	Dwarf_Attribute attr;
	const char *dir;
	char buf[4096];

	if (!file || file[0] == '/' || !cu)
		return str_intern(s, file);
	dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	if (!dir || dir[0] != '/')
		return str_intern(s, file);
	while (file[0] == '.' && file[1] == '/')
		file += 2;
	if (snprintf(buf, sizeof(buf), "%s/%s", dir, file) >= (int)sizeof(buf))
		return str_intern(s, file);
	return str_intern(s, buf);
}

/* Where an inlined call was made: the location of the next outer frame. */
static void call_site(struct symbolizer *s, Dwarf_Die *cu, Dwarf_Die *die, Dwarf_Files *files,
		      struct trace_frame *fr)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx;

	fr->file = NULL;
	if (files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &idx) == 0)
		fr->file = source_path(s, cu, dwarf_filesrc(files, idx, NULL, NULL));
	fr->line = die_udata(die, DW_AT_call_line);
	fr->column = die_udata(die, DW_AT_call_column);
}

static int cmp_cu(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cus_add(struct sym_file *f, size_t *cap, uint64_t lo, uint64_t hi, Dwarf_Off die)
{
	if (f->nr_cus == *cap) {
		size_t n = *cap ? *cap * 2 : 64;
		struct cu_range *v = realloc(f->cus, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->cus = v;
		*cap = n;
	}
	f->cus[f->nr_cus++] = (struct cu_range){ .lo = lo, .hi = hi, .die = die };
	return 0;
}

static void cus_build(struct sym_file *f, Dwarf *dw)
{
	Dwarf_Off off = 0, next;
	size_t hsize, cap = 0;

	f->cus_built = true;
	while (dwarf_next_unit(dw, off, &next, &hsize, NULL, NULL, NULL, NULL, NULL, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		Dwarf_Die cu;
		ptrdiff_t it = 0;

		if (dwarf_offdie(dw, off + hsize, &cu)) {
			while ((it = dwarf_ranges(&cu, it, &base, &lo, &hi)) > 0)
				if (cus_add(f, &cap, lo, hi, off + hsize))
					goto err_free;
		}
		off = next;
	}
	if (f->nr_cus) /* f->cus is NULL without a range: qsort's pointer must not be */
		qsort(f->cus, f->nr_cus, sizeof(*f->cus), cmp_cu);
	return;

err_free: /* no table rather than a partial one */
	free(f->cus);
	f->cus = NULL;
	f->nr_cus = 0;
}

/* The CU holding module address PC, into BUF; *BIAS turns PC into a DWARF address. */
static Dwarf_Die *cu_find(struct sym_file *f, uint64_t pc, Dwarf_Die *buf, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(f->mod, pc, bias);
	Dwarf *dw;
	size_t lo = 0, hi;

	if (cu)
		return cu;
	dw = dwfl_module_getdwarf(f->mod, bias);
	if (!dw)
		return NULL;
	if (!f->cus_built)
		cus_build(f, dw);
	/* Ranges are disjoint in practice: take the last one starting at or below. */
	for (hi = f->nr_cus; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->cus[mid].lo <= pc - *bias)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc - *bias >= f->cus[lo - 1].hi)
		return NULL;
	return dwarf_offdie(dw, f->cus[lo - 1].die, buf);
}

static void line_of(struct symbolizer *s, Dwarf_Die *cu, uint64_t dw_pc, struct trace_frame *fr)
{
	Dwarf_Line *line = dwarf_getsrc_die(cu, dw_pc);
	int l = 0, c = 0;

	if (!line)
		return;
	fr->file = source_path(s, cu, dwarf_linesrc(line, NULL, NULL));
	if (dwarf_lineno(line, &l) == 0 && l > 0)
		fr->line = (uint32_t)l;
	if (dwarf_linecol(line, &c) == 0 && c > 0)
		fr->column = (uint32_t)c;
}

struct scope_chain {
	Dwarf_Die die[MAX_FRAMES]; /* subprogram first, innermost inlined call last */
	int nr;
};

/* Descend from PARENT through the code DIEs containing PC, pruning every
 * other subtree: dwarf_getscopes walks the whole CU per call, which costs
 * tens of microseconds per address in libc. True once PC's function is found. */
static bool scope_walk(Dwarf_Die *parent, Dwarf_Addr pc, struct scope_chain *c, int depth)
{
	Dwarf_Die child;

	if (depth > 256 || dwarf_child(parent, &child) != 0)
		return false;
	do {
		int tag = dwarf_tag(&child);

		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, pc) != 1)
				break;
			if ((tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) &&
			    c->nr < MAX_FRAMES)
				c->die[c->nr++] = child;
			scope_walk(&child, pc, c, depth + 1);
			return true;
		case DW_TAG_namespace: /* C++ and Rust functions nest in these */
		case DW_TAG_module:
			if (scope_walk(&child, pc, c, depth + 1))
				return true;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* Whether the string sections of DW end with a NUL. libdw hands out
 * pointers into .debug_str and .debug_line_str (a name, a file, the
 * compilation directory) checked against the start of the section only,
 * and strlen runs from there, in libdw (dwarf_getsrclines) and here: a
 * damaged section without a NUL at its end (a fuzzed file's, whose changed
 * type made libelf copy it to 8 bytes of heap) is read past. Real string
 * sections end with a string's NUL. */
static bool dwarf_strings_end(Dwarf *dw)
{
	static const char *const names[] = { ".debug_str", ".debug_line_str", ".debug_str.dwo" };
	Elf *elf = dwarf_getelf(dw);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strcmp(name, names[i]) || sh.sh_type == SHT_NOBITS)
				continue;
			d = elf_getdata(scn, NULL);
			if (d && d->d_size && (!d->d_buf || ((const char *)d->d_buf)[d->d_size - 1]))
				return false;
		}
	}
	return true;
}

/* One frame per inlined_subroutine, innermost first, then the subprogram.
 * FR[0]'s location is the line table's; each outer frame's is the call site
 * recorded on the inlined_subroutine it contains. */
static uint32_t dwarf_frames(struct symbolizer *s, struct sym_file *f, uint64_t pc,
			     struct trace_frame *fr)
{
	struct scope_chain c = { .nr = 0 };
	Dwarf_Die cubuf, *cudie;
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias;
	uint32_t nf = 0;
	int i;

	if (!__atomic_load_n(&f->strings_ok, __ATOMIC_RELAXED)) {
		Dwarf *dw = dwfl_module_getdwarf(f->mod, &bias);

		if (!dw)
			return 0; /* no debug info (yet): asked again next time */
		__atomic_store_n(&f->strings_ok, dwarf_strings_end(dw) ? 1 : -1, __ATOMIC_RELAXED);
	}
	if (__atomic_load_n(&f->strings_ok, __ATOMIC_RELAXED) < 0)
		return 0; /* the symbol table's names, no lines */
	cudie = cu_find(f, pc, &cubuf, &bias);
	if (!cudie)
		return 0;
	line_of(s, cudie, pc - bias, &fr[0]);
	scope_walk(cudie, pc - bias, &c, 0);
	if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (i = c.nr - 1; i >= 0; i--) {
		fr[nf++].function = die_name(s, &c.die[i]);
		if (dwarf_tag(&c.die[i]) != DW_TAG_inlined_subroutine)
			break;
		call_site(s, cudie, &c.die[i], files, &fr[nf]);
	}
	return nf;
}

/* Among aliases (malloc and __libc_malloc) prefer what a user calls:
 * global over weak over local, then fewer leading underscores. */
static int alias_rank(const char *name, const GElf_Sym *sym)
{
	int bind = GELF_ST_BIND(sym->st_info);
	int rank = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 100 : 200;

	while (*name == '_' && rank % 100 < 99) {
		name++;
		rank++;
	}
	return rank;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct addr_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if ((x->size != 0) != (y->size != 0))
		return x->size ? -1 : 1;
	return x->rank - y->rank;
}

static void syms_build(struct sym_file *f)
{
	int n = dwfl_module_getsymtab(f->mod), i;
	size_t kept = 0;

	f->syms_built = true;
	if (n <= 0 || !(f->syms = calloc((size_t)n, sizeof(*f->syms))))
		return;
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || !*name || shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC))
			continue;
		f->syms[f->nr_syms++] = (struct addr_sym){
			.addr = addr, .size = sym.st_size, .name = name, .rank = alias_rank(name, &sym)
		};
	}
	qsort(f->syms, f->nr_syms, sizeof(*f->syms), cmp_sym);
	for (size_t j = 0; j < f->nr_syms; j++)
		if (!kept || f->syms[kept - 1].addr != f->syms[j].addr)
			f->syms[kept++] = f->syms[j];
	f->nr_syms = kept;
}

/* The function symbol at PC; *SIZED says PC is inside its st_size, else it
 * is only the nearest name before PC (which may be another function). */
static const char *symtab_name(struct sym_file *f, uint64_t pc, bool *sized)
{
	size_t lo = 0, hi;
	const struct addr_sym *sym;

	if (!f->syms_built)
		syms_build(f);
	for (hi = f->nr_syms; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	*sized = false;
	if (!lo)
		return NULL;
	sym = &f->syms[lo - 1];
	if (sym->size && pc - sym->addr >= sym->size)
		return NULL;
	*sized = sym->size != 0;
	return sym->name;
}

static int describe(struct symbolizer *s, struct sym_file *f, uint64_t pc, struct trace_symbol *out)
{
	struct trace_frame fr[MAX_FRAMES + 1];
	const char *sym;
	uint32_t nf;
	bool sized;

	memset(fr, 0, sizeof(fr));
	nf = dwarf_frames(s, f, pc, fr);
	sym = symtab_name(f, pc, &sized);
	/* The symtab's linkage name qualifies C++ methods and marks clones
	 * (.cold, .constprop); DWARF's names the inlined frames. */
	if (sym && (sized || nf == 0)) {
		if (nf == 0)
			nf = 1;
		fr[nf - 1].function = intern_demangled(s, sym);
	}
	if (nf == 0)
		return 0;
	out->frames = arena_alloc(s, nf * sizeof(*fr));
	if (!out->frames)
		return -ENOMEM;
	memcpy((void *)out->frames, fr, nf * sizeof(*fr));
	out->nframes = nf;
	return 0;
}

static int map_vaddr(struct sym_file *f, const struct sym_map *map, uint64_t addr, uint64_t *vaddr)
{
	if (f->debug_only)
		return debug_vaddr(f->elf, map, addr, vaddr);
	return elf_vaddr_of_offset(f->elf, addr - map->start + map->file_offset, vaddr);
}

int symbolizer__preload(struct symbolizer *s, const struct trace_module *m, const char *mapped)
{
	struct sym_file *f;
	Dwarf_Addr bias;
	Dwarf *dw;
	size_t file;
	int err;

	if (!m->path)
		return -EINVAL;
	err = file_index(s, m, &file);
	if (err)
		return err;
	f = &s->files[file];
	if (mapped && !f->mapped && !(f->mapped = strdup(mapped)))
		return -ENOMEM;
	if (file_load(s, f) || !f->mod)
		return 0;
	if (f->sh)
		pthread_mutex_lock(&f->sh->lock);
	if (!f->syms_built)
		syms_build(f);
	/* What the first address would load: the debug info (a separate
	 * file found by build-id, say), its address ranges and our CU table. */
	dw = dwfl_module_getdwarf(f->mod, &bias);
	if (dw) {
		Dwarf_Aranges *ar;
		size_t n;

		dwarf_getaranges(dw, &ar, &n);
		if (!f->cus_built)
			cus_build(f, dw);
	}
	if (f->sh)
		pthread_mutex_unlock(&f->sh->lock);
	return 0;
}

int symbolizer__resolve(struct symbolizer *s, uint64_t addr, struct trace_symbol *out)
{
	const struct sym_map *map;
	struct sym_file *f;
	uint64_t vaddr;
	long idx;
	int err;

	memset(out, 0, sizeof(*out));
	out->addr = addr;
	out->module = -1;
	idx = map_find(s, addr);
	if (idx == -ENOMEM)
		return -ENOMEM;
	if (idx < 0)
		return 0;
	map = &s->maps[idx];
	f = &s->files[map->file];
	out->module = (int32_t)idx;
	out->module_offset = addr - map->start + map->file_offset;
	if (file_load(s, f))
		return 0;
	if (f->sh)
		pthread_mutex_lock(&f->sh->lock);
	err = map_vaddr(f, map, addr, &vaddr);
	if (!err) {
		out->module_offset = vaddr;
		/* A return address follows the call; the call is what the stack means. */
		err = describe(s, f, vaddr - 1, out);
	} else {
		err = 0;
	}
	if (f->sh)
		pthread_mutex_unlock(&f->sh->lock);
	return err;
}
