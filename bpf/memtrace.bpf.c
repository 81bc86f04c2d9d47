// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Allocator probes. Entry probes note the arguments and the stack of the
 * outermost allocator call a thread makes; the return probe emits the
 * allocation. Calls nested inside an allocator (operator new calling
 * malloc, a custom realloc calling free) are not counted again: a per-thread
 * depth, checked against the stack pointer, tells them apart.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "memtrace_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 nr_cpus = 1;       /* rings per target: slot * nr_cpus + cpu in events */
const volatile __u32 max_targets = 1;   /* slots in use at most, <= MT_MAX_TARGETS */
const volatile __u32 stack_depth = MT_DEFAULT_STACK_DEPTH; /* 0: no stacks */
const volatile __u64 sample_mean = 0; /* 0: every allocation; else mean bytes between samples */
const volatile bool session_mode = false; /* entry programs attached as uprobe sessions */
const volatile bool trace_maps = false; /* --rss (maps.bpf.h): set before load */
/* Exponential draws with mean sample_mean, made in user space (no logarithm
 * in BPF); a random pick among them is the gap to the next sample. */
const volatile __s64 sample_gaps[MT_SAMPLE_GAPS];

extern bool bpf_session_is_return(void) __ksym __weak;
extern __u64 *bpf_session_cookie(void) __ksym __weak;

/* A session's cookie when its entry kept no thread state: the call's size
 * and slot (on_alloc_enter). 0, the kernel's initial value, is not one. */
#define MT_FAST (1ULL << 63)
#define MT_FAST_SLOT_SHIFT 48
#define MT_FAST_SIZE ((1ULL << MT_FAST_SLOT_SHIFT) - 1)

/* Set by user space once every probe is attached and cleared before any is
 * detached: attaching and detaching take time per link, and a window with
 * malloc traced but free not would invent leaks. One per target slot. */
volatile __u32 recording[MT_MAX_TARGETS];

#define SLOT(s) ((s) & (MT_MAX_TARGETS - 1))

/*
 * --budget: allocations are taken only while a slot's window is open
 * (allocs_open, set by user space once the window's probes are attached);
 * frees are taken whenever recording, so the tail after a window sees the
 * frees of its blocks. Exact mode keeps it open. window_gen counts windows:
 * an allocator call whose return fell outside its window left a thread's
 * depth open, and the next window starts it afresh.
 */
volatile __u32 allocs_open[MT_MAX_TARGETS];
volatile __u32 window_gen[MT_MAX_TARGETS];
const volatile bool report_forks = false; /* threads.bpf.h: a recorded process's unfollowed forks */
const volatile bool count_hits = false; /* --budget: count every probe hit per slot */

/* Probe hits per slot and CPU: what the budget controller prices. */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* max_targets, set before load */
	__type(key, __u32);
	__type(value, struct mt_hit_count);
} hits SEC(".maps");

/* One hit of SLOT's: an allocator probe's (MAP false) or a large block's
 * probe's on the C library's wrappers (MAP true), at entry or RET. */
static __always_inline void count_hit_of(__u32 slot, bool map, bool ret)
{
	struct mt_hit_count *h;

	if (!count_hits)
		return;
	h = bpf_map_lookup_elem(&hits, &slot);
	if (!h)
		return;
	if (map && ret)
		h->map_returns++;
	else if (map)
		h->map_entries++;
	else if (ret)
		h->returns++;
	else
		h->entries++;
}

static __always_inline void count_hit(__u32 slot, bool ret)
{
	count_hit_of(slot, false, ret);
}

static __always_inline void count_map_hit(__u32 slot, bool ret)
{
	count_hit_of(slot, true, ret);
}

/* Bumped each time a slot gets a new process or a new trace (a recorder
 * after an exec): what this CPU has "seen" (stacks, names) is per slot and
 * epoch, since each trace must get every stack it uses. */
volatile __u32 target_epoch[MT_MAX_TARGETS];

static __always_inline __u64 seen_mix(__u32 slot)
{
	return (((__u64)SLOT(slot) << 32) | target_epoch[SLOT(slot)]) * 0x9e3779b97f4a7c15ULL;
}

/*
 * The processes this object records, each in a slot of its own (its rings,
 * its unwind mappings, its flags): one load serves a whole followed tree,
 * and a process forked under --follow-children is added here, not loaded
 * for. tgid -> slot; user space sizes it to max_targets.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} targets SEC(".maps");

struct thread_state {
	__u32 sampled;     /* the open outermost call is sampled (always, in exact mode) */
	__u32 pad;
	__u64 sp;       /* stack pointer at the outermost allocator entry */
	__u64 size;     /* requested bytes */
	__u64 arg;      /* realloc: old pointer; posix_memalign: where the result goes */
	__u64 stack_id; /* hash of the stack taken at entry */
	__u32 depth;    /* allocator calls open on this thread */
	__u32 kind;     /* enum mt_func_kind of the outermost call */
	__u32 slot;     /* the target slot of the thread's process */
	__u32 window;   /* window_gen of its slot when the call opened (--budget) */
	__u32 py_tid;   /* the thread's id in its pid namespace, once a Python walk needed it */
	__u32 pad2;
	__u64 py_tstate; /* its PyThreadState, once found (bpf/python.bpf.h) */
};

/* Per-thread state lives with the task: no hash lookup on the hot path. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct thread_state);
} threads SEC(".maps");

#define SEEN_SLOTS 4096 /* per CPU, a power of two */

/* Stacks this CPU already handed to user space, so each is sent about once:
 * a direct-mapped cache of hashes. A collision only sends a stack again,
 * and user space interns it again. */
struct stacks_seen {
	__u64 hash[SEEN_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stacks_seen);
} stacks_seen SEC(".maps");

/* Where a stack is built: the event, and the top of the stack the walk
 * reads its frames from (bpf/unwind.bpf.h). */
#define STACK_WINDOW 2048 /* bytes, a power of two */

#define WALK_WORDS 64 /* stack words a walk that makes a template may read (a power of two) */
#define WORD_OUTSIDE 0xffff /* a noted word not in the window copied from the walk's rsp */

