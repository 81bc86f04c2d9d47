// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Aggregation for `memtrace report`; the rules are in analysis.h.
 *
 * The hot path is analysis__add_event: one probe of the live-pointer table
 * plus array indexing, no allocation except when a table doubles. Figures
 * are kept per stack while events stream in, because symbols come at the
 * end of a trace; analysis__finish then groups stacks into sites.
 *
 * The per-site peak is computed in the same pass: the global peak moves
 * forward in "epochs"; a stack remembers the epoch in which its live bytes
 * last changed, and just before changing them in a later epoch it saves
 * them as its bytes at the current peak (they had not changed since).
 */
#include "analysis.h"
#include "marks.h"
#include "trace_reader.h"
#include "util.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDMAP_EMPTY UINT32_MAX
#define NO_STACK 0 /* index of the "[no stack]" stack */
#define LIVE_FREED UINT32_MAX /* live_entry.stack of a freed entry */
/* A freed pointer is never forgotten before this many later frees; glibc
 * caches a few hundred chunks per thread (tcache, fastbins). */
#define FREED_KEEP 65536

/* Bump allocator for everything that lives as long as the analysis. */
struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t size;
	char data[];
};

/* Open-addressing map from a 64-bit key to a 32-bit index. */
struct idmap_slot {
	uint64_t key;
	uint32_t val; /* IDMAP_EMPTY: free slot */
};

struct idmap {
	struct idmap_slot *slots;
	size_t mask;
	size_t count;
};

/*
 * An allocation, live or freed. ptr 0 marks a free slot (0 is never
 * allocated). A freed entry remembers a pointer whose last event was a
 * matched free: allocators free again what they had cached (glibc's tcache
 * at thread exit), and that is not memory from before the trace. It is
 * turned back into a live entry when the pointer is allocated again, which
 * is how allocators reuse addresses, so freed entries cost no extra probe.
 */
struct live_entry {
	uint64_t ptr;
	uint64_t size;
	uint64_t seq;    /* live: global allocation number, for temporariness;
			    freed: when it was freed (live_table.freed_stamp) */
	uint32_t stack;  /* index into stacks; LIVE_FREED: freed */
	uint32_t thread; /* index into threads */
};

/* Linear probing. A free keeps its entry (as freed) rather than deleting
 * it, and an allocation at that pointer takes it back; the load counts
 * freed entries, so probes stay short. Freed entries whose pointer is never
 * reused would pile up, so when they are many, the old ones are deleted
 * (backward shift, no tombstones) instead of growing the table. */
struct live_table {
	struct live_entry *slots;
	size_t mask;
	unsigned int shift;   /* 64 - log2(capacity): the hash takes the high bits */
	size_t count;         /* entries, live and freed */
	size_t nfreed;        /* freed entries */
	uint64_t freed_stamp; /* frees so far: the seq of the latest freed entry */
};

struct stack {
	struct analysis_stack pub;
	uint32_t nr;
	const uint64_t *addrs;
	uint64_t live_bytes;
	uint64_t live_allocs;
	uint64_t peak_epoch; /* epoch of the last change of live_bytes */
};

struct thread {
	uint64_t last_seq; /* seq of the thread's latest allocation */
};

struct symbol {
	int32_t module;
	uint32_t nframes;
	uint64_t module_offset;
	size_t first; /* index into sym_frames */
};

struct sym_frame {
	const char *function;
	const char *file;
	uint32_t line;
};

struct module {
	uint64_t start;
	uint64_t end;
	uint64_t file_offset;
	const char *path;
	uint8_t build_id[32];
	uint32_t build_id_len;
};

#define MAX_ALLOC_FNS 32
#define WRAPPER_MIN_CALLERS 5 /* distinct call sites that make a function look like a wrapper */
#define WRAPPER_TOP_SITES 3   /* sites by bytes looked at for one */

struct analysis {
	struct arena_block *arena;
	const char *alloc_fns[MAX_ALLOC_FNS]; /* --alloc-fn globs */
	size_t nr_alloc_fns;

	struct live_table live;
	uint64_t live_bytes;
	uint64_t live_count;  /* live allocations (estimated, when sampled) */
	double sample_mean;   /* 0: every allocation was recorded */
	uint64_t alloc_seq;
	uint64_t peak_epoch;
	uint64_t peak_ts;
	uint64_t last_ts;

	struct stack *stacks;
	size_t nstacks, stacks_cap;
	struct idmap stack_ids;
	uint32_t cached_stack_id, cached_stack; /* consecutive events often share one */

	struct thread *threads;
	size_t nthreads, threads_cap;
	struct idmap tids;
	uint32_t cached_tid, cached_thread;
	bool have_cached_thread;

	struct symbol *symbols;
	size_t nsymbols, symbols_cap;
	struct sym_frame *sym_frames;
	size_t nsym_frames, sym_frames_cap;
	struct idmap sym_addrs;

	struct module *modules;
	size_t nmodules, modules_cap;

	uint64_t start_mono_ns;
	uint64_t end_mono_ns;
	uint64_t drops_sum;
	uint64_t end_dropped;

	struct analysis_trace trace;
	struct analysis_totals totals;
	struct analysis_site *sites;
	size_t nsites;
	bool finished;

