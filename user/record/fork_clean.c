// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "fork_clean.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define INT3 0xcc

int fork_clean__add(struct fork_clean *fc, const char *file, const uint64_t *offsets, size_t n)
{
	struct stat st;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out_close;
	}
	for (size_t i = 0; i < n; i++) {
		struct fork_site *s;
		size_t j;
		ssize_t got;

		for (j = 0; j < fc->nr; j++)
			if (fc->v[j].ino == st.st_ino && fc->v[j].dev == st.st_dev && fc->v[j].offset == offsets[i])
				break;
		if (j < fc->nr)
			continue; /* entry and return, or a window attached again */
		if (fc->nr == fc->cap) {
			size_t cap = fc->cap ? fc->cap * 2 : 32;

			s = realloc(fc->v, cap * sizeof(*s));
			if (!s) {
				err = -ENOMEM;
				goto out_close;
			}
			fc->v = s;
			fc->cap = cap;
		}
		s = &fc->v[fc->nr];
		memset(s, 0, sizeof(*s));
		got = pread(fd, s->orig, sizeof(s->orig), (off_t)offsets[i]);
		if (got < 1 || s->orig[0] == INT3)
			continue; /* nothing to put back (an int3 in the file is the program's own) */
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		s->offset = offsets[i];
		s->len = (uint32_t)got;
		fc->nr++;
	}
out_close:
	close(fd);
	return err;
}

/* Whether A and B use one memory: 1, 0, or -errno. */
static int same_mm(int a, int b)
{
	long r = syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0);

	return r < 0 ? -errno : r == 0;
}

/* The bytes S compares: its own, cut where another site of its file
 * begins (that one's byte may be an int3 too, or restored already). */
static uint32_t site_len(const struct fork_clean *fc, const struct fork_site *s)
{
	uint32_t len = s->len;

	for (size_t i = 0; i < fc->nr; i++) {
		const struct fork_site *o = &fc->v[i];

		if (o->ino == s->ino && o->dev == s->dev && o->offset > s->offset && o->offset - s->offset < len)
			len = (uint32_t)(o->offset - s->offset);
	}
	return len;
}

/* Put S's first byte back at ADDR in the memory MEM_FD, if and only if it
 * holds an int3 followed by the file's bytes: 1 if written, else 0. Safe
 * against the kernel: its own unregister (remove_breakpoint, through
 * uprobe_write_opcode) reads the byte at the site first and leaves a page
 * whose byte is no longer the int3 alone, so a byte restored here is
 * skipped when the link goes. */
static int restore_one(const struct fork_clean *fc, const struct fork_site *s, int mem_fd, uint64_t addr)
{
	uint8_t now[FORK_CLEAN_BYTES];
	uint32_t len = site_len(fc, s);

	if (pread(mem_fd, now, len, (off_t)addr) != (ssize_t)len)
		return 0; /* unmapped now, EIO, the child gone */
	if (now[0] != INT3 || memcmp(now + 1, s->orig + 1, len - 1))
		return 0; /* not our breakpoint over the file's instruction */
	return pwrite(mem_fd, s->orig, 1, (off_t)addr) == 1;
}

/* Restore every site of the file mapped at START-END from PGOFF (DEV,
 * INO) that lies in it. */
static int restore_mapping(const struct fork_clean *fc, int mem_fd, uint64_t start, uint64_t end, uint64_t pgoff,
			   uint64_t dev, uint64_t ino)
{
	int n = 0;

	for (size_t i = 0; i < fc->nr; i++) {
		const struct fork_site *s = &fc->v[i];

		if (s->ino != ino || s->dev != dev || s->offset < pgoff || s->offset - pgoff >= end - start)
			continue;
		n += restore_one(fc, s, mem_fd, start + (s->offset - pgoff));
	}
	return n;
}

static int fork_clean_tree(struct fork_clean *fc, int target, int child, int depth);

/* CHILD's breakpoints out: how many, or -errno. */
static int clean_one(struct fork_clean *fc, int target, int child)
{
	char path[64], line[512];
	int mem_fd, same, n = 0;
	FILE *maps;

	fc->children++;
	/* Before: a pid that shares the target's memory now is left. Once
	 * apart, a process never comes back to the target's mm; the check
	 * after the open catches the pid going to another process between. */
	same = same_mm(target, child);
	if (same)
		return same < 0 ? same : 0;
	snprintf(path, sizeof(path), "/proc/%d/mem", child);
	mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (mem_fd < 0)
		return -errno;
	same = same_mm(target, child);
	if (same) {
		n = same < 0 ? same : 0;
		goto out_mem;
	}
	/* The layout is the kernel's text; a line read after an exec names
	 * the new mm's files, whose bytes the checks then refuse. */
	snprintf(path, sizeof(path), "/proc/%d/maps", child);
	maps = fopen(path, "re");
	if (!maps) {
		n = -errno;
		goto out_mem;
	}
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, end, pgoff, ino;
		unsigned int maj, min;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &pgoff, &maj, &min, &ino) != 7 ||
		    perms[2] != 'x' || !ino)
			continue;
		n += restore_mapping(fc, mem_fd, start, end, pgoff, makedev(maj, min), ino);
	}
	fclose(maps);
	if (n > 0) {
		fc->cleaned++;
		fc->restored += (uint64_t)n;
	}
out_mem:
	close(mem_fd);
	return n;
}

#define FORK_CLEAN_DEPTH 8 /* generations below a fork walked, at most */

/* The processes CHILD's threads forked (CONFIG_PROC_CHILDREN's lists) that
 * are still its children, cleaned in turn. */
static void clean_children(struct fork_clean *fc, int target, int child, int depth)
{
	char path[64], line[4096];
	struct dirent *t;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%d/task", child);
	tasks = opendir(path);
	if (!tasks)
		return;
	while ((t = readdir(tasks))) {
		FILE *f;

		if (t->d_name[0] < '0' || t->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", child, t->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f)) {
			char *p = line, *end;

			for (long g; (g = strtol(p, &end, 10)) > 0; p = end)
				fork_clean_tree(fc, target, (int)g, depth + 1);
		}
		fclose(f);
	}
	closedir(tasks);
}

/* CHILD, then what it forked before its breakpoints went: a process a
 * child forks copies them as it got them, and nothing tells the recorder
 * of a fork whose parent is not a target. One forked after the write has
 * the restored bytes and is only looked at. */
static int fork_clean_tree(struct fork_clean *fc, int target, int child, int depth)
{
	int n = clean_one(fc, target, child);

	if (n > 0 && depth < FORK_CLEAN_DEPTH)
		clean_children(fc, target, child, depth);
	return n;
}

int fork_clean__child(struct fork_clean *fc, int target, int child)
{
	if (!fc->nr) {
		fc->children++;
		return 0;
	}
	return fork_clean_tree(fc, target, child, 0);
}

void fork_clean__free(struct fork_clean *fc)
{
	free(fc->v);
	memset(fc, 0, sizeof(*fc));
}
