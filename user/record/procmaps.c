// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * /proc/PID/maps as memtrace needs it: the module map a trace records (so
 * stacks can be symbolized later, elsewhere) and the list of files the
 * loader searches for allocator functions.
 */
#include "procmaps.h"
#include "elf_util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DELETED_SUFFIX " (deleted)"

struct maps_line {
	uint64_t start, end, offset;
	char perms[5];
	char *path; /* into the line buffer; NULL for anonymous and [special] */
	bool deleted;
};

static int parse_line(char *line, struct maps_line *ml)
{
	size_t len, slen = strlen(DELETED_SUFFIX);
	int pos = 0;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %*x:%*x %*u %n", &ml->start,
		   &ml->end, ml->perms, &ml->offset, &pos) < 4 || !pos)
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

/* The index of PATH in pm->paths, added if new: the list doubles as the
 * owner of every path string the modules point at. */
static int paths_intern(struct procmaps *pm, const char *path, size_t *cap)
{
	size_t i;
	char **v;

	/* Same file mappings are adjacent, so look from the end. */
	for (i = pm->nr_paths; i-- > 0;)
		if (strcmp(pm->paths[i], path) == 0)
			return (int)i;
	if (pm->nr_paths == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		v = realloc(pm->paths, *cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		pm->paths = v;
	}
	pm->paths[pm->nr_paths] = strdup(path);
	if (!pm->paths[pm->nr_paths])
		return -ENOMEM;
	return (int)pm->nr_paths++;
}

/* Read through the target's root first so a containerized target's files
 * are the ones measured; a deleted file is only reachable via map_files. */
static void read_build_id(int pid, const struct maps_line *ml, struct trace_module *m)
{
	char buf[PATH_MAX + 64];
	uint32_t len = 0;
	int err = -ENOENT;

	if (ml->deleted) {
		snprintf(buf, sizeof(buf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, ml->start,
			 ml->end);
		err = elf_read_build_id(buf, m->build_id, sizeof(m->build_id), &len);
	}
	if (err && !ml->deleted) {
		snprintf(buf, sizeof(buf), "/proc/%d/root%s", pid, ml->path);
		err = elf_read_build_id(buf, m->build_id, sizeof(m->build_id), &len);
		if (err == -ENOENT || err == -EACCES || err == -EPERM)
			err = elf_read_build_id(ml->path, m->build_id, sizeof(m->build_id), &len);
	}
	m->build_id_len = err ? 0 : len;
}

static int add_module(struct procmaps *pm, int pid, const struct maps_line *ml, const char *path,
		      size_t *cap)
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
	read_build_id(pid, ml, m);
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
		idx = paths_intern(pm, ml.path, &path_cap);
		if (idx < 0) {
			err = idx;
			break;
		}
		if (ml.perms[2] != 'x')
			continue;
		err = add_module(pm, pid, &ml, pm->paths[idx], &mod_cap);
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

int procmaps__files_hash(int pid, uint64_t *hash)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t line_cap = 0;
	char path[64], *line = NULL;
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
	for (size_t i = 0; i < pm->nr_paths; i++)
		free(pm->paths[i]);
	free(pm->paths);
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
