// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "mark_finder.h"
#include "file_memo.h"
#include "target_file.h"
#include "trace.h"
#include "usdt.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* A file-backed mapping of any permission: where mark names live. The file
 * is the one procmaps holds for the recording, found again by the path the
 * target knows and its build-id: never opened by that path. */
struct file_mapping {
	uint64_t start, end, offset;
	char *path;
	uint8_t build_id[32];
	uint32_t build_id_len;
};

struct mark_finder {
	int pid;
	char **files;               /* files whose marks were looked for */
	size_t nr_files;
	char **glibc_files;         /* ... whose glibc probes were */
	size_t nr_glibc_files;
	size_t nr_glibc;            /* glibc's probe sites attached */
	size_t nr_marks;            /* mark sites attached */
	size_t nr_nop5;             /* ... of them on their 5-byte nop */
	bool nop5;                  /* usdt_probe_nop5(), asked once */
	struct file_mapping *fmaps; /* for names the target can no longer be asked for */
	size_t nr_fmaps;
	mark_finder_warn_fn warn;
	void *warn_ctx;
};

void mark_finder__on_warning(struct mark_finder *mf, mark_finder_warn_fn fn, void *ctx)
{
	mf->warn = fn;
	mf->warn_ctx = ctx;
}

static void skipped_of(struct mark_finder *mf, const char *provider, const char *path, const char *name,
		       const char *why)
{
	char msg[512];

	if (!mf->warn)
		return;
	snprintf(msg, sizeof(msg), "skipped the USDT probe %s:%s in %s: %s; every other probe is attached", provider,
		 name, path, why);
	mf->warn(mf->warn_ctx, msg);
}

static void skipped(struct mark_finder *mf, const char *path, const char *name, const char *why)
{
	skipped_of(mf, "memtrace", path, name, why);
}

/* How a file's sites of one provider are attached (loader.h). */
typedef int (*attach_fn)(struct loader *l, const char *path, const struct loader_mark *marks, size_t n);

/* The kernel refused the file's sites as one link: attach them one by one
 * with ATTACH, so one bad site costs only itself (said, by its NAMES).
 * ON_NOP5 (NULL: none) says which are on their 5-byte nop. */
static int attach_each(struct mark_finder *mf, attach_fn attach, const char *provider, struct loader *l,
		       const char *path, const char *file, const struct loader_mark *marks, const char *const *names,
		       const bool *on_nop5, size_t n, size_t *done, size_t *done_nop5)
{
	char why[128];
	int err;

	*done = *done_nop5 = 0;
	for (size_t i = 0; i < n; i++) {
		err = attach(l, file, &marks[i], 1);
		if (err == -ENOMEM)
			return err;
		if (!err) {
			(*done)++;
			*done_nop5 += on_nop5 && on_nop5[i];
			continue;
		}
		snprintf(why, sizeof(why), "the kernel refused it (%s)", strerror(-err));
		skipped_of(mf, provider, path, names[i], why);
	}
	return 0;
}

static const char *const mark_names[] = {
	[MT_MARK_ZONE_BEGIN] = "zone_begin", [MT_MARK_ZONE_END] = "zone_end",
	[MT_MARK_FRAME] = "frame_mark",      [MT_MARK_POOL_ALLOC] = "alloc",
	[MT_MARK_POOL_FREE] = "free",        [MT_MARK_POOL_RESET] = "pool_reset",
	[MT_MARK_THREAD_NAME] = "thread_name",
};

static uint32_t mark_kind(const char *name)
{
	for (uint32_t k = 1; k < sizeof(mark_names) / sizeof(mark_names[0]); k++) {
		if (!strcmp(name, mark_names[k]))
			return k;
	}
	return 0;
}

static bool looked_for(struct mark_finder *mf, const char *path)
{
	return strings_has(mf->files, mf->nr_files, path);
}

/* glibc's probes of its allocator (malloc/arena.c, malloc/malloc.c) that
 * --rss records, by the MAP record each one becomes. */
