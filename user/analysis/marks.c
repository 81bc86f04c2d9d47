// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Zones, frames and pools; the rules are in marks.h.
 *
 * Everything is keyed by name index (names interned by text), so zone and
 * pool figures live in arrays parallel to the names. The per-event cost
 * with no marks in the trace is two additions (the open frame's figures)
 * and one map update (the open frame's per-stack figures, for the TopN
 * view); zone attribution costs a thread lookup and, for allocations made
 * inside a zone, one map entry until they are freed.
 */
#include "marks.h"
#include "u64map.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_NAME UINT32_MAX

struct name {
	char *text;
	uint64_t hash;
};

struct zone_state {
	struct marks_zone pub;
	uint64_t live_bytes; /* exclusive allocations not yet freed */
	bool used;
};

struct pool_state {
	struct marks_pool pub;
	struct u64map live; /* ptr -> size */
	uint64_t live_bytes;
	bool used;
};

struct open_zone {
	uint32_t name;
	bool outer; /* no zone of the same name below it: it alone counts time */
	uint64_t begin_ts;
};

struct thread_state {
	uint32_t tid;
	uint32_t name; /* NO_NAME: none */
	struct open_zone *open;
	size_t depth, cap;
};

/* One stack's allocations within a frame. */
struct frame_stack {
	uint32_t stack_id;
	uint64_t allocations;
	uint64_t bytes;
};

struct kept_frame {
	size_t index;
	struct frame_stack *stacks;
	size_t nstacks;
};

struct marks {
	struct name *names;
	size_t nnames, names_cap;
	struct u64map name_hashes; /* hash of the text -> name index */
	struct u64map string_ids;  /* STRING id -> name index */
	struct zone_state *zones;  /* by name index, names_cap of them */
	struct pool_state *pools;  /* by name index */

	struct thread_state *threads;
	size_t nthreads, threads_cap;
	struct u64map tids;      /* tid + 1 -> thread index */
	struct u64map zone_ptrs; /* heap ptr -> size, tag: exclusive zone */

	struct marks_frame *frames;
	size_t nframes, frames_cap;
	uint64_t *frame_ts;            /* each frame's closing mark, raw */
	uint64_t frame_allocs, frame_bytes; /* of the open frame */
	struct frame_stack *cur;       /* the open frame's stacks */
	size_t ncur, cur_cap;
	struct u64map cur_ids;         /* stack id + 1 -> index into cur */
	struct kept_frame kept[MARKS_TOP_FRAMES];
	size_t nkept;

	uint64_t last_ts;
	struct marks_totals totals;
	bool finished;

	struct marks_zone *out_zones;
	size_t nout_zones;
	struct marks_pool *out_pools;
	size_t nout_pools;
	struct marks_thread *out_threads;
	size_t nout_threads;
	struct marks_top_frame *out_top;
	size_t nout_top;
	struct marks_frame_site *out_sites;
};

/* ---- helpers ---- */

static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
	void **p = pp;
	size_t ncap = *cap ? *cap : 8;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* grow() that zeroes the new elements. */
static int grow_zeroed(void *pp, size_t *cap, size_t need, size_t elem)
{
	size_t old = *cap;
	int err = grow(pp, cap, need, elem);

	if (!err && *cap > old)
		memset((char *)*(void **)pp + old * elem, 0, (*cap - old) * elem);
	return err;
}

static uint64_t text_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h | 1; /* never 0, the map's empty key */
}

