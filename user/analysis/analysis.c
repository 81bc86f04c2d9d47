// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `memtrace report`'s sites and totals (analysis.h): an observer of the
 * replay engine (replay.h), which owns every rule about the heap; this
 * file keeps the figures per stack while events stream in, because symbols
 * come at the end of a trace, and groups stacks into sites at the end.
 *
 * The per-site peak is computed in the same pass (peak_share.h).
 */
#include "analysis.h"
#include "arena.h"
#include "marks.h"
#include "peak_share.h"
#include "recent.h"
#include "replay.h"
#include "sites.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRAPPER_MIN_CALLERS 5 /* distinct call sites that make a function look like a wrapper */
#define WRAPPER_TOP_SITES 3   /* sites by bytes looked at for one */

/* A stack's figures, by the engine's stack index. */
struct stack {
	struct analysis_stack pub;
	struct peak_share peak; /* live bytes and their share of the peak */
	uint64_t live_allocs;
};

struct analysis {
	struct replay *r;
	struct marks *marks; /* zones, frames, pools: marks.c */
	struct arena arena;
	struct stack *stacks;
	size_t nstacks, stacks_cap;
	struct analysis_site *sites;
	size_t nsites;
	struct recent *recent; /* the live heap's changes by stack, for the last minute's */
	bool finished;
};

/* Make the figures of the engine's new stacks: zero, born in the current epoch. */
static struct stack *stack__grow(struct analysis *a, uint32_t s)
{
	size_t n = replay__nstacks(a->r);

	if (array_reserve((void **)&a->stacks, &a->stacks_cap, n, sizeof(*a->stacks)))
		return NULL;
	for (size_t i = a->nstacks; i < n; i++) {
		a->stacks[i] = (struct stack){ .pub.id = replay__stack(a->r, (uint32_t)i)->id };
		/* A stack born now had 0 bytes live at the current peak. */
		a->stacks[i].peak.epoch = replay__peak_epoch(a->r);
	}
	a->nstacks = n;
	return &a->stacks[s];
}

/* The figures of stack S, made if new. */
static inline struct stack *stack__get(struct analysis *a, uint32_t s)
{
	return s < a->nstacks ? &a->stacks[s] : stack__grow(a, s);
}

/* Before the stack's live bytes change (peak_share.h). */
static inline void stack__touch(struct stack *s, uint64_t epoch)
{
	peak_share__touch(&s->peak, epoch);
	s->pub.figures.peak_bytes = s->peak.peak_bytes;
}

static inline uint64_t since_start(const struct replay *r, uint64_t ts)
{
	return ts > replay__start_ns(r) ? ts - replay__start_ns(r) : 0;
}

static int sites_alloc(void *ctx, const struct replay *r, const struct replay_block *b)
{
	struct analysis *a = ctx;
	struct stack *s = stack__get(a, b->stack);

	if (!s)
		return -ENOMEM;
	stack__touch(s, b->peak_epoch);
	s->peak.live_bytes += b->bytes;
	s->live_allocs += b->count;
	s->pub.figures.allocations += b->count;
	s->pub.figures.allocated_bytes += b->bytes;
	if (b->exact) {
		s->pub.figures.exact_allocations += b->count;
		s->pub.figures.exact_bytes += b->bytes;
	}
	return recent__add(a->recent, since_start(r, b->ts), b->stack, (int64_t)b->bytes, (int64_t)b->count);
}

static int sites_free(void *ctx, const struct replay *r, const struct replay_block *b,
		      bool temporary, bool replaced)
{
	struct analysis *a = ctx;
	struct stack *s = stack__get(a, b->stack);

	if (!s)
		return -ENOMEM;
	if (temporary)
		s->pub.figures.temporary_allocations += b->count;
	stack__touch(s, b->peak_epoch);
	s->peak.live_bytes -= b->bytes;
	s->live_allocs -= b->count;
	/* now: the free's time, the latest the engine has seen */
	return recent__add(a->recent, since_start(r, replay__end_ns(r)), b->stack, -(int64_t)b->bytes,
			   -(int64_t)b->count);
}

static int sites_finish(void *ctx, const struct replay *r);

static const struct replay_ops sites_ops = {
	.alloc = sites_alloc,
	.free = sites_free,
	.finish = sites_finish,
};

struct analysis *analysis__new(void)
{
	struct analysis *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->r = replay__new();
	if (!a->r || !(a->recent = recent__new()) || replay__observe(a->r, &sites_ops, a) ||
	    !(a->marks = marks__new(a->r)) || !stack__get(a, 0)) {
		analysis__free(a);
		errno = ENOMEM;
		return NULL;
	}
	return a;
}

void analysis__free(struct analysis *a)
{
	if (!a)
		return;
	sites__free(a->sites, a->nsites);
	free(a->stacks);
	marks__free(a->marks);
	recent__free(a->recent);
	replay__free(a->r);
	arena__free(&a->arena);
	free(a);
}

struct replay *analysis__replay(struct analysis *a)
{
	return a->r;
}

int analysis__add_alloc_fn(struct analysis *a, const char *glob)
{
	return replay__add_alloc_fn(a->r, glob);
}

/* ---- feeding: the engine's ---- */