	struct marks *marks; /* zones, frames, pools: marks.c */
};

/* ---- memory helpers ---- */

static void *arena__alloc(struct analysis *a, size_t n)
{
	struct arena_block *b = a->arena;

	n = (n + 7) & ~(size_t)7;
	if (!b || b->size - b->used < n) {
		size_t size = n > 65536 ? n : 65536;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = a->arena;
		a->arena = b;
	}
	b->used += n;
	return b->data + b->used - n;
}

/* Copy S into the arena; NULL stays NULL. Sets *err on failure. */
static const char *arena__strdup(struct analysis *a, const char *s, int *err)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	p = arena__alloc(a, n);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	return memcpy(p, s, n);
}

static inline uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* ---- idmap ---- */

static int idmap__resize(struct idmap *m, size_t cap)
{
	struct idmap_slot *slots = malloc(cap * sizeof(*slots));
	size_t i;

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		slots[i].val = IDMAP_EMPTY;
	for (i = 0; m->slots && i <= m->mask; i++) {
		size_t j;

		if (m->slots[i].val == IDMAP_EMPTY)
			continue;
		j = hash64(m->slots[i].key) & (cap - 1);
		while (slots[j].val != IDMAP_EMPTY)
			j = (j + 1) & (cap - 1);
		slots[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->mask = cap - 1;
	return 0;
}

static uint32_t idmap__get(const struct idmap *m, uint64_t key)
{
	size_t i;

	if (!m->slots)
		return IDMAP_EMPTY;
	for (i = hash64(key) & m->mask; m->slots[i].val != IDMAP_EMPTY; i = (i + 1) & m->mask)
		if (m->slots[i].key == key)
			return m->slots[i].val;
	return IDMAP_EMPTY;
}

/* Map KEY to VAL, replacing any earlier value. */
static int idmap__set(struct idmap *m, uint64_t key, uint32_t val)
{
	size_t i;

	if (!m->slots || (m->count + 1) * 2 > m->mask + 1) {
		int err = idmap__resize(m, m->slots ? (m->mask + 1) * 2 : 64);

		if (err)
			return err;
	}
	for (i = hash64(key) & m->mask; m->slots[i].val != IDMAP_EMPTY; i = (i + 1) & m->mask) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
	}
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->count++;
	return 0;
}

/* ---- live-pointer table ---- */

static inline size_t live__home(const struct live_table *t, uint64_t ptr)
{
	/* Fibonacci hashing: the high bits of the product mix the pointer's
	 * middle bits, where allocations differ (the low 4 are alignment). */
	return (size_t)((ptr * 0x9E3779B97F4A7C15ULL) >> t->shift);
}

static inline bool live__is_freed(const struct live_entry *e)
{
	return e->stack == LIVE_FREED;
}

static int live__resize(struct live_table *t, unsigned int bits)
{
	size_t cap = (size_t)1 << bits, i;
	struct live_table n = *t;

	n.slots = calloc(cap, sizeof(*n.slots));
	if (!n.slots)
		return -ENOMEM;
	n.mask = cap - 1;
	n.shift = 64 - bits;
	for (i = 0; t->slots && i <= t->mask; i++) {
		size_t j;

		if (!t->slots[i].ptr)
			continue;
		for (j = live__home(&n, t->slots[i].ptr); n.slots[j].ptr; j = (j + 1) & n.mask)
			;
		n.slots[j] = t->slots[i];
	}
	free(t->slots);
	*t = n;
	return 0;
}

/* Empty slot I, shifting back every later entry of its run that would no
 * longer be reachable from its home slot (no tombstones). */
static void live__remove_at(struct live_table *t, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & t->mask;
		if (!t->slots[j].ptr)
			break;
		home = live__home(t, t->slots[j].ptr);
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].ptr = 0;
	t->count--;
}

/* Forget the pointers freed FREED_KEEP or more frees ago, in place. */
static void live__drop_old_freed(struct live_table *t)
{
	uint64_t cutoff = t->freed_stamp - FREED_KEEP;
	size_t i, start, left;

	/* Walk once round from an empty slot: shifting back never moves an
	 * entry across it, so each entry is looked at once (a slot whose entry
	 * was removed is looked at again for the one shifted into it). */
	for (start = 0; t->slots[start].ptr; start++)
		;
	for (i = (start + 1) & t->mask, left = t->mask; left;) {
		struct live_entry *e = &t->slots[i];

		if (e->ptr && live__is_freed(e) && e->seq <= cutoff) {
			live__remove_at(t, i);
			t->nfreed--;
			continue;
		}
		i = (i + 1) & t->mask;
		left--;
	}
}

/* Make room for one more entry. */
static int live__reserve(struct live_table *t)
{
	if ((t->count + 1) * 10 <= (t->mask + 1) * 7)
		return 0;
	/* At most FREED_KEEP freed entries survive, so dropping the old ones
	 * when there are more than twice that, and more than live ones, deletes
	 * over a quarter of the entries: it is rare, and the table grows only
	 * while freed entries are few, so it stays a small multiple of the
	 * live ones (or of FREED_KEEP). */
	if (t->nfreed > 2 * FREED_KEEP && t->nfreed > t->count - t->nfreed) {
		live__drop_old_freed(t);
		if ((t->count + 1) * 10 <= (t->mask + 1) * 7)
			return 0;
	}
	/* Grow at 70% load: linear probing stays short up to there. */
	return live__resize(t, 64 - t->shift + 1);
}

