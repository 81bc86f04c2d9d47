// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Zones, frames and pools; the rules are in marks.h.
 *
 * An observer of the replay engine (replay.h), which owns names, threads,
 * zone nesting and the blocks: zone and pool figures live in arrays
 * parallel to the engine's names. The per-event cost with no marks in the
 * trace is two additions (the open frame's figures) and one map update (the
 * open frame's per-stack figures, for the TopN view).
 */
#include "marks.h"
#include "replay.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	struct replay *r;
	struct zone_state *zones;  /* by name index */
	struct pool_state *pools;  /* by name index */
	size_t names_cap;

	struct marks_frame *frames;
	size_t nframes, frames_cap;
	uint64_t *frame_ts;            /* each frame's closing mark, raw */
	uint64_t frame_allocs, frame_bytes; /* of the open frame */
	struct frame_stack *cur;       /* the open frame's stacks */
	size_t ncur, cur_cap;
	struct u64map cur_ids;         /* stack id + 1 -> index into cur */
	struct kept_frame kept[MARKS_TOP_FRAMES];
	size_t nkept;

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

static void mark_max(uint64_t *max, uint64_t v)
{
	if (v > *max)
		*max = v;
}

/* Room for the figures of name NAME (zeroed when new). */
static int names_reserve(struct marks *m, uint32_t name)
{
	size_t cap = m->names_cap, pcap = m->names_cap, old = m->names_cap;

	if (name < m->names_cap)
		return 0;
	if (array_reserve((void **)&m->zones, &cap, (size_t)name + 1, sizeof(*m->zones)) ||
	    array_reserve((void **)&m->pools, &pcap, cap, sizeof(*m->pools)))
		return -ENOMEM;
	memset(m->zones + old, 0, (cap - old) * sizeof(*m->zones));
	memset(m->pools + old, 0, (pcap - old) * sizeof(*m->pools));
	m->names_cap = cap < pcap ? cap : pcap;
	return 0;
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

static int frame_mark(struct marks *m, uint32_t name, uint64_t ts)
{
	size_t cap = m->frames_cap;
	struct marks_frame *f;
	int err;

	err = array_reserve((void **)&m->frames, &cap, m->nframes + 1, sizeof(*m->frames));
	if (!err)
		err = array_reserve((void **)&m->frame_ts, &m->frames_cap, m->nframes + 1,
				    sizeof(*m->frame_ts));
	if (err)
		return err;
	f = &m->frames[m->nframes];
	memset(f, 0, sizeof(*f));
	if (name != REPLAY_NONE)
		f->name = replay__name(m->r, name);
	f->allocations = m->frame_allocs;
	f->allocated_bytes = m->frame_bytes;
	m->frame_ts[m->nframes] = ts;
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
		if (array_reserve((void **)&m->cur, &m->cur_cap, m->ncur + 1, sizeof(*m->cur))) {
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

/* ---- the engine's events ---- */

static int on_frame(void *ctx, const struct replay *r, uint64_t index, uint32_t name,
		    const struct trace_mark *m)
{
	return frame_mark(ctx, name, m->ts);
}

static int on_pool(void *ctx, const struct replay *r, const struct trace_mark *mk, uint32_t name)
{
	struct marks *m = ctx;
	struct pool_state *p;

	if (names_reserve(m, name))
		return -ENOMEM;
	p = &m->pools[name];
	p->used = true;
	switch (mk->kind) {
	case MT_MARK_POOL_ALLOC:
		return pool_alloc(p, mk->ptr, mk->size);
	case MT_MARK_POOL_FREE:
		pool_free(p, mk->ptr);
		return 0;
	default:
		pool_reset(p);
		return 0;
	}
}

static int on_zone_begin(void *ctx, const struct replay *r, uint32_t thread, const struct replay_zone *z)
{
	struct marks *m = ctx;

	if (names_reserve(m, z->name))
		return -ENOMEM;
	m->zones[z->name].used = true;
	m->zones[z->name].pub.count++;
	return 0;
}

static int on_zone_end(void *ctx, const struct replay *r, uint32_t thread, const struct replay_zone *z,
		       uint64_t ts, bool at_end)
{
	struct marks *m = ctx;

	if (z->outer && ts > z->begin_ts)
		m->zones[z->name].pub.time_ns += ts - z->begin_ts;
	if (at_end)
		m->zones[z->name].pub.open_at_end++;
	return 0;
}

static int on_zone_unmatched_end(void *ctx, const struct replay *r, uint32_t thread, uint32_t name)
{
	struct marks *m = ctx;

	if (names_reserve(m, name))
		return -ENOMEM;
	m->zones[name].used = true;
	m->zones[name].pub.unmatched_ends++;
	return 0;
}

/* An allocation counts in its frame and, made inside zones, exclusively in
 * the innermost (block.zone) and inclusively once in each distinct zone
 * open on its thread. */
static int on_alloc(void *ctx, const struct replay *r, const struct replay_block *b)
{
	struct marks *m = ctx;
	const struct replay_zone *open;
	struct zone_state *z;
	size_t depth;
	int err;

	err = frame_add_alloc(m, b->stack_id, b->count, b->bytes);
	if (err || b->zone == REPLAY_NONE)
		return err;
	open = replay__thread_zones(r, b->thread, &depth);
	for (size_t i = 0; i < depth; i++) {
		if (!open[i].outer)
			continue;
		m->zones[open[i].name].pub.inclusive_allocations += b->count;
		m->zones[open[i].name].pub.inclusive_allocated_bytes += b->bytes;
	}
	z = &m->zones[b->zone];
	z->pub.allocations += b->count;
	z->pub.allocated_bytes += b->bytes;
	z->live_bytes += b->bytes;
	mark_max(&z->pub.peak_bytes, z->live_bytes);
	return 0;
}

static int on_free(void *ctx, const struct replay *r, const struct replay_block *b, bool temporary,
		   bool replaced)
{
	struct marks *m = ctx;

	if (b->zone != REPLAY_NONE)
		m->zones[b->zone].live_bytes -= b->bytes;
	return 0;
}

static const struct replay_ops marks_ops = {
	.alloc = on_alloc,
	.free = on_free,
	.zone_begin = on_zone_begin,
	.zone_end = on_zone_end,
	.zone_unmatched_end = on_zone_unmatched_end,
	.frame = on_frame,
	.pool = on_pool,
};

/* ---- lifetime ---- */

struct marks *marks__new(struct replay *r)
{
	struct marks *m = calloc(1, sizeof(struct marks));

	if (!m)
		return NULL;
	m->r = r;
	if (replay__observe(r, &marks_ops, m)) {
		free(m);
		return NULL;
	}
	return m;
}

void marks__free(struct marks *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->names_cap; i++)
		u64map__free(&m->pools[i].live);
	for (i = 0; i < m->nkept; i++)
		free(m->kept[i].stacks);
	free(m->zones);
	free(m->pools);
	free(m->frames);
	free(m->frame_ts);
	free(m->cur);
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
	size_t i, nz = 0, np = 0, nt = 0, nthreads = replay__nthreads(m->r);

	m->out_zones = calloc(m->names_cap + 1, sizeof(*m->out_zones));
	m->out_pools = calloc(m->names_cap + 1, sizeof(*m->out_pools));
	m->out_threads = calloc(nthreads + 1, sizeof(*m->out_threads));
	if (!m->out_zones || !m->out_pools || !m->out_threads)
		return -ENOMEM;
	for (i = 0; i < m->names_cap; i++) {
		struct zone_state *z = &m->zones[i];
		struct pool_state *p = &m->pools[i];

		if (z->used) {
			z->pub.name = replay__name(m->r, (uint32_t)i);
			z->pub.leaked_bytes = z->live_bytes;
			m->out_zones[nz++] = z->pub;
		}
		if (p->used) {
			p->pub.name = replay__name(m->r, (uint32_t)i);
			p->pub.leaked_allocations = p->live.count;
			p->pub.leaked_bytes = p->live_bytes;
			m->out_pools[np++] = p->pub;
		}
	}
	for (i = 0; i < nthreads; i++) {
		uint32_t name = replay__thread_name(m->r, (uint32_t)i);

		if (name != REPLAY_NONE)
			m->out_threads[nt++] = (struct marks_thread){ replay__thread_tid(m->r, (uint32_t)i),
								      replay__name(m->r, name) };
	}
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

int marks__finish(struct marks *m, const struct analysis_site *sites, size_t nsites)
{
	int err;

	if (m->finished)
		return 0;
	m->finished = true;
	m->totals.marks = replay__marks(m->r);
	frames_settle(m, replay__start_ns(m->r));
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
