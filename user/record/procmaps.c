// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps as memtrace needs it: the module map a trace records (so
 * stacks can be symbolized later, elsewhere) and the list of files the
 * loader searches for allocator functions.
 */
#include "procmaps.h"
#include "elf_util.h"
#include "target_file.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"

struct maps_line {
	uint64_t start, end, offset, dev, inode;
	char perms[5];
	char *path; /* into the line buffer; NULL for anonymous and [special] */
	bool deleted;
};

static int parse_line(char *line, struct maps_line *ml)
{
	size_t len, slen = strlen(DELETED_SUFFIX);
	unsigned int major, minor;
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &ml->start, &ml->end,
		   ml->perms, &ml->offset, &major, &minor, &ml->inode, &pos) < 7 || !pos)
		return -EINVAL;
	ml->dev = (uint64_t)major << 32 | minor;
	ml->path = NULL;
	ml->deleted = false;
	line += pos;
	len = strlen(line);
	if (len && line[len - 1] == '\n')
		line[--len] = '\0';
	if (line[0] != '/')
		return 0;
	/* The file was unlinked or replaced (an upgrade) after it was mapped. */
	if (len > slen && strcmp(line + len - slen, DELETED_SUFFIX) == 0) {
		line[len - slen] = '\0';
		ml->deleted = true;
	}
	ml->path = line;
	return 0;
}

/*
 * Every file of a target memtrace reads is opened once, through its mapping
 * (target_file.h), and held here for the recording: while the target lives
 * and after it has gone (symbolization comes last), whatever its path has
 * become since. Users name a held file by "/proc/self/fd/N", which reaches
 * that descriptor's inode and nothing else.
 *
 * Held by (pid, device, inode), with the path the target knows and the
 * build-id: the rest of memtrace finds a module's file by those. A file
 * stays held while a procmaps that names it lives (REFS) and until its
 * pid's recordings release it (procmaps__release), except a file the target
 * no longer maps whose path and build-id another held file has: the deleted
 * copies of one library, loaded and dropped over and over, cost one
 * descriptor, not one each.
 *
 * Processes that map one file (the same device, inode and path) share its
 * descriptor, each with an entry of its own: the agent's 64 targets held
 * the C library 83 times and the dynamic linker 64. The descriptor closes
 * with the last entry that has it.
 */
struct held_file {
	int pid;
	int fd;
	uint64_t dev, inode;
	char *path;          /* as the target sees it */
	uint8_t build_id[32];
	uint32_t build_id_len;
	unsigned int refs;   /* procmaps that name it */
	uint64_t seen;       /* the last read of the pid's maps that had it */
};

struct held_pid {
	int pid;
	unsigned int users;  /* procmaps__hold minus procmaps__release */
	bool released;       /* users went back to 0: a file no procmaps names is closed */
	uint64_t reads;      /* reads of its maps */
};

static struct held_file *held;
static size_t nr_held, cap_held;
static struct held_pid *held_pids;
static size_t nr_held_pids, cap_held_pids;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER; /* memtrace agent: several recordings */

static struct held_pid *held_pid_of(int pid, bool add)
{
	for (size_t i = 0; i < nr_held_pids; i++)
		if (held_pids[i].pid == pid)
			return &held_pids[i];
	if (!add || array_reserve((void **)&held_pids, &cap_held_pids, nr_held_pids + 1, sizeof(*held_pids)))
		return NULL;
	held_pids[nr_held_pids] = (struct held_pid){ .pid = pid };
	return &held_pids[nr_held_pids++];
}

static struct held_file *held_find(int pid, uint64_t dev, uint64_t inode)
{
	for (size_t i = nr_held; i-- > 0;)
		if (held[i].pid == pid && held[i].inode == inode && held[i].dev == dev)
			return &held[i];
	return NULL;
}

/* Another pid's entry for the file of DEV and INODE at PATH, whose
 * descriptor a new entry may share, or NULL. */
static struct held_file *held_twin(uint64_t dev, uint64_t inode, const char *path)
{
	for (size_t i = nr_held; i-- > 0;)
		if (held[i].inode == inode && held[i].dev == dev && !strcmp(held[i].path, path))
			return &held[i];
	return NULL;
}

static void held_drop(size_t i)
{
	bool shared = false;

	for (size_t j = 0; j < nr_held && !shared; j++)
		shared = j != i && held[j].fd == held[i].fd;
	if (!shared)
		close(held[i].fd);
	free(held[i].path);
	held[i] = held[--nr_held];
}

static char *fd_path(int fd)
{
	char *out;

	return asprintf(&out, "/proc/self/fd/%d", fd) < 0 ? NULL : out;
}

