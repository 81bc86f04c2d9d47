// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record_setup.h"

#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t record_own_caps(const char *which)
{
	/* capget, not /proc/self/status: the --follow-children supervisor asks
	 * while a new process waits, and the kernel sums a large process's
	 * memory to write that file (half a millisecond here) */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };
	bool eff = !strcmp(which, "CapEff");

	if (strcmp(which, "CapEff") && strcmp(which, "CapPrm"))
		return 0;
	if (syscall(SYS_capget, &h, d))
		return 0;
	return eff ? (uint64_t)d[1].effective << 32 | d[0].effective : (uint64_t)d[1].permitted << 32 | d[0].permitted;
}

void record_loader_opts(const struct record_opts *o, struct loader_opts *lo)
{
	memset(lo, 0, sizeof(*lo));
	lo->pid = o->pid;
	lo->stack_depth = o->stack_depth;
	lo->ring_bytes = o->ring_bytes;
	lo->one_ring = o->one_ring;
	lo->empty_probes = o->empty_probes;
	lo->sample_mean = o->sample;
	lo->windowed = o->budget > 0;
	lo->trace_maps = o->rss;
	/* followed children get links of their own; an unfollowed one's
	 * inherited breakpoints are taken out (fork_clean.h); the variable
	 * leaves them, for bench/fork_clean.sh's before */
	lo->report_forks = !o->follow && !getenv("MEMTRACE_NO_FORK_CLEAN");
	lo->large_min = o->budget > 0 && !o->rss_only ? o->large : 0;
	lo->unwind_rows = o->stack_depth ? o->unwind_rows : 0;
	/* Without CAP_SYS_PTRACE, the kernel's ptrace rule decides what we
	 * may see, in BPF (bpf/memtrace.bpf.c says how). */
	lo->check_creds = !(record_own_caps("CapEff") & (1ULL << CAP_SYS_PTRACE_BIT));
	lo->allowed_uid = getuid();
	lo->allowed_gid = getgid();
	lo->allowed_caps = record_own_caps("CapPrm");
}