static struct live_entry *live__find(const struct live_table *t, uint64_t ptr)
{
	size_t i;

	for (i = live__home(t, ptr); t->slots[i].ptr; i = (i + 1) & t->mask)
		if (t->slots[i].ptr == ptr)
			return &t->slots[i];
	return NULL;
}

/* The slot for PTR: its entry if there is one, live or freed (*existed
 * set), else a free slot now holding PTR. NULL only when growing fails. */
static struct live_entry *live__insert(struct live_table *t, uint64_t ptr, bool *existed)
{
	size_t i;

	if (live__reserve(t))
		return NULL;
	for (i = live__home(t, ptr); t->slots[i].ptr; i = (i + 1) & t->mask) {
		if (t->slots[i].ptr == ptr) {
			*existed = true;
			return &t->slots[i];
		}
	}
	*existed = false;
	t->slots[i].ptr = ptr;
	t->count++;
	return &t->slots[i];
}

/* E's pointer was freed: keep it as a freed entry. */
static inline void live__mark_freed(struct live_table *t, struct live_entry *e)
{
	e->stack = LIVE_FREED;
	e->seq = ++t->freed_stamp;
	t->nfreed++;
}

/* ---- lifetime ---- */

static int stack__new(struct analysis *a, uint32_t id, uint32_t *idx)
{
	struct stack *s;
	int err;

	err = array_reserve((void **)&a->stacks, &a->stacks_cap, a->nstacks + 1, sizeof(*a->stacks));
	if (err)
		return err;
	if (id != 0) {
		err = idmap__set(&a->stack_ids, id, (uint32_t)a->nstacks);
		if (err)
			return err;
	}
	s = &a->stacks[a->nstacks];
	memset(s, 0, sizeof(*s));
	s->pub.id = id;
	/* A stack born now had 0 bytes live at the current peak. */
	s->peak_epoch = a->peak_epoch;
	*idx = (uint32_t)a->nstacks++;
	return 0;
}

struct analysis *analysis__new(void)
{
	struct analysis *a = calloc(1, sizeof(*a));
	uint32_t idx;

	if (!a)
		return NULL;
	a->trace.pid = -1;
	a->marks = marks__new();
	if (!a->marks || live__resize(&a->live, 10) || stack__new(a, 0, &idx)) {
		analysis__free(a);
		errno = ENOMEM;
		return NULL;
	}
	a->cached_stack_id = 0;
	a->cached_stack = NO_STACK;
	return a;
}