struct stack_scratch {
	struct mt_stack_event ev;
	__u64 window[STACK_WINDOW / 8];
	/* The stack words the table walk read, in order (bpf/unwind.bpf.h's
	 * unwind_read): what a template of its stack is checked against.
	 * words > WALK_WORDS: too many, or read some other way (a signal frame). */
	__u32 words;
	__u32 bp_used; /* the walk used rbp as it was at its start */
	__u64 word_addr[WALK_WORDS];
	__u64 word_val[WALK_WORDS];
	/* Where each word lies in a window copied from the walk's first rsp
	 * (walk_sp), WORD_OUTSIDE if not in one; span: the bytes from walk_sp
	 * that hold the words that do (at least 8). A template keeps these
	 * (struct stack_template). */
	__u64 walk_sp;
	__u32 span;
	__u32 epoch;         /* the slot's target_epoch when the walk began (template_save) */
	__u16 word_idx[WALK_WORDS];
	__u32 outside;       /* a word noted is not in the window (WORD_OUTSIDE) */
	__u32 pad;
	__u64 from_template; /* allocation stacks this CPU took from a template (record -v) */
	__u64 walked;        /* ... and by walking the unwind tables */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stack_scratch);
} stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* max_targets, set before load */
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* Sampled mode: the sampled pointers still live, so a free is sent only when
 * it frees one of them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__type(key, __u64);
	__type(value, __u8);
} sampled SEC(".maps");

struct ringbuf_inner {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* user space creates each CPU's ring at its own size */
};

/* One ring buffer per CPU, so CPUs never contend on a reservation. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set to max_targets * CPUs before load */
	__type(key, __u32);
	__array(values, struct ringbuf_inner);
} events SEC(".maps");

static __always_inline void count_drop(__u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &slot);

	if (n)
		*n += 1;
}

static __always_inline void *cpu_ring(__u32 slot)
{
	__u32 idx = slot * nr_cpus + bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&events, &idx);
}

/* The reader drains every ring on a short timer, so no probe pays for a
 * wakeup; a ring holds far more than a timer period of events. */
#define SUBMIT_FLAGS BPF_RB_NO_WAKEUP

/* The hash of the first NR frames of this CPU's scratch stack: a global
 * function, so its loop is checked once, not once per walk that led to it. */
