// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The viewer's cells (view_cells.h). An event costs two map lookups: its
 * (stack, thread, zone) row, then the row's cell of that time bucket and
 * size class. Doubling the bucket width merges cells, a few dozen times in
 * the longest trace.
 */
#include "view_cells.h"
#include "peak_share.h"
#include "replay.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cell {
	struct view_cell pub;
	struct peak_share peak;
	uint64_t live_allocations;
	uint32_t row;
};

struct view_cells {
	struct replay *r;
	struct u64map rows;  /* (stack, thread, zone) -> row number */
	uint32_t nrows;
	struct u64map index; /* (row, bucket, size class) -> index into cells */
	struct u64map born;  /* live pointer -> its allocation's time: a free's block has the free's */
	struct cell *cells;
	size_t ncells, cells_cap;
	uint64_t bucket_ns;
	struct view_cell *out; /* after finish */
};

static uint64_t row_key(const struct replay_block *b)
{
	/* zone REPLAY_NONE wraps to 0; + 1 keeps the key off the map's empty 0 */
	return (((uint64_t)b->stack << 32) | ((uint64_t)(b->thread & 0xffff) << 16) |
		((b->zone + 1) & 0xffff)) + 1;
}

static uint64_t cell_key(uint32_t row, unsigned bucket, unsigned size_class)
{
	return (((uint64_t)row << 16) | (bucket << 8) | size_class) + 1;
}

static unsigned size_class(uint64_t size)
{
	return size > 1 ? 63 - (unsigned)__builtin_clzll(size) : 0;
}

/* Widen the buckets once: pairs merge, each cell's peak share settled at
 * EPOCH first so that the sums are shares of the same peak. */
static int cells_widen(struct view_cells *v, uint64_t epoch)
{
	size_t n = 0;

	u64map__clear(&v->index);
	v->bucket_ns *= 2;
	for (size_t i = 0; i < v->ncells; i++) {
		struct cell c = v->cells[i];
		struct u64map_entry *e;
		bool existed;

		peak_share__touch(&c.peak, epoch);
		c.pub.bucket /= 2;
		e = u64map__insert(&v->index, cell_key(c.row, c.pub.bucket, c.pub.size_class), &existed);
		if (!e)
			return -ENOMEM;
		if (existed) {
			struct cell *d = &v->cells[e->val];

			analysis_figures__add(&d->pub.figures, &c.pub.figures);
			d->peak.live_bytes += c.peak.live_bytes;
			d->peak.peak_bytes += c.peak.peak_bytes;
			d->live_allocations += c.live_allocations;
			continue;
		}
		e->val = n;
		v->cells[n++] = c;
	}
	v->ncells = n;
	return 0;
}

static unsigned bucket_of(const struct view_cells *v, uint64_t ts)
{
	uint64_t start = replay__start_ns(v->r);

	return (unsigned)((ts > start ? ts - start : 0) / v->bucket_ns);
}

/* The cell of block B made at TS (made if new), its bucket widened to fit. */
static struct cell *cell_of(struct view_cells *v, const struct replay_block *b, uint64_t ts)
{
	struct u64map_entry *e;
	unsigned bucket;
	uint32_t row;
	bool existed;

	while ((bucket = bucket_of(v, ts)) >= VIEW_CELLS_BUCKETS) {
		if (cells_widen(v, b->peak_epoch))
			return NULL;
	}
	e = u64map__insert(&v->rows, row_key(b), &existed);
	if (!e)
		return NULL;
	if (!existed)
		e->val = v->nrows++;
	row = (uint32_t)e->val;
	e = u64map__insert(&v->index, cell_key(row, bucket, size_class(b->size)), &existed);
	if (!e)
		return NULL;
	if (!existed) {
		if (array_reserve((void **)&v->cells, &v->cells_cap, v->ncells + 1, sizeof(*v->cells))) {
			u64map__remove(&v->index, e);
			return NULL;
		}
		v->cells[v->ncells] = (struct cell){
			.pub = { .stack = b->stack, .thread = b->thread, .zone = b->zone,
				 .bucket = (uint16_t)bucket, .size_class = (uint16_t)size_class(b->size) },
			/* born now: nothing of it was live at the current peak */
			.peak.epoch = b->peak_epoch,
			.row = row,
		};
		e->val = v->ncells++;
	}
	return &v->cells[e->val];
}

static int cells_alloc(void *ctx, const struct replay *r, const struct replay_block *b)
{
	struct view_cells *v = ctx;
	struct u64map_entry *e;
	struct cell *c;
	bool existed;

	e = u64map__insert(&v->born, b->ptr, &existed);
	if (!e)
		return -ENOMEM;
	e->val = b->ts;
	c = cell_of(v, b, b->ts);
	if (!c)
		return -ENOMEM;
	peak_share__touch(&c->peak, b->peak_epoch);
	c->peak.live_bytes += b->bytes;
	c->live_allocations += b->count;
	c->pub.figures.allocations += b->count;
	c->pub.figures.allocated_bytes += b->bytes;
	return 0;
}

static int cells_free(void *ctx, const struct replay *r, const struct replay_block *b,
		      bool temporary, bool replaced)
{
	struct view_cells *v = ctx;
	struct u64map_entry *e = u64map__get(&v->born, b->ptr);
	uint64_t ts = e ? e->val : b->ts; /* always found: the engine saw it made */
	struct cell *c;

	if (e)
		u64map__remove(&v->born, e);
	c = cell_of(v, b, ts);
	if (!c)
		return -ENOMEM;
	if (temporary)
		c->pub.figures.temporary_allocations += b->count;
	peak_share__touch(&c->peak, b->peak_epoch);
	c->peak.live_bytes -= b->bytes;
	c->live_allocations -= b->count;
	return 0;
}

static int cells_finish(void *ctx, const struct replay *r)
{
	struct view_cells *v = ctx;
	uint64_t epoch = replay__peak_epoch(r);

	v->out = calloc(v->ncells ? v->ncells : 1, sizeof(*v->out));
	if (!v->out)
		return -ENOMEM;
	for (size_t i = 0; i < v->ncells; i++) {
		struct cell *c = &v->cells[i];

		peak_share__touch(&c->peak, epoch);
		c->pub.figures.peak_bytes = c->peak.peak_bytes;
		c->pub.figures.leaked_bytes = c->peak.live_bytes;
		c->pub.figures.leaked_allocations = c->live_allocations;
		v->out[i] = c->pub;
	}
	return 0;
}

static const struct replay_ops cells_ops = {
	.alloc = cells_alloc,
	.free = cells_free,
	.finish = cells_finish,
};

struct view_cells *view_cells__new(struct replay *r)
{
	struct view_cells *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->r = r;
	v->bucket_ns = VIEW_CELLS_FIRST_BUCKET_NS;
	if (replay__observe(r, &cells_ops, v)) {
		free(v);
		errno = E2BIG;
		return NULL;
	}
	return v;
}

void view_cells__free(struct view_cells *v)
{
	if (!v)
		return;
	u64map__free(&v->rows);
	u64map__free(&v->index);
	u64map__free(&v->born);
	free(v->cells);
	free(v->out);
	free(v);
}

const struct view_cell *view_cells__cells(const struct view_cells *v, size_t *n)
{
	*n = v->out ? v->ncells : 0;
	return v->out;
}

uint64_t view_cells__bucket_ns(const struct view_cells *v)
{
	return v->bucket_ns;
}
