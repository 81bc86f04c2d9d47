// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The zone, frame and pool rules of marks.h on synthetic traces fed through
 * the analysis, each with exact expected figures; and their JSON and text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "marks.h"
#include "report.h"

#define START 1000 /* start_mono_ns of every synthetic trace */

/* String ids the tests use. */
enum { S_OUTER = 1, S_INNER, S_A, S_B, S_LOOP, S_ARENA, S_NODES, S_LOAD, S_MAIN, S_REC,
       S_OUTER_AGAIN };

static struct analysis *new_analysis(void)
{
	static const char *const names[] = { NULL, "outer", "inner", "a", "b", "loop", "arena",
					     "nodes", "load", "main", "rec", "outer" };
	struct trace_meta m = { .command_line = "game", .comm = "game", .pid = 42,
				.start_mono_ns = START };
	struct analysis *a = analysis__new();

	assert_non_null(a);
	assert_int_equal(analysis__set_meta(a, &m), 0);
	for (uint32_t id = 1; id < sizeof(names) / sizeof(names[0]); id++) {
		struct trace_string s = { id, names[id] };

		assert_int_equal(analysis__add_string(a, &s), 0);
	}
	return a;
}

static void mark(struct analysis *a, uint32_t kind, uint32_t tid, uint64_t ts, uint32_t name,
		 uint64_t ptr, uint64_t size)
{
	struct trace_mark m = { kind, tid, ts, name, ptr, size };

	assert_int_equal(analysis__add_mark(a, &m), 0);
}

static void zb(struct analysis *a, uint32_t tid, uint64_t ts, uint32_t name)
{
	mark(a, MT_MARK_ZONE_BEGIN, tid, ts, name, 0, 0);
}

static void ze(struct analysis *a, uint32_t tid, uint64_t ts, uint32_t name)
{
	mark(a, MT_MARK_ZONE_END, tid, ts, name, 0, 0);
}

static void ev_alloc(struct analysis *a, uint32_t tid, uint64_t ts, uint64_t ptr, uint64_t size,
		     uint32_t stack)
{
	struct trace_event e = { .type = MT_EVENT_ALLOC, .tid = tid, .ts = ts, .ptr = ptr,
				 .size = size, .stack_id = stack };

	assert_int_equal(analysis__add_event(a, &e), 0);
}

static void ev_free(struct analysis *a, uint32_t tid, uint64_t ts, uint64_t ptr)
{
	struct trace_event e = { .type = MT_EVENT_FREE, .tid = tid, .ts = ts, .ptr = ptr };

	assert_int_equal(analysis__add_event(a, &e), 0);
}

static void end_at(struct analysis *a, uint64_t ts)
{
	struct trace_end e = { .end_mono_ns = ts, .exit_status = -1 };

	assert_int_equal(analysis__set_end(a, &e), 0);
}

static void finish(struct analysis *a)
{
	assert_int_equal(analysis__finish(a), 0);
}

static const struct marks_zone *zone(const struct analysis *a, const char *name)
{
	size_t n, i;
	const struct marks_zone *z = marks__zones(analysis__marks(a), &n);

	for (i = 0; i < n; i++)
		if (!strcmp(z[i].name, name))
			return &z[i];
	fail_msg("no zone named %s", name);
	return NULL;
}

