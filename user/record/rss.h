/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --rss: the target's resident memory as the kernel counts it. Cheap
 * enough to read every 100 ms (/proc/PID/status: three counters the kernel
 * keeps, nothing walked), and once at the start and the end the fuller
 * /proc/PID/smaps_rollup (which walks every mapping: not in a loop).
 */
#ifndef MEMTRACE_RSS_H
#define MEMTRACE_RSS_H

#include "trace.h"
#include <stddef.h>

#define RSS_PERIOD_NS 100000000ull /* between two status samples */
#define RSS_RESIDENT_PERIOD_NS 500000000ull /* at most between two resident snapshots */
#define RSS_RESIDENT_MIN_NS 200000000ull    /* at least between two */

/* RssAnon, RssFile and RssShmem of PID into S (bytes; S->ts untouched).
 * 0, or -errno (-ESRCH: it is gone). */
int rss_read_status(int pid, struct trace_rss *s);

/* /proc/PID/smaps_rollup, its lines in kB turned to bytes. The names point
 * into the rollup's own buffer. */
struct rss_rollup {
	struct trace_rollup r;
	char names[TRACE_ROLLUP_MAX][32];
};
int rss_read_rollup(int pid, struct rss_rollup *out);

/* Which of PID's pages were resident: its private mappings that hold
 * anonymous pages (not its shared ones, which are shmem), each with its
 * kind (a mapping that holds a thread's stack pointer, from
 * /proc/PID/task/TID/syscall, is that thread's stack), and the runs of
 * anonymous pages present in it, from /proc/PID/pagemap (present, and not
 * a file's page). Mappings nobody may access (PROT_NONE reservations) are
 * not read. A walk the maps changed under (read again after it) is taken
 * again. OUT's arrays are reused from call to call; OUT->r.ts is when the
 * maps it holds were read (CLOCK_MONOTONIC). 0, or -errno (-ESRCH: it is
 * gone). */
struct rss_resident {
	struct trace_resident r;
	struct trace_vma *vmas;
	size_t vmas_cap;
	struct trace_page_run *runs;
	size_t runs_cap;
	uint64_t anon_bytes; /* the runs' bytes summed */
};
int rss_read_resident(int pid, struct rss_resident *out);
void rss_resident_free(struct rss_resident *out);

#endif /* MEMTRACE_RSS_H */
