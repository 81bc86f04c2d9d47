/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stacks of code built without frame pointers (what distributions ship):
 * walked with unwind tables user space builds from each module's call frame
 * information (user/record/unwind_table.h) and writes into the maps below. Per
 * frame: find the mapping of the pc, the row of its module that applies,
 * compute the CFA, read the return address at CFA - 8 and the caller's rbp
 * where the row says, go on from the caller. Frame-pointer code is walked
 * by its table too: a shortcut by rbp alone cannot tell the outermost frame
 * (_start) from one whose rbp holds a caller's scratch value.
 *
 * Why not copy the stack to user space and unwind there (perf --call-graph
 * dwarf): it copies kilobytes per event to user space, for every
 * allocation, and unwinds there; a walk here copies the top 2 KiB of the
 * stack within the kernel and sends only the frames. See docs/unwinding.md.
 */
#ifndef MEMTRACE_UNWIND_BPF_H
#define MEMTRACE_UNWIND_BPF_H

/* Every module's rows, one after another; user space writes them through a
 * memory mapping and sizes the array before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mt_unwind_row);
} unwind_rows SEC(".maps");

/* Each target's mappings that have a table, sorted by start, in two halves
 * per target slot (slot * 2 + half, MT_UNWIND_MAPS each): user space fills
 * the one not in use, then bumps the slot's unwind_gen, so a walk never sees
 * a half-written list. Sized max_targets * 2 * MT_UNWIND_MAPS before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2 * MT_UNWIND_MAPS);
	__type(key, __u32);
	__type(value, struct mt_unwind_map);
} unwind_maps SEC(".maps");

volatile __u32 unwind_gen[MT_MAX_TARGETS];    /* per slot: counts publications; gen & 1: the half in use */
volatile __u32 unwind_nr[MT_MAX_TARGETS][2];  /* per slot: mappings in each half */

/*
 * What a frame's lookup found, per CPU, by pc: a walk repeats the same few
 * hundred return addresses, and two binary searches per frame (mappings,
 * then rows) cost more than the rest of the walk. Direct-mapped, 2^12 slots
 * per CPU (user space sizes the map to CPUs << MT_UNWIND_CACHE_BITS); a slot
 * is good only for the publication (unwind_gen) that filled it.
 */
#define UNWIND_KEY_EXACT (1ULL << 63) /* the pc is exact, not a return address */
#define UNWIND_KEY_SLOT_SHIFT 48      /* the target's slot, above any user address */

enum unwind_found {
	UNWIND_ROW = 0,    /* row says how to go on */
	UNWIND_NO_MAP = 1, /* no mapping with a table contains the pc */
	UNWIND_NO_ROW = 2, /* the module's table has no row for it */
};

struct unwind_cached {
	__u64 key;     /* pc | UNWIND_KEY_EXACT if exact; 0 while being written */
	__u32 gen;     /* unwind_gen of the lookup */
	__u32 found;   /* enum unwind_found */
	struct mt_unwind_row row;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* CPUs << MT_UNWIND_CACHE_BITS, set before load */
	__type(key, __u32);
	__type(value, struct unwind_cached);
} unwind_cache SEC(".maps");

#define UNWIND_MAP_STEPS 10   /* binary search over at most 512 mappings */
#define UNWIND_ROW_STEPS 27   /* ... over at most 2^27 rows */

#include "unwind_rule.h"

struct unwind_walk {
	__u64 pc, sp, bp;
	__u64 bp_at;    /* nonzero: bp is not read yet, it is saved here (mt_unwind_needs_bp) */
	__u64 win;      /* nonzero: the stack from walk_sp (stack_scratch) on is in the scratch window */
	__u32 cache;    /* this CPU's first slot in unwind_cache */
	__u32 depth;    /* frames wanted */
	__u32 gen;
	__u32 target;   /* the process's slot */
	bool exact_pc;  /* pc is not a return address (the first frame, after a signal) */
	bool bp_read;   /* bp is no longer the register's at the start: read from the stack */
	__u64 cut;      /* MT_STACK_TRUNCATED or MT_STACK_DEPTH_CUT: the stack is not whole */
};

#define UNWIND_NONE 0xffffffffU

