// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * How the agent's targets end: chosen by the OOM killer, killed by a
 * signal, or exited. The agent cannot wait() for a process it did not
 * start, and a pidfd only says that it ended; the kernel knows why at the
 * moment it happens. Only processes the agent put in `exits` are looked at.
 *
 * tp_btf, not tracepoint/: tracefs need not be mounted (it is not on the
 * hosts we test on), and the typed arguments read the task directly.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrace_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct mt_exit);
} exits SEC(".maps");

/* ARG0 is the victim's task; kernels before the tracepoint gained the
 * victim's memory figures and uid (6.8) passed its pid instead. Which one
 * is known at load time (the branch not taken is never verified). */
static __always_inline int mark_victim(__u64 arg0)
{
	__u32 tgid = bpf_core_field_exists(struct trace_event_raw_mark_victim, uid) ?
			     BPF_CORE_READ((struct task_struct *)arg0, tgid) :
			     (__u32)arg0;
	struct mt_exit *e = bpf_map_lookup_elem(&exits, &tgid);

	if (e)
		e->oom_ns = bpf_ktime_get_ns();
	return 0;
}

/* The process's status is known when its last thread exits: do_exit has
 * set exit_code and counted the thread out of signal->live before this
 * tracepoint (a group's earlier threads, or a thread of pthread_exit, are
 * not the process's end). */
static __always_inline int process_exit(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	struct mt_exit *e = bpf_map_lookup_elem(&exits, &tgid);

	if (!e || BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	e->exit_code = BPF_CORE_READ(task, exit_code);
	e->exit_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/mark_victim")
int BPF_PROG(mark_victim_enter, __u64 arg0) { return mark_victim(arg0); }

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_enter, struct task_struct *task) { return process_exit(task); }
