/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_RECORD_H
#define MEMTRACE_RECORD_H

#include <stdbool.h>
#include <stdint.h>

/* What `memtrace record` was asked to do. */
struct record_opts {
	const char *output;
	double duration;
	int pid;
	char **cmd;
	const char *lib;
	uint32_t stack_depth;
	uint32_t unwind_rows; /* --unwind-rows: room for unwind tables; 0: frame pointers only */
	uint64_t ring_bytes;
	uint64_t sample;
	bool verbose;
	bool follow;      /* --follow-children */
	int empty_probes; /* --empty-probes, for make bench */
	int supervisor;   /* --supervisor PID: a --follow-children recorder, ends with PID */
};

/*
 * --follow-children: give the command (or the process -p names) and every
 * process it forks, and every program they exec, a recorder of its own (a
 * `memtrace record -p` of each, so each process gets its own trace file),
 * holding each new process still under ptrace until its recorder is
 * attached. Returns the exit status for memtrace: the command's, or 0 for a
 * process we joined (left running when we stop).
 */
int record_follow(const struct record_opts *o, const char *self);

/* One line on stderr: PROG was held at its entry point (the launcher's
 * fallback), so its library initializers ran untraced. */
void record_warn_held_at_entry(const char *prog);

#endif /* MEMTRACE_RECORD_H */