static const struct {
	const char *name;
	uint32_t call; /* enum mt_map_call */
} glibc_probes[] = {
	{ "memory_arena_new", MT_MAP_ARENA_NEW },
	{ "memory_arena_reuse", MT_MAP_ARENA_REUSE },
	{ "memory_arena_reuse_free_list", MT_MAP_ARENA_REUSE },
	{ "memory_heap_new", MT_MAP_HEAP_NEW },
	{ "memory_heap_more", MT_MAP_HEAP_MORE },
	{ "memory_heap_less", MT_MAP_HEAP_LESS },
	{ "memory_heap_free", MT_MAP_HEAP_FREE },
	{ "memory_sbrk_more", MT_MAP_SBRK_MORE },
	{ "memory_sbrk_less", MT_MAP_SBRK_LESS },
	{ "memory_mallopt", MT_MAP_MALLOPT },
	{ "memory_malloc_retry", MT_MAP_RETRY },
	{ "memory_calloc_retry", MT_MAP_RETRY },
	{ "memory_realloc_retry", MT_MAP_RETRY },
	{ "memory_memalign_retry", MT_MAP_RETRY },
};

static uint32_t glibc_call(const char *name)
{
	for (size_t i = 0; i < sizeof(glibc_probes) / sizeof(glibc_probes[0]); i++) {
		if (!strcmp(name, glibc_probes[i].name))
			return glibc_probes[i].call;
	}
	return 0;
}

/* The glibc probes of one mapped file, if it has any (provider libc: the
 * C library, where it was built with them; Debian's is not). Each site its
 * own link when the file's refuse to go as one. */
static int attach_glibc_in(struct mark_finder *mf, struct loader *l, const struct procmaps *pm, const char *path)
{
	char *file = procmaps__open_path(pm, mf->pid, path);
	struct usdt_site *sites = NULL;
	struct loader_mark *marks;
	const char **names;
	size_t n = 0, nr = 0, nop5;
	int err = 0;

	if ((!file && errno == ENOMEM) || strings_push(&mf->glibc_files, &mf->nr_glibc_files, path)) {
		free(file);
		return -ENOMEM;
	}
	if (!file)
		return 0; /* not reached as the file mapped: no probes to attach */
	usdt_sites(file, "libc", &sites, &n); /* not ELF, unreadable: none */
	marks = calloc(n ? n : 1, sizeof(*marks));
	names = calloc(n ? n : 1, sizeof(*names));
	for (size_t i = 0; marks && names && i < n; i++) {
		uint32_t call = glibc_call(sites[i].name);

		if (!call)
			continue; /* a probe of another part of the library (setjmp, ...) */
		if (sites[i].problem) {
			skipped_of(mf, "libc", path, sites[i].name, sites[i].problem);
			continue;
		}
		marks[nr].file_offset = sites[i].file_offset;
		marks[nr].sema_offset = sites[i].sema_offset;
		marks[nr].kind = call;
		names[nr] = sites[i].name;
		marks[nr++].spec = sites[i].spec;
	}
	if (!marks || !names)
		err = -ENOMEM;
	else if (nr && loader__attach_glibc_probes(l, file, marks, nr))
		err = attach_each(mf, loader__attach_glibc_probes, "libc", l, path, file, marks, names, NULL, nr, &nr,
				  &nop5);
	if (!err)
		mf->nr_glibc += nr;
	free(names);
	free(marks);
	free(sites);
	free(file);
	return err;
}

int mark_finder__attach_glibc(struct mark_finder *mf, struct loader *l, const struct procmaps *pm)
{
	int err = 0;

	for (size_t i = 0; i < pm->nr_paths && !err; i++) {
		if (!strings_has(mf->glibc_files, mf->nr_glibc_files, pm->paths[i]))
			err = attach_glibc_in(mf, l, pm, pm->paths[i]);
	}
	return err;
}