__noinline __u64 hash_frames(__u32 nr)
{
	struct stack_scratch *s;
	__u64 h = 0xcbf29ce484222325ULL;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return 0;
	for (__u32 i = 0; i < MT_MAX_STACK_DEPTH; i++) {
		if (i >= nr)
			break;
		h = (h ^ s->ev.frames[i]) * 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return h | 1; /* 0 means "no stack" */
}

static __always_inline void send_stack(__u32 slot, struct mt_stack_event *ev, __u32 nr, __u64 *seen_slot,
				       __u64 seen_key)
{
	void *ring = cpu_ring(slot);
	__u64 size = sizeof(*ev) - sizeof(ev->frames) + (__u64)nr * sizeof(__u64);

	if (size > sizeof(*ev))
		return;
	ev->hdr.type = MT_EVENT_STACK;
	ev->hdr.size = size;
	ev->nr = nr;
	ev->pad = 0;
	if (!ring || bpf_ringbuf_output(ring, ev, size, SUBMIT_FLAGS)) {
		count_drop(slot);
		return;
	}
	*seen_slot = seen_key;
}

struct fp_walk {
	__u64 *frames;
	__u64 sp, fp;
	__u32 depth, nr;
};

/* Frame I + 1 of the walk (bpf_loop's callback: verified once, where a
 * loop of MT_MAX_STACK_DEPTH steps was verified step by step). */
static long fp_step(__u32 i, void *ctx)
{
	struct fp_walk *w = ctx;
	__u64 frame[2];

	if (i + 1 >= w->depth || w->fp < w->sp || (w->fp & 7))
		return 1;
	if (bpf_probe_read_user(frame, sizeof(frame), (void *)w->fp) || !frame[1])
		return 1;
	w->frames[(i + 1) & MT_STACK_DEPTH_MASK] = frame[1];
	w->nr = i + 2;
	if (frame[0] <= w->fp)
		return 1;
	w->fp = frame[0];
	return 0;
}

/*
 * A frame-pointer walk from allocator entry misses the caller: its return
 * address is at [sp], not in a frame yet. Read it first, then follow the
 * frame pointers. The walk is ours rather than bpf_get_stack's: one 16-byte
 * read per frame is several times cheaper, and it stops as soon as a frame
 * pointer stops climbing the stack, which is where code built without frame
 * pointers leaves garbage. The walk goes into this CPU's scratch stack from
 * its frame FIRST (0 or 1): a global function, so what follows a walk is
 * verified once, not once for each count of frames the walk can end with.
 */
__noinline __u32 walk_frames(__u64 sp, __u64 fp, __u32 first, __u32 depth)
{
	struct stack_scratch *s;
	struct fp_walk w = { .sp = sp, .fp = fp, .depth = depth, .nr = 1 };
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return 0;
	w.frames = &s->ev.frames[first & 1];
	if (bpf_probe_read_user(&w.frames[0], sizeof(__u64), (void *)sp))
		return 0;
	bpf_loop(MT_MAX_STACK_DEPTH - 1, fp_step, &w, 0);
	return w.nr & MT_STACK_DEPTH_MASK;
}

#include "unwind.bpf.h"

/* Where this CPU notes that it sent the stack ID for SLOT, and in *KEY what
 * the note says then (seen per target: each trace must get every stack it
 * uses); NULL without the map. */
static __always_inline __u64 *seen_note(__u64 id, __u32 slot, __u64 *key)
{
	struct stacks_seen *seen;
	__u32 zero = 0;

	*key = id ^ seen_mix(slot);
	seen = bpf_map_lookup_elem(&stacks_seen, &zero);
	return seen ? &seen->hash[*key & (SEEN_SLOTS - 1)] : NULL;
}

/* This CPU has sent the stack ID for SLOT already. */
static __always_inline bool stack_seen(__u64 id, __u32 slot)
{
	__u64 key, *note = seen_note(id, slot, &key);

	return note && *note == key;
}

/* The id of the NR frames walked into EV (this CPU's scratch), the stack
 * sent to user space first unless this CPU sent it for SLOT already. */
static __always_inline __u64 stack_sent(struct mt_stack_event *ev, __u32 nr, __u32 slot, __u32 tid, __u64 ts)
{
	__u64 key, *note;

	ev->stack_id = hash_frames(nr);
	note = seen_note(ev->stack_id, slot, &key);
	if (note && *note != key) {
		ev->hdr.tid = tid;
		ev->hdr.ts = ts;
		send_stack(slot, ev, nr, note, key);
	}
	return ev->stack_id;
}

/*
 * Stack templates. A table walk is a function of where it starts (pc, sp,
 * bp, if a frame's rule used it), of the tables (unwind_gen) and of the stack words it reads: a call
 * made from the same place, with the same words at the addresses its walk
 * read, has the same frames. A loop that allocates, a server's path through
 * a request, call the allocator again and again at the same depth, and
 * checking the few words a template noted costs less than walking the
 * frames again (a table lookup each) and hashing them. Per CPU, one
 * template per (pc, sp, bp) hash.
 */
struct stack_template {
	__u64 key;   /* template_key; 0 while being written */
	__u64 pc, sp, bp;
	__u64 stack_id;
	__u32 gen;   /* the slot's unwind_gen when it was walked */
	__u32 slot;
	__u32 words; /* in word_addr and word_val, <= WALK_WORDS */
	__u16 bp_used; /* bp is part of it: else code without frame pointers, whose rbp holds data */
	__u16 in_window; /* every word lies in the window copied from sp (word_idx < STACK_WINDOW / 8) */
	__u32 span;    /* bytes from sp that hold every noted word within STACK_WINDOW (8-aligned) */
	__u32 epoch;   /* the slot's target_epoch: its stack was sent to that trace */
	__u64 word_addr[WALK_WORDS];
	__u64 word_val[WALK_WORDS];
	/* Each word's index in the window copied from sp, WORD_OUTSIDE if none:
	 * the template is keyed by sp, so where a word lies in the window is
	 * known when it is saved. */
	__u16 word_idx[WALK_WORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* CPUs << MT_TEMPLATE_BITS, set before load (1: no stacks or tables) */
	__type(key, __u32);
	__type(value, struct stack_template);
} stack_templates SEC(".maps");

static __always_inline __u64 template_key(__u64 pc, __u64 sp, __u32 slot)
{
	return ((((pc * 0x9e3779b97f4a7c15ULL) ^ sp) * 0xff51afd7ed558ccdULL) ^ ((__u64)SLOT(slot) << 48)) | 1;
}

static __always_inline struct stack_template *template_for(__u64 key)
{
	__u32 idx = (bpf_get_smp_processor_id() << MT_TEMPLATE_BITS) | (__u32)(key >> (64 - MT_TEMPLATE_BITS));

	return bpf_map_lookup_elem(&stack_templates, &idx);
}

struct template_words {
	struct stack_template *t;
	struct stack_scratch *s;
	bool win;
	bool differ;
};

/* Word I of a template the window does not hold all of, checked (bpf_loop's
 * callback: verified once, where a loop of WALK_WORDS steps, each reading
 * the word one of two ways, was verified step by step). */
static long template_word(__u32 i, void *ctx)
{
	struct template_words *c = ctx;
	__u32 idx = c->t->word_idx[i & (WALK_WORDS - 1)];
	__u64 val;

	if (c->win && idx < STACK_WINDOW / 8)
		val = c->s->window[idx];
	else if (bpf_probe_read_user(&val, sizeof(val), (void *)c->t->word_addr[i & (WALK_WORDS - 1)]))
		val = ~c->t->word_val[i & (WALK_WORDS - 1)];
	c->differ = val != c->t->word_val[i & (WALK_WORDS - 1)];
	return c->differ;
}

/* The stack id of this CPU's template for a walk from PC, SP, BP in SLOT
 * if every word it noted is still there; else 0. A stack whose id is 1 (a
 * hash of 0 or 1: hash_frames) is never taken from a template. Copies the
 * part of the stack's top the words lie in into the scratch window; a walk
 * after a miss reads the window itself (misses are rare, and one more state
 * per word made the verifier's work of the loop several times larger). A
 * global function: the verifier checks its loop once. */
__noinline __u64 template_check(__u64 pc, __u64 sp, __u64 bp, __u32 slot)
{
	__u64 key = template_key(pc, sp, slot), id;
	struct stack_template *t = template_for(key);
	struct stack_scratch *s;
	__u32 zero = 0, n, span;
	bool win;

	if (!t || t->key != key || t->pc != pc || t->sp != sp || (t->bp_used && t->bp != bp) ||
	    t->slot != SLOT(slot) || t->gen != unwind_gen[SLOT(slot)] || t->epoch != target_epoch[SLOT(slot)])
		return 0;
	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	n = t->words;
	span = t->span;
	if (!s || n > WALK_WORDS)
		return 0;
	/* Only the bytes the noted words are in: a walk of a few frames notes
	 * words within a few hundred bytes of sp, and the copy costs by its
	 * length. A stack whose top is closer than that to the end of its
	 * mapping (main's, near the environment) is read a word at a time. */
	if (span > 8 && span <= STACK_WINDOW)
		/* the mask only shows the verifier the bound: 1..STACK_WINDOW */
		win = !bpf_probe_read_user(s->window, ((span - 1) & (STACK_WINDOW - 1)) + 1, (void *)sp);
	else
		win = false;
	if (win && t->in_window) {
		/* The common case, in a loop that calls nothing and so keeps its
		 * values in registers (the mask only shows the verifier the bound). */
		for (__u32 i = 0; i < WALK_WORDS; i++) {
			if (i >= n)
				break;
			if (s->window[t->word_idx[i] & (STACK_WINDOW / 8 - 1)] != t->word_val[i])
				return 0;
		}
	} else {
		struct template_words c = { .t = t, .s = s, .win = win };

		if (bpf_loop(n, template_word, &c, 0) != n || c.differ)
			return 0;
	}
	id = t->stack_id;
	barrier();
	return t->key == key ? id : 0; /* not rewritten meanwhile (a preempting walk on this CPU) */
}

/* A template of the table walk just made from PC, SP, BP in SLOT_GEN's slot
 * (its high half) with the tables of its gen (the low half), whose stack is
 * ID: the words it read are in the scratch. 1: saved. */
__noinline int template_save(__u64 pc, __u64 sp, __u64 bp, __u64 slot_gen, __u64 id)
{
	__u32 slot = slot_gen >> 32, gen = (__u32)slot_gen;
	__u64 key = template_key(pc, sp, slot);
	struct stack_template *t = template_for(key);
	struct stack_scratch *s;
	__u32 zero = 0, n;

	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!t || !s || !id)
		return 0;
	n = s->words;
	if (n > WALK_WORDS)
		return 0;
	if (s->walk_sp != sp)
		return 0; /* a walk from elsewhere noted these words */
	t->key = 0;
	barrier();
	t->span = s->span;
	t->pc = pc;
	t->sp = sp;
	t->bp = bp;
	t->bp_used = s->bp_used;
	t->slot = SLOT(slot);
	t->gen = gen;
	t->epoch = s->epoch;
	t->stack_id = id;
	t->words = n;
	/* Copies of the N words noted, not a loop: a loop of WALK_WORDS
	 * steps was 6 k of the load's verified instructions. */
	if (bpf_probe_read_kernel(t->word_addr, n * sizeof(__u64), s->word_addr) ||
	    bpf_probe_read_kernel(t->word_val, n * sizeof(__u64), s->word_val) ||
	    bpf_probe_read_kernel(t->word_idx, n * sizeof(__u16), s->word_idx))
		return 0; /* the key stays 0: no template */
	t->in_window = !s->outside;
	barrier();
	t->key = key;
	return 1;
}

/* TS: the stack event's time (0: none); its thread is looked up only if it is sent. */
static __always_inline __u64 take_stack(struct pt_regs *ctx, __u32 slot, __u64 ts)
{
	__u32 zero = 0;
	struct stack_scratch *scratch;
	struct mt_stack_event *ev;
	__u32 depth = stack_depth, gen;
	__u64 id;
	__u32 nr;

	if (depth == 0)
		return 0;
	scratch = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!scratch)
		return 0;
	ev = &scratch->ev;
	/* The same stack as this CPU's template of it: done. A template is
	 * saved only once its stack has reached this trace (its epoch), so
	 * that need not be looked up again. */
	id = template_check(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), slot);
	if (id > 1) {
		scratch->from_template++;
		return id;
	}
	/* Unwind tables where user space gave the allocator's module one,
	 * else frame pointers. */
	gen = unwind_gen[SLOT(slot)];
	scratch->epoch = target_epoch[SLOT(slot)];
	nr = walk_tables(ctx, scratch, slot, depth);
	if (nr) {
		scratch->walked++;
		id = stack_sent(ev, nr, slot, (__u32)bpf_get_current_pid_tgid(), ts);
		/* not if the ring had no room for the stack: the next call sends it */
		if (stack_seen(id, slot))
			template_save(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), (__u64)slot << 32 | gen, id);
		return id;
	}
	nr = walk_frames(PT_REGS_SP(ctx), PT_REGS_FP(ctx), 0, depth);
	return nr ? stack_sent(ev, nr, slot, (__u32)bpf_get_current_pid_tgid(), ts) : 0;
}

