// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps as memtrace needs it: the module map a trace records (so
 * stacks can be symbolized later, elsewhere) and the list of files the
 * loader searches for allocator functions.
 */
#include "procmaps.h"
#include "elf_util.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"

struct maps_line {
	uint64_t start, end, offset, inode;
	char perms[5];
	char *path; /* into the line buffer; NULL for anonymous and [special] */
	bool deleted;
};

static int parse_line(char *line, struct maps_line *ml)
{
	size_t len, slen = strlen(DELETED_SUFFIX);
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*x:%*x %" SCNu64 " %n", &ml->start,
		   &ml->end, ml->perms, &ml->offset, &ml->inode, &pos) < 5 || !pos)
		return -EINVAL;
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

/* Mapped files that are no longer at their path, held open for as long as
 * memtrace runs: the target may exit (and its map_files go) before the
 * recording is symbolized. Found again by inode at each read of the maps. */
#define HELD_FILES 256

static struct held_file {
	int pid;
	int fd;
	uint64_t inode;
	uint64_t start; /* the mapping it was opened through */
} held[HELD_FILES];
static size_t nr_held;
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER; /* memtrace agent: several recordings */

static char *hold_mapped_file(int pid, const struct maps_line *ml)
{
	char link[96], *out;
	int fd = -1;

	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < nr_held && fd < 0; i++)
		if (held[i].pid == pid && held[i].inode == ml->inode && held[i].start == ml->start)
			fd = held[i].fd;
	if (fd < 0) {
		snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, ml->start, ml->end);
		fd = open(link, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && nr_held < HELD_FILES)
			held[nr_held++] = (struct held_file){ pid, fd, ml->inode, ml->start };
	}
	pthread_mutex_unlock(&held_lock);
	if (fd < 0)
		return NULL;
	if (asprintf(&out, "/proc/self/fd/%d", fd) < 0)
		return NULL;
	return out;
}

/*
 * Where memtrace reads the file ML maps: the mapped file is the truth, not
 * the path. The target's path under its root (its mount namespace) while
 * that is still the file mapped (same inode); otherwise, a file deleted or
 * replaced since (a package upgrade renames a new file over the old), the
 * mapping itself, opened through /proc/PID/map_files (root or
 * CAP_SYS_ADMIN; without it, the path as before) and held open. Malloc'd.
 */
static char *mapped_file(int pid, const struct maps_line *ml)
{
	char *root = root_path(pid, ml->path), *direct;
	struct stat st;

	if (root && !ml->deleted && !stat(root, &st) && (uint64_t)st.st_ino == ml->inode)
		return root;
	direct = hold_mapped_file(pid, ml);
	if (!direct)
		return root;
	free(root);
	return direct;
}

/* The index of ML's path in pm->paths, added if new: the list doubles as
 * the owner of every path string the modules point at. */
static int paths_intern(struct procmaps *pm, int pid, const struct maps_line *ml, size_t *cap)
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
	pm->files[pm->nr_paths] = mapped_file(pid, ml);
	if (!pm->paths[pm->nr_paths] || !pm->files[pm->nr_paths]) {
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

	return file ? strdup(file) : root_path(pid, path);
}

/* Read where mapped_file says the mapped file is, then the plain path (a
 * target chrooted inside our own tree). */
static void read_build_id(const char *file, const struct maps_line *ml, struct trace_module *m)
{
	uint32_t len = 0;
	int err;

	err = elf_read_build_id(file, m->build_id, sizeof(m->build_id), &len);
	if ((err == -ENOENT || err == -EACCES || err == -EPERM) && !ml->deleted)
		err = elf_read_build_id(ml->path, m->build_id, sizeof(m->build_id), &len);
	m->build_id_len = err ? 0 : len;
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
	read_build_id(file, ml, m);
	pm->nr++;
	return 0;
}

static int read_lines(struct procmaps *pm, int pid, FILE *fp)
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
		idx = paths_intern(pm, pid, &ml, &path_cap);
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
	char path[64];
	FILE *fp;
	int err;

	memset(pm, 0, sizeof(*pm));
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	err = read_lines(pm, pid, fp);
	if (!err && ferror(fp))
		err = -EIO;
	fclose(fp);
	if (err)
		procmaps__free(pm);
	return err;
}

static int maps_hash(int pid, bool exec_only, uint64_t *hash);

int procmaps__files_hash(int pid, uint64_t *hash)
{
	return maps_hash(pid, false, hash);
}

int procmaps__code_hash(int pid, uint64_t *hash)
{
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