static const struct marks_pool *pool(const struct analysis *a, const char *name)
{
	size_t n, i;
	const struct marks_pool *p = marks__pools(analysis__marks(a), &n);

	for (i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	fail_msg("no pool named %s", name);
	return NULL;
}

/* count, time, allocs, bytes, incl allocs, incl bytes, leaked, peak, open at end, unmatched */
static void expect_zone(const struct analysis *a, const char *name, uint64_t count,
			uint64_t time, uint64_t allocs, uint64_t bytes, uint64_t iallocs,
			uint64_t ibytes, uint64_t leaked, uint64_t peak, uint64_t open,
			uint64_t unmatched)
{
	const struct marks_zone *z = zone(a, name);

	assert_int_equal(z->count, count);
	assert_int_equal(z->time_ns, time);
	assert_int_equal(z->allocations, allocs);
	assert_int_equal(z->allocated_bytes, bytes);
	assert_int_equal(z->inclusive_allocations, iallocs);
	assert_int_equal(z->inclusive_allocated_bytes, ibytes);
	assert_int_equal(z->leaked_bytes, leaked);
	assert_int_equal(z->peak_bytes, peak);
	assert_int_equal(z->open_at_end, open);
	assert_int_equal(z->unmatched_ends, unmatched);
}

/*
 * Thread 1:  outer [1100, 2000] { alloc A 100; inner [1300, 1600] { alloc B 50;
 * alloc C 30; free B }; alloc D 20 }; free A. C and D are never freed.
 *
 *   zone   count time allocs bytes incl incl_bytes leaked peak
 *   outer  1     900  2      120   4    200        20     120   (A+D live at 1700)
 *   inner  1     300  2      80    2    80         30     80    (B+C live at 1450)
 */
static void test_nested_zones(void **state)
{
	struct analysis *a = new_analysis();

	zb(a, 1, 1100, S_OUTER);
	ev_alloc(a, 1, 1200, 0xa0, 100, 0);
	zb(a, 1, 1300, S_INNER);
	ev_alloc(a, 1, 1400, 0xb0, 50, 0);
	ev_alloc(a, 1, 1450, 0xc0, 30, 0);
	ev_free(a, 1, 1500, 0xb0);
	ze(a, 1, 1600, S_INNER);
	ev_alloc(a, 1, 1700, 0xd0, 20, 0);
	ze(a, 1, 2000, S_OUTER);
	ev_free(a, 1, 2100, 0xa0);
	end_at(a, 3000);
	finish(a);
	expect_zone(a, "outer", 1, 900, 2, 120, 4, 200, 20, 120, 0, 0);
	expect_zone(a, "inner", 1, 300, 2, 80, 2, 80, 30, 80, 0, 0);
	/* ranked by inclusive bytes */
	assert_string_equal(marks__zones(analysis__marks(a), &(size_t){ 0 })[0].name, "outer");
	/* heap totals are untouched by the marks */
	assert_int_equal(analysis__totals(a)->allocations, 4);
	analysis__free(a);
	print_message("nested zones: exclusive 120/80 B, inclusive 200/80 B, time 900/300 ns\n");
}

/*
 * A zone inside itself (recursion) counts time once and an allocation once
 * inclusively; two STRING ids with the same text are one zone.
 * rec [1100, 1500] { rec [1200, 1400] { alloc 10 } }; outer (id S_OUTER_AGAIN)
 * [1600, 1700].
 */
static void test_recursive_zone(void **state)
{
	struct analysis *a = new_analysis();

	zb(a, 1, 1100, S_REC);
	zb(a, 1, 1200, S_REC);
	ev_alloc(a, 1, 1300, 0x10, 10, 0);
	ze(a, 1, 1400, S_REC);
	ze(a, 1, 1500, S_REC);
	zb(a, 1, 1600, S_OUTER);
	ze(a, 1, 1700, S_OUTER_AGAIN);
	end_at(a, 2000);
	finish(a);
	expect_zone(a, "rec", 2, 400, 1, 10, 1, 10, 10, 10, 0, 0);
	expect_zone(a, "outer", 1, 100, 0, 0, 0, 0, 0, 0, 0, 0);
	analysis__free(a);
	print_message("recursive zone: 2 entries, 400 ns once, 1 inclusive allocation\n");
}

/*
 * Two threads, each its own stack: thread 1 in "a" [1100, 1900], thread 2
 * in "b" [1200, 1800], interleaved. Thread 1 allocates 10 (a), thread 2
 * allocates 20 and 40 (b); thread 1 frees thread 2's 20 inside "a".
 *
 *   zone  count time allocs bytes incl incl_bytes leaked peak
 *   a     1     800  1      10    1    10         10     10
 *   b     1     600  2      60    2    60         40     60
 */
static void test_two_threads(void **state)
{
	struct analysis *a = new_analysis();

	zb(a, 1, 1100, S_A);
	zb(a, 2, 1200, S_B);
	ev_alloc(a, 1, 1300, 0x100, 10, 0);
	ev_alloc(a, 2, 1350, 0x200, 20, 0);
	ev_alloc(a, 2, 1400, 0x300, 40, 0);
	ev_free(a, 1, 1500, 0x200);
	ze(a, 2, 1800, S_B);
	ze(a, 1, 1900, S_A);
	ev_alloc(a, 1, 1950, 0x400, 1000, 0); /* in no zone */
	end_at(a, 2000);
	finish(a);
	expect_zone(a, "a", 1, 800, 1, 10, 1, 10, 10, 10, 0, 0);
	expect_zone(a, "b", 1, 600, 2, 60, 2, 60, 40, 60, 0, 0);
	analysis__free(a);
	print_message("two threads: each allocation in its own thread's zone only\n");
}

/*
 * Left open and mismatched: thread 1 opens loop [1100, ...) and never ends
 * it; inside, a [1200, 1500] and b [1300, 1500]: the end of "a" at 1500
 * closes "b" too. An end of "b" at 1600 finds no "b" open: unmatched.
 * Allocations: 8 in b, 4 in loop (after 1500). END at 5000: loop's time
 * runs to 5000.
 *
 *   zone  count time allocs bytes incl incl_bytes leaked peak open unmatched
 *   loop  1     3900 1      4     2    12         4      4    1    0
 *   a     1     300  0      0     1    8          0      0    0    0
 *   b     1     200  1      8     1    8          8      8    0    1
 */
static void test_open_and_mismatched(void **state)
{
	struct analysis *a = new_analysis();

	zb(a, 1, 1100, S_LOOP);
	zb(a, 1, 1200, S_A);
	zb(a, 1, 1300, S_B);
	ev_alloc(a, 1, 1400, 0x10, 8, 0);
	ze(a, 1, 1500, S_A);
	ze(a, 1, 1600, S_B);
	ev_alloc(a, 1, 1700, 0x20, 4, 0);
	end_at(a, 5000);
	finish(a);
	expect_zone(a, "loop", 1, 3900, 1, 4, 2, 12, 4, 4, 1, 0);
	expect_zone(a, "a", 1, 300, 0, 0, 1, 8, 0, 0, 0, 0);
	expect_zone(a, "b", 1, 200, 1, 8, 1, 8, 8, 8, 0, 1);
	analysis__free(a);
	print_message("zone open at the end timed to END; an end closes zones opened inside it\n");
}

/* Without an END record an open zone runs to the latest time seen. */
static void test_open_zone_partial(void **state)
{
	struct analysis *a = new_analysis();

	zb(a, 1, 1100, S_LOOP);
	ev_alloc(a, 2, 1700, 0x10, 8, 0);
	mark(a, MT_MARK_FRAME, 2, 1900, 0, 0, 0);
	finish(a);
	expect_zone(a, "loop", 1, 800, 0, 0, 0, 0, 0, 0, 1, 0);
	analysis__free(a);
	print_message("partial trace: open zone timed to the last mark (800 ns)\n");
}

/*
 * Frames: thread 1 marks at 2000, 3000 and 4000 (the last named "load");
 * thread 2 allocates 10 at 1500, 20 and 30 at 2500 and 2600, 40 at 3500,
 * 50 at 4500 (after the last mark), from three sites.
 *
 *   frame  allocs bytes duration end  name
 *   0      1      10    1000     1000 -
 *   1      2      50    1000     2000 -
 *   2      1      40    1000     3000 load
 *   after the last mark: 1 allocation, 50 bytes
 */
static void test_frames(void **state)
{
	struct analysis *a = new_analysis();
	struct trace_module mod = { .start = 0x400000, .end = 0x500000, .path = "/bin/game" };
	static const char *const fn[] = { "spawn", "load_level", "tick" };
	const struct marks_frame *f;
	const struct marks_top_frame *t;
	size_t n;

	assert_int_equal(analysis__add_module(a, &mod), 0);
	for (uint32_t i = 0; i < 3; i++) {
		uint64_t addr = 0x401000 + 0x100 * i;
		struct trace_stack s = { .id = i + 1, .nr = 1, .frames = &addr };
		struct trace_frame fr = { .function = fn[i], .file = "game.c", .line = 10 + i };
		struct trace_symbol sym = { .addr = addr, .module = 0, .module_offset = addr - 0x400000,
					    .nframes = 1, .frames = &fr };

		assert_int_equal(analysis__add_stack(a, &s), 0);
		assert_int_equal(analysis__add_symbol(a, &sym), 0);
	}
	ev_alloc(a, 2, 1500, 0x10, 10, 3);
	mark(a, MT_MARK_FRAME, 1, 2000, 0, 0, 0);
	ev_alloc(a, 2, 2500, 0x20, 20, 1);
	ev_alloc(a, 2, 2600, 0x30, 30, 2);
	mark(a, MT_MARK_FRAME, 1, 3000, 0, 0, 0);
	ev_alloc(a, 2, 3500, 0x40, 40, 2);
	mark(a, MT_MARK_FRAME, 1, 4000, S_LOAD, 0, 0);
	ev_alloc(a, 2, 4500, 0x50, 50, 3);
	end_at(a, 5000);
	finish(a);

	f = marks__frames(analysis__marks(a), &n);
	assert_int_equal(n, 3);
	assert_int_equal(f[0].allocations, 1);
	assert_int_equal(f[0].allocated_bytes, 10);
	assert_int_equal(f[0].duration_ns, 1000);
	assert_int_equal(f[0].end_ns, 1000);
	assert_null(f[0].name);
	assert_int_equal(f[1].allocations, 2);
	assert_int_equal(f[1].allocated_bytes, 50);
	assert_int_equal(f[1].duration_ns, 1000);
	assert_int_equal(f[2].allocations, 1);
	assert_int_equal(f[2].allocated_bytes, 40);
	assert_string_equal(f[2].name, "load");
	assert_int_equal(marks__totals(analysis__marks(a))->tail_allocations, 1);
	assert_int_equal(marks__totals(analysis__marks(a))->tail_allocated_bytes, 50);

	/* TopN: frame 1 (50 B: load_level 30, spawn 20), frame 2, frame 0 */
	t = marks__top_frames(analysis__marks(a), &n);
	assert_int_equal(n, 3);
	assert_int_equal(t[0].index, 1);
	assert_int_equal(t[0].nsites, 2);
	assert_string_equal(t[0].sites[0].site->name, "load_level");
	assert_int_equal(t[0].sites[0].allocated_bytes, 30);
	assert_string_equal(t[0].sites[1].site->name, "spawn");
	assert_int_equal(t[0].sites[1].allocations, 1);
	assert_int_equal(t[1].index, 2);
	assert_int_equal(t[2].index, 0);
	assert_string_equal(t[2].sites[0].site->name, "tick");
	analysis__free(a);
	print_message("frames: 3 marks from thread 1 delimit thread 2's allocations; top frame 1\n");
}

/* Only MARKS_TOP_FRAMES frames keep their sites: the largest, earlier on ties. */
static void test_top_frames_bounded(void **state)
{
	struct analysis *a = new_analysis();
	const struct marks_top_frame *t;
	size_t n, i;

	for (i = 0; i < 3 * MARKS_TOP_FRAMES; i++) {
		/* frame i allocates (i % 7 + 1) * 8 bytes */
		ev_alloc(a, 1, 2000 + 10 * i, 0x1000 + 0x100 * i, (i % 7 + 1) * 8, 0);
		mark(a, MT_MARK_FRAME, 1, 2005 + 10 * i, 0, 0, 0);
	}
	end_at(a, 9000);
	finish(a);
	t = marks__top_frames(analysis__marks(a), &n);
	assert_int_equal(n, MARKS_TOP_FRAMES);
	/* 56 B: frames 6, 13, 20, 27; 48 B: 5, 12, 19, 26; 40 B: 4, 11 */
	static const size_t want[] = { 6, 13, 20, 27, 5, 12, 19, 26, 4, 11 };
	for (i = 0; i < MARKS_TOP_FRAMES; i++)
		assert_int_equal(t[i].index, want[i]);
	analysis__free(a);
	print_message("top frames: %d kept of %d, largest first, earlier on ties\n",
		      MARKS_TOP_FRAMES, 3 * MARKS_TOP_FRAMES);
}

/*
 * Pools: arena: alloc p1 100, p2 200, free p1, alloc p3 50, reset, alloc
 * p4 10, free p9 (never allocated). nodes: alloc 16 twice at the same
 * pointer (the first free was not marked), free(NULL), alloc 0 bytes.
 *
 *   pool   allocs bytes peak leaked blocks frees resets unmatched
 *   arena  4      360   300  10     1      1     1      1
 *   nodes  3      32    16   16     2      0     0      0
 */
static void test_pools(void **state)
{
	struct analysis *a = new_analysis();
	const struct marks_pool *p;

	mark(a, MT_MARK_POOL_ALLOC, 1, 1100, S_ARENA, 0x7000, 100);
	mark(a, MT_MARK_POOL_ALLOC, 1, 1110, S_ARENA, 0x7100, 200);
	mark(a, MT_MARK_POOL_FREE, 1, 1120, S_ARENA, 0x7000, 0);
	mark(a, MT_MARK_POOL_ALLOC, 2, 1130, S_ARENA, 0x7300, 50);
	mark(a, MT_MARK_POOL_RESET, 1, 1140, S_ARENA, 0, 0);
	mark(a, MT_MARK_POOL_ALLOC, 1, 1150, S_ARENA, 0x7000, 10);
	mark(a, MT_MARK_POOL_FREE, 1, 1160, S_ARENA, 0x7900, 0);
	mark(a, MT_MARK_POOL_ALLOC, 1, 1200, S_NODES, 0x9000, 16);
	mark(a, MT_MARK_POOL_ALLOC, 1, 1210, S_NODES, 0x9000, 16);
	mark(a, MT_MARK_POOL_FREE, 1, 1220, S_NODES, 0, 0);
	zb(a, 1, 1300, S_A); /* pool allocations inside a zone stay out of it */
	mark(a, MT_MARK_POOL_ALLOC, 1, 1310, S_NODES, 0x9100, 0);
	ze(a, 1, 1320, S_A);
	end_at(a, 2000);
	finish(a);
	p = pool(a, "arena");
	assert_int_equal(p->allocations, 4);
	assert_int_equal(p->allocated_bytes, 360);
	assert_int_equal(p->peak_bytes, 300);
	assert_int_equal(p->leaked_bytes, 10);
	assert_int_equal(p->leaked_allocations, 1);
	assert_int_equal(p->frees, 1);
	assert_int_equal(p->resets, 1);
	assert_int_equal(p->unmatched_frees, 1);
	p = pool(a, "nodes");
	assert_int_equal(p->allocations, 3);
	assert_int_equal(p->allocated_bytes, 32);
	assert_int_equal(p->peak_bytes, 16);
	assert_int_equal(p->leaked_bytes, 16);
	assert_int_equal(p->leaked_allocations, 2);
	assert_int_equal(p->frees, 0);
	assert_int_equal(p->unmatched_frees, 0);
	expect_zone(a, "a", 1, 20, 0, 0, 0, 0, 0, 0, 0, 0);
	assert_int_equal(analysis__totals(a)->allocations, 0);
	analysis__free(a);
	print_message("pools: reset frees all; peak 300, leaked 10; not heap allocations\n");
}

/* Names: thread names from marks and THREAD records, the last wins; a
 * STRING that never came reads "[string ID]". */
static void test_names(void **state)
{
	struct analysis *a = new_analysis();
	struct trace_thread t = { 7, "worker" };
	const struct marks_thread *th;
	size_t n;

	mark(a, MT_MARK_THREAD_NAME, 9, 1100, S_MAIN, 0, 0);
	assert_int_equal(analysis__add_thread(a, &t), 0);
	mark(a, MT_MARK_THREAD_NAME, 7, 1200, S_LOAD, 0, 0);
	zb(a, 3, 1300, 99);
	ze(a, 3, 1400, 99);
	finish(a);
	th = marks__threads(analysis__marks(a), &n);
	assert_int_equal(n, 2);
	assert_int_equal(th[0].tid, 7);
	assert_string_equal(th[0].name, "load");
	assert_int_equal(th[1].tid, 9);
	assert_string_equal(th[1].name, "main");
	expect_zone(a, "[string 99]", 1, 100, 0, 0, 0, 0, 0, 0, 0, 0);
	analysis__free(a);
	print_message("thread names: last wins; a lost STRING reads [string 99]\n");
}

static char *render(const struct analysis *a, bool json)
{
	struct report_options opts = { .top = 10 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (json)
		assert_int_equal(report_json__write(f, a, 0), 0);
	else
		assert_int_equal(report_text__write(f, a, &opts), 0);
	fclose(f);
	return buf;
}

static void expect_contains(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("missing:\n%s\nin:\n%s", want, text);
}

/* The JSON keys of docs/contract.md, and the text sections. */
static void test_rendering(void **state)
{
	struct analysis *a = new_analysis();
	char *json, *text;

	zb(a, 1, 1100, S_OUTER);
	ev_alloc(a, 1, 1200, 0xa0, 100, 0);
	ze(a, 1, 1300, S_OUTER);
	mark(a, MT_MARK_FRAME, 1, 1500, 0, 0, 0);
	mark(a, MT_MARK_POOL_ALLOC, 1, 1600, S_ARENA, 0x7000, 64);
	mark(a, MT_MARK_THREAD_NAME, 1, 1700, S_MAIN, 0, 0);
	end_at(a, 2000);
	finish(a);
	json = render(a, true);
	expect_contains(json, "  \"zones\": [\n    {\"name\": \"outer\", \"count\": 1, "
			      "\"allocations\": 1, \"allocated_bytes\": 100, "
			      "\"inclusive_allocations\": 1, \"inclusive_allocated_bytes\": 100, "
			      "\"leaked_bytes\": 100, \"peak_bytes\": 100, \"time_ns\": 200, "
			      "\"open_at_end\": 0, \"unmatched_ends\": 0}\n  ],\n");
	expect_contains(json, "  \"frames\": {\n    \"count\": 1,\n    \"frames\": [\n"
			      "      {\"allocations\": 1, \"allocated_bytes\": 100, "
			      "\"duration_ns\": 500, \"end_ns\": 500, \"name\": null}\n    ]\n  },\n");
	expect_contains(json, "  \"pools\": [\n    {\"name\": \"arena\", \"allocations\": 1, "
			      "\"allocated_bytes\": 64, \"leaked_allocations\": 1, "
			      "\"leaked_bytes\": 64, \"peak_bytes\": 64, \"frees\": 0, \"resets\": 0, "
			      "\"unmatched_frees\": 0}\n  ],\n");
	expect_contains(json, "  \"threads\": [\n    {\"tid\": 1, \"name\": \"main\"}\n  ],\n"); /* the stack tables follow */
	text = render(a, false);
	expect_contains(text, "\nZones (exclusive: ");
	expect_contains(text, "  outer                           1     0.200 us        1      100 B"
			      "        1      100 B      100 B      100 B\n");
	expect_contains(text, "\nFrames: 1 (frame i ends at frame mark i), on average 1 "
			      "allocations and 100 B per frame\n");
	expect_contains(text, "  bytes per frame: |\u2588|\n");
	expect_contains(text, "    1. frame 0           100 B  1 call  0.500 us long, ended at 0.500 us\n");
	expect_contains(text, "\nPools (");
	expect_contains(text, "  arena                           1       64 B       64 B       64 B"
			      "        1      0         0\n");
	expect_contains(text, "\nThreads named: 1 main\n");
	free(json);
	free(text);
	analysis__free(a);

	/* Without marks: no sections in the text, empty keys in the JSON. */
	a = new_analysis();
	ev_alloc(a, 1, 1200, 0xa0, 100, 0);
	finish(a);
	text = render(a, false);
	assert_null(strstr(text, "Zones"));
	assert_null(strstr(text, "Frames"));
	assert_null(strstr(text, "Pools"));
	free(text);
	analysis__free(a);
	print_message("JSON keys and text sections for zones, frames, pools, threads\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nested_zones),
		cmocka_unit_test(test_recursive_zone),
		cmocka_unit_test(test_two_threads),
		cmocka_unit_test(test_open_and_mismatched),
		cmocka_unit_test(test_open_zone_partial),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_top_frames_bounded),
		cmocka_unit_test(test_pools),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_rendering),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
