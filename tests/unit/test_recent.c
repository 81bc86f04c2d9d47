// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * recent.h: sums by key over a trace's last minute. Each rule of its
 * header pinned: whole seconds, the window's start, what is forgotten and
 * what is dropped; then the analysis' growth by site (analysis.h's rule),
 * fed through the engine: allocations and frees in the window counted,
 * those before it not, frees of blocks older than the window counted; and
 * --rss's write faults of the window by site.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "recent.h"
#include "replay.h"

#define S 1000000000ull /* one second, ns */

struct sum {
	uint32_t key;
	int64_t bytes, count;
};

struct sums {
	struct sum v[16];
	size_t n;
};

static int collect(void *ctx, uint32_t key, int64_t bytes, int64_t count)
{
	struct sums *s = ctx;

	assert_true(s->n < 16);
	s->v[s->n++] = (struct sum){ .key = key, .bytes = bytes, .count = count };
	return 0;
}

/* KEY's sums in S (0 if absent) */
static const struct sum *find(const struct sums *s, uint32_t key)
{
	static const struct sum none;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].key == key)
			return &s->v[i];
	return &none;
}

static void sums_at(struct recent *w, uint64_t end, struct sums *s, uint64_t *from)
{
	s->n = 0;
	assert_int_equal(recent__sums(w, end, from, collect, s), 0);
}

