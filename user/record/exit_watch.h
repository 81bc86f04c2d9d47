/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How a recorded process ended, as the kernel saw it (bpf/exits.bpf.c on
 * the oom:mark_victim and sched_process_exit tracepoints): a recorder
 * cannot wait() for a process it did not start, and a pidfd only says
 * that it ended. Rules:
 *   - an OOM kill is a process the OOM killer chose that then died of
 *     SIGKILL (the killer also marks a process already exiting: no kill);
 *   - a crash is a death by SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT;
 *   - the status is known once the process's last thread has exited,
 *     before its pidfd says so.
 */
#ifndef MEMTRACE_EXIT_WATCH_H
#define MEMTRACE_EXIT_WATCH_H

#include <stddef.h>
#include <stdint.h>

struct exit_watch;

enum exit_kind {
	EXIT_NOT_KNOWN = 0, /* not watched, still running, or the map could not be read */
	EXIT_OTHER,         /* exited, or killed by a signal that is neither below */
	EXIT_OOM_KILLED,
	EXIT_CRASHED,
};

struct exit_info {
	enum exit_kind kind;
	int32_t status;        /* the wait status */
	uint64_t death_mono_ns; /* CLOCK_MONOTONIC: the OOM killer's choice, or the exit */
	uint64_t death_real_ns; /* ... as CLOCK_REALTIME */
};

/* The exits programs loaded and attached; NULL with errno set. */
struct exit_watch *exit_watch__open(void);
/* The same, loaded in a thread of its own (what it verifies overlaps the
 * caller's work); exit_watch__add waits for it and fails as the load did.
 * NULL only out of memory. */
struct exit_watch *exit_watch__open_async(void);
void exit_watch__free(struct exit_watch *w);
/* PID's end is to be known, then no longer; 0 or -errno. */
int exit_watch__add(struct exit_watch *w, int pid);
void exit_watch__remove(struct exit_watch *w, int pid);
/* How PID ended, into *INFO (kind EXIT_NOT_KNOWN if not yet). */
void exit_watch__get(struct exit_watch *w, int pid, struct exit_info *info);

/* PID's memory cgroup into BUF: "v1:/PATH" (the v1 memory controller's)
 * or "v2:/PATH"; "" if neither is known. Read while PID lives. */
void exit_watch_memcg(int pid, char *buf, size_t cap);
/* The limit an OOM kill of a process in MEMCG (exit_watch_memcg)
 * enforced: its cgroup's, into *BYTES with whose in OF ("v1 /PATH", "v2
 * /PATH"), else the host's MemTotal ("host"); *BYTES 0 if neither is
 * known. */
void exit_watch_limit(const char *memcg, uint64_t *bytes, char *of, size_t cap);
/* How a process ended, in a sentence for a report's top and a log line
 * ("killed by the OOM killer at 2026-11-28 21:31:04 UTC, its memory
 * cgroup (v1 /x) limited to 64.0 MiB"; "killed by SIGSEGV at ..."): for an
 * OOM kill the limit of MEMCG (exit_watch_memcg), or that it had none. */
void exit_watch_describe(const struct exit_info *info, const char *memcg, char *buf, size_t cap);

#endif /* MEMTRACE_EXIT_WATCH_H */