/* TASK's state (the current thread's: bpf_get_current_task_btf). A probe
 * that needs the thread's ids too reads them from the task (task->pid,
 * task->tgid) rather than pay bpf_get_current_pid_tgid's call as well. */
static __always_inline struct thread_state *task_state(struct task_struct *task, bool create)
{
	return bpf_task_storage_get(&threads, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

static __always_inline struct thread_state *thread_state(bool create)
{
	return task_state(bpf_get_current_task_btf(), create);
}

/* True for a call made from inside an allocator call still open on this
 * thread; equal stack pointers are a tail call (operator delete jumping to
 * free). An open call whose frame is gone (longjmp, exception) is stale. */
static __always_inline bool nested(const struct thread_state *st, __u64 sp)
{
	return st->depth && sp <= st->sp;
}

/*
 * The privilege boundary. A recorder without CAP_SYS_PTRACE (a setcap'd
 * memtrace run by a user) may see only what the kernel's ptrace rule would
 * let it see: a process whose real, effective and saved uids and gids are
 * the recorder's, with no capability the recorder lacks. A process that
 * crosses it (a setuid, setgid or file-capability exec, setuid() to another
 * user, a capability gain) is not recorded from that moment on: the check
 * is here, before any event is made, so none crosses; user space only
 * reports it. Sticky: a process that later drops what it gained stays
 * unrecorded, as it has held secrets meanwhile.
 */
const volatile bool check_creds = false;
const volatile __u32 allowed_uid = 0;
const volatile __u32 allowed_gid = 0;
const volatile __u64 allowed_caps = 0;  /* the recorder's permitted capabilities */
volatile __u32 creds_changed[MT_MAX_TARGETS]; /* per slot: enum mt_creds_change bits; 0: none */
char creds_comm[MT_MAX_TARGETS][16];           /* the thread's name when it was seen */

static __always_inline bool creds_traceable(__u32 slot)
{
	struct task_struct *task;
	const struct cred *c;
	__u64 caps = 0;
	__u32 why = 0;

	if (!check_creds)
		return true;
	if (creds_changed[SLOT(slot)])
		return false;
	task = (struct task_struct *)bpf_get_current_task();
	c = BPF_CORE_READ(task, cred);
	if (BPF_CORE_READ(c, uid.val) != allowed_uid || BPF_CORE_READ(c, euid.val) != allowed_uid ||
	    BPF_CORE_READ(c, suid.val) != allowed_uid)
		why |= MT_CREDS_UID;
	if (BPF_CORE_READ(c, gid.val) != allowed_gid || BPF_CORE_READ(c, egid.val) != allowed_gid ||
	    BPF_CORE_READ(c, sgid.val) != allowed_gid)
		why |= MT_CREDS_GID;
	/* 64 bits at the field, whether kernel_cap_t is a u64 or two u32s. */
	bpf_probe_read_kernel(&caps, sizeof(caps),
			      (void *)c + bpf_core_field_offset(struct cred, cap_permitted));
	if (caps & ~allowed_caps)
		why |= MT_CREDS_CAPS;
	if (!why)
		return true;
	bpf_get_current_comm(creds_comm[SLOT(slot)], sizeof(creds_comm[0]));
	creds_changed[SLOT(slot)] = why;
	return false;
}

#define NO_TARGET 0xffffffffU

/*
 * targets again, direct-mapped by the tgid's low bits: tgid | slot << 32, 0
 * where none (user space writes each entry with one 8-byte store through a
 * mapping). An array lookup is inlined where the hash's cost a followed
 * process's every probe hit about 90 ns here; a tgid whose entry another
 * process holds is found in the hash.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MT_TARGETS_FAST);
	__type(key, __u32);
	__type(value, __u64);
} targets_fast SEC(".maps");

/* The slot of the process TGID if it is recorded now, else NO_TARGET. */
static __always_inline __u32 target_slot(__u32 tgid)
{
	__u32 idx = tgid & (MT_TARGETS_FAST - 1), s;
	__u64 *fast = bpf_map_lookup_elem(&targets_fast, &idx);
	__u64 f = fast ? *(volatile __u64 *)fast : 0;
	__u32 *slot;

	if (f && (__u32)f == tgid) {
		s = f >> 32;
	} else {
		slot = bpf_map_lookup_elem(&targets, &tgid);
		if (!slot)
			return NO_TARGET;
		s = *slot;
	}
	if (s >= max_targets || !recording[SLOT(s)] || !creds_traceable(s))
		return NO_TARGET;
	return SLOT(s);
}

/* The slot of the process an allocator probe fired in. Its link was
 * attached for that one process (the kernel runs the program for no other
 * thread group), so a recording of one process needs no lookup; the
 * processes of a followed tree share the programs, and the map tells them
 * apart. */
static __always_inline __u32 probe_slot(__u64 pid_tgid)
{
	if (max_targets == 1)
		return recording[0] && creds_traceable(0) ? 0 : NO_TARGET;
	return target_slot(pid_tgid >> 32);
}

/* Lanes (struct mt_lane_ctl): one per target and CPU, index slot * nr_cpus + cpu. */
const volatile __u64 lane_mask = 0; /* lane bytes - 1; 0: no lanes, the ring buffer only */

struct lane_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	/* MT_LANE_DATA + lane bytes + MT_LANE_SLACK, set before load */
	__uint(value_size, sizeof(struct mt_lane_ctl) + 4096 + MT_LANE_SLACK);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* set to max_targets * CPUs before load */
	__type(key, __u32);
	__array(values, struct lane_inner);
} lanes SEC(".maps");

/*
 * A lane has one writer at a time: its CPU's probe. A probe preempted
 * mid-record must not let another probe on that CPU write over it. Where the
 * programs run as uprobe sessions (kernel 6.13 or later, so bpf_preempt_disable
 * of 6.10 is there) the probe turns preemption off while it holds the lane:
 * two per-CPU counter updates. Elsewhere it takes the lane's busy flag with an
 * atomic exchange, whose locked instruction cost about 10 ns a record in
 * profiles on a fast-trap host. Probes never run in interrupt context, so
 * nothing else can write the lane while preemption is off.
 */
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

static __always_inline bool lane_take(struct mt_lane_ctl *c)
{
	if (session_mode) {
		bpf_preempt_disable();
		return true;
	}
	return !__sync_lock_test_and_set(&c->busy, 1);
}

static __always_inline void lane_give(struct mt_lane_ctl *c)
{
	if (session_mode)
		bpf_preempt_enable();
	else
		*(volatile __u64 *)&c->busy = 0;
}

/* Room for SIZE bytes (8-byte aligned, <= MT_LANE_SLACK) in this CPU's lane
 * of SLOT, which the caller then owns: it writes the record and gives it
 * with lane_commit. NULL: no lane, full, or in use on this CPU by a probe
 * that was preempted; the record goes through the ring buffer instead. */
static __always_inline void *lane_reserve(__u32 slot, __u32 size, struct mt_lane_ctl **out)
{
	__u32 idx = slot * nr_cpus + bpf_get_smp_processor_id(), zero = 0;
	struct mt_lane_ctl *c;
	void *lane;
	__u64 head;

	if (!lane_mask)
		return NULL;
	lane = bpf_map_lookup_elem(&lanes, &idx);
	if (!lane)
		return NULL;
	c = bpf_map_lookup_elem(lane, &zero);
	if (!c)
		return NULL;
	if (!lane_take(c))
		return NULL;
	head = c->head;
	if (head - *(volatile __u64 *)&c->tail + size > lane_mask + 1) {
		lane_give(c);
		return NULL;
	}
	*out = c;
	return (void *)c + sizeof(*c) + (head & lane_mask);
}

/* Publish the record lane_reserve gave: its bytes before the new head (x86
 * keeps stores in order; the barrier keeps the compiler from moving them). */
static __always_inline void lane_commit(struct mt_lane_ctl *c, __u32 size)
{
	asm volatile("" ::: "memory");
	*(volatile __u64 *)&c->head = c->head + size;
	lane_give(c);
}

/* Room for a record of SIZE (a constant) for SLOT: in this CPU's lane, else
 * in its ring buffer; NULL, counted as a drop, if neither has room. *LANE:
 * the lane it is in, NULL for the ring buffer. */
static __always_inline void *record_reserve(__u32 slot, __u32 size, struct mt_lane_ctl **lane)
{
	void *ev = lane_reserve(slot, size, lane), *ring;

	if (ev)
		return ev;
	ring = cpu_ring(slot);
	if (ring && (ev = bpf_ringbuf_reserve(ring, size, 0)))
		return ev;
	count_drop(slot);
	return NULL;
}

/* Hand over the record EV that record_reserve gave (in LANE, or the ring). */
static __always_inline void record_commit(void *ev, struct mt_lane_ctl *lane, __u32 size)
{
	if (lane)
		lane_commit(lane, size);
	else
		bpf_ringbuf_submit(ev, SUBMIT_FLAGS);
}

static __always_inline void emit_free(__u32 slot, __u32 tid, __u64 ptr)
{
	struct mt_lane_ctl *lane = NULL;
	struct mt_free_event *ev = record_reserve(slot, sizeof(*ev), &lane);

	if (!ev)
		return;
	ev->hdr.type = MT_EVENT_FREE;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = tid;
	ev->hdr.ts = bpf_ktime_get_ns();
	ev->ptr = ptr;
	record_commit(ev, lane, sizeof(*ev));
}

static __always_inline void emit_alloc(__u32 slot, __u32 tid, __u16 type, __u64 ptr, __u64 old_ptr, __u64 size,
				       __u64 stack_id)
{
	struct mt_lane_ctl *lane = NULL;
	struct mt_alloc_event *ev = record_reserve(slot, sizeof(*ev), &lane);

	if (!ev)
		return;
	ev->hdr.type = type;
	ev->hdr.size = sizeof(*ev);
	ev->hdr.tid = tid;
	ev->hdr.ts = bpf_ktime_get_ns();
	ev->ptr = ptr;
	ev->size = size;
	ev->old_ptr = old_ptr;
	ev->stack_id = stack_id;
	record_commit(ev, lane, sizeof(*ev));
}

struct sample_state {
	__s64 left;    /* bytes until the next sample point */
	__u64 drawn;   /* left has been drawn */
};

/* Per CPU rather than per thread: the bytes allocated on a CPU are still a
 * Poisson process, and an unsampled call then needs no thread state at all. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sample_state);
} sample_state SEC(".maps");

static __always_inline __s64 sample_gap(void)
{
	return sample_gaps[bpf_get_prandom_u32() & (MT_SAMPLE_GAPS - 1)];
}

/* Byte-based Poisson sampling: every byte is a sample point with
 * probability 1/sample_mean, so the gaps between points are exponential.
 * A block is sampled when a point falls in it; it then stands for 1/p
 * blocks, p = 1 - exp(-size/mean) (the analysis weighs it so). */
static __always_inline bool pick_sample(__u64 size)
{
	__u32 zero = 0;
	struct sample_state *ss;

	if (!sample_mean)
		return true;
	ss = bpf_map_lookup_elem(&sample_state, &zero);
	if (!ss)
		return true;
	if (!ss->drawn) {
		ss->left = sample_gap();
		ss->drawn = 1;
	}
	ss->left -= size;
	if (ss->left > 0)
		return false;
	/* Memoryless: the distance to the next point past this block is a fresh draw. */
	ss->left = sample_gap();
	return true;
}

/* A bit per hash of every pointer ever sampled: most frees are of blocks
 * never sampled, and one bit read spares them the hash map. Bits are never
 * cleared; a stale one only costs the map lookup it would have cost anyway. */
#define SAMPLED_BITS_LOG2 20
__u64 sampled_bits[(1 << SAMPLED_BITS_LOG2) / 64];

static __always_inline __u32 sampled_bit(__u64 ptr)
{
	return ((ptr >> 4) * 0x9e3779b97f4a7c15ULL) >> (64 - SAMPLED_BITS_LOG2);
}

/* A sampled block's key: its pointer, and its target's slot above any user
 * address, since forked processes share their addresses. */
static __always_inline __u64 sampled_key(__u32 slot, __u64 ptr)
{
	return ptr ^ ((__u64)slot << 48);
}

static __always_inline bool maybe_sampled(__u32 slot, __u64 ptr)
{
	__u32 bit = sampled_bit(sampled_key(slot, ptr));

	return sampled_bits[(bit / 64) & ((1 << SAMPLED_BITS_LOG2) / 64 - 1)] & (1ULL << (bit % 64));
}

/* A sampled mode free only matters for a sampled block; this forgets it. */
static __always_inline bool forget_sampled(__u32 slot, __u64 ptr)
{
	__u64 key = sampled_key(slot, ptr);

	if (!sample_mean)
		return true;
	return maybe_sampled(slot, ptr) && bpf_map_delete_elem(&sampled, &key) == 0;
}

/* Remember a sampled block; if it cannot be remembered its free would be
 * lost, so it is dropped (and counted) instead. */
static __always_inline bool remember_sampled(__u32 slot, __u64 ptr)
{
	__u64 key = sampled_key(slot, ptr);
	__u32 bit = sampled_bit(key);
	__u8 one = 1;

	if (!sample_mean)
		return true;
	__sync_fetch_and_or(&sampled_bits[(bit / 64) & ((1 << SAMPLED_BITS_LOG2) / 64 - 1)],
			    1ULL << (bit % 64));
	if (bpf_map_update_elem(&sampled, &key, &one, BPF_ANY) == 0)
		return true;
	count_drop(slot);
	return false;
}

#include "python.bpf.h"

/* SLOT: the caller's target_slot, looked up once per hit; COOKIE: the
 * probe's attach cookie, read once per hit (a helper call each time). */
static __always_inline int on_alloc_enter(struct pt_regs *ctx, __u32 slot, __u32 kind, __u64 size, __u64 arg,
					  __u64 cookie)
{
	__u64 sp = PT_REGS_SP(ctx);
	struct thread_state *st;
	bool sampled;

	if (slot == NO_TARGET)
		return 0;
	count_hit(slot, false);
	/* allocs_open is read only under --budget: exact mode keeps it open, and
	 * the load of a line no other probe touches showed in profiles. */
	sampled = kind == MT_KIND_FREE || ((!count_hits || allocs_open[slot]) && pick_sample(size));
	/* Nothing to learn from the return of an unsampled call that cannot nest:
	 * a session cancels it. A realloc's return may still free a sampled block. */
	if (!sampled && session_mode && !(cookie & MT_COOKIE_MAY_NEST) &&
	    kind != MT_KIND_REALLOC && kind != MT_KIND_REALLOCARRAY)
		return 1;
	/*
	 * A call that cannot call another probed function, outside any open
	 * allocator call, needs no thread state: no call can nest in it. Where
	 * no stack is taken, its return needs only its size, which the session's
	 * cookie carries. The thread's state is looked up, not made, to tell
	 * whether the call is nested. Not under --rss: the mappings and first
	 * writes made inside an allocator call are told apart by the thread's
	 * open call (maps.bpf.h).
	 */
	if (session_mode && !stack_depth && !trace_maps && sampled && !(cookie & MT_COOKIE_MAY_NEST) &&
	    size <= MT_FAST_SIZE &&
	    (kind == MT_KIND_MALLOC || kind == MT_KIND_CALLOC || kind == MT_KIND_MEMALIGN)) {
		st = thread_state(false);
		if (!st || !(nested(st, sp) && (!count_hits || st->window == window_gen[slot]))) {
			*bpf_session_cookie() = MT_FAST | (__u64)SLOT(slot) << MT_FAST_SLOT_SHIFT | size;
			return 0;
		}
	}
	st = thread_state(true);
	if (!st)
		return 0;
	if (count_hits && st->window != window_gen[slot]) {
		st->window = window_gen[slot];
		st->depth = 0; /* its return fell outside the last window */
	}
	if (nested(st, sp)) {
		st->depth++;
		return 0;
	}
	st->sampled = sampled;
	st->slot = slot;
	st->depth = 1;
	st->sp = sp;
	st->kind = kind;
	st->size = size;
	st->arg = arg;
	st->stack_id = st->sampled && kind != MT_KIND_FREE ? take_stack(ctx, slot, 0) : 0;
	if (py_walk && st->stack_id && py_layout[SLOT(slot)].runtime)
		st->stack_id = py_stack(slot, st->stack_id, (__u32)bpf_get_current_pid_tgid());
	return 0;
}

/* free has no return probe: it never calls back into a probed function. */
static __always_inline int on_free_enter(struct pt_regs *ctx, __u64 ptr)
{
	struct task_struct *task = NULL;
	struct thread_state *st;
	__u32 slot;

	/* The task only where it is needed: in sampled mode most frees are of
	 * blocks never sampled, and a recording of one process needs no tgid. */
	if (max_targets == 1) {
		slot = probe_slot(0);
	} else {
		task = bpf_get_current_task_btf();
		slot = probe_slot((__u64)task->tgid << 32);
	}
	if (slot == NO_TARGET || !ptr)
		return 0;
	count_hit(slot, false);
	if (sample_mean && !maybe_sampled(slot, ptr))
		return 0; /* never sampled: nothing to say, whatever the nesting */
	if (!task)
		task = bpf_get_current_task_btf();
	st = task_state(task, false);
	if (st && nested(st, PT_REGS_SP(ctx)))
		return 0;
	if (st)
		st->depth = 0; /* whatever was open is gone */
	if (forget_sampled(slot, ptr))
		emit_free(slot, task->pid, ptr);
	return 0;
}

/* operator delete: emits the free, and stays open so the free inside is not
 * counted a second time. */
static __always_inline int on_delete_enter(struct pt_regs *ctx, __u64 ptr, __u64 cookie)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 slot = probe_slot((__u64)task->tgid << 32);
	struct thread_state *st;

	if (slot == NO_TARGET)
		return 0;
	/* on_alloc_enter below counts the hit */
	st = task_state(task, true);
	if (st && !nested(st, PT_REGS_SP(ctx)) && ptr && forget_sampled(slot, ptr))
		emit_free(slot, task->pid, ptr);
	return on_alloc_enter(ctx, slot, MT_KIND_FREE, 0, 0, cookie);
}

