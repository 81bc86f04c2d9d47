/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_WINDOWS_H
#define MEMTRACE_WINDOWS_H

#include "budget.h"
#include <stdbool.h>
#include <stdint.h>

/*
 * --budget in a recording: the budget controller's decisions carried out on
 * the loader (attach, detach, the allocation gate), and each window written
 * into the trace as WINDOW_BEGIN (with its weight), WINDOW_END and TAIL_END
 * marks (docs/trace-format.md).
 *
 * A window's weight (budget__window_weight) is known only when the next
 * window opens, so the drain writes nothing past the start of a window
 * whose marks are not in yet (windows__hold_ns); in between windows the
 * probes send nothing, so what waits is a window's events.
 */
struct loader;
struct drain;
struct runclock;

struct windows {
	struct budget ctl;
	struct loader *l;
	struct drain *d;
	int pid;
	uint64_t start;       /* its start time: /proc/PID is opened at each read, checked by it (0: gone) */
	struct runclock *rc;  /* its run time, to the microsecond */
	bool stats;           /* the kernel's BPF run-time statistics are on */
	bool clock_sleeps;    /* RC exact through windows and tails alone (runclock__sleep) */
	bool have_prev;       /* PREV's marks wait for the next window's start */
	struct window_span prev, cur;
	struct budget_sample at_begin, at_end; /* counters when the window opened and closed */
	struct budget_sample last; /* the last read in full (between windows they stay so) */
	uint64_t map_hits[2];      /* the large blocks' probes' hits charged so far (entries, returns) */
	uint64_t started_ns;       /* windows__start's NOW_NS */
	uint64_t started_cpu_ns;   /* ... and the target's run time then */
	uint64_t large_end_ns;     /* their probes detached then, costing more than the budget; 0: not */
};

/* This host's cost of a probe hit, timed on empty probes on this process. */
int windows__calibrate(struct loader *l, struct budget_cost *out);

/* Start with PCT percent on L (loaded with opts.windowed, probes given),
 * its events going through D, for process PID (its pidfd PIDFD, needed
 * for this call alone; -1: none); SLEEPS: its run clock's perf
 * events held through windows and tails alone. 0 or -errno. */
int windows__start(struct windows *w, double pct, const struct budget_cost *cost, struct loader *l,
		   struct drain *d, int pid, int pidfd, bool sleeps, uint64_t now_ns);
/* Carry out what is due at NOW_NS. 0 or -errno (a failed attach: the target is gone). */
int windows__step(struct windows *w, uint64_t now_ns);
/* When the recorder must look again (CLOCK_MONOTONIC): what is due next,
 * within a millisecond while a window is open (a burst ends it), else
 * within MAX_NS. */
uint64_t windows__wake_ns(const struct windows *w, uint64_t now_ns, uint64_t max_ns);
/* Probes are attached: a window is open, or its tail. */
bool windows__attached(const struct windows *w);
/* The drain may write events stamped before this only (UINT64_MAX: any). */
uint64_t windows__hold_ns(const struct windows *w);
/* Close what is open and write the last windows' marks; END_NS is the
 * trace's end. 0 or -ENOMEM. */
int windows__finish(struct windows *w, uint64_t end_ns);
void windows__free(struct windows *w);

#endif /* MEMTRACE_WINDOWS_H */