/* The held file of ML (PID's), opened through the mapping, else under
 * ROOT_FD by the path: its /proc/self/fd path, malloc'd, with a reference
 * taken; NULL with errno set when it cannot be reached as a regular file. */
static char *hold_mapped_file(int pid, int root_fd, uint64_t read_no, const struct maps_line *ml)
{
	struct held_file *h, add = { .pid = pid, .dev = ml->dev, .inode = ml->inode };
	char *out = NULL;
	int fd, err;

	pthread_mutex_lock(&held_lock);
	h = held_find(pid, ml->dev, ml->inode);
	if (h) {
		h->refs++;
		h->seen = read_no;
		out = fd_path(h->fd);
	} else if ((h = held_twin(ml->dev, ml->inode, ml->path)) &&
		   !array_reserve((void **)&held, &cap_held, nr_held + 1, sizeof(*held))) {
		h = held_twin(ml->dev, ml->inode, ml->path); /* held may have moved */
		add = *h;
		add.pid = pid;
		add.refs = 1;
		add.seen = read_no;
		add.path = strdup(h->path);
		out = add.path ? fd_path(add.fd) : NULL;
		if (out)
			held[nr_held++] = add;
		else
			free(add.path);
		h = out ? h : NULL;
	} else {
		h = NULL;
	}
	pthread_mutex_unlock(&held_lock);
	if (h)
		return out;
	add = (struct held_file){ .pid = pid, .dev = ml->dev, .inode = ml->inode };
	/* Opened and read outside the lock: another recording's requests wait
	 * on nothing this target's files do. */
	fd = target_file_open_mapping(pid, ml->start, ml->end, ml->inode);
	if (fd < 0 && !ml->deleted)
		fd = target_file_open_in_root(root_fd, ml->path, ml->inode);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	add.fd = fd;
	add.path = strdup(ml->path);
	out = fd_path(fd);
	if (!add.path || !out)
		goto err;
	err = elf_read_build_id(out, add.build_id, sizeof(add.build_id), &add.build_id_len);
	if (err == -EINVAL) {
		/* Not ELF (a data file, shared memory): nothing of memtrace's reads
		 * it, and holding it would keep a deleted file's space. */
		close(fd);
		free(add.path);
		free(out);
		errno = ENOENT;
		return NULL;
	}
	if (err) /* an ELF file without a (usable) build-id */
		add.build_id_len = 0;
	add.refs = 1;
	add.seen = read_no;
	pthread_mutex_lock(&held_lock);
	h = held_find(pid, ml->dev, ml->inode);
	if (h) { /* another thread held it meanwhile */
		h->refs++;
		h->seen = read_no;
		free(out);
		out = fd_path(h->fd);
	} else if (array_reserve((void **)&held, &cap_held, nr_held + 1, sizeof(*held))) {
		pthread_mutex_unlock(&held_lock);
		goto err;
	} else {
		struct held_file *twin = held_twin(ml->dev, ml->inode, ml->path);

		if (twin) { /* another pid's recording held it meanwhile: its descriptor is shared */
			close(add.fd);
			add.fd = twin->fd;
			free(out);
			out = fd_path(add.fd);
		}
		held[nr_held++] = add;
		add.fd = -1;
		add.path = NULL;
	}
	pthread_mutex_unlock(&held_lock);
	if (add.fd >= 0)
		close(add.fd);
	free(add.path);
	return out;
err:
	close(fd);
	free(add.path);
	free(out);
	errno = ENOMEM;
	return NULL;
}

/* After a read of PID's maps: the files it no longer maps that another held
 * file stands for (same path, same build-id) and no procmaps names. */
static void held_sweep(int pid, uint64_t read_no)
{
	pthread_mutex_lock(&held_lock);
	for (size_t i = nr_held; i-- > 0;) {
		struct held_file *h = &held[i];
		bool twin = false;

		if (h->pid != pid || h->refs || h->seen == read_no || !h->build_id_len)
			continue;
		for (size_t j = 0; j < nr_held && !twin; j++)
			twin = j != i && held[j].pid == pid && held[j].build_id_len == h->build_id_len &&
			       !memcmp(held[j].build_id, h->build_id, h->build_id_len) && !strcmp(held[j].path, h->path);
		if (twin)
			held_drop(i);
	}
	pthread_mutex_unlock(&held_lock);
}

/* A released pid none of whose files is held any more is forgotten: an
 * agent sees a new pid for every process it ever matched. Under the lock. */
