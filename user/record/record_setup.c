// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "record_setup.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

uint64_t record_own_caps(const char *which)
{
	char line[256], fmt[32];
	unsigned long long caps = 0;
	FILE *f = fopen("/proc/self/status", "re");

	snprintf(fmt, sizeof(fmt), "%s: %%llx", which);
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, fmt, &caps) == 1)
			break;
	}
	if (f)
		fclose(f);
	return caps;
}

void record_loader_opts(const struct record_opts *o, struct loader_opts *lo)
{
	memset(lo, 0, sizeof(*lo));
	lo->pid = o->pid;
	lo->stack_depth = o->stack_depth;
	lo->ring_bytes = o->ring_bytes;
	lo->empty_probes = o->empty_probes;
	lo->sample_mean = o->sample;
	lo->windowed = o->budget > 0;
	lo->unwind_rows = o->stack_depth ? o->unwind_rows : 0;
	/* Without CAP_SYS_PTRACE, the kernel's ptrace rule decides what we
	 * may see, in BPF (bpf/memtrace.bpf.c says how). */
	lo->check_creds = !(record_own_caps("CapEff") & (1ULL << CAP_SYS_PTRACE_BIT));
	lo->allowed_uid = getuid();
	lo->allowed_gid = getgid();
	lo->allowed_caps = record_own_caps("CapPrm");
}
