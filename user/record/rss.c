// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "rss.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

int rss_read_status(int pid, struct trace_rss *s)
{
	char path[64], line[256];
	unsigned long long kb;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (found < 3 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "RssAnon: %llu kB", &kb) == 1)
			s->anon = kb << 10, found++;
		else if (sscanf(line, "RssFile: %llu kB", &kb) == 1)
			s->file = kb << 10, found++;
		else if (sscanf(line, "RssShmem: %llu kB", &kb) == 1)
			s->shmem = kb << 10, found++;
	}
	fclose(f);
	/* a zombie's status has no memory lines: it is gone as far as we care */
	return found == 3 ? 0 : -ESRCH;
}

int rss_read_rollup(int pid, struct rss_rollup *out)
{
	char path[64], line[256], name[64];
	unsigned long long kb;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	out->r.n = 0;
	while (out->r.n < TRACE_ROLLUP_MAX && fgets(line, sizeof(line), f)) {
		/* "Rss:  1234 kB"; the first line names the range, not a size */
		if (sscanf(line, "%63[^:]: %llu kB", name, &kb) != 2 || strlen(name) >= sizeof(out->names[0]))
			continue;
		memcpy(out->names[out->r.n], name, strlen(name) + 1);
		out->r.name[out->r.n] = out->names[out->r.n];
		out->r.bytes[out->r.n] = kb << 10;
		out->r.n++;
	}
	fclose(f);
	return out->r.n ? 0 : -ESRCH;
}

/* The stack pointers of PID's threads that are not running: the
 * next-to-last field of /proc/PID/task/TID/syscall ("NR args... SP PC", or
 * "-1 SP PC" outside a syscall; "running" has none). */
static size_t thread_sps(int pid, uint64_t *sps, size_t cap)
{
	char path[64], line[512];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (n < cap && (de = readdir(d))) {
		char *f[10], *save = NULL, *tok;
		size_t nf = 0;
		ssize_t len;
		int fd;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/syscall", pid, de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, line, sizeof(line) - 1);
		close(fd);
		if (len <= 0)
			continue;
		line[len] = 0;
		for (tok = strtok_r(line, " \n", &save); tok && nf < 10; tok = strtok_r(NULL, " \n", &save))
			f[nf++] = tok;
		if (nf >= 3 && strcmp(f[0], "running"))
			sps[n++] = strtoull(f[nf - 2], NULL, 16);
	}
	closedir(d);
	return n;
}

