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
	nr = walk_frames(BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp), 0, stack_depth);
	return nr ? stack_sent(&scratch->ev, nr, slot, tid, ts) : 0;
}

/* --budget: the allocator's large blocks, exactly (docs/budget.md). glibc
 * gives a request at or past its mmap threshold a mapping of its own and
 * gives it back with munmap, so these calls are each such block's
 * allocation and free, seen without a uprobe trap, windows or not. Set
 * before load: the least mapped length sent (0: off). */
const volatile __u64 large_min = 0;

/* A call the large blocks need, when --rss does not send every call (A1
 * to A3: its second to fourth arguments): an anonymous private read-write
 * mmap of LARGE_MIN or more (what malloc asks; not a thread's stack, an
 * arena's PROT_NONE reservation, a fixed place), and any munmap or mremap
 * that long. */
static __always_inline bool large_call(__u32 call, __u64 a1, __u64 a2, __u64 a3)
{
	switch (call) {
	case MT_MAP_MMAP:
		/* MAP_PRIVATE | MAP_ANONYMOUS, none of MAP_FIXED, MAP_NORESERVE, MAP_STACK */
		return a1 >= large_min && a2 == 3 && (a3 & (0x02 | 0x20 | 0x10 | 0x4000 | 0x20000)) == (0x02 | 0x20);
	case MT_MAP_MUNMAP:
		return a1 >= large_min;
	case MT_MAP_MREMAP:
		return a1 >= large_min || a2 >= large_min;
	}
	return false;
}

/* The stack of the code that made a syscall, from its user registers, by
 * the unwind tables (the C library's malloc has no frame pointers): the
 * syscall wrapper's caller first, as map_stack has it. Global: verified
 * once, not in each of the programs that call it (five arguments at most:
 * WHO is the slot << 32 | the thread). 0: none. */
__noinline __u64 syscall_stack(__u64 ip, __u64 sp, __u64 bp, __u64 who, __u64 ts)
{
	struct stack_scratch *scratch;
	__u32 zero = 0, nr, slot = who >> 32, tid = (__u32)who;

	if (!stack_depth || !(scratch = bpf_map_lookup_elem(&stack_scratch, &zero)))
		return 0;
	nr = walk_tables_from(ip, sp, bp, scratch, slot, stack_depth, 0);
	if (!nr)
		nr = walk_frames(sp, bp, 0, stack_depth);
	return nr ? stack_sent(&scratch->ev, nr, slot, tid, ts) : 0;
}

/* The large blocks' mmap and mremap (REGS: the caller's, at the syscall or
 * the wrapper's entry): whether an allocator call of this window is open
 * on the thread, and the stack: that call's, else the whole of it from REGS
 * (malloc's frames have no frame pointers). Only while the window takes
 * allocations: a call whose return its end left unseen (the allocators'
 * probes detached) stays open in the thread's state, nested by its stack
 * pointer in any later call from the same caller, until the next window;
 * trusted in its tail and pause it gave another site's stack to 14 of 740
 * blocks of 40 MiB. */
static __always_inline __u64 large_stack(struct pt_regs *regs, struct thread_state *st, __u32 slot, __u32 tid,
					 __u64 ts, bool *in_alloc)
{
	__u64 sp = BPF_CORE_READ(regs, sp);

	*in_alloc = st && st->depth && st->stack_id && nested(st, sp) &&
		    (!count_hits || (allocs_open[SLOT(slot)] && st->window == window_gen[SLOT(slot)]));
	return *in_alloc ? st->stack_id :
			   syscall_stack(BPF_CORE_READ(regs, ip), sp, BPF_CORE_READ(regs, bp), (__u64)slot << 32 | tid, ts);
}

/* MADV_DONTNEED, MADV_FREE, MADV_REMOVE: the pages given back */
static __always_inline bool madvise_frees(__u64 advice)
{
	return advice == 4 || advice == 8 || advice == 9;
}