void analysis__free(struct analysis *a)
{
	struct arena_block *b, *next;
	size_t i;

	if (!a)
		return;
	for (b = a->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	for (i = 0; i < a->nsites; i++)
		free((void *)a->sites[i].stacks);
	free(a->sites);
	free(a->live.slots);
	free(a->stacks);
	free(a->stack_ids.slots);
	free(a->threads);
	free(a->tids.slots);
	free(a->symbols);
	free(a->sym_frames);
	free(a->sym_addrs.slots);
	free(a->modules);
	marks__free(a->marks);
	free(a);
}

/* ---- records other than events ---- */

int analysis__set_meta(struct analysis *a, const struct trace_meta *m)
{
	int err = 0;

	a->trace.command = arena__strdup(a, m->command_line, &err);
	a->trace.comm = arena__strdup(a, m->comm, &err);
	a->trace.pid = m->pid;
	a->trace.sample_bytes = m->sample_bytes;
	a->sample_mean = (double)m->sample_bytes;
	a->start_mono_ns = m->start_mono_ns;
	return err;
}

int analysis__add_module(struct analysis *a, const struct trace_module *m)
{
	struct module *mod;
	int err;

	err = array_reserve((void **)&a->modules, &a->modules_cap, a->nmodules + 1, sizeof(*a->modules));
	if (err)
		return err;
	mod = &a->modules[a->nmodules];
	mod->start = m->start;
	mod->end = m->end;
	mod->file_offset = m->file_offset;
	memcpy(mod->build_id, m->build_id, sizeof(mod->build_id));
	mod->build_id_len = m->build_id_len <= sizeof(mod->build_id) ? m->build_id_len : 0;
	mod->path = arena__strdup(a, m->path, &err);
	if (err)
		return err;
	a->nmodules++;
	return 0;
}

int analysis__add_stack(struct analysis *a, const struct trace_stack *s)
{
	uint32_t idx;
	uint64_t *addrs;
	int err;

	if (s->id == 0)
		return 0;
	idx = idmap__get(&a->stack_ids, s->id);
	if (idx == IDMAP_EMPTY) {
		err = stack__new(a, s->id, &idx);
		if (err)
			return err;
	}
	addrs = arena__alloc(a, (s->nr ? s->nr : 1) * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	memcpy(addrs, s->frames, s->nr * sizeof(*addrs));
	a->stacks[idx].addrs = addrs;
	a->stacks[idx].nr = s->nr;
	return 0;
}

int analysis__add_symbol(struct analysis *a, const struct trace_symbol *s)
{
	struct symbol *sym;
	uint32_t i;
	int err;

	err = array_reserve((void **)&a->symbols, &a->symbols_cap, a->nsymbols + 1, sizeof(*a->symbols));
	if (!err)
		err = array_reserve((void **)&a->sym_frames, &a->sym_frames_cap,
				    a->nsym_frames + s->nframes, sizeof(*a->sym_frames));
	if (err)
		return err;
	sym = &a->symbols[a->nsymbols];
	sym->module = s->module;
	sym->module_offset = s->module_offset;
	sym->nframes = s->nframes;
	sym->first = a->nsym_frames;
	for (i = 0; i < s->nframes; i++) {
		struct sym_frame *f = &a->sym_frames[a->nsym_frames + i];

		f->function = arena__strdup(a, s->frames[i].function, &err);
		f->file = arena__strdup(a, s->frames[i].file, &err);
		f->line = s->frames[i].line;
	}
	if (err)
		return err;
	err = idmap__set(&a->sym_addrs, s->addr, (uint32_t)a->nsymbols);
	if (err)
		return err;
	a->nsym_frames += s->nframes;
	a->nsymbols++;
	return 0;
}

int analysis__add_drops(struct analysis *a, const struct trace_drops *d)
{
	a->drops_sum += d->count;
	return 0;
}

int analysis__set_end(struct analysis *a, const struct trace_end *e)
{
	int err = 0;

	a->trace.ended = true;
	a->trace.target_exited = e->flags & TRACE_END_TARGET_EXITED;
	a->end_mono_ns = e->end_mono_ns;
	a->end_dropped = e->dropped;
	if (e->stop_reason)
		a->trace.stop_reason = arena__strdup(a, e->stop_reason, &err);
	return err;
}

int analysis__set_partial(struct analysis *a, const char *problem)
{
	int err = 0;

	a->trace.partial = true;
	a->trace.problem = arena__strdup(a, problem ? problem : "trace cut short", &err);
	return err;
}

/* ---- events ---- */

static int stack__index(struct analysis *a, uint32_t id, uint32_t *idx)
{
	if (id == a->cached_stack_id) {
		*idx = a->cached_stack;
		return 0;
	}
	*idx = idmap__get(&a->stack_ids, id);
	/* An event may name a stack whose record was lost; count it anyway. */
	if (*idx == IDMAP_EMPTY) {
		int err = stack__new(a, id, idx);

		if (err)
			return err;
	}
	a->cached_stack_id = id;
	a->cached_stack = *idx;
	return 0;
}

static int thread__index(struct analysis *a, uint32_t tid, uint32_t *idx)
{
	int err;

	if (a->have_cached_thread && tid == a->cached_tid) {
		*idx = a->cached_thread;
		return 0;
	}
	*idx = idmap__get(&a->tids, tid);
	if (*idx == IDMAP_EMPTY) {
		err = array_reserve((void **)&a->threads, &a->threads_cap, a->nthreads + 1,
				    sizeof(*a->threads));
		if (!err)
			err = idmap__set(&a->tids, tid, (uint32_t)a->nthreads);
		if (err)
			return err;
		a->threads[a->nthreads].last_seq = 0;
		*idx = (uint32_t)a->nthreads++;
	}
	a->have_cached_thread = true;
	a->cached_tid = tid;
	a->cached_thread = *idx;
	return 0;
}

/*
 * Sampled traces: a block of SIZE bytes was recorded with probability
 * p = 1 - exp(-SIZE / mean), so it stands for 1/p blocks and SIZE/p bytes,
 * which makes every sum an unbiased estimate.
 */
static inline double sample_weight(const struct analysis *a, uint64_t size)
{
	return 1.0 / -expm1(-(double)(size ? size : 1) / a->sample_mean);
}

static inline uint64_t est_bytes(const struct analysis *a, uint64_t size)
{
	return a->sample_mean ? (uint64_t)llround((double)size * sample_weight(a, size)) : size;
}

static inline uint64_t est_count(const struct analysis *a, uint64_t size)
{
	return a->sample_mean ? (uint64_t)llround(sample_weight(a, size)) : 1;
}

/* Save the stack's live bytes as its share of the current peak before
 * they change, if they have not changed since that peak was reached. */
static inline void stack__touch(struct analysis *a, struct stack *s)
{
	if (s->peak_epoch != a->peak_epoch) {
		s->pub.figures.peak_bytes = s->live_bytes;
		s->peak_epoch = a->peak_epoch;
	}
}

/* Take E's bytes out of the live figures, without counting a free. */
static void live__forget(struct analysis *a, const struct live_entry *e)
{
	struct stack *s = &a->stacks[e->stack];
	uint64_t bytes = est_bytes(a, e->size), n = est_count(a, e->size);

	stack__touch(a, s);
	s->live_bytes -= bytes;
	s->live_allocs -= n;
	a->live_bytes -= bytes;
	a->live_count -= n;
}

static void analysis__free_ptr(struct analysis *a, uint64_t ptr)
{
	struct live_entry *e;

	e = live__find(&a->live, ptr);
	if (!e) {
		a->totals.unmatched_frees++;
		return;
	}
	if (live__is_freed(e)) {
		a->totals.internal_frees++;
		return;
	}
	if (a->threads[e->thread].last_seq == e->seq) {
		a->stacks[e->stack].pub.figures.temporary_allocations += est_count(a, e->size);
		a->totals.temporary_allocations += est_count(a, e->size);
	}
	a->totals.frees += est_count(a, e->size);
	live__forget(a, e);
	live__mark_freed(&a->live, e);
}

static int analysis__alloc(struct analysis *a, const struct trace_event *ev)
{
	uint64_t bytes, n;
	uint32_t sidx, tidx;
	struct live_entry *e;
	struct stack *s;
	bool existed;
	int err;

	err = stack__index(a, ev->stack_id, &sidx);
	if (!err)
		err = thread__index(a, ev->tid, &tidx);
	if (err)
		return err;
	e = live__insert(&a->live, ev->ptr, &existed);
	if (!e)
		return -ENOMEM;
	if (existed && live__is_freed(e))
		a->live.nfreed--;
	else if (existed)
		live__forget(a, e);

	e->size = ev->size;
	e->seq = ++a->alloc_seq;
	e->stack = sidx;
	e->thread = tidx;
	a->threads[tidx].last_seq = e->seq;

	s = &a->stacks[sidx];
	stack__touch(a, s);
	bytes = est_bytes(a, ev->size);
	n = est_count(a, ev->size);
	s->live_bytes += bytes;
	s->live_allocs += n;
	s->pub.figures.allocations += n;
	s->pub.figures.allocated_bytes += bytes;
	a->totals.allocations += n;
	a->totals.allocated_bytes += bytes;
	a->live_bytes += bytes;
	a->live_count += n;
	return 0;
}

int analysis__add_event(struct analysis *a, const struct trace_event *e)
{
	int err = 0;

	a->last_ts = e->ts;
	switch (e->type) {
	case TRACE_EVENT_ALLOC:
		if (e->ptr)
			err = analysis__alloc(a, e);
		break;
	case TRACE_EVENT_FREE:
		/* free(NULL) does nothing, so it is not an unmatched free. */
		if (e->ptr)
			analysis__free_ptr(a, e->ptr);
		break;
	case TRACE_EVENT_REALLOC:
		if (!e->ptr && e->size)
			break; /* failed: the old block stays */
		if (e->old_ptr)
			analysis__free_ptr(a, e->old_ptr);
		if (e->ptr)
			err = analysis__alloc(a, e);
		break;
	default:
		break; /* a kind this version does not know: skip it */
	}
	if (a->live_bytes > a->totals.peak_bytes) {
		a->totals.peak_bytes = a->live_bytes;
		a->peak_ts = e->ts;
		a->peak_epoch++;
	}
	if (!err)
		err = marks__add_event(a->marks, e, est_count(a, e->size), est_bytes(a, e->size));
	return err;
}

int analysis__add_string(struct analysis *a, const struct trace_string *s)
{
	return marks__add_string(a->marks, s);
}

int analysis__add_mark(struct analysis *a, const struct trace_mark *m)
{
	return marks__add_mark(a->marks, m);
}

int analysis__add_thread(struct analysis *a, const struct trace_thread *t)
{
	return marks__add_thread(a->marks, t);
}

/* ---- finishing: symbolized frames and sites ---- */

static int module_cmp(const void *x, const void *y)
{
	const struct module *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* The module mapping ADDR, from the map sorted by start (for addresses
 * that have no symbol record saying it). */
static const struct module *module__lookup(const struct analysis *a, const struct module *sorted,
					   uint64_t addr)
{
	size_t lo = 0, hi = a->nmodules;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < sorted[mid].start)
			hi = mid;
		else if (addr >= sorted[mid].end)
			lo = mid + 1;
		else
			return &sorted[mid];
	}
	return NULL;
}

/* Fill F (room for the symbol's frames, at least 1) for ADDR; returns how
 * many frames it wrote. */
static size_t frames__resolve(const struct analysis *a, const struct module *sorted, uint64_t addr,
			      struct analysis_frame *f)
{
	uint32_t si = idmap__get(&a->sym_addrs, addr);
	const struct symbol *sym = si == IDMAP_EMPTY ? NULL : &a->symbols[si];
	const char *module = NULL;
	uint64_t offset = addr;
	size_t i, n;

	if (sym && sym->module >= 0 && (size_t)sym->module < a->nmodules) {
		module = a->modules[sym->module].path;
		offset = sym->module_offset;
	} else {
		const struct module *m = module__lookup(a, sorted, addr);

		if (m) {
			module = m->path;
			offset = addr - m->start + m->file_offset;
		}
	}
	if (addr == TRACE_FRAME_TRUNCATED || addr == TRACE_FRAME_DEPTH_CUT) {
		f[0] = (struct analysis_frame){
			.address = addr,
			.function = addr == TRACE_FRAME_TRUNCATED ? "[truncated: no unwind table]"
								  : "[truncated: --stack-depth reached]",
		};
		return 1;
	}
	n = sym && sym->nframes ? sym->nframes : 1;
	for (i = 0; i < n; i++) {
		const struct sym_frame *sf = sym && sym->nframes ? &a->sym_frames[sym->first + i] : NULL;

		f[i] = (struct analysis_frame){
			.address = addr,
			.function = sf ? sf->function : NULL,
			.file = sf ? sf->file : NULL,
			.line = sf ? sf->line : 0,
			.inlined = i + 1 < n,
			.module = module,
			.module_offset = offset,
		};
	}
	return n;
}

static bool is_alloc_fn(const struct analysis *a, const char *function)
{
	for (size_t i = 0; function && i < a->nr_alloc_fns; i++) {
		if (!fnmatch(a->alloc_fns[i], function, 0))
			return true;
	}
	return false;
}

/* How many innermost frames belong to the allocator under --alloc-fn:
 * frames of matching functions, and frames with no name among and inside
 * them (a stripped wrapper's static helpers). The site is the next frame;
 * a stack that is allocator all the way keeps its outermost frame. */
static size_t alloc_fn_frames(const struct analysis *a, const struct analysis_frame *f, size_t n)
{
	size_t skip = 0;

	if (!a->nr_alloc_fns)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (is_alloc_fn(a, f[i].function))
			skip = i + 1;
		else if (f[i].function)
			break;
	}
	return skip < n ? skip : n ? n - 1 : 0;
}

