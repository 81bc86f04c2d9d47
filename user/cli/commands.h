/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_COMMANDS_H
#define MEMTRACE_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

/* Exit statuses, the same for every command (docs/man/memtrace.1): record
 * with -- CMD exits with the command's own status instead, 128 + N when
 * signal N killed it; diff --fail-on-growth exits 3 when the limit was
 * passed. */
#define MEMTRACE_EXIT_OK 0
#define MEMTRACE_EXIT_FAILURE 1 /* something failed at run time */
#define MEMTRACE_EXIT_USAGE 2   /* the command line was wrong: nothing was done */

/* Each takes its own name as argv[0] and returns the process exit status. */
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_agent(int argc, char **argv);

/* What record and top share of their command line. */
struct record_opts;
/* Depth, unwind rows and ring size as record has them by default. */
void record_opts__defaults(struct record_opts *o);
/* -p PID, -o FILE, -d SEC: 1 if getopt's C was one of them, 0 if not,
 * -EINVAL after printing why its ARG is wrong. */
int record_option(int c, const char *arg, struct record_opts *o);
int record_check_budget(const struct record_opts *o);
int cmd_version(int argc, char **argv);

/* The HTML report of the trace at PATH, as `memtrace report --html` draws
 * it, malloc'ed into *DATA, *LEN (the agent serves it), without its
 * command line if HIDE_COMMAND. 0, or -errno after printing why; *PARTIAL
 * tells a trace still being written. */
int report_html_of(const char *path, bool hide_command, char **data, size_t *len, int *partial);

#endif /* MEMTRACE_COMMANDS_H */
