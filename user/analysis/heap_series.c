// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Live heap bytes over time, thinned by time buckets (heap_series.h). */
#include "heap_series.h"
#include "replay.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* The largest value of a span of time (first reached) and its last one:
 * two adjacent buckets merge into one exactly, which is what lets the
 * bucket width grow while the events stream in. */
struct bucket {
	uint64_t key;           /* t_ns / width */
	struct heap_point max;
	struct heap_point last;
};

struct heap_series {
	uint64_t live_bytes;    /* the engine's, after the latest event */
	uint64_t start_ns;
	uint64_t last_t;        /* keeps the points in time order */

	uint64_t width;         /* ns per bucket: doubles whenever they overflow */
	struct bucket *buckets;
	size_t nbuckets, max_buckets;

	struct heap_point *points; /* made by heap_series__finish */
	size_t npoints;
};

static int series_meta(void *ctx, const struct replay *r, const struct trace_meta *m);
static int series_event(void *ctx, const struct replay *r, const struct trace_event *e);

static const struct replay_ops series_ops = {
	.meta = series_meta,
	.event_done = series_event,
};

struct heap_series *heap_series__new(struct replay *r, size_t max_points)
{
	struct heap_series *s;

	if (max_points < 4) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* The first and the final point, then at most two per bucket. */
	s->max_buckets = (max_points - 2) / 2;
	s->buckets = calloc(s->max_buckets + 1, sizeof(*s->buckets));
	s->points = calloc(max_points, sizeof(*s->points));
	if (!s->buckets || !s->points || replay__observe(r, &series_ops, s)) {
		free(s->buckets);
		free(s->points);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->width = 1;
	s->start_ns = replay__start_ns(r);
	return s;
}

void heap_series__free(struct heap_series *s)
{
	if (!s)
		return;
	free(s->buckets);
	free(s->points);
	free(s);
}

static int series_meta(void *ctx, const struct replay *r, const struct trace_meta *m)
{
	struct heap_series *s = ctx;

	s->start_ns = m->start_mono_ns;
	return 0;
}

/* Double the bucket width until the buckets fit again. */
static void series__coarsen(struct heap_series *s)
{
	size_t i, n;

	while (s->nbuckets > s->max_buckets && s->width < UINT64_MAX / 2) {
		s->width *= 2;
		n = 0;
		for (i = 0; i < s->nbuckets; i++) {
			struct bucket b = s->buckets[i];
			struct bucket *prev = n ? &s->buckets[n - 1] : NULL;

			b.key = b.max.t_ns / s->width;
			if (prev && prev->key == b.key) {
				if (b.max.bytes > prev->max.bytes)
					prev->max = b.max;
				prev->last = b.last;
			} else {
				s->buckets[n++] = b;
			}
		}
		s->nbuckets = n;
	}
}

/* Record the live bytes after an event at TS. */
static void series__sample(struct heap_series *s, uint64_t ts)
{
	uint64_t t = ts > s->start_ns ? ts - s->start_ns : 0;
	struct bucket *b = s->nbuckets ? &s->buckets[s->nbuckets - 1] : NULL;
	struct heap_point p;

	/* Events of different CPUs can be a little out of order; a chart
	 * cannot go back in time. */
	if (t < s->last_t)
		t = s->last_t;
	s->last_t = t;
	p = (struct heap_point){ t, s->live_bytes };
	if (b && b->key == t / s->width) {
		if (p.bytes > b->max.bytes)
			b->max = p;
		b->last = p;
		return;
	}
	/* One spare slot: the new bucket goes in, then they are merged. */
	s->buckets[s->nbuckets++] = (struct bucket){ t / s->width, p, p };
	series__coarsen(s);
}

static int series_event(void *ctx, const struct replay *r, const struct trace_event *e)
{
	struct heap_series *s = ctx;

	s->live_bytes = replay__live_bytes(r);
	series__sample(s, e->ts);
	return 0;
}

static void series__push(struct heap_series *s, struct heap_point p)
{
	const struct heap_point *prev = s->npoints ? &s->points[s->npoints - 1] : NULL;

	if (prev && prev->t_ns == p.t_ns && prev->bytes == p.bytes)
		return;
	s->points[s->npoints++] = p;
}

int heap_series__finish(struct heap_series *s, uint64_t duration_ns)
{
	uint64_t end = duration_ns > s->last_t ? duration_ns : s->last_t;

	series__push(s, (struct heap_point){ 0, 0 });
	for (size_t i = 0; i < s->nbuckets; i++) {
		series__push(s, s->buckets[i].max);
		series__push(s, s->buckets[i].last);
	}
	series__push(s, (struct heap_point){ end, s->live_bytes });
	return 0;
}

const struct heap_point *heap_series__points(const struct heap_series *s, size_t *n)
{
	*n = s->npoints;
	return s->points;
}

