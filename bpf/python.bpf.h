/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Python frames under an allocation. When the target runs a CPython
 * interpreter memtrace knows (user/record/python.c fills py_layout for its
 * slot), an allocation's stack gets the interpreter's frames too: the
 * allocating thread's PyThreadState (found once by its thread id in the
 * interpreter's list, then checked each time), its chain of
 * _PyInterpreterFrame, and for each the code object, a tag of the code
 * object's first bytes and the instruction pointer. User space names them
 * and puts them in place of the native frames of the evaluation loop
 * (user/record/python.c, user/record/drain.c).
 *
 * The walk is a global function: its loop is verified once, not once per
 * program that takes a stack. Included by memtrace.bpf.c after take_stack.
 */
#ifndef MEMTRACE_PYTHON_BPF_H
#define MEMTRACE_PYTHON_BPF_H

/* 0: no target of this load runs Python, and the verifier prunes the walk
 * (a third of the object's instructions): user space decides before load. */
const volatile __u32 py_walk = 0;

volatile struct mt_py_layout py_layout[MT_MAX_TARGETS];

/* Per slot: code objects that died (a probe on the interpreter's
 * code_dealloc counts them). A tag read while the count was N holds for
 * that code object's address until the count moves: a live frame keeps
 * its code object alive, and a new code object at a freed one's address
 * comes after its death. */
volatile __u32 py_code_gen[MT_MAX_TARGETS];

#define PY_TAG_CACHE 256 /* tags a CPU keeps, by code address (a power of two) */

struct py_tag_cached {
	__u64 code; /* code object's address | slot << 48 */
	__u32 tag;
	__u32 gen;  /* py_code_gen of its slot when read */
};

#define PY_THREADS_MAX 64 /* threads searched for the caller's state, at most */