static __always_inline void finish_realloc(__u32 tid, struct thread_state *st, __u64 ret)
{
	/* In sampled mode the old block is only of interest if it was sampled. */
	__u64 old = st->arg && forget_sampled(st->slot, st->arg) ? st->arg : 0;

	if (ret && st->sampled && remember_sampled(st->slot, ret))
		emit_alloc(st->slot, tid, old ? MT_EVENT_REALLOC : MT_EVENT_ALLOC, ret, old, st->size, st->stack_id);
	else if (old && (ret || st->size == 0))
		emit_free(st->slot, tid, old); /* moved unsampled, or glibc's realloc(p, 0) */
}

/* The return of a call whose entry took the cookie's way (on_alloc_enter). */
static __always_inline int on_fast_exit(struct pt_regs *ctx, __u64 cookie)
{
	__u32 slot = SLOT(cookie >> MT_FAST_SLOT_SHIFT);
	__u64 ret = PT_REGS_RC(ctx);

	count_hit(slot, true);
	if (!recording[slot] || !creds_traceable(slot))
		return 0;
	if (ret && remember_sampled(slot, ret))
		emit_alloc(slot, (__u32)bpf_get_current_pid_tgid(), MT_EVENT_ALLOC, ret, 0, cookie & MT_FAST_SIZE, 0);
	return 0;
}