int analysis__add_alloc_fn(struct analysis *a, const char *glob)
{
	int err = 0;

	if (a->nr_alloc_fns == MAX_ALLOC_FNS)
		return -E2BIG;
	a->alloc_fns[a->nr_alloc_fns] = arena__strdup(a, glob, &err);
	if (!err)
		a->nr_alloc_fns++;
	return err;
}

static int stack__symbolize(struct analysis *a, const struct module *sorted, struct stack *s)
{
	struct analysis_frame *frames;
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < s->nr; i++) {
		uint32_t si = idmap__get(&a->sym_addrs, s->addrs[i]);

		n += si != IDMAP_EMPTY && a->symbols[si].nframes ? a->symbols[si].nframes : 1;
	}
	frames = arena__alloc(a, (n ? n : 1) * sizeof(*frames));
	if (!frames)
		return -ENOMEM;
	s->pub.frames = frames;
	s->pub.nframes = 0;
	for (i = 0; i < s->nr; i++)
		s->pub.nframes += frames__resolve(a, sorted, s->addrs[i], frames + s->pub.nframes);
	n = alloc_fn_frames(a, frames, s->pub.nframes);
	s->pub.frames += n;
	s->pub.nframes -= n;
	return 0;
}

enum site_kind {
	SITE_SYMBOLIZED, /* grouped by module, function, file, line */
	SITE_RAW,        /* no function name: grouped by module + offset */
	SITE_NO_STACK,
};

