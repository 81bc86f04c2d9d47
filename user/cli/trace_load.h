/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The first step of every command that reads a trace (diff, export): read
 * it into an analysis, or say in one line on stderr why not. Unlike the
 * leaf modules these print, since what to tell the user is the same for
 * each command.
 */
#ifndef MEMTRACE_TRACE_LOAD_H
#define MEMTRACE_TRACE_LOAD_H

#include "trace.h"
#include <stddef.h>

#include <stdbool.h>
struct analysis;

/* --strict: from now on a partial trace, or damage after its end, is an
 * error rather than a warning. */
void trace_load_set_strict(bool on);

/* --alloc-fn GLOB: every trace loaded from now on counts frames of
 * matching functions as the allocator's (analysis__add_alloc_fn). GLOB
 * must outlive the loads. 0, -E2BIG past 32. */
int trace_load_add_alloc_fn(const char *glob);

/* The options of every command that reads traces, for its getopt_long
 * table, and their handling: 1 if getopt's C (with ARG) was one of them,
 * 0 if not, -EINVAL after printing why. */
#define TRACE_LOAD_LONGOPTS \
	{ "strict", no_argument, NULL, 'S' }, { "alloc-fn", required_argument, NULL, 'A' }
int trace_load_option(int c, const char *arg);
struct trace_reader_ops;

/* Read the trace at PATH into A (fresh from analysis__new) and finish it.
 * A partial trace loads (marked partial). 0, or -errno after printing
 * "memtrace: failed to read PATH: why; what to do". */
int trace_load(const char *path, struct analysis *a);

/* One more pass over PATH with OPS and CTX, for records the analysis does
 * not keep. 0, or -errno after printing the same kind of line. */
int trace_load_pass(const char *path, const struct trace_reader_ops *ops, void *ctx);

/* The modules and start time of a trace (what pprof's mappings need),
 * collected by trace_load_modules; free with trace_modules__free. */
struct trace_modules {
	struct trace_module *mods; /* paths owned */
	size_t nr;
	uint64_t start_real_ns;    /* 0 if the trace had no metadata */
};

int trace_load_modules(const char *path, struct trace_modules *tm);
void trace_modules__free(struct trace_modules *tm);

#endif /* MEMTRACE_TRACE_LOAD_H */
