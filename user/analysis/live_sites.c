// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Live figures per (stack, thread, zone) row (live_sites.h). An event costs
 * one map lookup; a snapshot sums the rows that pass the filter per stack
 * and groups those stacks into sites.
 */
#include "live_sites.h"
#include "arena.h"
#include "replay.h"
#include "sites.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct row {
	uint32_t stack, thread, zone;
	uint64_t allocations, allocated_bytes;
	uint64_t live_allocations, live_bytes;
};

/* A stack's frames, resolved once. */
struct stack_frames {
	const struct analysis_frame *frames;
	size_t n;
	bool resolved;
};

struct live_sites {
	struct replay *r;
	struct u64map index; /* row key -> index into rows */
	struct row *rows;
	size_t nrows, rows_cap;
	struct stack_frames *frames; /* by stack index */
	size_t frames_cap;

	/* the latest snapshot */
	struct analysis_stack *stacks;
	size_t stacks_cap;
	const struct analysis_stack **by;
	size_t by_cap;
	struct analysis_site *sites;
	size_t nsites;
	struct arena names; /* made-up site names of the latest snapshot */
};

static uint64_t row_key(uint32_t stack, uint32_t thread, uint32_t zone)
{
	/* zone REPLAY_NONE wraps to 0; + 1 keeps the key off the map's empty 0 */
	return (((uint64_t)stack << 32) | ((uint64_t)(thread & 0xffff) << 16) | ((zone + 1) & 0xffff)) + 1;
}

static struct row *row_of(struct live_sites *l, const struct replay_block *b)
{
	struct u64map_entry *e;
	bool existed;

	e = u64map__insert(&l->index, row_key(b->stack, b->thread, b->zone), &existed);
	if (!e)
		return NULL;
	if (!existed) {
		if (array_reserve((void **)&l->rows, &l->rows_cap, l->nrows + 1, sizeof(*l->rows))) {
			u64map__remove(&l->index, e);
			return NULL;
		}
		l->rows[l->nrows] = (struct row){ .stack = b->stack, .thread = b->thread, .zone = b->zone };
		e->val = l->nrows++;
	}
	return &l->rows[e->val];
}

static int on_alloc(void *ctx, const struct replay *r, const struct replay_block *b)
{
	struct row *w = row_of(ctx, b);

	if (!w)
		return -ENOMEM;
	w->allocations += b->count;
	w->allocated_bytes += b->bytes;
	w->live_allocations += b->count;
	w->live_bytes += b->bytes;
	return 0;
}

static int on_free(void *ctx, const struct replay *r, const struct replay_block *b, bool temporary,
		   bool replaced)
{
	struct row *w = row_of(ctx, b);

	if (!w)
		return -ENOMEM;
	w->live_allocations -= b->count;
	w->live_bytes -= b->bytes;
	return 0;
}

static const struct replay_ops live_ops = {
	.alloc = on_alloc,
	.free = on_free,
};

struct live_sites *live_sites__new(struct replay *r)
{
	struct live_sites *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->r = r;
	if (replay__observe(r, &live_ops, l)) {
		free(l);
		errno = E2BIG;
		return NULL;
	}
	return l;
}

void live_sites__free(struct live_sites *l)
{
	if (!l)
		return;
	u64map__free(&l->index);
	free(l->rows);
	free(l->frames);
	free(l->stacks);
	free(l->by);
	sites__free(l->sites, l->nsites);
	arena__free(&l->names);
	free(l);
}

static bool row_passes(const struct live_sites *l, const struct row *w, const struct live_filter *f,
		       uint32_t zone)
{
	if (!f)
		return true;
	if (f->tid && replay__thread_tid(l->r, w->thread) != f->tid)
		return false;
	return !f->zone || w->zone == zone;
}

/* The name index of F's zone, REPLAY_NONE if it has none or no such zone
 * exists (then no row passes). */
static uint32_t filter_zone(const struct live_sites *l, const struct live_filter *f, bool *none)
{
	*none = false;
	if (!f || !f->zone)
		return REPLAY_NONE;
	for (size_t i = 0; i < replay__nnames(l->r); i++) {
		if (!strcmp(replay__name(l->r, (uint32_t)i), f->zone))
			return (uint32_t)i;
	}
	*none = true;
	return REPLAY_NONE;
}

