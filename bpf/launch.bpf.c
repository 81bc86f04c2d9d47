// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Holds a command memtrace starts (record -- CMD, top -- CMD, a program
 * exec'd under --follow-children) at the moment its dynamic linker has
 * mapped every library and before any initializer runs, so the allocator
 * probes attached then see its first allocation.
 *
 * Why a uprobe and a signal: a breakpoint of our own (int3) collides with
 * any uprobe on the same instruction, and x86 debug registers accept writes
 * and never fire on some hosts. A uprobe fires wherever memtrace works at
 * all. The probe sends the launching thread a signal; its ptrace parent
 * (memtrace) sees the signal-delivery stop, suppresses the signal, attaches
 * the allocator probes and lets the command run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "memtrace_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define RT_CONSISTENT 0 /* struct r_debug's r_state once a link map change is complete */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_launch);
} launching SEC(".maps");

static __always_inline int stop_if_ready(__u32 where)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mt_launch *l = bpf_map_lookup_elem(&launching, &tgid);
	int state;

	if (!l || l->stopped_at != MT_LAUNCH_WAITING)
		return 0;
	/* The hook also runs before the libraries are mapped (RT_ADD):
	 * only a consistent link map is the moment we want. */
	if (where == MT_LAUNCH_AT_HOOK) {
		if (!l->r_state_addr ||
		    bpf_probe_read_user(&state, sizeof(state), (void *)l->r_state_addr) ||
		    state != RT_CONSISTENT)
			return 0;
	}
	l->stopped_at = where;
	bpf_send_signal_thread(l->signal);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dl_hook_enter) { return stop_if_ready(MT_LAUNCH_AT_HOOK); }

/* The fallback: the program's entry point runs after library initializers,
 * but a hook that never reports a consistent map must not let the command
 * run away untraced. */
SEC("uprobe")
int BPF_KPROBE(entry_enter) { return stop_if_ready(MT_LAUNCH_AT_ENTRY); }
