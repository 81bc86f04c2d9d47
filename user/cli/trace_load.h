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
	{ "strict", no_argument, NULL, 'S' }, { "alloc-fn", required_argument, NULL, 'A' }, \
	{ "symfs", required_argument, NULL, 'Y' }
int trace_load_option(int c, const char *arg);

/* getopt_long over ARGV for a command that reads traces, with the options
 * above handled here: the next other option (getopt_long's value), -1 at
 * the end, or TRACE_LOAD_BAD_OPTION after printing why one of them was
 * wrong. A new ARGV starts afresh. */
#define TRACE_LOAD_BAD_OPTION (-2)
struct option;
int trace_load_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/* The line for an option COMMAND does not know (argv[optind - 1]); -EINVAL. */
int trace_load_unknown_option(const char *command, char **argv);

/* Read the trace at PATH into A (fresh from analysis__new, with any other
 * observers already on its engine) in one pass, and finish it.
 * A partial trace loads (marked partial). 0, or -errno after printing
 * "memtrace: failed to read PATH: why; what to do". */
int trace_load(const char *path, struct analysis *a);

/* Debug files asked of debuginfod (DEBUGINFOD_URLS), one try per
 * build-id, for report, diff, export and top alike. */
struct debuginfod_tries {
	struct debuginfod_try {
		uint8_t id[32];
		uint32_t len;
		int err;          /* 0: fetched; else debuginfod_fetch's */
		const char *path; /* the module's path, for the message; must outlive T */
	} *v;
	size_t n, cap;
};

/* M's debug file, the first time its build-id is asked: registered with
 * the symbolizers (symbolizer_add_debug_file) when a server has it. 1 if
 * it was fetched just now, 0 if asked before or not found, -ENOMEM. */
int debuginfod_try(struct debuginfod_tries *t, const struct trace_module *m);

/* One line on stderr about the modules no server had (WHAT names the
 * trace or process), or nothing. */
void debuginfod_tries__say(const struct debuginfod_tries *t, const char *what);
void debuginfod_tries__free(struct debuginfod_tries *t);

#endif /* MEMTRACE_TRACE_LOAD_H */
