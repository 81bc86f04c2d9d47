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

#define RSS_PERIOD_NS 100000000ull /* between two status samples */

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

#endif /* MEMTRACE_RSS_H */