/* A short trace: the whole of it is the window; signed sums by key. */
static void test_short_trace(void **state)
{
	struct recent *w = recent__new();
	struct sums s;
	uint64_t from;

	(void)state;
	assert_non_null(w);
	assert_int_equal(recent__add(w, 0, 1, 100, 1), 0);
	assert_int_equal(recent__add(w, S / 2, 1, 50, 1), 0);
	assert_int_equal(recent__add(w, 3 * S, 1, -100, -1), 0);
	assert_int_equal(recent__add(w, 3 * S, 2, 7, 1), 0);
	sums_at(w, 10 * S, &s, &from);
	assert_int_equal(from, 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(find(&s, 1)->bytes, 50);
	assert_int_equal(find(&s, 1)->count, 1);
	assert_int_equal(find(&s, 2)->bytes, 7);
	recent__free(w);
}

/* The window: from the whole second holding END - 60 s; the seconds before
 * it left out, the one holding its start counted whole. */
static void test_window_start(void **state)
{
	struct recent *w = recent__new();
	struct sums s;
	uint64_t from;

	(void)state;
	for (uint64_t sec = 0; sec < 100; sec++)
		assert_int_equal(recent__add(w, sec * S + S / 4, 7, 1, 1), 0);
	/* END 99.5 s: window from 39 s (39.5 s less a minute, in its second) */
	sums_at(w, 99 * S + S / 2, &s, &from);
	assert_int_equal(from, 39 * S);
	assert_int_equal(find(&s, 7)->bytes, 61); /* seconds 39 .. 99 */
	/* END exactly 100 s: from 40 s, seconds 40 .. 99 added to */
	sums_at(w, 100 * S, &s, &from);
	assert_int_equal(from, 40 * S);
	assert_int_equal(find(&s, 7)->bytes, 60);
	recent__free(w);
}

/* A gap longer than the ring forgets every older second; an addition more
 * than the ring behind the latest is dropped, one within it counted. */
static void test_forget_and_late(void **state)
{
	struct recent *w = recent__new();
	struct sums s;
	uint64_t from;

	(void)state;
	assert_int_equal(recent__add(w, 1 * S, 3, 1000, 1), 0);
	assert_int_equal(recent__add(w, 500 * S, 3, 1, 1), 0);
	assert_int_equal(recent__add(w, 500 * S - RECENT_SECONDS * S, 3, 10, 1), 0);       /* dropped */
	assert_int_equal(recent__add(w, 500 * S - (RECENT_SECONDS - 2) * S, 3, 100, 1), 0); /* kept */
	sums_at(w, 500 * S, &s, &from);
	assert_int_equal(from, 440 * S);
	assert_int_equal(find(&s, 3)->bytes, 101);
	assert_int_equal(find(&s, 3)->count, 2);
	/* a window ending before the kept seconds: nothing in it */
	sums_at(w, 2 * S, &s, &from);
	assert_int_equal(s.n, 0);
	recent__free(w);
}

/* The analysis' recent_bytes: over a trace of 100 s, block A (100 bytes)
 * allocated at 10 s and freed at 80 s, B (30) at 50 s and freed at 70 s,
 * C (5) at 90 s, live; all from one stack. The window is 40 s .. 100 s:
 * +30 -30 (B) -100 (A, older than the window) +5 (C) = -95 bytes, and +1
 * -1 -1 +1 = 0 blocks. */
static void test_analysis_growth(void **state)
{
	struct analysis *a = analysis__new();
	const uint64_t start = 5000;
	const uint64_t frames[] = { 0x401000 };
	struct trace_meta m = { .comm = "prog", .pid = 42, .start_mono_ns = start };
	struct trace_stack st = { .id = 1, .nr = 1, .frames = frames };
	struct trace_event ev[] = {
		{ .type = MT_EVENT_ALLOC, .ts = start + 10 * S, .tid = 1, .stack_id = 1, .ptr = 0x1000, .size = 100 },
		{ .type = MT_EVENT_ALLOC, .ts = start + 50 * S, .tid = 1, .stack_id = 1, .ptr = 0x2000, .size = 30 },
		{ .type = MT_EVENT_FREE, .ts = start + 70 * S, .tid = 1, .ptr = 0x2000 },
		{ .type = MT_EVENT_FREE, .ts = start + 80 * S, .tid = 1, .ptr = 0x1000 },
		{ .type = MT_EVENT_ALLOC, .ts = start + 90 * S, .tid = 1, .stack_id = 1, .ptr = 0x3000, .size = 5 },
	};
	struct trace_end end = { .end_mono_ns = start + 100 * S, .exit_status = 9, .flags = TRACE_END_OOM_KILLED,
				 .memory_limit = 1 << 26, .memory_limit_of = "v1 /x" };
	const struct analysis_site *sites;
	size_t n;

	(void)state;
	assert_non_null(a);
	assert_int_equal(analysis__set_meta(a, &m), 0);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		assert_int_equal(analysis__add_event(a, &ev[i]), 0);
	assert_int_equal(analysis__set_end(a, &end), 0);
	assert_int_equal(analysis__finish(a), 0);
	sites = analysis__sites(a, &n);
	assert_int_equal(n, 1);
	assert_int_equal(analysis__trace(a)->recent_from_ns, 40 * S);
	assert_int_equal(sites[0].figures.recent_bytes, -95);
	assert_int_equal(sites[0].figures.recent_allocations, 0);
	assert_int_equal(analysis__trace(a)->end_flags, TRACE_END_OOM_KILLED);
	assert_int_equal(analysis__trace(a)->memory_limit, 1 << 26);
	assert_string_equal(analysis__trace(a)->memory_limit_of, "v1 /x");
	printf("recent: a 100 s trace's last minute from 40 s: -95 bytes, 0 blocks at its one site\n");
	analysis__free(a);
}

/* --rss: the sampled write faults of the last minute, by site: over a 100 s
 * trace, one at 10 s (before the window), one at 39.5 s (in the second the
 * window starts in) and two at 90 s; the last minute has the last three. */
static void test_recent_faults(void **state)
{
	struct analysis *a = analysis__new();
	const uint64_t start = 5000;
	static const uint64_t f1[] = { 0x401000 }, f2[] = { 0x402000 };
	struct trace_meta m = { .comm = "prog", .pid = 42, .start_mono_ns = start };
	struct trace_stack s1 = { .id = 1, .nr = 1, .frames = f1 }, s2 = { .id = 2, .nr = 1, .frames = f2 };
	const struct { uint64_t t; uint32_t stack; uint64_t bytes; } faults[] = {
		{ 10 * S, 1, 4096 }, { 39 * S + S / 2, 2, 8192 }, { 90 * S, 1, 65536 }, { 90 * S, 2, 16384 },
	};
	struct trace_end end = { .end_mono_ns = start + 99 * S + S / 2, .exit_status = 9, .flags = TRACE_END_OOM_KILLED };
	const struct analysis_maps *mp;

	(void)state;
	assert_non_null(a);
	assert_int_equal(analysis__set_meta(a, &m), 0);
	assert_int_equal(analysis__add_stack(a, &s1), 0);
	assert_int_equal(analysis__add_stack(a, &s2), 0);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		struct trace_map f = { .ts = start + faults[i].t, .tid = 7, .call = MT_MAP_FAULT, .stack_id = faults[i].stack,
				       .a0 = 0x10000000, .a1 = faults[i].bytes, .a2 = 6 };

		assert_int_equal(replay__add_map(analysis__replay(a), &f), 0);
	}
	assert_int_equal(analysis__set_end(a, &end), 0);
	assert_int_equal(analysis__finish(a), 0);
	mp = &analysis__trace(a)->rss.maps;
	assert_int_equal(analysis__trace(a)->recent_from_ns, 39 * S);
	assert_int_equal(mp->fault_bytes, 4096 + 8192 + 65536 + 16384);
	assert_int_equal(mp->recent_fault_bytes, 8192 + 65536 + 16384);
	assert_int_equal(mp->nrecent_fault_sites, 2);
	assert_int_equal(mp->recent_fault_sites[0].bytes, 65536); /* most first: stack 1's, without its fault at 10 s */
	assert_int_equal(mp->recent_fault_sites[0].site->address, 0x401000);
	assert_int_equal(mp->recent_fault_sites[1].bytes, 8192 + 16384);
	analysis__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_trace),
		cmocka_unit_test(test_window_start),
		cmocka_unit_test(test_forget_and_late),
		cmocka_unit_test(test_analysis_growth),
		cmocka_unit_test(test_recent_faults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
