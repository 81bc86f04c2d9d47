/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_RUNCLOCK_H
#define MEMTRACE_RUNCLOCK_H

#include <stdint.h>

/*
 * A process's run time (all its threads), to the microsecond at any moment.
 *
 * /proc/PID/task/TID/schedstat and the process's CPU clock advance only when
 * the kernel accounts a running thread, at its scheduler tick (4 ms at
 * HZ=250): a busy target read across a --budget window of 2 ms showed 0.1
 * to 2.4 ms run, which made one window stand for 130 times its time and the
 * next for 11. A task-clock perf event on each thread is read exactly (the
 * kernel brings a running thread's count up to date to answer). Threads
 * that appear are counted from when they are first seen, those that go
 * keep what they ran until their last read.
 *
 * Without perf events (no CAP_PERFMON, perf_event_paranoid), past 256
 * threads, or past a quarter of this process's descriptors held by all
 * runclocks together, it reads schedstat: the coarse figure.
 */
struct runclock;

/* For the process whose /proc/PID directory PROC_FD is (the caller's,
 * open while the runclock is); NULL with errno set if it is gone. */
struct runclock *runclock__open(int proc_fd);
/* The run time counted so far, in ns (monotonic; 0 at the first read but
 * for the coarse fallback, which reads the kernel's total). */
uint64_t runclock__read(struct runclock *rc);
/* Counting with perf events (1) or schedstat (0). */
int runclock__exact(const struct runclock *rc);
void runclock__free(struct runclock *rc);

#endif /* MEMTRACE_RUNCLOCK_H */