static enum site_kind site_kind_of(const struct stack *s)
{
	if (!s->pub.nframes)
		return SITE_NO_STACK;
	return s->pub.frames[0].function ? SITE_SYMBOLIZED : SITE_RAW;
}

static int strcmp_null(const char *x, const char *y)
{
	if (!x || !y)
		return (x != NULL) - (y != NULL);
	return strcmp(x, y);
}

/* Order stacks so that those of one site are adjacent. */
static int site_key_cmp(const void *px, const void *py)
{
	const struct stack *x = *(const struct stack *const *)px, *y = *(const struct stack *const *)py;
	enum site_kind kx = site_kind_of(x), ky = site_kind_of(y);
	const struct analysis_frame *fx, *fy;
	int c;

	if (kx != ky || kx == SITE_NO_STACK)
		return (int)kx - (int)ky;
	fx = &x->pub.frames[0];
	fy = &y->pub.frames[0];
	c = strcmp_null(fx->module, fy->module);
	if (c || kx == SITE_RAW) {
		if (c)
			return c;
		return fx->module_offset < fy->module_offset ? -1 : fx->module_offset > fy->module_offset;
	}
	c = strcmp_null(fx->function, fy->function);
	if (!c)
		c = strcmp_null(fx->file, fy->file);
	if (!c)
		c = fx->line < fy->line ? -1 : fx->line > fy->line;
	return c;
}

static int figures_cmp(const struct analysis_figures *x, const struct analysis_figures *y)
{
	if (x->allocated_bytes != y->allocated_bytes)
		return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return 0;
}

static int stack_rank_cmp(const void *px, const void *py)
{
	const struct analysis_stack *x = *(const struct analysis_stack *const *)px;
	const struct analysis_stack *y = *(const struct analysis_stack *const *)py;
	int c = figures_cmp(&x->figures, &y->figures);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int site_rank_cmp(const void *px, const void *py)
{
	const struct analysis_site *x = px, *y = py;
	int c = figures_cmp(&x->figures, &y->figures);

	return c ? c : strcmp(x->name, y->name);
}

static void figures_add(struct analysis_figures *sum, const struct analysis_figures *f)
{
	sum->allocations += f->allocations;
	sum->allocated_bytes += f->allocated_bytes;
	sum->peak_bytes += f->peak_bytes;
	sum->leaked_allocations += f->leaked_allocations;
	sum->leaked_bytes += f->leaked_bytes;
	sum->temporary_allocations += f->temporary_allocations;
}

static const char *site_name(struct analysis *a, const struct stack *s, int *err)
{
	const struct analysis_frame *f = &s->pub.frames[0];
	const char *base;
	char buf[64];
	size_t n;
	char *name;

	if (site_kind_of(s) == SITE_NO_STACK)
		return "[no stack]";
	if (f->function)
		return f->function;
	if (!f->module) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)f->address);
		return arena__strdup(a, buf, err);
	}
	base = strrchr(f->module, '/');
	base = base ? base + 1 : f->module;
	snprintf(buf, sizeof(buf), "+0x%llx", (unsigned long long)f->module_offset);
	n = strlen(base);
	name = arena__alloc(a, n + strlen(buf) + 1);
	if (!name) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(name, base, n);
	strcpy(name + n, buf);
	return name;
}

