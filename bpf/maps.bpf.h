/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --rss: the calls that map memory, with their stacks. When mmap, munmap,
 * mremap, brk or madvise returns in a process being recorded (kretprobes on
 * the kernel's functions for them), it sends an MT_EVENT_MAP: what it asked, what it got, whether an allocator
 * call was open on the thread (malloc growing its heap is the allocator's,
 * not the program's), and the stack from the syscall's caller, by frame
 * pointers (the syscall wrapper is a leaf: its caller's return address is at
 * [sp]). Included at the end of memtrace.bpf.c, whose rings, drop counter,
 * process filter and stack cache it uses.
 */
#ifndef MEMTRACE_MAPS_BPF_H
#define MEMTRACE_MAPS_BPF_H

/* The stack of the syscall's caller (frame pointers, from REGS' [sp]),
 * sent as take_stack sends one: its id, 0 for none. */
static __always_inline __u64 map_stack(struct pt_regs *regs, __u32 slot, __u32 tid, __u64 ts)
{
	struct stack_scratch *scratch;
	__u32 zero = 0, nr;

	if (!stack_depth || !(scratch = bpf_map_lookup_elem(&stack_scratch, &zero)))
		return 0;
	nr = walk_frames(BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp), scratch->ev.frames, stack_depth);
	return nr ? stack_sent(&scratch->ev, nr, slot, tid, ts) : 0;
}

const volatile bool trace_maps = false; /* --rss: set before load */

/* MADV_DONTNEED, MADV_FREE, MADV_REMOVE: the pages given back */
static __always_inline bool madvise_frees(__u64 advice)
{
	return advice == 4 || advice == 8 || advice == 9;
}

/* One call as it returns (REGS: the caller's registers, RET: the result). */
static __always_inline int map_call(struct pt_regs *regs, long ret, __u32 call)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, stack_id;
	struct thread_state *st;
	struct mt_map_event *ev;
	void *ring;
	__u32 slot;

	if (!trace_maps || (ret < 0 && ret > -4096))
		return 0; /* failed: nothing changed */
	if (call == MT_MAP_MADVISE && !madvise_frees(BPF_CORE_READ(regs, dx)))
		return 0;
	slot = target_slot(id >> 32);
	if (slot == NO_TARGET)
		return 0;
	ts = bpf_ktime_get_ns();
	/* what grows memory has a stack, sent before the event that names it */
	stack_id = call == MT_MAP_MMAP || call == MT_MAP_BRK || call == MT_MAP_MREMAP ?
			   map_stack(regs, slot, (__u32)id, ts) : 0;
	ring = cpu_ring(slot);
	if (!ring || !(ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0))) {
		count_drop(slot);
		return 0;
	}
	st = thread_state(false);
	ev->hdr.type = MT_EVENT_MAP;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = (__u32)id;
	ev->hdr.ts = ts;
	ev->call = call;
	ev->flags = st && st->depth ? MT_MAP_IN_ALLOC : 0;
	ev->ret = ret;
	ev->a0 = BPF_CORE_READ(regs, di);
	ev->a1 = BPF_CORE_READ(regs, si);
	ev->a2 = BPF_CORE_READ(regs, dx);
	ev->a3 = BPF_CORE_READ(regs, r10);
	ev->stack_id = stack_id;
	bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
	return 0;
}

/* On the five syscalls' own functions (kretprobes) where the kernel has
 * kprobes: a sys_exit tracepoint sends every syscall of every process on
 * the host down the kernel's slow path (redis-server under redis-benchmark
 * lost 4 to 12% of its requests to it on a host without kprobes). The
 * caller's registers are the task's user registers; the result is the
 * probe's return value. */
static __always_inline int map_ret(struct pt_regs *ctx, __u32 call)
{
	struct pt_regs *user = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	return map_call(user, PT_REGS_RC(ctx), call);
}

SEC("kretprobe/__x64_sys_mmap")
int BPF_KRETPROBE(map_mmap) { return map_ret(ctx, MT_MAP_MMAP); }
SEC("kretprobe/__x64_sys_munmap")
int BPF_KRETPROBE(map_munmap) { return map_ret(ctx, MT_MAP_MUNMAP); }
SEC("kretprobe/__x64_sys_brk")
int BPF_KRETPROBE(map_brk) { return map_ret(ctx, MT_MAP_BRK); }
SEC("kretprobe/__x64_sys_mremap")
int BPF_KRETPROBE(map_mremap) { return map_ret(ctx, MT_MAP_MREMAP); }
SEC("kretprobe/__x64_sys_madvise")
int BPF_KRETPROBE(map_madvise) { return map_ret(ctx, MT_MAP_MADVISE); }

/* Where the kernel has no kprobes: every syscall's return, these five kept. */
SEC("raw_tp/sys_exit")
int BPF_PROG(map_exit, struct pt_regs *regs, long ret)
{
	switch (BPF_CORE_READ(regs, orig_ax)) {
	case 9: return map_call(regs, ret, MT_MAP_MMAP);
	case 11: return map_call(regs, ret, MT_MAP_MUNMAP);
	case 12: return map_call(regs, ret, MT_MAP_BRK);
	case 25: return map_call(regs, ret, MT_MAP_MREMAP);
	case 28: return map_call(regs, ret, MT_MAP_MADVISE);
	}
	return 0;
}

#endif /* MEMTRACE_MAPS_BPF_H */