/*
 * The searches are global functions: the verifier checks each once, with
 * nothing known of its arguments, instead of once per state of every
 * caller (a bounded loop inlined in the walk multiplied its states).
 */

/* A binary search for the last of an array's entries whose start is <= AT. */
struct unwind_search {
	__u64 at;
	__u32 lo, hi, base;
	bool maps;   /* unwind_maps (key base + i, start); else unwind_rows (key i, pc) */
	bool failed; /* a lookup failed */
};

/* One step of it (bpf_loop's callback: verified once, where a bounded
 * loop of its steps was verified step by step, 4 k instructions for the
 * two searches). */
static long unwind_search_step(__u32 i, void *ctx)
{
	struct unwind_search *q = ctx;
	__u32 mid, key;
	__u64 start;

	if (q->lo >= q->hi)
		return 1;
	mid = q->lo + (q->hi - q->lo) / 2;
	key = q->base + mid;
	if (q->maps) {
		const struct mt_unwind_map *m = bpf_map_lookup_elem(&unwind_maps, &key);

		if (!m)
			goto failed;
		start = m->start;
	} else {
		const struct mt_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &key);

		if (!r)
			goto failed;
		start = r->pc;
	}
	if (start <= q->at)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
failed:
	q->failed = true;
	return 1;
}

/* The key in unwind_maps of the mapping of target SLOT's half GEN & 1 that
 * contains PC, or UNWIND_NONE. */
__noinline __u32 unwind_find_map(__u32 slot, __u32 gen, __u64 pc)
{
	struct unwind_search q = {
		.at = pc,
		.hi = unwind_nr[SLOT(slot)][gen & 1],
		.base = (SLOT(slot) * 2 + (gen & 1)) * MT_UNWIND_MAPS,
		.maps = true,
	};
	const struct mt_unwind_map *m;
	__u32 key;

	if (q.hi > MT_UNWIND_MAPS)
		return UNWIND_NONE;
	bpf_loop(UNWIND_MAP_STEPS, unwind_search_step, &q, 0);
	if (q.failed || !q.lo)
		return UNWIND_NONE;
	key = q.base + q.lo - 1;
	m = bpf_map_lookup_elem(&unwind_maps, &key);
	return m && pc < m->end ? key : UNWIND_NONE;
}

/* The key in unwind_rows of the last row among NR from FIRST with
 * row.pc <= VADDR, or UNWIND_NONE. */
__noinline __u32 unwind_find_row(__u32 first, __u32 nr, __u64 vaddr)
{
	struct unwind_search q = { .at = vaddr, .lo = first, .hi = first + nr };

	if (vaddr > 0xffffffffULL || q.hi < q.lo)
		return UNWIND_NONE;
	bpf_loop(UNWIND_ROW_STEPS, unwind_search_step, &q, 0);
	return q.failed || q.lo == first ? UNWIND_NONE : q.lo - 1;
}

/* What applies at the walk's pc: the row into *ROW, or why there is none.
 * A preempting walk on the same CPU may rewrite the slot while it is read:
 * the key is read again after the copy, and written last. */
static __always_inline __u32 unwind_lookup(const struct unwind_walk *w, struct mt_unwind_row *row)
{
	__u64 key = w->pc | (w->exact_pc ? UNWIND_KEY_EXACT : 0) | (__u64)w->target << UNWIND_KEY_SLOT_SHIFT;
	__u32 slot = w->cache | (__u32)((w->pc * 0x9e3779b97f4a7c15ULL) >> (64 - MT_UNWIND_CACHE_BITS));
	struct unwind_cached *c = bpf_map_lookup_elem(&unwind_cache, &slot);
	const struct mt_unwind_map *m;
	const struct mt_unwind_row *r = NULL;
	__u32 found, key32;

	if (c && c->key == key && c->gen == w->gen) {
		found = c->found;
		*row = c->row;
		barrier();
		if (c->key == key)
			return found;
	}
	key32 = unwind_find_map(w->target, w->gen, w->pc);
	m = key32 == UNWIND_NONE ? NULL : bpf_map_lookup_elem(&unwind_maps, &key32);
	if (m) {
		key32 = unwind_find_row(m->first_row, m->nr_rows,
					mt_unwind_lookup_addr(w->pc, m->bias, w->exact_pc));
		r = key32 == UNWIND_NONE ? NULL : bpf_map_lookup_elem(&unwind_rows, &key32);
	}
	found = !m ? UNWIND_NO_MAP : r ? UNWIND_ROW : UNWIND_NO_ROW;
	if (r)
		*row = *r;
	if (c && key) {
		c->key = 0;
		barrier();
		c->gen = w->gen;
		c->found = found;
		if (r)
			c->row = *r;
		barrier();
		c->key = key;
	}
	return found;
}

