/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_UPROBE_MULTI_H
#define MEMTRACE_UPROBE_MULTI_H

/*
 * Multi-uprobe links (kernel >= 6.6) and uprobe sessions (>= 6.13) through
 * the raw bpf syscall: Debian's libbpf 1.1 predates both. Unlike a classic
 * perf-event uprobe, a link needs no perf_event_open, so CAP_BPF and
 * CAP_PERFMON are enough to attach one to a process of the same user.
 */
#include <stdbool.h>
#include <stdint.h>

#define MT_BPF_TRACE_UPROBE_MULTI 48
#define MT_BPF_TRACE_UPROBE_SESSION 57

/* One link: PROG_FD on CNT offsets in PATH, for process PID (0: any). */
struct uprobe_multi_req {
	int prog_fd;
	const char *path;
	const uint64_t *offsets;   /* file offsets */
	const uint64_t *cookies;   /* NULL: none */
	const uint64_t *ref_ctrs;  /* semaphore file offsets, NULL: none */
	uint32_t cnt;
	int pid;
	bool ret;                  /* return probes */
	bool session;              /* attach type uprobe session, not multi */
};

/* The link's fd, or -errno. */
int uprobe_multi__attach(const struct uprobe_multi_req *r);

#endif /* MEMTRACE_UPROBE_MULTI_H */