/* One MT_EVENT_MAP into SLOT's ring: CALL with its result and arguments. */
static __always_inline int send_map(__u32 slot, __u64 id, __u64 ts, __u32 call, __u32 flags, __u64 ret, __u64 a0,
				    __u64 a1, __u64 a2, __u64 a3, __u64 stack_id)
{
	struct mt_map_event *ev;
	void *ring = cpu_ring(slot);

	if (!ring || !(ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0))) {
		count_drop(slot);
		return 0;
	}
	ev->hdr.type = MT_EVENT_MAP;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = (__u32)id;
	ev->hdr.ts = ts;
	ev->call = call;
	ev->flags = flags;
	ev->ret = ret;
	ev->a0 = a0;
	ev->a1 = a1;
	ev->a2 = a2;
	ev->a3 = a3;
	ev->stack_id = stack_id;
	bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
	return 0;
}

/* One call as it returns (REGS: the caller's registers, RET: the result). */
static __always_inline int map_call(struct pt_regs *regs, long ret, __u32 call)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, stack_id;
	struct thread_state *st;
	bool in_alloc;
	__u32 slot;

	if ((!trace_maps && !large_min) || (ret < 0 && ret > -4096))
		return 0; /* failed: nothing changed */
	if (!trace_maps && !large_call(call, BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx), BPF_CORE_READ(regs, r10)))
		return 0;
	if (call == MT_MAP_MADVISE && !madvise_frees(BPF_CORE_READ(regs, dx)))
		return 0;
	slot = target_slot(id >> 32);
	if (slot == NO_TARGET)
		return 0;
	ts = bpf_ktime_get_ns();
	st = thread_state(false);
	in_alloc = st && st->depth;
	if (large_min && (call == MT_MAP_MMAP || call == MT_MAP_MREMAP)) {
		stack_id = large_stack(regs, st, slot, (__u32)id, ts, &in_alloc);
	} else {
		/* what grows memory has a stack, sent before the event that names it */
		stack_id = call == MT_MAP_MMAP || call == MT_MAP_BRK || call == MT_MAP_MREMAP ?
				   map_stack(regs, slot, (__u32)id, ts) : 0;
	}
	return send_map(slot, id, ts, call, in_alloc ? MT_MAP_IN_ALLOC : 0, ret, BPF_CORE_READ(regs, di),
			BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx), BPF_CORE_READ(regs, r10), stack_id);
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

/* Where the kernel has no kprobes, the C library's own wrappers instead
 * of the sys_exit tracepoint (which would slow every syscall on the host):
 * uprobes on mmap, munmap, mremap, madvise and sbrk in the target's libc
 * (user/record/session.c finds them), the arguments and the stack taken at
 * entry, the result at return. Only the target's calls through its C
 * library are seen (not those of a raw syscall). The cookie is the call. */
struct map_pending {
	__u64 a0, a1, a2, a3, stack_id;
	__u32 call; /* 0: nothing pending */
	__u32 flags; /* MT_MAP_IN_ALLOC as the large blocks tell it at entry; else 0 */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct map_pending);
} map_pending SEC(".maps");

/* A wrapper's return: what its entry left pending, sent with the result. */
static __always_inline int map_wrap_ret(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ret = PT_REGS_RC(ctx), ts;
	__u32 slot = target_slot(id >> 32), call, flags;
	struct map_pending *p;
	struct thread_state *st;

	if (slot == NO_TARGET)
		return 0;
	count_map_hit(slot, true); /* --budget pays for this probe too */
	p = bpf_task_storage_get(&map_pending, bpf_get_current_task_btf(), 0, 0);
	if (!p || !(call = p->call))
		return 0;
	p->call = 0;
	/* mmap, mremap and sbrk fail with (void *)-1, the others with -1 */
	if ((call == MT_MAP_MMAP || call == MT_MAP_MREMAP || call == MT_MAP_BRK) ? ret == (__u64)-1 : ret != 0)
		return 0;
	ts = bpf_ktime_get_ns();
	st = thread_state(false);
	flags = large_min && (call == MT_MAP_MMAP || call == MT_MAP_MREMAP) ? p->flags :
		st && st->depth						  ? MT_MAP_IN_ALLOC :
										    0;
	if (call == MT_MAP_BRK) {
		/* sbrk(INCREMENT) gave the old break: the break was there, and
		 * is INCREMENT on now (as brk(2)'s records say it) */
		send_map(slot, id, ts, MT_MAP_BRK, flags, ret, ret, 0, 0, 0, 0);
		return send_map(slot, id, ts, MT_MAP_BRK, flags, ret + p->a0, ret + p->a0, 0, 0, 0, p->stack_id);
	}
	return send_map(slot, id, ts, call, flags, ret, p->a0, p->a1, p->a2, p->a3, p->stack_id);
}

