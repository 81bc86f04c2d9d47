/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `memtrace export`: a finished analysis in the formats other tools read.
 * Leaf code: each returns 0 or -errno and prints nothing.
 */
#ifndef MEMTRACE_EXPORT_H
#define MEMTRACE_EXPORT_H

#include "analysis.h"
#include "trace.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pb_buf;

/* What a folded stack's value counts (--metric). */
enum export_metric {
	EXPORT_METRIC_ALLOCATED,          /* allocated bytes (the default) */
	EXPORT_METRIC_LEAKED,             /* leaked bytes */
	EXPORT_METRIC_PEAK,               /* bytes live at the peak */
	EXPORT_METRIC_ALLOCATIONS,        /* allocation calls */
	EXPORT_METRIC_LEAKED_ALLOCATIONS, /* allocations still live at the end */
};

/* The metric called NAME ("allocated", "leaked", ...). 0 or -EINVAL. */
int export_metric__parse(const char *name, enum export_metric *m);
/* The metric names, for help and error messages. */
extern const char export_metric_names[];

/* How an export names frame F: its function, else "module+0xOFF" (the
 * module's basename), else "0xADDR"; the latter two written into BUF. */
const char *export_frame_name(const struct analysis_frame *f, char *buf, size_t cap);

/* Folded stacks (flamegraph.pl, speedscope, inferno): one line per stack,
 * frames outermost first joined by ';', a space, the value of M; sorted,
 * stacks that read the same summed into one line, stacks whose value is 0
 * left out. 0, -ENOMEM or -EIO. */
int export_folded__write(FILE *f, const struct analysis *a, enum export_metric m);

/* What a pprof profile needs beyond the analysis. */
struct live_sites;
struct live_row;

/* One process of a profile that has several (memtrace agent): its rows,
 * modules and labels. */
struct export_pprof_part {
	struct live_sites *live;     /* NULL: ROWS instead */
	const struct live_row *rows; /* a copy of its rows (the agent's, taken under the
				      * target's lock so that none is held while encoding) */
	size_t nrows;
	const struct trace_module *modules;
	size_t nmodules;
	int pid;           /* labels "pid" and "comm" on its samples */
	const char *comm;
};

struct export_pprof_input {
	const struct analysis *a;  /* NULL with PARTS */
	struct live_sites *live; /* NULL: one sample per stack, no labels; else one per
				  * stack, thread and zone, labelled with them */
	const struct trace_module *modules; /* the trace's modules, in file order */
	size_t nmodules;
	uint64_t time_ns;                   /* CLOCK_REALTIME at the start; 0 unknown */
	/* instead of A, LIVE and MODULES: several processes' live rows (their
	 * addresses kept apart), what the comments say and the duration */
	const struct export_pprof_part *parts;
	size_t nparts;
	const struct analysis_trace *trace;
	uint64_t duration_ns;
	const char *default_type; /* NULL: inuse_space */
	/* PARTS: each row's figures may be changed (a delta profile) before
	 * it is written: 0 to write it, 1 to leave it out, -errno */
	int (*adjust)(void *ctx, int pid, struct live_row *row); /* PID: the row's part's */
	void *adjust_ctx;
};

/* IN as an uncompressed profile.proto Profile message appended to OUT.
 * 0 or -ENOMEM. */
int export_pprof__encode(const struct export_pprof_input *in, struct pb_buf *out);

/* N bytes of DATA to FD (not closed), gzip-compressed if GZIP. 0 or -errno. */
int export_write(int fd, const void *data, size_t n, bool gzip);

#endif /* MEMTRACE_EXPORT_H */