static void mark_max(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

/* ---- names ---- */

static int names__append(struct marks *m, const char *text, uint64_t hash, uint32_t *idx)
{
	size_t cap = m->names_cap, zcap = m->names_cap, pcap = m->names_cap;
	int err;

	err = grow(&m->names, &cap, m->nnames + 1, sizeof(*m->names));
	if (!err)
		err = grow_zeroed(&m->zones, &zcap, cap, sizeof(*m->zones));
	if (!err)
		err = grow_zeroed(&m->pools, &pcap, cap, sizeof(*m->pools));
	if (err)
		return err;
	m->names_cap = cap;
	m->names[m->nnames].text = strdup(text);
	if (!m->names[m->nnames].text)
		return -ENOMEM;
	m->names[m->nnames].hash = hash;
	*idx = (uint32_t)m->nnames++;
	return 0;
}

/* The index of the name TEXT, added if new. */
static int names__intern(struct marks *m, const char *text, uint32_t *idx)
{
	uint64_t hash = text_hash(text);
	struct u64map_entry *e = u64map__get(&m->name_hashes, hash);
	bool existed;
	size_t i;
	int err;

	if (e && !strcmp(m->names[e->val].text, text)) {
		*idx = (uint32_t)e->val;
		return 0;
	}
	/* Two texts with one hash: rare enough for a scan. */
	for (i = 0; e && i < m->nnames; i++) {
		if (m->names[i].hash == hash && !strcmp(m->names[i].text, text)) {
			*idx = (uint32_t)i;
			return 0;
		}
	}
	err = names__append(m, text, hash, idx);
	if (err || e)
		return err;
	e = u64map__insert(&m->name_hashes, hash, &existed);
	if (!e)
		return -ENOMEM;
	e->val = *idx;
	return 0;
}

/* The name a mark's string ID stands for. */
static int names__of_id(struct marks *m, uint32_t id, uint32_t *idx)
{
	struct u64map_entry *e;
	char buf[32];
	bool existed;
	int err;

	if (!id)
		return names__intern(m, "[unnamed]", idx);
	e = u64map__get(&m->string_ids, id);
	if (e) {
		*idx = (uint32_t)e->val;
		return 0;
	}
	/* Its STRING was lost: name it by id, the same way every time. */
	snprintf(buf, sizeof(buf), "[string %u]", id);
	err = names__intern(m, buf, idx);
	if (err)
		return err;
	e = u64map__insert(&m->string_ids, id, &existed);
	if (!e)
		return -ENOMEM;
	e->val = *idx;
	return 0;
}

int marks__add_string(struct marks *m, const struct trace_string *s)
{
	struct u64map_entry *e;
	uint32_t idx;
	bool existed;
	int err;

	err = names__intern(m, s->str ? s->str : "", &idx);
	if (err)
		return err;
	e = u64map__insert(&m->string_ids, s->id, &existed);
	if (!e)
		return -ENOMEM;
	e->val = idx;
	return 0;
}

/* ---- threads and zones ---- */

static int threads__get(struct marks *m, uint32_t tid, struct thread_state **out)
{
	struct u64map_entry *e;
	bool existed;

	e = u64map__insert(&m->tids, (uint64_t)tid + 1, &existed);
	if (!e)
		return -ENOMEM;
	if (!existed) {
		if (grow(&m->threads, &m->threads_cap, m->nthreads + 1, sizeof(*m->threads))) {
			u64map__remove(&m->tids, e);
			return -ENOMEM;
		}
		memset(&m->threads[m->nthreads], 0, sizeof(m->threads[0]));
		m->threads[m->nthreads].tid = tid;
		m->threads[m->nthreads].name = NO_NAME;
		e->val = m->nthreads++;
	}
	*out = &m->threads[e->val];
	return 0;
}

static void zone_close(struct marks *m, const struct open_zone *z, uint64_t ts)
{
	if (z->outer && ts > z->begin_ts)
		m->zones[z->name].pub.time_ns += ts - z->begin_ts;
}

static int zone_begin(struct marks *m, struct thread_state *th, uint32_t name, uint64_t ts)
{
	struct open_zone *z;
	size_t i;

	if (grow(&th->open, &th->cap, th->depth + 1, sizeof(*th->open)))
		return -ENOMEM;
	z = &th->open[th->depth++];
	z->name = name;
	z->begin_ts = ts;
	z->outer = true;
	for (i = 0; i + 1 < th->depth; i++)
		if (th->open[i].name == name)
			z->outer = false;
	m->zones[name].used = true;
	m->zones[name].pub.count++;
	return 0;
}

/* Close the innermost open NAME, and the zones opened inside it first. */
static void zone_end(struct marks *m, struct thread_state *th, uint32_t name, uint64_t ts)
{
	size_t i = th->depth;

	while (i > 0 && th->open[i - 1].name != name)
		i--;
	if (!i) {
		m->zones[name].used = true;
		m->zones[name].pub.unmatched_ends++;
		return;
	}
	while (th->depth >= i)
		zone_close(m, &th->open[--th->depth], ts);
}

/* ---- pools ---- */

static int pool_alloc(struct pool_state *p, uint64_t ptr, uint64_t size)
{
	struct u64map_entry *e;
	bool existed;

	if (!ptr)
		return 0; /* a failed allocation */
	e = u64map__insert(&p->live, ptr, &existed);
	if (!e)
		return -ENOMEM;
	if (existed)
		p->live_bytes -= e->val; /* its free was never marked */
	e->val = size;
	p->pub.allocations++;
	p->pub.allocated_bytes += size;
	p->live_bytes += size;
	mark_max(&p->pub.peak_bytes, p->live_bytes);
	return 0;
}

static void pool_free(struct pool_state *p, uint64_t ptr)
{
	struct u64map_entry *e;

	if (!ptr)
		return; /* free(NULL) frees nothing */
	e = u64map__get(&p->live, ptr);
	if (!e) {
		p->pub.unmatched_frees++;
		return;
	}
	p->pub.frees++;
	p->live_bytes -= e->val;
	u64map__remove(&p->live, e);
}

static void pool_reset(struct pool_state *p)
{
	p->pub.resets++;
	p->live_bytes = 0;
	u64map__clear(&p->live);
}

/* ---- frames ---- */

/* Keep the closed frame's stacks if it is among the MARKS_TOP_FRAMES that
 * allocated most so far (ties: the earlier frame stays). */
static int frame_keep(struct marks *m, size_t index)
{
	uint64_t bytes = m->frames[index].allocated_bytes;
	struct kept_frame *k;
	size_t i, min = 0;

	if (m->nkept == MARKS_TOP_FRAMES) {
		/* The one to drop: fewest bytes, and of those the latest. */
		for (i = 1; i < m->nkept; i++) {
			uint64_t bi = m->frames[m->kept[i].index].allocated_bytes;
			uint64_t bm = m->frames[m->kept[min].index].allocated_bytes;

			if (bi < bm || (bi == bm && m->kept[i].index > m->kept[min].index))
				min = i;
		}
		if (bytes <= m->frames[m->kept[min].index].allocated_bytes)
			return 0;
		k = &m->kept[min];
		free(k->stacks);
	} else {
		k = &m->kept[m->nkept++];
	}
	k->index = index;
	k->nstacks = m->ncur;
	k->stacks = malloc((m->ncur ? m->ncur : 1) * sizeof(*k->stacks));
	if (!k->stacks) {
		k->nstacks = 0;
		return -ENOMEM;
	}
	if (m->ncur)
		memcpy(k->stacks, m->cur, m->ncur * sizeof(*k->stacks));
	return 0;
}

/* Empty the open frame's stacks, by key: the map may have grown large once
 * and clearing all of it at every frame would cost more than the frame. */
static void frame_reset(struct marks *m)
{
	size_t i;

	for (i = 0; i < m->ncur; i++)
		u64map__remove(&m->cur_ids, u64map__get(&m->cur_ids, (uint64_t)m->cur[i].stack_id + 1));
	m->ncur = 0;
	m->frame_allocs = m->frame_bytes = 0;
}

static int frame_mark(struct marks *m, const struct trace_mark *mk)
{
	size_t cap = m->frames_cap;
	struct marks_frame *f;
	uint32_t name;
	int err;

	err = grow(&m->frames, &cap, m->nframes + 1, sizeof(*m->frames));
	if (!err)
		err = grow(&m->frame_ts, &m->frames_cap, m->nframes + 1, sizeof(*m->frame_ts));
	if (err)
		return err;
	f = &m->frames[m->nframes];
	memset(f, 0, sizeof(*f));
	if (mk->name) {
		err = names__of_id(m, mk->name, &name);
		if (err)
			return err;
		f->name = m->names[name].text;
	}
	f->allocations = m->frame_allocs;
	f->allocated_bytes = m->frame_bytes;
	m->frame_ts[m->nframes] = mk->ts;
	err = frame_keep(m, m->nframes++);
	frame_reset(m);
	return err;
}

static int frame_add_alloc(struct marks *m, uint32_t stack_id, uint64_t count, uint64_t size)
{
	struct u64map_entry *e;
	struct frame_stack *s;
	bool existed;

	m->frame_allocs += count;
	m->frame_bytes += size;
	e = u64map__insert(&m->cur_ids, (uint64_t)stack_id + 1, &existed);
	if (!e)
		return -ENOMEM;
	if (!existed) {
		if (grow(&m->cur, &m->cur_cap, m->ncur + 1, sizeof(*m->cur))) {
			u64map__remove(&m->cur_ids, e);
			return -ENOMEM;
		}
		m->cur[m->ncur] = (struct frame_stack){ .stack_id = stack_id };
		e->val = m->ncur++;
	}
	s = &m->cur[e->val];
	s->allocations += count;
	s->bytes += size;
	return 0;
}

/* ---- feeding ---- */

int marks__add_mark(struct marks *m, const struct trace_mark *mk)
{
	struct thread_state *th;
	uint32_t name;
	int err;

	m->totals.marks++;
	mark_max(&m->last_ts, mk->ts);
	if (mk->kind == TRACE_MARK_FRAME)
		return frame_mark(m, mk);
	if (mk->kind < TRACE_MARK_ZONE_BEGIN || mk->kind > TRACE_MARK_THREAD_NAME)
		return 0; /* a kind this version does not know */
	err = names__of_id(m, mk->name, &name);
	if (err)
		return err;
	switch (mk->kind) {
	case TRACE_MARK_POOL_ALLOC:
		m->pools[name].used = true;
		return pool_alloc(&m->pools[name], mk->ptr, mk->size);
	case TRACE_MARK_POOL_FREE:
		m->pools[name].used = true;
		pool_free(&m->pools[name], mk->ptr);
		return 0;
	case TRACE_MARK_POOL_RESET:
		m->pools[name].used = true;
		pool_reset(&m->pools[name]);
		return 0;
	}
	err = threads__get(m, mk->tid, &th);
	if (err)
		return err;
	if (mk->kind == TRACE_MARK_ZONE_BEGIN)
		return zone_begin(m, th, name, mk->ts);
	if (mk->kind == TRACE_MARK_ZONE_END)
		zone_end(m, th, name, mk->ts);
	else
		th->name = name;
	return 0;
}

int marks__add_thread(struct marks *m, const struct trace_thread *t)
{
	struct thread_state *th;
	uint32_t name;
	int err;

	if (!t->name)
		return 0;
	err = names__intern(m, t->name, &name);
	if (!err)
		err = threads__get(m, t->tid, &th);
	if (!err)
		th->name = name;
	return err;
}

static void heap_free(struct marks *m, uint64_t ptr)
{
	struct u64map_entry *e = u64map__get(&m->zone_ptrs, ptr);
	struct zone_state *z;

	if (!e)
		return;
	z = &m->zones[e->tag];
	z->live_bytes -= e->val;
	u64map__remove(&m->zone_ptrs, e);
}

/* Attribute an allocation to the zones open on its thread. */
static int heap_alloc_zones(struct marks *m, const struct thread_state *th, uint64_t ptr,
			    uint64_t count, uint64_t size)
{
	uint32_t top = th->open[th->depth - 1].name;
	struct zone_state *z = &m->zones[top];
	struct u64map_entry *e;
	bool existed;
	size_t i;

	for (i = 0; i < th->depth; i++) {
		if (!th->open[i].outer)
			continue;
		m->zones[th->open[i].name].pub.inclusive_allocations += count;
		m->zones[th->open[i].name].pub.inclusive_allocated_bytes += size;
	}
	z->pub.allocations += count;
	z->pub.allocated_bytes += size;
	z->live_bytes += size;
	mark_max(&z->pub.peak_bytes, z->live_bytes);
	e = u64map__insert(&m->zone_ptrs, ptr, &existed);
	if (!e)
		return -ENOMEM;
	e->val = size;
	e->tag = top;
	return 0;
}

static int heap_alloc(struct marks *m, const struct trace_event *ev, uint64_t count,
		      uint64_t bytes)
{
	struct u64map_entry *t;
	int err;

	/* A pointer still live (its free was lost) is replaced, as in analysis.h. */
	heap_free(m, ev->ptr);
	err = frame_add_alloc(m, ev->stack_id, count, bytes);
	if (err)
		return err;
	t = u64map__get(&m->tids, (uint64_t)ev->tid + 1);
	if (!t || !m->threads[t->val].depth)
		return 0;
	return heap_alloc_zones(m, &m->threads[t->val], ev->ptr, count, bytes);
}

int marks__add_event(struct marks *m, const struct trace_event *e, uint64_t count, uint64_t bytes)
{
	mark_max(&m->last_ts, e->ts);
	switch (e->type) {
	case TRACE_EVENT_ALLOC:
		return e->ptr ? heap_alloc(m, e, count, bytes) : 0;
	case TRACE_EVENT_FREE:
		if (e->ptr)
			heap_free(m, e->ptr);
		return 0;
	case TRACE_EVENT_REALLOC:
		if (!e->ptr && e->size)
			return 0; /* failed: the old block stays */
		if (e->old_ptr)
			heap_free(m, e->old_ptr);
		return e->ptr ? heap_alloc(m, e, count, bytes) : 0;
	}
	return 0;
}

/* ---- lifetime ---- */

struct marks *marks__new(void)
{
	return calloc(1, sizeof(struct marks));
}

void marks__free(struct marks *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nnames; i++) {
		free(m->names[i].text);
		u64map__free(&m->pools[i].live);
	}
	for (i = 0; i < m->nthreads; i++)
		free(m->threads[i].open);
	for (i = 0; i < m->nkept; i++)
		free(m->kept[i].stacks);
	free(m->names);
	free(m->zones);
	free(m->pools);
	free(m->threads);
	free(m->frames);
	free(m->frame_ts);
	free(m->cur);
	u64map__free(&m->name_hashes);
	u64map__free(&m->string_ids);
	u64map__free(&m->tids);
	u64map__free(&m->zone_ptrs);
	u64map__free(&m->cur_ids);
	free(m->out_zones);
	free(m->out_pools);
	free(m->out_threads);
	free(m->out_top);
	free(m->out_sites);
	free(m);
}