/* Attached as a uprobe session (kernel >= 6.13) the entry runs at the
 * return too, and a call it needs nothing of returns 1: no return probe
 * for it, which is most of what a wrapper's probe costs (a thread's stack,
 * a Python arena: --budget's large blocks want none of them). Otherwise
 * map_wrap_exit is the return probe, run for every call. */
SEC("uprobe")
int BPF_KPROBE(map_wrap_enter)
{
	__u64 id = bpf_get_current_pid_tgid(), call, ts;
	struct map_pending *p;
	bool in_alloc = false, wanted;
	__u32 slot;

	if (session_return())
		return map_wrap_ret(ctx);
	if (!trace_maps && !large_min)
		return 1;
	call = bpf_get_attach_cookie(ctx);
	slot = target_slot(id >> 32);
	if (slot == NO_TARGET)
		return 1;
	count_map_hit(slot, false);
	wanted = trace_maps || large_call(call, PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx));
	/* in a session an unwanted call leaves a pending one (a signal
	 * handler's call inside the wrapper) alone: its return is not run */
	if (session_mode && !wanted)
		return 1;
	if (!(p = bpf_task_storage_get(&map_pending, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE)))
		return 1;
	p->call = 0;
	p->flags = 0;
	if (!wanted)
		return 1;
	if (call == MT_MAP_MADVISE && !madvise_frees(PT_REGS_PARM3(ctx)))
		return 1;
	if (call == MT_MAP_BRK && !PT_REGS_PARM1(ctx))
		return 1; /* sbrk(0): where the break is; nothing changes */
	p->a0 = PT_REGS_PARM1(ctx);
	p->a1 = PT_REGS_PARM2(ctx);
	p->a2 = PT_REGS_PARM3(ctx);
	p->a3 = PT_REGS_PARM4(ctx); /* rcx: a function's fourth argument (a syscall's is r10) */
	ts = bpf_ktime_get_ns();
	if (large_min && (call == MT_MAP_MMAP || call == MT_MAP_MREMAP)) {
		p->stack_id = large_stack(ctx, thread_state(false), slot, (__u32)id, ts, &in_alloc);
		p->flags = in_alloc ? MT_MAP_IN_ALLOC : 0;
	} else {
		p->stack_id = call == MT_MAP_MMAP || call == MT_MAP_BRK || call == MT_MAP_MREMAP ?
				      map_stack(ctx, slot, (__u32)id, ts) : 0;
	}
	p->call = call;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(map_wrap_exit) { return map_wrap_ret(ctx); }

/* --rss: write faults of the targets, counted per CPU, every
 * MT_FAULT_EVERY-th sent; a write fault is what makes an anonymous page
 * resident (a read of one never written maps the shared zero page). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fault_count SEC(".maps");

/* The stack of the code REGS stopped in (a fault, a probe of glibc's): the
 * instruction, the return address at [sp]
 * when the faulting function made no frame (a leaf such as memset: a value
 * far from the stack is code), then the frame pointers. */