static void held_pid_forget(int pid)
{
	struct held_pid *p = held_pid_of(pid, false);

	if (!p || p->users || !p->released)
		return;
	for (size_t i = 0; i < nr_held; i++)
		if (held[i].pid == pid)
			return;
	*p = held_pids[--nr_held_pids];
}

/* PID's procmaps no longer names FILE (a held file's /proc/self/fd path). */
static void held_unref(int pid, const char *file)
{
	int fd;

	if (!file || sscanf(file, "/proc/self/fd/%d", &fd) != 1)
		return;
	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_held; i++) {
		struct held_pid *p;

		if (held[i].fd != fd || held[i].pid != pid || !held[i].refs)
			continue;
		p = held_pid_of(held[i].pid, false);
		if (!--held[i].refs && p && p->released) {
			int pid = held[i].pid;

			held_drop(i);
			held_pid_forget(pid);
		}
		break;
	}
	pthread_mutex_unlock(&held_lock);
}

void procmaps__hold(int pid)
{
	struct held_pid *p;

	pthread_mutex_lock(&held_lock);
	p = held_pid_of(pid, true);
	if (p) {
		p->users++;
		p->released = false;
	}
	pthread_mutex_unlock(&held_lock);
}

void procmaps__release(int pid)
{
	struct held_pid *p;

	pthread_mutex_lock(&held_lock);
	p = held_pid_of(pid, false);
	if (p && p->users && !--p->users) {
		p->released = true;
		for (size_t i = nr_held; i-- > 0;)
			if (held[i].pid == pid && !held[i].refs)
				held_drop(i);
		held_pid_forget(pid);
	}
	pthread_mutex_unlock(&held_lock);
}

char *procmaps__held_file(int pid, const char *path, const uint8_t *build_id, uint32_t build_id_len)
{
	char *out = NULL;

	pthread_mutex_lock(&held_lock);
	/* Newest first: the file at the path now, of the recorded build. */
	for (size_t i = nr_held; i-- > 0 && !out;) {
		const struct held_file *h = &held[i];

		if (h->pid == pid && !strcmp(h->path, path) &&
		    (!build_id_len || (h->build_id_len == build_id_len && !memcmp(h->build_id, build_id, build_id_len))))
			out = fd_path(h->fd);
	}
	pthread_mutex_unlock(&held_lock);
	return out;
}

const char *procmaps__name(const char *file, char *buf, size_t cap)
{
	int fd;

	snprintf(buf, cap, "%s", file);
	if (sscanf(file, "/proc/self/fd/%d", &fd) != 1)
		return buf;
	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_held; i++)
		if (held[i].fd == fd) {
			snprintf(buf, cap, "%s", held[i].path);
			break;
		}
	pthread_mutex_unlock(&held_lock);
	return buf;
}

size_t procmaps__nr_pids(void)
{
	size_t n;

	pthread_mutex_lock(&held_lock);
	n = nr_held_pids;
	pthread_mutex_unlock(&held_lock);
	return n;
}

size_t procmaps__nr_held(int pid)
{
	size_t n = 0;

	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_held; i++)
		n += held[i].pid == pid;
	pthread_mutex_unlock(&held_lock);
	return n;
}

int procmaps__file_build_id(const char *file, uint8_t *id, size_t cap, uint32_t *len)
{
	int fd, err = -ENOENT;

	if (!file || sscanf(file, "/proc/self/fd/%d", &fd) != 1)
		return -ENOENT;
	*len = 0;
	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_held; i++)
		if (held[i].fd == fd) {
			err = held[i].build_id_len <= cap ? 0 : -ENOSPC;
			if (!err) { /* len 0: a file without a build-id */
				memcpy(id, held[i].build_id, held[i].build_id_len);
				*len = held[i].build_id_len;
			}
			break;
		}
	pthread_mutex_unlock(&held_lock);
	return err;
}

static int held_build_id(const char *file, struct trace_module *m)
{
	uint32_t len;
	int err = procmaps__file_build_id(file, m->build_id, sizeof(m->build_id), &len);

	m->build_id_len = err ? 0 : len;
	return err;
}

/* The index of ML's path in pm->paths, added if new: the list doubles as
 * the owner of every path string the modules point at. */