/* SESSION: run as a session's return (the entry program), not as a uretprobe. */
static __always_inline int on_exit(struct pt_regs *ctx, bool session)
{
	struct task_struct *task;
	__u32 tid;
	struct thread_state *st;
	__u64 ret = PT_REGS_RC(ctx), cookie;
	__u64 ptr = 0;

	if (session && !stack_depth) {
		cookie = *bpf_session_cookie();
		if (cookie & MT_FAST)
			return on_fast_exit(ctx, cookie);
	}
	task = bpf_get_current_task_btf();
	tid = task->pid;
	st = task_state(task, false);
	if (!st || !st->depth)
		return 0;
	count_hit(st->slot, true);
	if (--st->depth || !recording[SLOT(st->slot)] || !creds_traceable(st->slot))
		return 0; /* creds: another thread's setuid() may land mid-call */
	switch (st->kind) {
	case MT_KIND_FREE:
		break;
	case MT_KIND_REALLOC:
	case MT_KIND_REALLOCARRAY:
		finish_realloc(tid, st, ret);
		break;
	case MT_KIND_POSIX_MEMALIGN:
		if (ret == 0 && !bpf_probe_read_user(&ptr, sizeof(ptr), (void *)st->arg))
			ret = ptr;
		else
			ret = 0;
		/* fall through */
	default:
		if (ret && st->sampled && remember_sampled(st->slot, ret))
			emit_alloc(st->slot, tid, MT_EVENT_ALLOC, ret, 0, st->size, st->stack_id);
	}
	return 0;
}