static __always_inline __u64 fault_stack(struct pt_regs *regs, __u32 slot, __u32 tid, __u64 ts)
{
	struct stack_scratch *scratch;
	__u64 sp = BPF_CORE_READ(regs, sp), ip = BPF_CORE_READ(regs, ip), top = 0;
	__u32 zero = 0, nr;

	if (!stack_depth || !(scratch = bpf_map_lookup_elem(&stack_scratch, &zero)))
		return 0;
	/* one past the instruction: stacks hold return addresses, which the
	 * symbolizer takes back by one to name the call */
	scratch->ev.frames[0] = ip + 1;
	if (stack_depth < 2)
		return stack_sent(&scratch->ev, 1, slot, tid, ts);
	/* the unwind tables first (the C library's own code, where malloc and
	 * memset write), then frame pointers */
	nr = walk_tables_from(ip, sp, BPF_CORE_READ(regs, bp), scratch, slot, stack_depth, 1);
	if (nr)
		return stack_sent(&scratch->ev, nr, slot, tid, ts);
	scratch->ev.frames[0] = ip + 1;
	bpf_probe_read_user(&top, sizeof(top), (void *)sp);
	if (top - sp > (1u << 24) && sp - top > (1u << 24)) {
		/* the caller's return address; then the walk from the frame pointer */
		nr = walk_frames(sp, BPF_CORE_READ(regs, bp), 1, stack_depth - 1);
		nr = nr ? nr + 1 : 2;
	} else {
		nr = 1;
	}
	return stack_sent(&scratch->ev, nr, slot, tid, ts);
}

SEC("raw_tp/page_fault_user")
int BPF_PROG(map_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, stack_id;
	struct thread_state *st;
	__u32 zero = 0, slot, *n;

	if (!trace_maps || !(error_code & 2)) /* writes only */
		return 0;
	slot = target_slot(id >> 32);
	if (slot == NO_TARGET || !(n = bpf_map_lookup_elem(&fault_count, &zero)) || ++*n < MT_FAULT_EVERY)
		return 0;
	*n = 0;
	ts = bpf_ktime_get_ns();
	/* in an allocator call (malloc writing its chunk headers, calloc
	 * zeroing): the call's stack, taken at its entry and sent already */
	st = thread_state(false);
	stack_id = st && st->depth && st->stack_id ? st->stack_id : fault_stack(regs, slot, (__u32)id, ts);
	return send_map(slot, id, ts, MT_MAP_FAULT, st && st->depth ? MT_MAP_IN_ALLOC : 0, 0, address,
			MT_FAULT_EVERY * 4096ull, error_code, 0, stack_id);
}

/* --rss: glibc's own probes in its allocator's slow paths (provider libc:
 * memory_arena_new, memory_heap_more, memory_sbrk_less, ...), where the C
 * library carries them (.note.stapsdt; user/record/mark_finder.c finds them).
 * One program for every site; its cookie is (spec index << 8 | enum
 * mt_map_call). The stack: an allocator call's own if one is open on the
 * thread, else the probe's, from the unwind tables (the C library has no
 * frame pointers). */
SEC("uprobe")
int BPF_KPROBE(glibc_probe)
{
	__u64 id = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx), ts, stack_id;
	__u32 idx = cookie >> 8, slot;
	struct mt_usdt_spec *spec;
	struct thread_state *st;

	if (!trace_maps)
		return 0;
	slot = target_slot(id >> 32);
	if (slot == NO_TARGET || !(spec = bpf_map_lookup_elem(&usdt_specs, &idx)))
		return 0;
	ts = bpf_ktime_get_ns();
	st = thread_state(false);
	stack_id = st && st->depth && st->stack_id ? st->stack_id : fault_stack(ctx, slot, (__u32)id, ts);
	return send_map(slot, id, ts, cookie & 0xff, st && st->depth ? MT_MAP_IN_ALLOC : 0, 0, usdt_arg(ctx, spec, 0),
			usdt_arg(ctx, spec, 1), usdt_arg(ctx, spec, 2), 0, stack_id);
}

#endif /* MEMTRACE_MAPS_BPF_H */