size_t mark_finder__count_glibc(const struct mark_finder *mf)
{
	return mf ? mf->nr_glibc : 0;
}

/* Attach the inproc/memtrace.h marks of one mapped file, if it has any. */
static int attach_marks_in(struct mark_finder *mf, struct loader *l, const struct procmaps *pm, const char *path)
{
	char *file = procmaps__open_path(pm, mf->pid, path);
	struct loader_mark *marks = NULL;
	struct usdt_site *sites = NULL;
	const char **names = NULL;
	bool *on_nop5 = NULL;
	size_t n = 0, nr = 0, nop5 = 0;
	uint64_t known;
	int err;

	if ((!file && errno == ENOMEM) || strings_push(&mf->files, &mf->nr_files, path)) {
		free(file);
		return -ENOMEM;
	}
	if (!file)
		return 0;
	if (!file_memo__get(file, FILE_MARKS, 0, &known) && !known) {
		free(file); /* known to have none: most files (libc, the program) */
		return 0;
	}
	err = usdt_sites(file, "memtrace", &sites, &n) ? 0 : 0; /* not ELF, unreadable: no marks */
	file_memo__put(file, FILE_MARKS, 0, n);
	marks = calloc(n ? n : 1, sizeof(*marks));
	names = calloc(n ? n : 1, sizeof(*names));
	on_nop5 = calloc(n ? n : 1, sizeof(*on_nop5));
	for (size_t i = 0; marks && names && on_nop5 && i < n; i++) {
		uint32_t kind = mark_kind(sites[i].name);

		if (sites[i].problem) {
			skipped(mf, path, sites[i].name, sites[i].problem);
			continue;
		}
		if (!kind)
			continue;
		/* The 5-byte nop is one byte on: no register or memory differs there. */
		on_nop5[nr] = mf->nop5 && sites[i].nop5;
		marks[nr].file_offset = sites[i].file_offset + on_nop5[nr];
		nop5 += on_nop5[nr];
		marks[nr].sema_offset = sites[i].sema_offset;
		marks[nr].kind = kind;
		names[nr] = sites[i].name;
		marks[nr++].spec = sites[i].spec;
	}
	if (!marks || !names || !on_nop5)
		err = -ENOMEM;
	else if (nr && loader__attach_marks(l, file, marks, nr))
		err = attach_each(mf, loader__attach_marks, "memtrace", l, path, file, marks, names, on_nop5, nr, &nr,
				  &nop5);
	if (!err) {
		mf->nr_marks += nr;
		mf->nr_nop5 += nop5;
	}
	free(on_nop5);
	free(marks);
	free(names);
	free(sites);
	free(file);
	return err;
}


/* Remember every file-backed mapping of a file procmaps reached (names are
 * string literals, so they can be read from the file even after the target
 * is gone). */
static void note_file_mappings(struct mark_finder *mf, const struct procmaps *pm)
{
	char path[64], line[4096], file[4096];
	unsigned long long start, end, off;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", mf->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		struct file_mapping *v, m = { 0 };
		const char *held;
		bool known = false;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &off, file) != 4 ||
		    file[0] != '/' || !(held = procmaps__file(pm, file)))
			continue;
		for (size_t i = 0; i < mf->nr_fmaps && !known; i++)
			known = mf->fmaps[i].start == start && !strcmp(mf->fmaps[i].path, file);
		if (known || procmaps__file_build_id(held, m.build_id, sizeof(m.build_id), &m.build_id_len) ||
		    !(v = realloc(mf->fmaps, (mf->nr_fmaps + 1) * sizeof(*v))))
			continue;
		mf->fmaps = v;
		m.start = start;
		m.end = end;
		m.offset = off;
		m.path = strdup(file);
		v[mf->nr_fmaps] = m;
		if (m.path)
			mf->nr_fmaps++;
	}
	if (f)
		fclose(f);
}

