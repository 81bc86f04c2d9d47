// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * view_cells.h: the viewer's cells, by stack, thread, zone, time bucket
 * and size class, with the report's figures (peak share, temporary, leaked).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "replay.h"
#include "view_cells.h"

#define START 1000
#define MS 1000000ull

struct fixture {
	struct replay *r;
	struct view_cells *v;
};

static void setup(struct fixture *f)
{
	struct trace_meta m = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t a[] = { 0x401000 }, b[] = { 0x405000 };
	const struct trace_stack stacks[] = { { 1, 1, a }, { 2, 1, b } };
	struct trace_string zone = { .id = 1, .str = "render" };

	f->r = replay__new();
	assert_non_null(f->r);
	f->v = view_cells__new(f->r);
	assert_non_null(f->v);
	assert_int_equal(replay__set_meta(f->r, &m), 0);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(replay__add_stack(f->r, &stacks[i]), 0);
	assert_int_equal(replay__add_string(f->r, &zone), 0);
}

static void ev(struct fixture *f, uint32_t type, uint32_t tid, uint64_t t, uint64_t ptr, uint64_t size,
	       uint32_t stack)
{
	struct trace_event e = { .type = type, .tid = tid, .ts = START + t, .ptr = ptr, .size = size,
				 .stack_id = stack };

	assert_int_equal(replay__add_event(f->r, &e), 0);
}

/* The cell with these keys; fails the test if there is none. */
static const struct view_cell *find(struct fixture *f, uint32_t stack, uint32_t thread, uint32_t zone,
				    unsigned bucket, unsigned size_class)
{
	const struct view_cell *c;
	size_t n;

	c = view_cells__cells(f->v, &n);
	for (size_t i = 0; i < n; i++) {
		if (c[i].stack == stack && c[i].thread == thread && c[i].zone == zone &&
		    c[i].bucket == bucket && c[i].size_class == size_class)
			return &c[i];
	}
	fail_msg("no cell stack %u thread %u zone %u bucket %u class %u", stack, thread, zone, bucket,
		 size_class);
	return NULL;
}

static uint32_t name_index(const struct replay *r, const char *name)
{
	for (uint32_t i = 0; i < replay__nnames(r); i++)
		if (!strcmp(replay__name(r, i), name))
			return i;
	fail_msg("no name %s", name);
	return REPLAY_NONE;
}

static void test_cells_split_and_sum_to_the_totals(void **state)
{
	struct analysis_figures sum = { 0 };
	const struct view_cell *c;
	struct fixture f;
	size_t n;

	setup(&f);
	ev(&f, MT_EVENT_ALLOC, 7, 0, 0x10, 100, 1);            /* class 6, bucket 0 */
	ev(&f, MT_EVENT_ALLOC, 7, 1, 0x20, 127, 1);            /* class 6 too */
	ev(&f, MT_EVENT_FREE, 7, 2, 0x20, 0, 0);               /* temporary */
	ev(&f, MT_EVENT_ALLOC, 8, 3 * MS, 0x30, 1, 2);         /* thread 8, bucket 3, class 0 */
	assert_int_equal(replay__add_mark(f.r, &(struct trace_mark){ .kind = MT_MARK_ZONE_BEGIN, .tid = 8,
								   .ts = START + 3 * MS, .name = 1 }), 0);
	ev(&f, MT_EVENT_ALLOC, 8, 3 * MS + 1, 0x40, 4096, 2);  /* in render, class 12: the peak */
	ev(&f, MT_EVENT_FREE, 8, 3 * MS + 2, 0x40, 0, 0);
	ev(&f, MT_EVENT_FREE, 8, 3 * MS + 3, 0x10, 0, 0);      /* thread 8 frees thread 7's block */
	assert_int_equal(replay__finish(f.r), 0);

	assert_int_equal(view_cells__bucket_ns(f.v), MS);
	c = find(&f, 1, 0, REPLAY_NONE, 0, 6);
	assert_int_equal(c->figures.allocations, 2);
	assert_int_equal(c->figures.allocated_bytes, 227);
	assert_int_equal(c->figures.temporary_allocations, 1);
	assert_int_equal(c->figures.leaked_bytes, 0);
	assert_int_equal(c->figures.peak_bytes, 100); /* 100 live when 4197 were */
	c = find(&f, 2, 1, REPLAY_NONE, 3, 0);
	assert_int_equal(c->figures.allocated_bytes, 1);
	assert_int_equal(c->figures.leaked_allocations, 1);
	assert_int_equal(c->figures.leaked_bytes, 1);
	assert_int_equal(c->figures.peak_bytes, 1);
	c = find(&f, 2, 1, name_index(f.r, "render"), 3, 12);
	assert_int_equal(c->figures.allocated_bytes, 4096);
	assert_int_equal(c->figures.peak_bytes, 4096);
	assert_int_equal(c->figures.leaked_bytes, 0);

	c = view_cells__cells(f.v, &n);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		analysis_figures__add(&sum, &c[i].figures);
	assert_int_equal(sum.allocations, replay__totals(f.r)->allocations);
	assert_int_equal(sum.allocated_bytes, replay__totals(f.r)->allocated_bytes);
	assert_int_equal(sum.peak_bytes, replay__totals(f.r)->peak_bytes);
	assert_int_equal(sum.leaked_bytes, replay__totals(f.r)->leaked_bytes);
	assert_int_equal(sum.temporary_allocations, replay__totals(f.r)->temporary_allocations);
	view_cells__free(f.v);
	replay__free(f.r);
}

/* Past 64 buckets the width doubles until the event fits, merging cells
 * of bucket pairs with their figures and peak shares. */
static void test_buckets_widen_and_merge(void **state)
{
	const struct view_cell *c;
	struct fixture f;
	size_t n;

	setup(&f);
	ev(&f, MT_EVENT_ALLOC, 7, 0, 0x10, 100, 1);         /* bucket 0 */
	ev(&f, MT_EVENT_ALLOC, 7, 1 * MS, 0x20, 100, 1);    /* bucket 1: merges into 0 */
	ev(&f, MT_EVENT_FREE, 7, 2 * MS, 0x20, 0, 0);
	ev(&f, MT_EVENT_ALLOC, 7, 2 * MS, 0x30, 100, 1);    /* bucket 2 -> 1 -> 0 at 4 ms */
	ev(&f, MT_EVENT_ALLOC, 7, 200 * MS, 0x40, 100, 1);  /* widens to 4 ms: bucket 50 */
	assert_int_equal(replay__finish(f.r), 0);

	assert_int_equal(view_cells__bucket_ns(f.v), 4 * MS);
	c = view_cells__cells(f.v, &n);
	assert_int_equal(n, 2);
	c = find(&f, 1, 0, REPLAY_NONE, 0, 6);
	assert_int_equal(c->figures.allocations, 3);
	assert_int_equal(c->figures.allocated_bytes, 300);
	assert_int_equal(c->figures.leaked_bytes, 200);
	assert_int_equal(c->figures.peak_bytes, 200); /* the peak is the last event: 0x10, 0x30 */
	c = find(&f, 1, 0, REPLAY_NONE, 50, 6);
	assert_int_equal(c->figures.allocations, 1);
	assert_int_equal(c->figures.peak_bytes, 100); /* and 0x40 */
	assert_int_equal(replay__totals(f.r)->peak_bytes, 300);
	view_cells__free(f.v);
	replay__free(f.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cells_split_and_sum_to_the_totals),
		cmocka_unit_test(test_buckets_widen_and_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