/* One site from the N stacks at BY (all of the same key). */
static int site__init(struct analysis *a, struct analysis_site *site, struct stack **by, size_t n)
{
	const struct analysis_frame *f = by[0]->pub.nframes ? &by[0]->pub.frames[0] : NULL;
	const struct analysis_stack **stacks;
	int err = 0;
	size_t i;

	memset(site, 0, sizeof(*site));
	stacks = malloc(n * sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		stacks[i] = &by[i]->pub;
		figures_add(&site->figures, &by[i]->pub.figures);
	}
	qsort(stacks, n, sizeof(*stacks), stack_rank_cmp);
	site->stacks = stacks;
	site->nstacks = n;
	site->name = site_name(a, by[0], &err);
	if (f) {
		site->function = f->function;
		site->file = f->function ? f->file : NULL;
		site->line = f->function ? f->line : 0;
		site->module = f->module;
	}
	return err;
}

static int analysis__group_sites(struct analysis *a, struct stack **by, size_t n)
{
	size_t i, j;
	int err;

	qsort(by, n, sizeof(*by), site_key_cmp);
	a->sites = calloc(n ? n : 1, sizeof(*a->sites));
	if (!a->sites)
		return -ENOMEM;
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !site_key_cmp(&by[i], &by[j]); j++)
			;
		err = site__init(a, &a->sites[a->nsites++], by + i, j - i);
		if (err)
			return err;
	}
	qsort(a->sites, a->nsites, sizeof(*a->sites), site_rank_cmp);
	return 0;
}

/* Settle each stack's end-of-trace figures and symbolize the stacks that
 * allocated; *by gets those stacks. */