static int push_run(struct rss_resident *out, uint64_t start, uint64_t end)
{
	struct trace_page_run *last = out->r.nruns ? &out->runs[out->r.nruns - 1] : NULL;

	out->anon_bytes += end - start;
	if (last && last->end == start && out->vmas[out->r.nvmas].nruns) {
		last->end = end;
		return 0;
	}
	if (out->r.nruns == out->runs_cap) {
		size_t cap = out->runs_cap ? 2 * out->runs_cap : 1024;
		struct trace_page_run *v = realloc(out->runs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		out->runs = v;
		out->runs_cap = cap;
	}
	out->runs[out->r.nruns++] = (struct trace_page_run){ start, end };
	out->vmas[out->r.nvmas].nruns++;
	return 0;
}

#define PM_PRESENT (1ull << 63)
#define PM_FILE (1ull << 61) /* a file's page, or shared anonymous */

/* The runs of anonymous pages present in [START, END), read from PAGEMAP,
 * into the mapping being filled (out->vmas[out->r.nvmas]). */
#define PAGEMAP_CHUNK 8192 /* entries read at once */

static int read_runs(struct rss_resident *out, int pagemap, uint64_t *buf, uint64_t start, uint64_t end,
		     uint64_t ps)
{
	uint64_t run = 0;
	bool in = false;

	for (uint64_t at = start; at < end;) {
		size_t want = (size_t)((end - at) / ps < PAGEMAP_CHUNK ? (end - at) / ps : PAGEMAP_CHUNK);
		ssize_t got = pread(pagemap, buf, want * 8, (off_t)(at / ps * 8));

		if (got <= 0)
			return got < 0 ? -errno : -ESRCH;
		for (size_t i = 0; i < (size_t)got / 8; i++, at += ps) {
			bool anon = (buf[i] & PM_PRESENT) && !(buf[i] & PM_FILE);

			if (anon && !in)
				run = at, in = true;
			else if (!anon && in) {
				in = false;
				if (push_run(out, run, at))
					return -ENOMEM;
			}
		}
	}
	return in ? push_run(out, run, end) : 0;
}

/* One walk of MAPS (its text, consumed) and PAGEMAP into OUT. */
static int walk(struct rss_resident *out, char *maps, int pagemap, const uint64_t *sps, size_t nsps, uint64_t *buf)
{
	uint64_t ps = out->r.page_size, kept_end = 0;
	char *line, *save = NULL;
	int err = 0;

	out->r.nvmas = out->r.nruns = 0;
	out->anon_bytes = 0;
	for (line = strtok_r(maps, "\n", &save); !err && line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end;
		char perms[8], name[4096] = "";
		struct trace_vma *v;
		uint32_t kind;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s %4095[^\n]", &start, &end, perms, name) < 3)
			continue;
		if (perms[3] != 'p' || (perms[0] != 'r' && perms[1] != 'w' && perms[2] != 'x'))
			continue; /* shared (shmem, not anon), or a reservation nobody may touch */
		if (start < kept_end || end <= start)
			continue; /* never in one read of the file; kept out so a snapshot is always in order */
		if (!strcmp(name, "[heap]"))
			kind = TRACE_VMA_HEAP;
		else if (!strcmp(name, "[stack]"))
			kind = TRACE_VMA_STACK;
		else if (name[0] == '/')
			kind = TRACE_VMA_FILE;
		else if (!name[0] || !strncmp(name, "[anon:", 6))
			kind = TRACE_VMA_ANON;
		else
			continue; /* [vdso], [vvar], [vsyscall]: the kernel's */
		for (size_t i = 0; kind == TRACE_VMA_ANON && i < nsps; i++)
			if (sps[i] >= start && sps[i] < end)
				kind = TRACE_VMA_THREAD_STACK;
		if (out->r.nvmas == out->vmas_cap) {
			size_t cap = out->vmas_cap ? 2 * out->vmas_cap : 64;
			struct trace_vma *nv = realloc(out->vmas, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			out->vmas = nv;
			out->vmas_cap = cap;
		}
		v = &out->vmas[out->r.nvmas];
		*v = (struct trace_vma){ .start = start, .end = end, .kind = kind };
		err = read_runs(out, pagemap, buf, start, end, ps);
		if (!err && v->nruns) {
			out->r.nvmas++; /* kept only with anonymous pages in it */
			kept_end = end;
		}
	}
	return err;
}

/* A walk takes a while, and the program goes on meanwhile: a mapping made
 * or unmapped during it (a thread's arena, a block freed at the end) would
 * leave a snapshot that no moment of the events agrees with. The maps are
 * read again after the walk, and a walk they changed under is taken again,
 * up to this many times; the last is kept whatever happened. The snapshot
 * is of the moment its maps were read: a mapping unmapped between the
 * caller's clock and that read must not count as mapped with no page. */
#define RESIDENT_TRIES 3

int rss_read_resident(int pid, struct rss_resident *out)
{
	uint64_t sps[256], *buf;
	size_t nsps = thread_sps(pid, sps, sizeof(sps) / sizeof(sps[0])), len = 0, len2 = 0;
	char path[64], *maps, *copy = NULL, *again = NULL;
	int pagemap, err = 0;
	uint64_t t;

	out->r.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	out->r.nvmas = out->r.nruns = 0;
	out->anon_bytes = 0;
	out->r.ts = now_ns(CLOCK_MONOTONIC);
	if (!(maps = read_proc_alloc(pid, "maps", &len)))
		return -errno;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
	pagemap = open(path, O_RDONLY | O_CLOEXEC);
	if (pagemap < 0) {
		err = errno == ENOENT ? -ESRCH : -errno;
		free(maps);
		return err;
	}
	/* On the heap, not in thread-local storage: every thread of the
	 * process would carry it (a closer thread's small stack could not). */
	buf = malloc(PAGEMAP_CHUNK * sizeof(*buf));
	for (int tries = 0; !err; tries++) {
		free(copy);
		copy = buf ? malloc(len + 1) : NULL;
		if (!copy) {
			err = -ENOMEM;
			break;
		}
		err = walk(out, memcpy(copy, maps, len + 1), pagemap, sps, nsps, buf);
		if (err || tries + 1 == RESIDENT_TRIES)
			break;
		t = now_ns(CLOCK_MONOTONIC);
		if (!(again = read_proc_alloc(pid, "maps", &len2))) {
			err = -errno;
			break;
		}
		if (len2 == len && !memcmp(again, maps, len)) {
			free(again);
			break;
		}
		free(maps);
		maps = again, len = len2;
		out->r.ts = t; /* the walk again, of the maps as they were from then on */
	}
	free(copy);
	free(maps);
	free(buf);
	close(pagemap);
	out->r.vmas = out->vmas;
	out->r.runs = out->runs;
	return err;
}

void rss_resident_free(struct rss_resident *out)
{
	free(out->vmas);
	free(out->runs);
	*out = (struct rss_resident){ 0 };
}
