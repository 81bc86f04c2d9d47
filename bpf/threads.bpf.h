/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A name for every thread of the traced process: its name when it is created
 * (a new thread has its creator's) and every rename after (prctl PR_SET_NAME,
 * pthread_setname_np, a write to /proc/.../comm), from the kernel's
 * task_newtask and task_rename tracepoints. Each name goes out as a STRING
 * at a made-up address with MT_NAME_KERNEL set (no user pointer has it) and
 * then a THREAD_NAME mark for the thread, through one ring, in that order:
 * user space handles them as it handles memtrace.h's thread names. Included
 * at the end of memtrace.bpf.c, whose rings, drop counter and process filter
 * it uses.
 */
#ifndef MEMTRACE_THREADS_BPF_H
#define MEMTRACE_THREADS_BPF_H

static __always_inline void send_thread_name(__u32 slot, __u32 tid, const char *comm)
{
	void *ring = cpu_ring(slot);
	struct mt_string_event *s;
	struct mt_mark_event *m;
	__u64 ts = bpf_ktime_get_ns();
	__u64 addr = MT_NAME_KERNEL | ts; /* one per name sent: two on one ns cannot share a CPU */
	long n;

	if (!ring)
		return;
	s = bpf_ringbuf_reserve(ring, sizeof(*s), 0);
	if (!s) {
		count_drop(slot);
		return;
	}
	n = bpf_probe_read_kernel_str(s->text, sizeof(s->text), comm);
	string_event_fill(s, tid, addr, n);
	s->unread = 0;
	bpf_ringbuf_submit(s, SUBMIT_FLAGS);
	m = bpf_ringbuf_reserve(ring, sizeof(*m), 0);
	if (!m) {
		count_drop(slot);
		return;
	}
	m->hdr.type = MT_EVENT_MARK;
	m->hdr.size = sizeof(*m);
	m->hdr.tid = tid;
	m->hdr.ts = ts;
	m->kind = MT_MARK_THREAD_NAME;
	m->pad = 0;
	m->name = addr;
	m->ptr = 0;
	m->size = 0;
	bpf_ringbuf_submit(m, SUBMIT_FLAGS);
}

/* The slot of TASK's process, NO_TARGET if it is not recorded. */
static __always_inline __u32 thread_target(struct task_struct *task)
{
	return target_slot(BPF_CORE_READ(task, tgid));
}

/* Raw tracepoints rather than tp_btf: finding a tp_btf's BTF id makes
 * libbpf list the kernel's BTF objects, which needs CAP_SYS_ADMIN, and
 * CAP_BPF with CAP_PERFMON must be enough. */

#define MT_CLONE_VM 0x100ull     /* CLONE_VM, CLONE_THREAD: uapi's sched.h, which vmlinux.h lacks */
#define MT_CLONE_THREAD 0x10000ull

/* A new process forked by a recorded one and not followed: tell the
 * recorder, which removes the breakpoints fork copied into it (the link's
 * pid filter runs no program there, but every call still traps). One
 * record, no wakeup: the drain's timer finds it within a poll. A child
 * sharing the memory (CLONE_VM: vfork, posix_spawn) has the parent's own
 * breakpoints, which must stay. */
static __always_inline void send_fork(struct task_struct *task, __u64 clone_flags)
{
	struct mt_fork_event *ev;
	__u32 slot;
	void *ring;

	if (!report_forks || (clone_flags & (MT_CLONE_VM | MT_CLONE_THREAD)))
		return;
	slot = target_slot(bpf_get_current_pid_tgid() >> 32); /* the forking process runs this */
	if (slot == NO_TARGET || !(ring = cpu_ring(slot)))
		return;
	ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
	if (!ev) {
		count_drop(slot);
		return;
	}
	ev->hdr.type = MT_EVENT_FORK;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = (__u32)bpf_get_current_pid_tgid();
	ev->hdr.ts = bpf_ktime_get_ns();
	ev->child = BPF_CORE_READ(task, tgid);
	ev->pad = 0;
	bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
}

/* A new thread (its tgid is the target's), or a new process (send_fork). */
SEC("raw_tp/task_newtask")
int BPF_PROG(thread_new, struct task_struct *task, __u64 clone_flags)
{
	__u32 slot = thread_target(task);

	if (slot != NO_TARGET)
		send_thread_name(slot, BPF_CORE_READ(task, pid),
				 (const char *)__builtin_preserve_access_index(&task->comm));
	else
		send_fork(task, clone_flags);
	return 0;
}

SEC("raw_tp/task_rename")
int BPF_PROG(thread_rename, struct task_struct *task, const char *comm)
{
	__u32 slot = thread_target(task);

	if (slot != NO_TARGET)
		send_thread_name(slot, BPF_CORE_READ(task, pid), comm);
	return 0;
}

#endif /* MEMTRACE_THREADS_BPF_H */