struct py_scratch {
	struct mt_pystack_event ev;
	struct mt_pycode_event code;
	struct mt_py_layout layout;  /* the slot's, copied at the walk's start */
	__u8 frame[MT_PY_READ];      /* one _PyInterpreterFrame, read whole */
	__u64 tag[MT_PY_TAG_BYTES / 8];
	struct py_tag_cached tags[PY_TAG_CACHE];
	__u64 walked;                /* stacks with Python frames this CPU walked (record -v) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_scratch);
} py_scratch SEC(".maps");

/* The u64 at OFF of the frame read into S (0 if OFF is not in it). */
static __always_inline __u64 py_word(const struct py_scratch *s, __u32 off)
{
	__u64 v = 0;

	if (off > MT_PY_READ - 8)
		return 0;
	__builtin_memcpy(&v, &s->frame[off & (MT_PY_READ - 1)], 8);
	return v;
}

static __always_inline __u8 py_byte(const struct py_scratch *s, __u32 off)
{
	return off < MT_PY_READ ? s->frame[off & (MT_PY_READ - 1)] : 0;
}

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* The namespace-local id of TASK (the thread id the interpreter knows). */
static __always_inline __u32 py_task_tid(struct task_struct *task)
{
	struct pid *p = BPF_CORE_READ(task, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	struct upid up = {};

	if (level > 31)
		return 0;
	bpf_probe_read_kernel(&up, sizeof(up), &p->numbers[level]);
	return (__u32)up.nr;
}

/* This thread's PyThreadState in the interpreter of L, cached in its
 * thread state and checked there each time (a thread state freed and made
 * again for another thread must not be taken). 0: none. */
static __always_inline __u64 py_tstate(const struct mt_py_layout *l, struct task_struct *task,
				       struct thread_state *st)
{
	__u64 ts = st->py_tstate, tid = 0, interp, first;
	int n = 0;

	if (ts) {
		if (bpf_probe_read_user(&tid, 4, (void *)(ts + l->ts_native_tid)) == 0 && (__u32)tid == st->py_tid)
			return ts;
		st->py_tstate = 0;
	}
	if (!st->py_tid)
		st->py_tid = py_task_tid(task);
	interp = py_read_ptr(l->runtime + l->interp_head);
	if (!interp)
		return 0;
	first = ts = py_read_ptr(interp + l->threads_head);
	for (int i = 0; i < PY_THREADS_MAX && ts; i++) {
		tid = 0;
		if (bpf_probe_read_user(&tid, 4, (void *)(ts + l->ts_native_tid)))
			return 0;
		if ((__u32)tid == st->py_tid) {
			st->py_tstate = ts;
			return ts;
		}
		ts = py_read_ptr(ts + l->ts_next);
		n++;
	}
	/* A process forked from a Python one keeps its parent's thread id in
	 * the one thread state it has (3.11 does not renew it): a lone thread
	 * of a process with one thread state is that state's. Not cached:
	 * checked each time, until the id is right. */
	if (n == 1 && !ts && BPF_CORE_READ(task, signal, nr_threads) == 1)
		return first;
	return 0;
}

static __always_inline __u32 py_tag(struct py_scratch *s, __u64 code, const struct mt_py_layout *l)
{
	__u64 h = 0xcbf29ce484222325ULL, name_hash = 0;

	if (bpf_probe_read_user(s->tag, sizeof(s->tag), (void *)(code + l->code_tag)))
		return 0;
	if (l->name_hash != MT_PY_NONE)
		bpf_probe_read_user(&name_hash, sizeof(name_hash), (void *)(s->tag[MT_PY_TAG_BYTES / 8 - 1] + l->name_hash));
	for (int i = 0; i < MT_PY_TAG_BYTES / 8; i++)
		h = (h ^ s->tag[i]) * 0x100000001b3ULL;
	h = (h ^ name_hash) * 0x100000001b3ULL;
	return (__u32)(h ^ (h >> 32)) | 1;
}

/* CODE's tag, from this CPU's cache where no code object of SLOT died
 * since it was read (half the walk's time went to reading tags). */
static __always_inline __u32 py_tag_of(struct py_scratch *s, __u64 code, const struct mt_py_layout *l, __u32 slot)
{
	struct py_tag_cached *c = &s->tags[(code >> 4) & (PY_TAG_CACHE - 1)];
	__u64 key = (code & MT_PY_CODE_MASK) | (__u64)SLOT(slot) << 48;
	__u32 gen = py_code_gen[SLOT(slot)], tag;

	if (l->tag_cache && c->code == key && c->gen == gen)
		return c->tag;
	tag = py_tag(s, code, l);
	c->code = key;
	c->gen = gen;
	c->tag = tag;
	return tag;
}

struct py_walk {
	struct py_scratch *s;
	__u64 frame; /* the next frame to read; 0: the chain ended */
	__u32 n;     /* frames kept */
	__u32 slot;
};

/* One step of the walk (bpf_loop's callback: its body is verified once). */
static long py_step(__u64 i, void *ctx)
{
	struct py_walk *w = ctx;
	struct py_scratch *s = w->s;
	struct mt_py_layout *l = &s->layout;
	__u64 code;
	__u32 n = w->n;

	if (!w->frame)
		return 1;
	if (n >= MT_PY_MAX_FRAMES) {
		s->ev.truncated = 1;
		return 1;
	}
	if (bpf_probe_read_user(s->frame, sizeof(s->frame), (void *)w->frame)) {
		w->frame = 0;
		return 1;
	}
	if (l->fr_entry == MT_PY_NONE && py_byte(s, l->fr_owner) == l->owner_cstack) {
		/* a C call of the evaluation loop starts here: the frame before is the first it ran */
		if (n > 0)
			s->ev.frames[(n - 1) & (MT_PY_MAX_FRAMES - 1)].code |= MT_PY_ENTRY;
		w->frame = py_word(s, l->fr_previous);
		return 0;
	}
	code = py_word(s, l->fr_code);
	s->ev.frames[n & (MT_PY_MAX_FRAMES - 1)] = (struct mt_py_frame){
		.code = (code & MT_PY_CODE_MASK) | (l->fr_entry != MT_PY_NONE && py_byte(s, l->fr_entry) ? MT_PY_ENTRY : 0),
		.tag = py_tag_of(s, code, l, w->slot),
		.instr = (__s32)(py_word(s, l->fr_instr) - code),
	};
	w->n = n + 1;
	w->frame = py_word(s, l->fr_previous);
	return 0;
}

/* A code object's first sighting on this CPU (for this trace): its names
 * and line table, read now, while it surely lives. */
struct py_send {
	struct py_scratch *s;
	__u32 slot;
	__u32 tid;
};

static __always_inline void py_read_ascii(const struct mt_py_layout *l, __u64 str, char *out, __u32 cap)
{
	__u32 state = 0;

	out[0] = 0;
	if (!str || bpf_probe_read_user(&state, sizeof(state), (void *)(str + l->str_state)))
		return;
	if ((state & 0x60) == 0x60) /* compact and ASCII: the characters follow the header */
		bpf_probe_read_user_str(out, cap, (void *)(str + l->str_ascii));
}

static long py_send_code(__u64 i, void *ctx)
{
	struct py_send *p = ctx;
	struct py_scratch *s = p->s;
	struct mt_pycode_event *c = &s->code;
	struct mt_py_layout *l = &s->layout;
	struct mt_py_frame *f;
	__u64 code, table, len = 0, key, *note;
	void *ring;

	if (i >= s->ev.nr || i >= MT_PY_MAX_FRAMES)
		return 1;
	f = &s->ev.frames[i & (MT_PY_MAX_FRAMES - 1)];
	code = f->code & MT_PY_CODE_MASK;
	note = seen_note((code * 0x9e3779b97f4a7c15ULL) ^ f->tag ^ 0x5059434f44450000ULL, p->slot, &key);
	if (!note || *note == key)
		return 0;
	c->hdr.type = MT_EVENT_PYCODE;
	c->hdr.size = sizeof(*c);
	c->hdr.tid = p->tid;
	c->hdr.ts = 0;
	c->code = code;
	c->tag = f->tag;
	c->firstlineno = 0;
	c->pad = 0;
	bpf_probe_read_user(&c->firstlineno, sizeof(c->firstlineno), (void *)(code + l->co_firstlineno));
	py_read_ascii(l, py_read_ptr(code + l->co_qualname), c->name, sizeof(c->name));
	py_read_ascii(l, py_read_ptr(code + l->co_filename), c->file, sizeof(c->file));
	table = py_read_ptr(code + l->co_linetable);
	if (table)
		bpf_probe_read_user(&len, sizeof(len), (void *)(table + l->bytes_size));
	c->table_len = len > 0xffffffffULL ? 0xffffffff : (__u32)len;
	if (len > MT_PY_TABLE_MAX)
		len = MT_PY_TABLE_MAX;
	if (len && bpf_probe_read_user(c->table, len & (MT_PY_TABLE_MAX - 1) ? len & (MT_PY_TABLE_MAX - 1) : MT_PY_TABLE_MAX,
				       (void *)(table + l->bytes_data)))
		c->table_len = 0;
	ring = cpu_ring(p->slot);
	if (ring && !bpf_ringbuf_output(ring, c, sizeof(*c), SUBMIT_FLAGS))
		*note = key;
	else
		count_drop(p->slot);
	return 0;
}

/* The id of the stack NATIVE_ID with the N Python frames walked into this
 * CPU's scratch: a global function, so what follows it in py_stack is
 * verified once, not once for each count of frames its loop can end with
 * (the load with the walk: 44266 instructions, 17633 so). */
__noinline __u64 py_hash(__u64 native_id, __u32 n)
{
	struct py_scratch *s;
	__u32 zero = 0;
	__u64 h = native_id;

	s = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!s)
		return native_id | 1;
	for (__u32 i = 0; i < MT_PY_MAX_FRAMES; i++) {
		if (i >= n)
			break;
		h = (h ^ s->ev.frames[i].code) * 0x100000001b3ULL;
		h = (h ^ ((__u64)s->ev.frames[i].tag << 32 | (__u32)s->ev.frames[i].instr)) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return (h ^ s->ev.truncated) | 1;
}

/*
 * The id of the stack NATIVE_ID with this thread's Python frames, the
 * frames sent to user space first unless this CPU sent them for SLOT
 * already; NATIVE_ID itself when the thread runs no Python code.
 */
__noinline __u64 py_stack(__u32 slot, __u64 native_id, __u32 tid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct py_walk w = { .slot = slot };
	struct mt_py_layout *l;
	struct thread_state *st;
	struct py_scratch *s;
	__u64 h, key, *note;
	__u32 zero = 0, n;
	void *ring;

	if (!native_id)
		return native_id;
	st = bpf_task_storage_get(&threads, task, 0, 0);
	s = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!st || !s)
		return native_id;
	/* a copy the walk reads as plain memory */
	__builtin_memcpy(&s->layout, (const void *)&py_layout[SLOT(slot)], sizeof(s->layout));
	l = &s->layout;
	if (!l->runtime)
		return native_id;
	w.frame = py_tstate(l, task, st);
	if (!w.frame)
		return native_id;
	w.frame = py_read_ptr(w.frame + l->ts_frame);
	if (w.frame && l->cframe_frame != MT_PY_NONE)
		w.frame = py_read_ptr(w.frame + l->cframe_frame);
	w.s = s;
	s->ev.truncated = 0;
	bpf_loop(2 * MT_PY_MAX_FRAMES, py_step, &w, 0);
	n = w.n;
	if (!n || n > MT_PY_MAX_FRAMES)
		return native_id;
	h = py_hash(native_id, n);
	s->walked++;
	note = seen_note(h, slot, &key);
	if (note && *note != key) {
		__u64 size = sizeof(s->ev) - sizeof(s->ev.frames) + (__u64)n * sizeof(s->ev.frames[0]);

		struct py_send send = { .s = s, .slot = slot, .tid = tid };

		s->ev.nr = n;
		bpf_loop(MT_PY_MAX_FRAMES, py_send_code, &send, 0);
		ring = cpu_ring(slot);
		s->ev.hdr.type = MT_EVENT_PYSTACK;
		s->ev.hdr.size = size;
		s->ev.hdr.tid = tid;
		s->ev.hdr.ts = 0;
		s->ev.stack_id = h;
		s->ev.native_id = native_id;
		s->ev.nr = n;
		/* The recorder is woken: it names the code objects from the target's
		 * memory, the sooner the likelier they (and the target) still live.
		 * A new stack is rare; a wakeup per allocation is not asked for. */
		if (size <= sizeof(s->ev) && ring && !bpf_ringbuf_output(ring, &s->ev, size, BPF_RB_FORCE_WAKEUP))
			*note = key;
		else
			count_drop(slot);
	}
	return h;
}

/* The interpreter's code_dealloc (PyCode_Type.tp_dealloc): a code object
 * of this process dies, and the tags read of code objects go stale. */
SEC("uprobe")
int BPF_KPROBE(py_code_free)
{
	__u32 slot = target_slot(bpf_get_current_pid_tgid() >> 32);

	if (slot != NO_TARGET)
		__sync_fetch_and_add(&py_code_gen[SLOT(slot)], 1);
	return 0;
}

#endif /* MEMTRACE_PYTHON_BPF_H */