static int read_file_string(struct mark_finder *mf, uint64_t addr, char *buf, size_t cap)
{
	/* Newest first: an address range can be reused after an unmap. */
	for (size_t i = mf->nr_fmaps; i-- > 0;) {
		const struct file_mapping *m = &mf->fmaps[i];
		char *file;
		ssize_t n;
		int fd;

		if (addr < m->start || addr >= m->end)
			continue;
		file = procmaps__held_file(mf->pid, m->path, m->build_id, m->build_id_len);
		if (!file)
			return -ENOENT;
		fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		free(file);
		if (fd < 0)
			return -errno;
		n = target_file_check_fd(fd) ? -1 : pread(fd, buf, cap - 1, addr - m->start + m->offset);
		close(fd);
		if (n <= 0)
			return -EIO;
		buf[n] = 0;
		return 0;
	}
	return -ENOENT;
}

/* Names in pages the target never touched yet: read them the way a debugger
 * does (which faults the page in), or from the file if the target is gone. */
int mark_finder__read_string(void *ctx, uint64_t addr, char *buf, size_t cap)
{
	struct mark_finder *mf = ctx;
	struct iovec local = { buf, cap - 1 }, remote = { (void *)(uintptr_t)addr, cap - 1 };
	ssize_t n = process_vm_readv(mf->pid, &local, 1, &remote, 1, 0);

	/* A string near the end of a mapping: read up to the page end instead. */
	if (n < 0) {
		remote.iov_len = local.iov_len = 4096 - (addr & 4095) < cap - 1 ? 4096 - (addr & 4095) : cap - 1;
		n = process_vm_readv(mf->pid, &local, 1, &remote, 1, 0);
	}
	if (n <= 0)
		return read_file_string(mf, addr, buf, cap);
	buf[n] = 0;
	return 0;
}

size_t mark_finder_learn(int pid, const struct procmaps *pm)
{
	size_t total = 0;

	for (size_t i = 0; i < pm->nr_paths; i++) {
		char *file = procmaps__open_path(pm, pid, pm->paths[i]);
		struct usdt_site *sites = NULL;
		uint64_t known = 0;
		size_t n = 0;

		if (file && file_memo__get(file, FILE_MARKS, 0, &known)) {
			usdt_sites(file, "memtrace", &sites, &n);
			file_memo__put(file, FILE_MARKS, 0, n);
			free(sites);
			known = n;
		}
		/* a file not reached (a data file such as ld.so.cache, which the
		 * linker may still map) is one no attach from these maps reaches
		 * either: counted as one, it made every forked child held wait
		 * ~100 us for a search that could find nothing */
		total += file ? known : 0;
		free(file);
	}
	return total;
}

int mark_finder__attach(struct mark_finder *mf, struct loader *l, const struct procmaps *pm)
{
	int err = 0;

	note_file_mappings(mf, pm);
	for (size_t i = 0; i < pm->nr_paths && !err; i++) {
		if (!looked_for(mf, pm->paths[i]))
			err = attach_marks_in(mf, l, pm, pm->paths[i]);
	}
	return err;
}

struct mark_finder *mark_finder__new(int pid)
{
	struct mark_finder *mf = calloc(1, sizeof(*mf));

	if (mf) {
		mf->pid = pid;
		mf->nop5 = usdt_probe_nop5();
	}
	return mf;
}

size_t mark_finder__count_nop5(const struct mark_finder *mf)
{
	return mf->nr_nop5;
}

size_t mark_finder__count(const struct mark_finder *mf)
{
	return mf ? mf->nr_marks : 0;
}

void mark_finder__free(struct mark_finder *mf)
{
	if (!mf)
		return;
	free_strings(mf->files, mf->nr_files);
	free_strings(mf->glibc_files, mf->nr_glibc_files);
	for (size_t i = 0; i < mf->nr_fmaps; i++)
		free(mf->fmaps[i].path);
	free(mf->fmaps);
	free(mf);
}