int analysis__set_meta(struct analysis *a, const struct trace_meta *m) { return replay__set_meta(a->r, m); }
int analysis__add_module(struct analysis *a, const struct trace_module *m) { return replay__add_module(a->r, m); }
int analysis__add_stack(struct analysis *a, const struct trace_stack *s) { return replay__add_stack(a->r, s); }
int analysis__add_symbol(struct analysis *a, const struct trace_symbol *s) { return replay__add_symbol(a->r, s); }
int analysis__add_event(struct analysis *a, const struct trace_event *e) { return replay__add_event(a->r, e); }
int analysis__add_drops(struct analysis *a, const struct trace_drops *d) { return replay__add_drops(a->r, d); }
int analysis__set_end(struct analysis *a, const struct trace_end *e) { return replay__set_end(a->r, e); }
int analysis__add_string(struct analysis *a, const struct trace_string *s) { return replay__add_string(a->r, s); }
int analysis__add_mark(struct analysis *a, const struct trace_mark *m) { return replay__add_mark(a->r, m); }
int analysis__add_thread(struct analysis *a, const struct trace_thread *t) { return replay__add_thread(a->r, t); }
int analysis__set_partial(struct analysis *a, const char *problem) { return replay__set_partial(a->r, problem); }

/* ---- finishing: sites ---- */

void analysis_figures__add(struct analysis_figures *sum, const struct analysis_figures *f)
{
	sum->allocations += f->allocations;
	sum->allocated_bytes += f->allocated_bytes;
	sum->peak_bytes += f->peak_bytes;
	sum->leaked_allocations += f->leaked_allocations;
	sum->leaked_bytes += f->leaked_bytes;
	sum->temporary_allocations += f->temporary_allocations;
	sum->resident_bytes += f->resident_bytes;
	sum->exact_allocations += f->exact_allocations;
	sum->exact_bytes += f->exact_bytes;
	/* a site's stacks taken as independent: their covariance within a
	 * window is left out */
	sum->var_allocations += f->var_allocations;
	sum->var_bytes += f->var_bytes;
	sum->recent_bytes += f->recent_bytes;
	sum->recent_allocations += f->recent_allocations;
}

/* A stack's change over the last minute (recent__sums). */
static int settle_recent(void *ctx, uint32_t stack, int64_t bytes, int64_t count)
{
	struct analysis *a = ctx;

	if (stack < a->nstacks) {
		a->stacks[stack].pub.figures.recent_bytes = bytes;
		a->stacks[stack].pub.figures.recent_allocations = count;
	}
	return 0;
}

/* Settle each stack's end-of-trace figures and symbolize the stacks that
 * allocated; *by gets those stacks. */
static int analysis__settle_stacks(struct analysis *a, const struct analysis_stack **by, size_t *n)
{
	*n = 0;
	for (size_t i = 0; i < a->nstacks; i++) {
		struct stack *s = &a->stacks[i];

		stack__touch(s, replay__peak_epoch(a->r));
		s->pub.figures.leaked_allocations = s->live_allocs;
		s->pub.figures.leaked_bytes = s->peak.live_bytes;
		s->pub.figures.resident_bytes = replay__resident_bytes(a->r, (uint32_t)i);
		s->pub.figures.var_allocations = replay__stack(a->r, (uint32_t)i)->var_count;
		s->pub.figures.var_bytes = replay__stack(a->r, (uint32_t)i)->var_bytes;
		if (!s->pub.figures.allocations)
			continue;
		s->pub.frames = replay__stack_frames(a->r, (uint32_t)i, &s->pub.nframes);
		s->pub.site = replay_site_frame(s->pub.frames, s->pub.nframes);
		if (!s->pub.frames && errno == ENOMEM)
			return -ENOMEM;
		by[(*n)++] = &s->pub;
	}
	return 0;
}

static int sites_finish(void *ctx, const struct replay *r)
{
	struct analysis *a = ctx;
	const struct analysis_stack **by;
	size_t n;
	int err;

	if (!stack__get(a, (uint32_t)replay__nstacks(r) - 1))
		return -ENOMEM;
	by = malloc((a->nstacks ? a->nstacks : 1) * sizeof(*by));
	if (!by)
		return -ENOMEM;
	errno = 0;
	err = recent__sums(a->recent, replay__trace(r)->duration_ns, &(uint64_t){ 0 }, settle_recent, a);
	if (!err)
		err = analysis__settle_stacks(a, by, &n);
	if (!err)
		err = sites__group(&a->arena, by, n, &a->sites, &a->nsites);
	free(by);
	if (!err)
		err = marks__finish(a->marks, a->sites, a->nsites);
	return err;
}

int analysis__finish(struct analysis *a)
{
	if (a->finished)
		return 0;
	a->finished = true;
	return replay__finish(a->r);
}

const struct marks *analysis__marks(const struct analysis *a)
{
	return a->marks;
}

const struct analysis_trace *analysis__trace(const struct analysis *a)
{
	return replay__trace(a->r);
}

const struct analysis_totals *analysis__totals(const struct analysis *a)
{
	return replay__totals(a->r);
}

const struct analysis_site *analysis__sites(const struct analysis *a, size_t *nsites)
{
	*nsites = a->nsites;
	return a->sites;
}

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
	if (name[0] == '[' || replay__is_alloc_fn(a->r, name))
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

