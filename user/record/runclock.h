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
 * Asleep (runclock__sleep), it reads the process's CPU clock (as coarse as
 * schedstat, but never back in time: its ended threads count too), from
 * where the exact count was. Without perf events (no CAP_PERFMON, perf_event_paranoid), past 256
 * threads, or past a quarter of this process's descriptors held by all
 * runclocks together, it reads schedstat: the coarse figure.
 */
struct runclock;

/* For process PID, whose pidfd PIDFD is (the caller's, needed only for
 * this call; -1: PID taken as it is now); NULL with errno set if it is
 * gone. Later reads know it by its start time (proc_dir_open). */
struct runclock *runclock__open(int pid, int pidfd);
/* The run time counted so far, in ns (monotonic; 0 at the first read but
 * for the coarse fallback, which reads the kernel's total). */
uint64_t runclock__read(struct runclock *rc);
/* Between the moments that need the microsecond (--budget's windows and
 * their tails): the perf events let go, the count going on from the
 * kernel's coarse figure (a perf event a thread was one more descriptor
 * for each of the agent's targets); runclock__wake opens them again, and
 * the reads after it count exactly from there. */
void runclock__sleep(struct runclock *rc);
void runclock__wake(struct runclock *rc);
/* Counting with perf events (1) or schedstat (0). */
int runclock__exact(const struct runclock *rc);
void runclock__free(struct runclock *rc);

/* Process PID's start time (clock ticks after boot), read while PIDFD
 * (unless -1) says it still runs, so that it is that process's and not a
 * later one's with its PID; 0 if it ended. With it a process is known
 * again without a descriptor held: */
uint64_t proc_start_time(int pid, int pidfd);
/* /proc/PID if it is still the process that started at START and has not
 * ended: a descriptor to close after the read, or -errno (-ESRCH). Opened
 * at each read, not held: one held was one more descriptor for each of
 * the agent's targets. */
int proc_dir_open(int pid, uint64_t start);

#endif /* MEMTRACE_RUNCLOCK_H */