/*
 * Entry programs. Attached as uprobe sessions (kernel >= 6.13) the same
 * program also runs at the return; otherwise alloc_exit is attached as the
 * return probe. Outside a session the return value is ignored.
 */
static __always_inline bool session_return(void)
{
	return session_mode && bpf_session_is_return();
}

/*
 * Argument I (0-based) where the probed instruction finds it: the ABI
 * register DFLT was read from, unless the attach cookie says the code before
 * the probe moved it (see MT_COOKIE_ARG_SHIFT): a probe moved past such a
 * copy to an emulated instruction still reads the right value.
 */
/* One register of the context at a constant offset. Plain field reads in
 * the switch below get merged by clang into one load at a computed offset,
 * which the verifier refuses for a context pointer; an asm load cannot be. */
#define CTX_REG(ctx, field)                                                          \
	({                                                                           \
		__u64 __v;                                                           \
		asm volatile("%0 = *(u64 *)(%1 + %2)"                                \
			     : "=r"(__v)                                             \
			     : "r"(ctx), "i"(__builtin_offsetof(struct pt_regs, field))); \
		__v;                                                                 \
	})

static __always_inline __u64 probe_arg(struct pt_regs *ctx, __u64 cookie, int i, __u64 dflt)
{
	switch ((cookie >> (MT_COOKIE_ARG_SHIFT + 4 * i)) & 15) {
	case MT_ARG_RAX: return CTX_REG(ctx, ax);
	case MT_ARG_RBX: return CTX_REG(ctx, bx);
	case MT_ARG_RCX: return CTX_REG(ctx, cx);
	case MT_ARG_RDX: return CTX_REG(ctx, dx);
	case MT_ARG_RSI: return CTX_REG(ctx, si);
	case MT_ARG_RDI: return CTX_REG(ctx, di);
	case MT_ARG_R8: return CTX_REG(ctx, r8);
	case MT_ARG_R9: return CTX_REG(ctx, r9);
	case MT_ARG_R10: return CTX_REG(ctx, r10);
	case MT_ARG_R11: return CTX_REG(ctx, r11);
	case MT_ARG_R12: return CTX_REG(ctx, r12);
	case MT_ARG_R13: return CTX_REG(ctx, r13);
	case MT_ARG_R14: return CTX_REG(ctx, r14);
	case MT_ARG_R15: return CTX_REG(ctx, r15);
	default: return dflt;
	}
}