static int paths_intern(struct procmaps *pm, int pid, int root_fd, uint64_t read_no, const struct maps_line *ml,
			size_t *cap)
{
	size_t i;
	char **v;

	/* Same file mappings are adjacent, so look from the end. */
	for (i = pm->nr_paths; i-- > 0;)
		if (strcmp(pm->paths[i], ml->path) == 0)
			return (int)i;
	if (pm->nr_paths == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		v = realloc(pm->paths, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pm->paths = v;
		v = realloc(pm->files, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pm->files = v;
	}
	pm->paths[pm->nr_paths] = strdup(ml->path);
	/* NULL: a file memtrace cannot reach as the regular file mapped (not
	 * one, or no longer at its path without CAP_SYS_ADMIN); nothing reads it. */
	pm->files[pm->nr_paths] = hold_mapped_file(pid, root_fd, read_no, ml);
	if (!pm->paths[pm->nr_paths] || (!pm->files[pm->nr_paths] && errno == ENOMEM)) {
		free(pm->paths[pm->nr_paths]);
		free(pm->files[pm->nr_paths]);
		return -ENOMEM;
	}
	return (int)pm->nr_paths++;
}

const char *procmaps__file(const struct procmaps *pm, const char *path)
{
	for (size_t i = 0; i < pm->nr_paths; i++)
		if (!strcmp(pm->paths[i], path))
			return pm->files[i];
	return NULL;
}

char *procmaps__open_path(const struct procmaps *pm, int pid, const char *path)
{
	const char *file = procmaps__file(pm, path);
	char *out;

	if (!file) {
		errno = ENOENT;
		return NULL;
	}
	out = strdup(file);
	if (!out)
		errno = ENOMEM;
	return out;
}

static int add_module(struct procmaps *pm, const struct maps_line *ml, const char *path,
		      const char *file, size_t *cap)
{
	struct trace_module *m;

	if (pm->nr == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		m = realloc(pm->mods, *cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		pm->mods = m;
	}
	m = &pm->mods[pm->nr];
	memset(m, 0, sizeof(*m));
	m->start = ml->start;
	m->end = ml->end;
	m->file_offset = ml->offset;
	m->path = path;
	/* Libraries map their text once; reuse the id if a file has two. */
	for (size_t i = 0; i < pm->nr; i++) {
		if (pm->mods[i].path == path) {
			memcpy(m->build_id, pm->mods[i].build_id, sizeof(m->build_id));
			m->build_id_len = pm->mods[i].build_id_len;
			pm->nr++;
			return 0;
		}
	}
	if (held_build_id(file, m))
		m->build_id_len = 0;
	pm->nr++;
	return 0;
}

static int read_lines(struct procmaps *pm, int pid, int root_fd, uint64_t read_no, FILE *fp)
{
	size_t mod_cap = 0, path_cap = 0, line_cap = 0;
	char *line = NULL;
	int err = 0;

	while (getline(&line, &line_cap, fp) > 0) {
		struct maps_line ml;
		int idx;

		err = parse_line(line, &ml);
		if (err)
			break;
		if (!ml.path)
			continue;
		idx = paths_intern(pm, pid, root_fd, read_no, &ml, &path_cap);
		if (idx < 0) {
			err = idx;
			break;
		}
		if (ml.perms[2] != 'x')
			continue;
		err = add_module(pm, &ml, pm->paths[idx], pm->files[idx], &mod_cap);
		if (err)
			break;
	}
	free(line);
	return err;
}

int procmaps__read(struct procmaps *pm, int pid)
{
	struct held_pid *p;
	uint64_t read_no = 0;
	char path[64];
	int err, root_fd;
	FILE *fp;

	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	pthread_mutex_lock(&held_lock);
	p = held_pid_of(pid, true);
	if (p)
		read_no = ++p->reads;
	pthread_mutex_unlock(&held_lock);
	root_fd = target_root_open(pid);
	err = read_lines(pm, pid, root_fd, read_no, fp);
	if (root_fd >= 0)
		close(root_fd);
	if (!err && ferror(fp))
		err = -EIO;
	fclose(fp);
	if (err)
		procmaps__free(pm);
	else
		held_sweep(pid, read_no);
	return err;
}

static int maps_hash(int pid, bool exec_only, uint64_t *hash);

int procmaps__files_hash(int pid, uint64_t *hash)
{
	return maps_hash(pid, false, hash);
}

/* PROCMAP_QUERY (Linux 6.11, linux/fs.h): one mapping of /proc/PID/maps
 * by ioctl, its fields as numbers, with no line of text to make per
 * mapping. */
struct mt_procmap_query {
	uint64_t size;          /* of this struct */
	uint64_t query_flags;   /* MT_QUERY_* */
	uint64_t query_addr;    /* the mapping covering it, or the next one */
	uint64_t vma_start;     /* out: its range, flags and file offset */
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;         /* out: its file */
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size; /* in: room at vma_name_addr; out: the name's length with its NUL */
	uint32_t build_id_size; /* in: 0, no build-id wanted */
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define MT_PROCMAP_QUERY _IOWR('f', 17, struct mt_procmap_query)
#define MT_QUERY_VMA_EXECUTABLE 0x04
#define MT_QUERY_COVERING_OR_NEXT_VMA 0x10
#define MT_QUERY_FILE_BACKED_VMA 0x20

/* Whether this kernel has PROCMAP_QUERY, as far as this process knows. A
 * hash is only ever compared with one made in the same process or a fork
 * of it, so both come the same way (MEMTRACE_NO_PROCMAP_QUERY, for tests:
 * the text always). */
static bool procmap_query_absent;

/*
 * The code hash by PROCMAP_QUERY: the executable file mappings' ranges,
 * flags, offsets, files and names, read as numbers. Reading the text of
 * /proc/PID/maps cost 45 us for a small program and 80-130 us for a
 * Python one here, 18-24 us this way: a followed child is held while its
 * code is checked. 0, -ENOTTY (no such ioctl), or -errno.
 */
static int code_hash_query(int pid, uint64_t *hash)
{
	uint64_t h = 0xcbf29ce484222325ULL, addr = 0;
	char path[64], name[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		struct mt_procmap_query q = {
			.size = sizeof(q),
			.query_flags = MT_QUERY_VMA_EXECUTABLE | MT_QUERY_COVERING_OR_NEXT_VMA | MT_QUERY_FILE_BACKED_VMA,
			.query_addr = addr,
			.vma_name_size = sizeof(name),
			.vma_name_addr = (uint64_t)(uintptr_t)name,
		};
		const unsigned char *b = (const unsigned char *)&q.vma_start;

		if (ioctl(fd, MT_PROCMAP_QUERY, &q)) {
			err = errno == ENOENT ? 0 : -errno; /* ENOENT: no mapping from ADDR on */
			break;
		}
		/* vma_start .. dev_minor, then the name */
		for (size_t i = 0; i < offsetof(struct mt_procmap_query, vma_name_size) -
					   offsetof(struct mt_procmap_query, vma_start); i++)
			h = (h ^ b[i]) * 0x100000001b3ULL;
		for (uint32_t i = 0; i < q.vma_name_size && i < sizeof(name) && name[i]; i++)
			h = (h ^ (unsigned char)name[i]) * 0x100000001b3ULL;
		if (q.vma_end <= addr)
			break; /* never: the kernel gives a mapping at or above ADDR */
		addr = q.vma_end;
	}
	close(fd);
	if (!err)
		*hash = h;
	return err;
}

int procmaps__code_hash(int pid, uint64_t *hash)
{
	int err;

	if (!procmap_query_absent && !getenv("MEMTRACE_NO_PROCMAP_QUERY")) {
		err = code_hash_query(pid, hash);
		if (err != -ENOTTY && err != -EINVAL)
			return err;
		procmap_query_absent = true; /* an older kernel: the text from now on */
	}
	return maps_hash(pid, true, hash);
}

static int maps_hash(int pid, bool exec_only, uint64_t *hash)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t line_cap = 0;
	char path[64], *line = NULL, *p;
	ssize_t len;
	FILE *fp;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while ((len = getline(&line, &line_cap, fp)) > 0) {
		/* A file's path starts with '/'; a named anonymous mapping that
		 * holds one only makes the hash change more often. */
		if (!memchr(line, '/', len))
			continue;
		/* "start-end perms ...": perms[2] is x */
		if (exec_only && (!(p = memchr(line, ' ', len)) || line + len - p < 4 || p[3] != 'x'))
			continue;
		for (ssize_t i = 0; i < len; i++)
			h = (h ^ (unsigned char)line[i]) * 0x100000001b3ULL;
	}
	if (!err && ferror(fp))
		err = -EIO;
	free(line);
	fclose(fp);
	if (!err)
		*hash = h;
	return err;
}

const struct trace_module *procmaps__find(const struct procmaps *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->nr;

	/* The kernel lists mappings in ascending address order. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct trace_module *m = &pm->mods[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

void procmaps__free(struct procmaps *pm)
{
	for (size_t i = 0; i < pm->nr_paths; i++) {
		free(pm->paths[i]);
		held_unref(pm->pid, pm->files[i]);
		free(pm->files[i]);
	}
	free(pm->paths);
	free(pm->files);
	free(pm->mods);
	memset(pm, 0, sizeof(*pm));
}

int proc_exe_path(int pid, char *buf, size_t cap)
{
	char link[64];
	ssize_t n;

	if (!cap)
		return -ENAMETOOLONG;
	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, buf, cap);
	if (n < 0)
		return -errno;
	if ((size_t)n >= cap)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}