static int analysis__settle_stacks(struct analysis *a, struct stack **by, size_t *n)
{
	struct module *sorted;
	size_t i;
	int err = 0;

	sorted = malloc((a->nmodules ? a->nmodules : 1) * sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	if (a->nmodules)
		memcpy(sorted, a->modules, a->nmodules * sizeof(*sorted));
	qsort(sorted, a->nmodules, sizeof(*sorted), module_cmp);
	*n = 0;
	for (i = 0; i < a->nstacks && !err; i++) {
		struct stack *s = &a->stacks[i];

		stack__touch(a, s);
		s->pub.figures.leaked_allocations = s->live_allocs;
		s->pub.figures.leaked_bytes = s->live_bytes;
		if (!s->pub.figures.allocations)
			continue;
		err = stack__symbolize(a, sorted, s);
		by[(*n)++] = s;
	}
	free(sorted);
	return err;
}

static void analysis__settle_totals(struct analysis *a)
{
	struct analysis_totals *t = &a->totals;
	uint64_t start = a->start_mono_ns;
	uint64_t end = a->trace.ended ? a->end_mono_ns : a->last_ts;

	t->leaked_allocations = a->live_count;
	t->leaked_bytes = a->live_bytes;
	t->peak_time_ns = t->peak_bytes && a->peak_ts > start ? a->peak_ts - start : 0;
	t->dropped_events = a->drops_sum > a->end_dropped ? a->drops_sum : a->end_dropped;
	a->trace.duration_ns = start && end > start ? end - start : 0;
}

int analysis__finish(struct analysis *a)
{
	struct stack **by;
	size_t n;
	int err;

	if (a->finished)
		return 0;
	a->finished = true;
	analysis__settle_totals(a);
	by = malloc(a->nstacks * sizeof(*by));
	if (!by)
		return -ENOMEM;
	err = analysis__settle_stacks(a, by, &n);
	if (!err)
		err = analysis__group_sites(a, by, n);
	free(by);
	if (!err)
		err = marks__finish(a->marks, a->start_mono_ns, a->trace.ended ? a->end_mono_ns : 0,
				    a->sites, a->nsites);
	return err;
}

const struct marks *analysis__marks(const struct analysis *a)
{
	return a->marks;
}

const struct analysis_trace *analysis__trace(const struct analysis *a)
{
	return &a->trace;
}

const struct analysis_totals *analysis__totals(const struct analysis *a)
{
	return &a->totals;
}

const struct analysis_site *analysis__sites(const struct analysis *a, size_t *nsites)
{
	*nsites = a->nsites;
	return a->sites;
}

/* ---- reader glue ---- */

static int on_meta(void *ctx, const struct trace_meta *m)
{
	return analysis__set_meta(ctx, m);
}

static int on_module(void *ctx, const struct trace_module *m)
{
	return analysis__add_module(ctx, m);
}

static int on_stack(void *ctx, const struct trace_stack *s)
{
	return analysis__add_stack(ctx, s);
}

static int on_event(void *ctx, const struct trace_event *e)
{
	return analysis__add_event(ctx, e);
}

static int on_symbol(void *ctx, const struct trace_symbol *s)
{
	return analysis__add_symbol(ctx, s);
}

static int on_drops(void *ctx, const struct trace_drops *d)
{
	return analysis__add_drops(ctx, d);
}

static int on_end(void *ctx, const struct trace_end *e)
{
	return analysis__set_end(ctx, e);
}

static int on_string(void *ctx, const struct trace_string *s)
{
	return analysis__add_string(ctx, s);
}

static int on_mark(void *ctx, const struct trace_mark *m)
{
	return analysis__add_mark(ctx, m);
}

static int on_thread(void *ctx, const struct trace_thread *t)
{
	return analysis__add_thread(ctx, t);
}

const struct trace_reader_ops analysis_reader_ops = {
	.meta = on_meta,
	.module = on_module,
	.stack = on_stack,
	.event = on_event,
	.symbol = on_symbol,
	.drops = on_drops,
	.end = on_end,
	.string = on_string,
	.mark = on_mark,
	.thread = on_thread,
};

/* The first named frame of S, or -1. */
static long first_named(const struct analysis_stack *s)
{
	for (size_t i = 0; i < s->nframes; i++) {
		if (s->frames[i].function)
			return (long)i;
	}
	return -1;
}

/* SITE's first named function, if at least WRAPPER_MIN_CALLERS distinct
 * call sites reach it and it is no --alloc-fn yet. */
static const char *site_wrapper(const struct analysis *a, const struct analysis_site *site)
{
	uint64_t callers[WRAPPER_MIN_CALLERS];
	const char *name;
	size_t distinct = 0;
	long k;

	if (!site->nstacks || (k = first_named(site->stacks[0])) < 0)
		return NULL;
	name = site->stacks[0]->frames[k].function;
	if (name[0] == '[' || is_alloc_fn(a, name))
		return NULL;
	for (size_t i = 0; i < site->nstacks && distinct < WRAPPER_MIN_CALLERS; i++) {
		const struct analysis_stack *s = site->stacks[i];
		long j = first_named(s);
		uint64_t caller;
		size_t d;

		if (j < 0 || strcmp(s->frames[j].function, name) || (size_t)j + 1 >= s->nframes)
			continue;
		caller = s->frames[j + 1].address;
		for (d = 0; d < distinct && callers[d] != caller; d++)
			;
		if (d == distinct)
			callers[distinct++] = caller;
	}
	return distinct >= WRAPPER_MIN_CALLERS ? name : NULL;
}

const char *analysis__wrapper_candidate(const struct analysis *a)
{
	const char *name = NULL;

	for (size_t i = 0; i < a->nsites && i < WRAPPER_TOP_SITES && !name; i++)
		name = site_wrapper(a, &a->sites[i]);
	return name;
}

/* The module (index into the trace's modules) whose mapping holds ADDR, or -1. */
static int32_t module_of(const struct analysis *a, uint64_t addr)
{
	for (size_t i = a->nmodules; i-- > 0;) { /* newest first: a range can be reused */
		if (addr >= a->modules[i].start && addr < a->modules[i].end)
			return (int32_t)i;
	}
	return -1;
}

int analysis__for_each_unresolved(struct analysis *a, analysis_unresolved_fn fn, void *ctx)
{
	struct idmap seen = { 0 };
	int err = 0;

	for (size_t i = 0; i < a->nstacks && !err; i++) {
		const struct stack *s = &a->stacks[i];

		for (uint32_t j = 0; j < s->nr && !err; j++) {
			uint64_t addr = s->addrs[j];
			uint32_t si = idmap__get(&a->sym_addrs, addr);
			int32_t m;

			if (si != IDMAP_EMPTY && a->symbols[si].nframes &&
			    a->sym_frames[a->symbols[si].first].function)
				continue; /* named already */
			if (idmap__get(&seen, addr) != IDMAP_EMPTY || (m = module_of(a, addr)) < 0 ||
			    !a->modules[m].build_id_len)
				continue;
			err = idmap__set(&seen, addr, 1);
			if (!err) {
				const struct module *mod = &a->modules[m];
				struct trace_module tm = {
					.start = mod->start,
					.end = mod->end,
					.file_offset = mod->file_offset,
					.path = mod->path,
					.build_id_len = mod->build_id_len,
				};

				memcpy(tm.build_id, mod->build_id, sizeof(tm.build_id));
				err = fn(ctx, addr, &tm, m);
			}
		}
	}
	free(seen.slots);
	return err;
}

int analysis__module(const struct analysis *a, size_t i, struct trace_module *out)
{
	const struct module *m;

	if (i >= a->nmodules)
		return -ENOENT;
	m = &a->modules[i];
	*out = (struct trace_module){
		.start = m->start,
		.end = m->end,
		.file_offset = m->file_offset,
		.path = m->path,
		.build_id_len = m->build_id_len,
	};
	memcpy(out->build_id, m->build_id, sizeof(out->build_id));
	return 0;
}