/*
 * Every allocation function's entry, its kind in the attach cookie: one
 * program, so the verifier checks the stack walk once rather than once per
 * kind (it was 0.2-0.5 s a copy, six copies, paid before any target ran).
 */
SEC("uprobe")
int BPF_KPROBE(alloc_enter, __u64 a0, __u64 a1, __u64 a2)
{
	__u64 cookie, size, arg = 0;
	__u32 kind;

	if (session_return())
		return on_exit(ctx, true);
	cookie = bpf_get_attach_cookie(ctx);
	kind = (cookie >> MT_COOKIE_KIND_SHIFT) & MT_COOKIE_KIND_MASK;
	/* The arguments only: the walk below must stay one inlined copy. */
	switch (kind) {
	case MT_KIND_CALLOC:
		size = probe_arg(ctx, cookie, 0, a0) * probe_arg(ctx, cookie, 1, a1);
		break;
	case MT_KIND_REALLOC:
		size = probe_arg(ctx, cookie, 1, a1);
		arg = probe_arg(ctx, cookie, 0, a0);
		break;
	case MT_KIND_REALLOCARRAY:
		size = probe_arg(ctx, cookie, 1, a1) * probe_arg(ctx, cookie, 2, a2);
		arg = probe_arg(ctx, cookie, 0, a0);
		break;
	case MT_KIND_MEMALIGN:
		size = probe_arg(ctx, cookie, 1, a1);
		break;
	case MT_KIND_POSIX_MEMALIGN:
		size = probe_arg(ctx, cookie, 2, a2);
		arg = probe_arg(ctx, cookie, 0, a0);
		break;
	default:
		kind = MT_KIND_MALLOC;
		size = probe_arg(ctx, cookie, 0, a0);
	}
	/* No helper call for the thread where one process is recorded: entry needs no tid. */
	return on_alloc_enter(ctx, probe_slot(max_targets == 1 ? 0 : bpf_get_current_pid_tgid()), kind, size, arg,
			      cookie);
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 ptr) { return on_free_enter(ctx, probe_arg(ctx, bpf_get_attach_cookie(ctx), 0, ptr)); }

SEC("uprobe")
int BPF_KPROBE(delete_enter, __u64 ptr)
{
	__u64 cookie;

	if (session_return())
		return on_exit(ctx, true);
	cookie = bpf_get_attach_cookie(ctx);
	return on_delete_enter(ctx, probe_arg(ctx, cookie, 0, ptr), cookie);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_exit) { return on_exit(ctx, false); }

/* Empty programs at the same sites: the floor `make bench` measures against. */
SEC("uprobe")
int BPF_KPROBE(empty_enter) { return 0; }

SEC("uretprobe")
int BPF_KRETPROBE(empty_exit) { return 0; }

/* ... and as one uprobe session, entry and return (returning 0 keeps the return). */
SEC("uprobe")
int BPF_KPROBE(empty_session) { return 0; }

/*
 * The least an exact recorder does, the bench's row R: each malloc's return
 * and each free writes one record with its time, thread, pointer (and size,
 * carried from the entry in the session's cookie) and nothing else: no
 * thread state, no nesting, no stack, no sampling, one process. What memtrace
 * costs above R is its own logic; what R costs above the empty probes is the
 * clock and the record, which no exact trace can leave out. Sessions only.
 */
SEC("uprobe")
int BPF_KPROBE(least_session, __u64 size)
{
	if (!bpf_session_is_return())
		*bpf_session_cookie() = size;
	else if (recording[0])
		emit_alloc(0, (__u32)bpf_get_current_pid_tgid(), MT_EVENT_ALLOC, PT_REGS_RC(ctx), 0,
			   *bpf_session_cookie(), 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(least_free, __u64 ptr)
{
	if (recording[0] && ptr)
		emit_free(0, (__u32)bpf_get_current_pid_tgid(), ptr);
	return 0;
}

#include "marks.bpf.h"
#include "threads.bpf.h"

/* The dynamic linker's debugger hook (_dl_debug_state) runs whenever
 * dlopen or dlclose changes the link map: user space then looks for new
 * modules at once instead of at its next periodic look. */
volatile __u32 link_map_changed[MT_MAX_TARGETS];

SEC("uprobe")
int BPF_KPROBE(link_map_hit)
{
	__u32 slot = target_slot(bpf_get_current_pid_tgid() >> 32);

	if (slot != NO_TARGET)
		link_map_changed[slot] = 1;
	return 0;
}

#include "maps.bpf.h"
