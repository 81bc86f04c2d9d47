// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap_series.h: live bytes by the replay engine's rules, thinned to a
 * bounded number of points that keep the exact peak. A short stream is
 * checked point by point; long random streams, full and sampled, against
 * the analysis observing the same engine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "analysis.h"
#include "heap_series.h"
#include "replay.h"

#define START 1000 /* start_mono_ns of every synthetic trace */

/* A series observing the engine of an analysis, fed through the analysis. */
struct fixture {
	struct analysis *a;
	struct heap_series *s;
	uint64_t duration;
};

static void new_series(struct fixture *f, uint64_t duration, size_t max_points, uint64_t sample)
{
	struct trace_meta m = { .comm = "prog", .pid = 42, .start_mono_ns = START,
				.sample_bytes = sample };

	f->a = analysis__new();
	assert_non_null(f->a);
	f->s = heap_series__new(analysis__replay(f->a), max_points);
	assert_non_null(f->s);
	f->duration = duration;
	assert_int_equal(analysis__set_meta(f->a, &m), 0);
}

static void free_series(struct fixture *f)
{
	heap_series__free(f->s);
	analysis__free(f->a);
}

static void feed(struct fixture *f, uint32_t type, uint64_t ts, uint64_t old_ptr, uint64_t ptr,
		 uint64_t size)
{
	struct trace_event e = { .type = type, .tid = 7, .ts = START + ts, .ptr = ptr,
				 .old_ptr = old_ptr, .size = size };

	assert_int_equal(analysis__add_event(f->a, &e), 0);
}

static void test_short_stream_keeps_every_change(void **state)
{
	/* One event per 1 ns bucket: every event a point, changed or not. */
	static const struct heap_point want[] = {
		{ 0, 0 },   { 10, 100 }, { 20, 150 }, { 25, 150 }, { 30, 150 }, { 40, 50 },
		{ 45, 50 }, { 47, 50 },  { 50, 250 }, { 60, 200 }, { 100, 200 },
	};
	struct fixture f;
	const struct heap_point *p;
	size_t n;

	new_series(&f, 100, 64, 0);
	feed(&f, MT_EVENT_ALLOC, 10, 0, 0x10, 100);
	feed(&f, MT_EVENT_ALLOC, 20, 0, 0x20, 50);
	feed(&f, MT_EVENT_FREE, 25, 0, 0x999, 0);         /* unmatched: subtracts nothing */
	feed(&f, MT_EVENT_REALLOC, 30, 0x20, 0x30, 50);   /* free + alloc, same bytes */
	feed(&f, MT_EVENT_FREE, 40, 0, 0x10, 0);
	feed(&f, MT_EVENT_ALLOC, 45, 0, 0, 1000);         /* failed malloc: ignored */
	feed(&f, MT_EVENT_REALLOC, 47, 0x30, 0, 10);      /* failed realloc: block stays */
	feed(&f, MT_EVENT_ALLOC, 50, 0, 0x40, 200);
	feed(&f, MT_EVENT_REALLOC, 60, 0x30, 0, 0);       /* realloc(p, 0): a free */
	assert_int_equal(heap_series__finish(f.s, f.duration), 0);
	p = heap_series__points(f.s, &n);
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(p[i].t_ns, want[i].t_ns);
		assert_int_equal(p[i].bytes, want[i].bytes);
	}
	free_series(&f);
}

/* A pseudo-random heap workload, the same for every run. */
static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

static void check_against_analysis(uint64_t sample, size_t max_points)
{
	struct trace_end end = { .end_mono_ns = START + 3000000 };
	uint64_t live[512] = { 0 }, x = 1, ts = START;
	const struct analysis_totals *t;
	const struct heap_point *p;
	struct fixture f;
	struct heap_series *s;
	struct analysis *a;
	size_t n, first_max = SIZE_MAX;
	uint64_t max = 0;

	new_series(&f, 3000000, max_points, sample);
	a = f.a;
	s = f.s;
	for (int i = 0; i < 200000; i++) {
		uint64_t r = lcg(&x), slot = r % 512, ptr = 0x1000 + slot * 0x100;
		struct trace_event e = { .tid = 7, .ts = ts += r % 29 };

		/* a slow ramp with bursts, so the peak is somewhere inside */
		if (live[slot] && (r >> 12) % 100 < 48 + (i > 150000) * 30) {
			e.type = MT_EVENT_FREE;
			e.ptr = ptr;
			live[slot] = 0;
		} else {
			e.type = live[slot] ? MT_EVENT_REALLOC : MT_EVENT_ALLOC;
			e.old_ptr = live[slot] ? ptr : 0;
			e.ptr = ptr;
			e.size = live[slot] = 1 + (r >> 20) % 5000;
		}
		assert_int_equal(analysis__add_event(a, &e), 0);
	}
	assert_int_equal(analysis__set_end(a, &end), 0);
	assert_int_equal(analysis__finish(a), 0);
	assert_int_equal(heap_series__finish(s, f.duration), 0);
	t = analysis__totals(a);
	p = heap_series__points(s, &n);

	assert_true(n <= max_points);
	assert_true(n >= max_points / 2); /* coarsened no more than it had to */
	assert_int_equal(p[0].t_ns, 0);
	assert_int_equal(p[0].bytes, 0);
	for (size_t i = 0; i < n; i++) {
		if (i)
			assert_true(p[i].t_ns >= p[i - 1].t_ns);
		if (p[i].bytes > max) {
			max = p[i].bytes;
			first_max = i;
		}
	}
	assert_int_equal(max, t->peak_bytes);
	assert_int_equal(p[first_max].t_ns, t->peak_time_ns);
	assert_int_equal(p[n - 1].bytes, t->leaked_bytes);
	assert_int_equal(p[n - 1].t_ns, 3000000);
	free_series(&f);
}

static void test_thinned_keeps_the_exact_peak(void **state)
{
	check_against_analysis(0, 2000);
	check_against_analysis(0, 10);
}

static void test_sampled_weights_match_the_analysis(void **state)
{
	check_against_analysis(4096, 2000);
}

static void test_too_few_points(void **state)
{
	struct replay *r = replay__new();

	assert_non_null(r);
	assert_null(heap_series__new(r, 3));
	replay__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_stream_keeps_every_change),
		cmocka_unit_test(test_thinned_keeps_the_exact_peak),
		cmocka_unit_test(test_sampled_weights_match_the_analysis),
		cmocka_unit_test(test_too_few_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