/* ---- finishing ---- */

static int zone_rank_cmp(const void *px, const void *py)
{
	const struct marks_zone *x = px, *y = py;

	if (x->inclusive_allocated_bytes != y->inclusive_allocated_bytes)
		return x->inclusive_allocated_bytes > y->inclusive_allocated_bytes ? -1 : 1;
	if (x->allocated_bytes != y->allocated_bytes)
		return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int pool_rank_cmp(const void *px, const void *py)
{
	const struct marks_pool *x = px, *y = py;

	if (x->allocated_bytes != y->allocated_bytes)
		return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int thread_cmp(const void *px, const void *py)
{
	const struct marks_thread *x = px, *y = py;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int top_frame_cmp(const void *px, const void *py)
{
	const struct marks_top_frame *x = px, *y = py;

	if (x->frame->allocated_bytes != y->frame->allocated_bytes)
		return x->frame->allocated_bytes > y->frame->allocated_bytes ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static int frame_site_cmp(const void *px, const void *py)
{
	const struct marks_frame_site *x = px, *y = py;

	if (x->allocated_bytes != y->allocated_bytes)
		return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return strcmp(x->site->name, y->site->name);
}

/* Zones still open end with the trace. */
static void zones_settle(struct marks *m, uint64_t end)
{
	size_t i;

	for (i = 0; i < m->nthreads; i++) {
		struct thread_state *th = &m->threads[i];

		while (th->depth) {
			struct open_zone *z = &th->open[--th->depth];

			zone_close(m, z, end);
			m->zones[z->name].pub.open_at_end++;
		}
	}
}

static void frames_settle(struct marks *m, uint64_t start)
{
	uint64_t prev = start;
	size_t i;

	for (i = 0; i < m->nframes; i++) {
		uint64_t ts = m->frame_ts[i];

		m->frames[i].end_ns = ts > start ? ts - start : 0;
		m->frames[i].duration_ns = ts > prev ? ts - prev : 0;
		if (ts > prev)
			prev = ts;
	}
	m->totals.frame_marks = m->nframes;
	m->totals.tail_allocations = m->frame_allocs;
	m->totals.tail_allocated_bytes = m->frame_bytes;
}

static int names_collect(struct marks *m)
{
	size_t i, nz = 0, np = 0, nt = 0;

	m->out_zones = calloc(m->nnames + 1, sizeof(*m->out_zones));
	m->out_pools = calloc(m->nnames + 1, sizeof(*m->out_pools));
	m->out_threads = calloc(m->nthreads + 1, sizeof(*m->out_threads));
	if (!m->out_zones || !m->out_pools || !m->out_threads)
		return -ENOMEM;
	for (i = 0; i < m->nnames; i++) {
		struct zone_state *z = &m->zones[i];
		struct pool_state *p = &m->pools[i];

		if (z->used) {
			z->pub.name = m->names[i].text;
			z->pub.leaked_bytes = z->live_bytes;
			m->out_zones[nz++] = z->pub;
		}
		if (p->used) {
			p->pub.name = m->names[i].text;
			p->pub.leaked_allocations = p->live.count;
			p->pub.leaked_bytes = p->live_bytes;
			m->out_pools[np++] = p->pub;
		}
	}
	for (i = 0; i < m->nthreads; i++)
		if (m->threads[i].name != NO_NAME)
			m->out_threads[nt++] = (struct marks_thread){ m->threads[i].tid,
								      m->names[m->threads[i].name].text };
	qsort(m->out_zones, nz, sizeof(*m->out_zones), zone_rank_cmp);
	qsort(m->out_pools, np, sizeof(*m->out_pools), pool_rank_cmp);
	qsort(m->out_threads, nt, sizeof(*m->out_threads), thread_cmp);
	m->nout_zones = nz;
	m->nout_pools = np;
	m->nout_threads = nt;
	return 0;
}

/* One kept frame's stacks summed per site into OUT (room for
 * MARKS_FRAME_SITES); BY_STACK maps stack id + 1 to a site index. */
static int frame_sites(const struct kept_frame *k, const struct u64map *by_stack,
		       const struct analysis_site *sites, struct marks_frame_site *out,
		       size_t *nout)
{
	struct marks_frame_site *acc = calloc(k->nstacks + 1, sizeof(*acc));
	struct u64map pos = { 0 };
	size_t i, n = 0;
	bool existed;

	if (!acc)
		return -ENOMEM;
	for (i = 0; i < k->nstacks; i++) {
		struct u64map_entry *s = u64map__get(by_stack, (uint64_t)k->stacks[i].stack_id + 1);
		struct u64map_entry *e;

		if (!s)
			continue; /* cannot happen: the analysis saw the same allocations */
		e = u64map__insert(&pos, s->val + 1, &existed);
		if (!e)
			goto err_free;
		if (!existed) {
			e->val = n;
			acc[n++].site = &sites[s->val];
		}
		acc[e->val].allocations += k->stacks[i].allocations;
		acc[e->val].allocated_bytes += k->stacks[i].bytes;
	}
	qsort(acc, n, sizeof(*acc), frame_site_cmp);
	*nout = n < MARKS_FRAME_SITES ? n : MARKS_FRAME_SITES;
	memcpy(out, acc, *nout * sizeof(*out));
	u64map__free(&pos);
	free(acc);
	return 0;

err_free:
	u64map__free(&pos);
	free(acc);
	return -ENOMEM;
}

static int stacks_to_sites(struct u64map *by_stack, const struct analysis_site *sites,
			   size_t nsites)
{
	struct u64map_entry *e;
	bool existed;
	size_t i, j;

	for (i = 0; i < nsites; i++) {
		for (j = 0; j < sites[i].nstacks; j++) {
			e = u64map__insert(by_stack, (uint64_t)sites[i].stacks[j]->id + 1, &existed);
			if (!e)
				return -ENOMEM;
			e->val = i;
		}
	}
	return 0;
}

static int top_frames_collect(struct marks *m, const struct analysis_site *sites, size_t nsites)
{
	struct u64map by_stack = { 0 };
	size_t i, n = 0;
	int err;

	m->out_top = calloc(m->nkept + 1, sizeof(*m->out_top));
	m->out_sites = calloc(m->nkept * MARKS_FRAME_SITES + 1, sizeof(*m->out_sites));
	if (!m->out_top || !m->out_sites)
		return -ENOMEM;
	err = stacks_to_sites(&by_stack, sites, nsites);
	for (i = 0; i < m->nkept && !err; i++) {
		const struct kept_frame *k = &m->kept[i];
		struct marks_top_frame *t = &m->out_top[n];
		struct marks_frame_site *out = m->out_sites + n * MARKS_FRAME_SITES;

		if (!m->frames[k->index].allocations)
			continue;
		t->index = k->index;
		t->frame = &m->frames[k->index];
		t->sites = out;
		err = frame_sites(k, &by_stack, sites, out, &t->nsites);
		n++;
	}
	u64map__free(&by_stack);
	qsort(m->out_top, n, sizeof(*m->out_top), top_frame_cmp);
	m->nout_top = n;
	return err;
}

int marks__finish(struct marks *m, uint64_t start_ns, uint64_t end_ns,
		  const struct analysis_site *sites, size_t nsites)
{
	int err;

	if (m->finished)
		return 0;
	m->finished = true;
	zones_settle(m, end_ns ? end_ns : m->last_ts);
	frames_settle(m, start_ns);
	err = names_collect(m);
	if (!err)
		err = top_frames_collect(m, sites, nsites);
	return err;
}

const struct marks_zone *marks__zones(const struct marks *m, size_t *n)
{
	*n = m->nout_zones;
	return m->out_zones;
}

const struct marks_frame *marks__frames(const struct marks *m, size_t *n)
{
	*n = m->nframes;
	return m->frames;
}

const struct marks_top_frame *marks__top_frames(const struct marks *m, size_t *n)
{
	*n = m->nout_top;
	return m->out_top;
}

const struct marks_pool *marks__pools(const struct marks *m, size_t *n)
{
	*n = m->nout_pools;
	return m->out_pools;
}

const struct marks_thread *marks__threads(const struct marks *m, size_t *n)
{
	*n = m->nout_threads;
	return m->out_threads;
}

const struct marks_totals *marks__totals(const struct marks *m)
{
	return &m->totals;
}
