/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * inproc/memtrace.h marks: USDT probes of provider "memtrace". One program
 * serves every site; its cookie says which argument spec and which kind of
 * mark. Included at the end of memtrace.bpf.c, whose rings, drop counter and
 * process filter it uses.
 */
#ifndef MEMTRACE_MARKS_BPF_H
#define MEMTRACE_MARKS_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MT_USDT_MAX_SPECS);
	__type(key, __u32);
	__type(value, struct mt_usdt_spec);
} usdt_specs SEC(".maps");

#define NAMES_SEEN_SLOTS 256

/* Names this CPU already sent, so the string reaches user space before the
 * first mark that uses it, through the same ring. */
struct names_seen {
	__u64 addr[NAMES_SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct names_seen);
} names_seen SEC(".maps");

static __always_inline __u64 usdt_arg(struct pt_regs *ctx, const struct mt_usdt_spec *spec, int i)
{
	__u8 k = spec->kind[i], bytes = MT_USDT_BYTES(k), shift;
	__u64 v = 0;

	if (MT_USDT_KIND(k) == MT_USDT_ARG_IMM)
		return spec->imm[i];
	if ((MT_USDT_KIND(k) != MT_USDT_ARG_REG && MT_USDT_KIND(k) != MT_USDT_ARG_MEM) ||
	    bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + (spec->reg_off[i] & 0xff8)))
		return 0;
	if (MT_USDT_KIND(k) == MT_USDT_ARG_MEM) {
		__u64 addr = v + spec->imm[i];

		v = 0;
		if (bpf_probe_read_user(&v, bytes == 1 ? 1 : bytes == 2 ? 2 : bytes == 4 ? 4 : 8, (void *)addr))
			return 0;
	}
	if (bytes != 1 && bytes != 2 && bytes != 4)
		return v;
	shift = 64 - 8 * bytes; /* the argument's own width, sign-extended if signed */
	return k & MT_USDT_SIGNED ? (__u64)((__s64)(v << shift) >> shift) : (v << shift) >> shift;
}

/* The fields of a STRING record around its text, which a str read of N
 * (bytes with the NUL, or an error) just put there; unread is the caller's. */
static __always_inline void string_event_fill(struct mt_string_event *ev, __u32 tid, __u64 addr, long n)
{
	ev->hdr.type = MT_EVENT_STRING;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = tid;
	ev->hdr.ts = 0;
	ev->addr = addr;
	ev->len = n > 0 ? n - 1 : 0;
	if (n <= 0)
		ev->text[0] = 0;
}

static __always_inline void send_name(void *ring, __u32 target, __u32 tid, __u64 addr)
{
	__u32 zero = 0;
	struct names_seen *seen = bpf_map_lookup_elem(&names_seen, &zero);
	struct mt_string_event *ev;
	__u64 *slot, key = addr ^ seen_mix(target); /* seen per target, as stacks are */
	long n;

	if (!addr || !seen)
		return;
	slot = &seen->addr[(addr >> 3) & (NAMES_SEEN_SLOTS - 1)];
	if (*slot == key)
		return;
	ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
	if (!ev) {
		count_drop(target);
		return;
	}
	n = bpf_probe_read_user_str(ev->text, sizeof(ev->text), (void *)addr);
	string_event_fill(ev, tid, addr, n);
	ev->unread = n <= 0; /* a page never touched yet cannot be faulted in here */
	bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
	*slot = key;
}

static __always_inline int on_mark(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), cookie = bpf_get_attach_cookie(ctx);
	__u32 idx = cookie >> 8, kind = cookie & 0xff, tid = (__u32)pid_tgid, slot;
	struct mt_usdt_spec *spec;
	struct mt_mark_event *ev;
	__u64 name;
	void *ring;

	slot = target_slot(pid_tgid >> 32);
	if (slot == NO_TARGET)
		return 0;
	spec = bpf_map_lookup_elem(&usdt_specs, &idx);
	ring = cpu_ring(slot);
	if (!spec || !ring)
		return 0;
	/* The name goes first: a ring hands records over in reservation order. */
	name = usdt_arg(ctx, spec, 0);
	send_name(ring, slot, tid, name);
	ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
	if (!ev) {
		count_drop(slot);
		return 0;
	}
	ev->hdr.type = MT_EVENT_MARK;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = tid;
	ev->hdr.ts = bpf_ktime_get_ns();
	ev->kind = kind;
	ev->pad = 0;
	ev->name = name;
	ev->ptr = usdt_arg(ctx, spec, 1);
	ev->size = usdt_arg(ctx, spec, 2);
	bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mark_hit) { return on_mark(ctx); }

#endif /* MEMTRACE_MARKS_BPF_H */