/*
 * A word of the stack at ADDR into *VAL; 0 or an error. The walk copies the
 * stack's top once (STACK_WINDOW bytes from its first rsp, walk_sp; WIN: 0
 * if not copied) and takes the words it finds there from the copy: one read
 * of 2 KiB costs about what two reads of a word do, and a 13-frame stack
 * needs 13 or more. Anything beyond the window, or not 8-aligned with it, is
 * read from the target. A global function, so the verifier checks it once
 * rather than at each state of each caller.
 */
__noinline long unwind_read(__u64 win, __u64 addr, __u64 *val)
{
	struct stack_scratch *s;
	__u32 zero = 0, i;
	__u64 at;
	bool near;
	long err = 0;

	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!val || !s)
		return -1;
	/* the word's place in a window copied from walk_sp, if it has one */
	at = addr - s->walk_sp;
	near = at <= STACK_WINDOW - 8 && !(at & 7);
	if (win && near)
		*val = s->window[(at / 8) & (STACK_WINDOW / 8 - 1)];
	else
		err = bpf_probe_read_user(val, sizeof(*val), (void *)addr);
	if (err)
		return err;
	/* noted for the walk's template (stack_template in memtrace.bpf.c),
	 * with that place */
	i = s->words;
	if (i < WALK_WORDS) {
		s->word_addr[i & (WALK_WORDS - 1)] = addr;
		s->word_val[i & (WALK_WORDS - 1)] = *val;
		s->word_idx[i & (WALK_WORDS - 1)] = near ? at / 8 : WORD_OUTSIDE;
		if (!near)
			s->outside = 1;
		if (near && at + 8 > s->span)
			s->span = at + 8;
	}
	s->words = i + 1;
	return 0;
}

/* One frame: 0 to go on, 1 to stop. A global function, checked once with
 * nothing known of the walk, rather than at each state of the loop. */