/* Stack S's frames, resolved the first time (its symbols come with it). */
static int frames_of(struct live_sites *l, uint32_t s, struct analysis_stack *out)
{
	size_t old = l->frames_cap;

	if (array_reserve((void **)&l->frames, &l->frames_cap, (size_t)s + 1, sizeof(*l->frames)))
		return -ENOMEM;
	if (l->frames_cap > old)
		memset(l->frames + old, 0, (l->frames_cap - old) * sizeof(*l->frames));
	if (!l->frames[s].resolved) {
		errno = 0;
		l->frames[s].frames = replay__stack_frames(l->r, s, &l->frames[s].n);
		if (!l->frames[s].frames && errno == ENOMEM)
			return -ENOMEM;
		l->frames[s].resolved = true;
	}
	out->frames = l->frames[s].frames;
	out->nframes = l->frames[s].n;
	out->site = replay_site_frame(out->frames, out->nframes);
	return 0;
}

int live_sites__snapshot(struct live_sites *l, const struct live_filter *f,
			 const struct analysis_site **sites, size_t *n)
{
	size_t nstacks = replay__nstacks(l->r), nby = 0;
	bool no_zone;
	uint32_t zone = filter_zone(l, f, &no_zone);
	int err;

	sites__free(l->sites, l->nsites);
	l->sites = NULL;
	l->nsites = 0;
	arena__free(&l->names);
	if (array_reserve((void **)&l->stacks, &l->stacks_cap, nstacks, sizeof(*l->stacks)) ||
	    array_reserve((void **)&l->by, &l->by_cap, nstacks, sizeof(*l->by)))
		return -ENOMEM;
	memset(l->stacks, 0, nstacks * sizeof(*l->stacks));
	for (size_t i = 0; i < l->nrows && !no_zone; i++) {
		const struct row *w = &l->rows[i];
		struct analysis_figures *fig = &l->stacks[w->stack].figures;

		if (!row_passes(l, w, f, zone))
			continue;
		fig->allocations += w->allocations;
		fig->allocated_bytes += w->allocated_bytes;
		fig->leaked_allocations += w->live_allocations;
		fig->leaked_bytes += w->live_bytes;
	}
	for (uint32_t s = 0; s < nstacks; s++) {
		struct analysis_stack *st = &l->stacks[s];

		if (!st->figures.allocations)
			continue;
		st->id = replay__stack(l->r, s)->id;
		err = frames_of(l, s, st);
		if (err)
			return err;
		l->by[nby++] = st;
	}
	err = sites__group(&l->names, l->by, nby, &l->sites, &l->nsites);
	if (err)
		return err;
	*sites = l->sites;
	*n = l->nsites;
	return 0;
}

size_t live_sites__zones(const struct live_sites *l, const char **names, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < l->nrows; i++) {
		const char *name;
		size_t j;

		if (l->rows[i].zone == REPLAY_NONE)
			continue;
		name = replay__name(l->r, l->rows[i].zone);
		for (j = 0; j < n && j < max && strcmp(names[j], name); j++)
			;
		if (j == n) {
			if (n < max)
				names[n] = name;
			n++;
		}
	}
	return n;
}

int live_sites__for_each(struct live_sites *l, int (*fn)(void *ctx, const struct live_row *row), void *ctx)
{
	int err = 0;

	for (size_t i = 0; i < l->nrows && !err; i++) {
		const struct row *w = &l->rows[i];
		uint32_t name = replay__thread_name(l->r, w->thread);
		struct live_row row = {
			.tid = replay__thread_tid(l->r, w->thread),
			.thread_name = name == REPLAY_NONE ? NULL : replay__name(l->r, name),
			.zone = w->zone == REPLAY_NONE ? NULL : replay__name(l->r, w->zone),
			.stack = {
				.id = replay__stack(l->r, w->stack)->id,
				.figures = {
					.allocations = w->allocations,
					.allocated_bytes = w->allocated_bytes,
					.leaked_allocations = w->live_allocations,
					.leaked_bytes = w->live_bytes,
				},
			},
		};

		if (!w->allocations)
			continue;
		err = frames_of(l, w->stack, &row.stack);
		if (!err)
			err = fn(ctx, &row);
	}
	return err;
}