__noinline int unwind_frame(struct unwind_walk *w)
{
	struct mt_unwind_row rowbuf, *row = &rowbuf;
	struct stack_scratch *s;
	struct mt_stack_event *ev;
	__u64 cfa, ra = 0, bp, sig[3];
	__u32 zero = 0, nr;

	if (!w)
		return 1;
	/* The frame count lives in the map value, where the verifier sees an
	 * unknown number: a count it tracked exactly would make each
	 * iteration a new state, and the loop would never converge. */
	s = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!s)
		return 1;
	ev = &s->ev;
	nr = ev->nr;
	if (nr >= MT_MAX_STACK_DEPTH)
		return 1;
	if (nr >= w->depth) {
		w->cut = MT_STACK_DEPTH_CUT; /* said in a slot after the last frame */
		return 1;
	}
	switch (unwind_lookup(w, row)) {
	case UNWIND_ROW:
		break;
	case UNWIND_NO_MAP:
		/* Code without a table (JIT, vdso, unknown). The frame just
		 * taken is dropped: see mt_unwind_keep_unmapped. */
		if (nr && !mt_unwind_keep_unmapped)
			ev->nr = nr - 1;
		w->cut = MT_STACK_TRUNCATED;
		return 1;
	default:
		w->cut = MT_STACK_TRUNCATED;
		return 1;
	}
	if (w->bp_at && mt_unwind_needs_bp(row)) {
		if (unwind_read(w->win, w->bp_at, &bp))
			return 1;
		w->bp = bp;
		w->bp_at = 0;
		w->bp_read = true;
	}
	if (mt_unwind_needs_bp(row) && !w->bp_read)
		s->bp_used = 1; /* the walk depends on the starting rbp: so does its template */
	switch (mt_unwind_cfa(row, w->pc, w->sp, w->bp, &cfa)) {
	case MT_NEXT_CALLER:
		break;
	case MT_NEXT_SIGNAL:
		/* The interrupted state is in the signal frame's ucontext. */
		if (bpf_probe_read_user(&sig[0], 8, (void *)(w->sp + MT_SIGCONTEXT_RBP)) ||
		    bpf_probe_read_user(&sig[1], 8, (void *)(w->sp + MT_SIGCONTEXT_RSP)) ||
		    bpf_probe_read_user(&sig[2], 8, (void *)(w->sp + MT_SIGCONTEXT_RIP)))
			return 1;
		if (!sig[2])
			return 1;
		s->words = WALK_WORDS + 1; /* words read here are not noted: no template */
		ev->frames[nr] = sig[2];
		ev->nr = nr + 1;
		w->bp = sig[0];
		w->bp_at = 0;
		w->bp_read = true;
		w->sp = sig[1];
		w->pc = sig[2];
		w->exact_pc = true;
		return 0;
	case MT_NEXT_END:
		return 1; /* the outermost frame: the stack is whole */
	default:
		w->cut = MT_STACK_TRUNCATED;
		return 1;
	}
	if (unwind_read(w->win, cfa - 8, &ra))
		return 1;
	if (!mt_unwind_caller_ok(ra, cfa, w->sp))
		return 1; /* the end of the stack, or a frame that does not climb it */
	if (row->flags & MT_ROW_CHECK_RA) {
		__u8 code[8];

		if (bpf_probe_read_user(code, sizeof(code), (void *)(ra - 8)) || !mt_unwind_after_call(code)) {
			w->cut = MT_STACK_TRUNCATED; /* an unchecked rule gave no return address */
			return 1;
		}
	}
	ev->frames[nr] = ra;
	ev->nr = nr + 1;
	if (row->rbp_rule == MT_RBP_AT_CFA)
		w->bp_at = cfa + row->rbp_off;
	w->sp = cfa;
	w->pc = ra;
	w->exact_pc = false;
	return 0;
}

static int unwind_step(__u32 i, void *ctx)
{
	return unwind_frame(ctx) ? 1 : 0;
}

/* The stack from an allocator's entry (pt_regs CTX) into the scratch
 * event's frames: the caller first. Frames taken, 0 if the allocator's own
 * code has no table (the caller then walks by frame pointers). */
static __always_inline __u32 walk_tables_from(__u64 pc, __u64 sp, __u64 bp, struct stack_scratch *s, __u32 slot,
					       __u32 depth, __u32 first)
{
	struct mt_stack_event *ev = &s->ev;
	struct unwind_walk w = {
		.pc = pc,
		.sp = sp,
		.bp = bp,
		.depth = depth,
		.gen = unwind_gen[SLOT(slot)],
		.target = SLOT(slot),
		.cache = bpf_get_smp_processor_id() << MT_UNWIND_CACHE_BITS,
		.exact_pc = true,
	};
	__u32 nr;

	/* A stack whose top is closer than the window to the end of its
	 * mapping is read a word at a time. */
	if (unwind_nr[SLOT(slot)][w.gen & 1] && !bpf_probe_read_user(s->window, sizeof(s->window), (void *)w.sp))
		w.win = w.sp;
	ev->nr = first;
	s->words = 0;
	s->outside = 0;
	s->bp_used = 0;
	s->walk_sp = sp;
	s->span = 8;
	bpf_loop(MT_MAX_STACK_DEPTH, unwind_step, &w, 0);
	nr = ev->nr;
	if (nr <= first)
		return 0; /* the allocator's own code has no table: frame pointers then */
	if (w.cut && nr < MT_MAX_STACK_DEPTH) {
		ev->frames[nr] = w.cut;
		nr++;
	}
	/* After bpf_loop the verifier knows nothing of the count: bound it. */
	return nr & MT_STACK_DEPTH_MASK;
}

static __always_inline __u32 walk_tables(struct pt_regs *ctx, struct stack_scratch *s, __u32 slot, __u32 depth)
{
	return walk_tables_from(PT_REGS_IP(ctx), PT_REGS_SP(ctx), PT_REGS_FP(ctx), s, slot, depth, 0);
}

#endif /* MEMTRACE_UNWIND_BPF_H */
