// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The aggregation rules of analysis.h on synthetic events, each with exact
 * expected figures, plus the JSON and text renderings of a tiny trace.
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
#include "json_out.h"
#include "report.h"

#define START 1000 /* start_mono_ns of every synthetic trace */

static struct analysis *new_analysis(void)
{
	struct trace_meta m = {
		.command_line = "prog a",
		.comm = "prog",
		.pid = 42,
		.start_mono_ns = START,
	};
	struct analysis *a = analysis__new();

	assert_non_null(a);
	assert_int_equal(analysis__set_meta(a, &m), 0);
	return a;
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

static void ev_realloc(struct analysis *a, uint32_t tid, uint64_t ts, uint64_t old_ptr,
		       uint64_t ptr, uint64_t size, uint32_t stack)
{
	struct trace_event e = { .type = MT_EVENT_REALLOC, .tid = tid, .ts = ts, .ptr = ptr,
				 .old_ptr = old_ptr, .size = size, .stack_id = stack };

	assert_int_equal(analysis__add_event(a, &e), 0);
}

static void add_stack1(struct analysis *a, uint32_t id, uint64_t frame)
{
	struct trace_stack s = { .id = id, .nr = 1, .frames = &frame };

	assert_int_equal(analysis__add_stack(a, &s), 0);
}

static void add_module(struct analysis *a, const char *path, uint64_t start, uint64_t end)
{
	struct trace_module m = { .start = start, .end = end, .path = path };

	assert_int_equal(analysis__add_module(a, &m), 0);
}

static void add_symbol(struct analysis *a, uint64_t addr, int32_t module, const char *function,
		       const char *file, uint32_t line)
{
	struct trace_frame f = { .function = function, .file = file, .line = line };
	struct trace_symbol s = { .addr = addr, .module = module, .module_offset = addr & 0xfffff,
				  .nframes = 1, .frames = &f };

	assert_int_equal(analysis__add_symbol(a, &s), 0);
}

static void finish(struct analysis *a)
{
	assert_int_equal(analysis__finish(a), 0);
}

static const struct analysis_site *site_named(const struct analysis *a, const char *name)
{
	const struct analysis_site *sites;
	size_t n, i;

	sites = analysis__sites(a, &n);
	for (i = 0; i < n; i++)
		if (!strcmp(sites[i].name, name))
			return &sites[i];
	fail_msg("no site named %s", name);
	return NULL;
}

static size_t site_count(const struct analysis *a)
{
	size_t n;

	analysis__sites(a, &n);
	return n;
}

/* Checks every total at once, so no rule can move a figure unnoticed. */
static void check_totals(const struct analysis *a, uint64_t allocations, uint64_t frees,
			 uint64_t allocated, uint64_t peak, uint64_t leaked_allocs,
			 uint64_t leaked_bytes, uint64_t temporary, uint64_t unmatched,
			 uint64_t internal)
{
	const struct analysis_totals *t = analysis__totals(a);

	assert_int_equal(t->allocations, allocations);
	assert_int_equal(t->frees, frees);
	assert_int_equal(t->allocated_bytes, allocated);
	assert_int_equal(t->peak_bytes, peak);
	assert_int_equal(t->leaked_allocations, leaked_allocs);
	assert_int_equal(t->leaked_bytes, leaked_bytes);
	assert_int_equal(t->temporary_allocations, temporary);
	assert_int_equal(t->unmatched_frees, unmatched);
	assert_int_equal(t->internal_frees, internal);
}

static void test_alloc_free(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 100, 0);
	ev_alloc(a, 1, 1200, 0x2000, 50, 0);
	ev_free(a, 1, 1300, 0x1000);
	finish(a);
	check_totals(a, 2, 1, 150, 150, 1, 50, 0, 0, 0);
	assert_int_equal(analysis__totals(a)->peak_time_ns, 200);
	analysis__free(a);
}

/* The event carries nmemb * size already; nothing is rounded up. */
static void test_calloc_bytes(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 7 * 3, 0);
	finish(a);
	check_totals(a, 1, 0, 21, 21, 1, 21, 0, 0, 0);
	analysis__free(a);
}

static void test_realloc_moving(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s;

	add_stack1(a, 1, 0x401000);
	add_stack1(a, 2, 0x402000);
	add_symbol(a, 0x401000, -1, "make", "a.c", 1);
	add_symbol(a, 0x402000, -1, "grow", "a.c", 2);
	ev_alloc(a, 1, 1100, 0x1000, 100, 1);
	ev_realloc(a, 1, 1200, 0x1000, 0x2000, 200, 2);
	finish(a);
	/* free half matched; malloc then realloc of it: the first is temporary */
	check_totals(a, 2, 1, 300, 200, 1, 200, 1, 0, 0);
	s = site_named(a, "make");
	assert_int_equal(s->figures.allocations, 1);
	assert_int_equal(s->figures.leaked_bytes, 0);
	assert_int_equal(s->figures.temporary_allocations, 1);
	s = site_named(a, "grow");
	assert_int_equal(s->figures.allocated_bytes, 200);
	assert_int_equal(s->figures.leaked_bytes, 200);
	assert_int_equal(s->figures.peak_bytes, 200);
	analysis__free(a);
}

static void test_realloc_in_place_and_zero(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 100, 0);
	ev_realloc(a, 1, 1200, 0x1000, 0x1000, 300, 0); /* grew in place */
	ev_realloc(a, 1, 1300, 0x1000, 0, 0, 0);        /* realloc(p, 0): a free */
	ev_alloc(a, 1, 1400, 0x3000, 10, 0);
	ev_realloc(a, 1, 1500, 0x3000, 0, 64, 0);       /* failed: 0x3000 stays */
	finish(a);
	check_totals(a, 3, 2, 410, 300, 1, 10, 2, 0, 0);
	analysis__free(a);
}

static void test_realloc_null_is_alloc(void **state)
{
	struct analysis *a = new_analysis();

	ev_realloc(a, 1, 1100, 0, 0x1000, 64, 0);
	finish(a);
	check_totals(a, 1, 0, 64, 64, 1, 64, 0, 0, 0);
	analysis__free(a);
}

static void test_realloc_unknown(void **state)
{
	struct analysis *a = new_analysis();

	ev_realloc(a, 1, 1100, 0xdead0, 0x1000, 64, 0);
	finish(a);
	check_totals(a, 1, 0, 64, 64, 1, 64, 0, 1, 0);
	analysis__free(a);
}

static void test_free_unknown(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 10, 0);
	ev_free(a, 1, 1200, 0xdead0);
	ev_free(a, 1, 1300, 0); /* free(NULL): nothing at all */
	finish(a);
	check_totals(a, 1, 0, 10, 10, 1, 10, 0, 1, 0);
	analysis__free(a);
}

/* glibc frees the chunks of an exiting thread's tcache, which the program
 * had freed already: internal frees, not unmatched ones. */
static void test_free_twice_is_internal(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 10, 0);
	ev_free(a, 1, 1200, 0x1000);
	ev_free(a, 2, 1300, 0x1000);
	finish(a);
	check_totals(a, 1, 1, 10, 10, 0, 0, 1, 0, 1);
	analysis__free(a);
}

static void test_free_never_seen_is_unmatched(void **state)
{
	struct analysis *a = new_analysis();

	ev_free(a, 1, 1100, 0x2000);
	finish(a);
	check_totals(a, 0, 0, 0, 0, 0, 0, 0, 1, 0);
	analysis__free(a);
}

/* Allocating the pointer again forgets that it was freed: its next free is
 * a matched one, and only a free after that is internal. */
static void test_reuse_then_free_twice(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 10, 0);
	ev_free(a, 1, 1200, 0x1000);
	ev_alloc(a, 1, 1300, 0x1000, 20, 0);
	ev_free(a, 1, 1400, 0x1000);
	ev_free(a, 1, 1500, 0x1000);
	finish(a);
	check_totals(a, 2, 2, 30, 20, 0, 0, 2, 0, 1);
	analysis__free(a);
}

/* realloc's free half remembers the old pointer like a free does. */
static void test_realloc_moved_then_free_old(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 10, 0);
	ev_realloc(a, 1, 1200, 0x1000, 0x2000, 40, 0);
	ev_free(a, 1, 1300, 0x1000);
	finish(a);
	check_totals(a, 2, 1, 50, 40, 1, 40, 1, 0, 1);
	analysis__free(a);
}

/* Freed pointers that are never allocated again are not kept forever: of
 * 180000, the oldest is forgotten (freeing it again is unmatched), the
 * latest is remembered (internal). The 20000 live ones among them (every
 * 10th) survive the forgetting. */
static void test_freed_pointers_bounded(void **state)
{
	const uint64_t n = 200000, base = 0x555500000000ULL;
	struct analysis *a = new_analysis();
	uint64_t i, ts = 1001;

	for (i = 0; i < n; i++) {
		ev_alloc(a, 1, ts++, base + i * 32, 8, 0);
		if (i % 10)
			ev_free(a, 1, ts++, base + i * 32);
	}
	ev_free(a, 1, ts++, base + 1 * 32);
	ev_free(a, 1, ts++, base + (n - 1) * 32);
	for (i = 0; i < n; i += 10)
		ev_free(a, 1, ts++, base + i * 32);
	finish(a);
	/* Peak: the 20000 live plus one about to be freed. */
	check_totals(a, n, n, n * 8, (n / 10 + 1) * 8, 0, 0, n - n / 10, 1, 1);
	print_message("180000 freed, never reused: oldest forgotten, latest and live kept\n");
	analysis__free(a);
}

/* Two sites interleaved; the peak moves twice and each site's share is its
 * live bytes at the last (highest) one, not its own maximum. */
static void test_peak_two_sites(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s1, *s2, *s3;

	add_stack1(a, 1, 0x401000);
	add_stack1(a, 2, 0x402000);
	add_stack1(a, 3, 0x403000);
	add_symbol(a, 0x401000, -1, "one", "a.c", 1);
	add_symbol(a, 0x402000, -1, "two", "a.c", 2);
	add_symbol(a, 0x403000, -1, "three", "a.c", 3);
	ev_alloc(a, 1, 1010, 0xa1, 100, 1); /* 100 */
	ev_alloc(a, 2, 1020, 0xb1, 300, 2); /* 400 */
	ev_alloc(a, 1, 1030, 0xa2, 200, 1); /* 600: a peak, two has 300 */
	ev_free(a, 2, 1040, 0xb1);          /* 300 */
	ev_alloc(a, 2, 1050, 0xb2, 250, 2); /* 550 */
	ev_alloc(a, 1, 1060, 0xa3, 100, 1); /* 650: the peak, one 400, two 250 */
	ev_free(a, 1, 1070, 0xa1);          /* 550 */
	ev_alloc(a, 2, 1080, 0xb3, 350, 2); /* 900: the peak moves again */
	finish(a);
	assert_int_equal(analysis__totals(a)->peak_bytes, 900);
	assert_int_equal(analysis__totals(a)->peak_time_ns, 80);
	s1 = site_named(a, "one");
	s2 = site_named(a, "two");
	assert_int_equal(s1->figures.peak_bytes, 300);
	assert_int_equal(s2->figures.peak_bytes, 600);
	analysis__free(a);

	/* The same without the last allocation: the peak stays at 650. */
	a = new_analysis();
	add_stack1(a, 1, 0x401000);
	add_stack1(a, 2, 0x402000);
	add_stack1(a, 3, 0x403000);
	add_symbol(a, 0x401000, -1, "one", "a.c", 1);
	add_symbol(a, 0x402000, -1, "two", "a.c", 2);
	add_symbol(a, 0x403000, -1, "three", "a.c", 3);
	ev_alloc(a, 1, 1010, 0xa1, 100, 1);
	ev_alloc(a, 2, 1020, 0xb1, 300, 2);
	ev_alloc(a, 1, 1030, 0xa2, 200, 1);
	ev_free(a, 2, 1040, 0xb1);
	ev_alloc(a, 2, 1050, 0xb2, 250, 2);
	ev_alloc(a, 1, 1060, 0xa3, 100, 1);
	ev_free(a, 1, 1070, 0xa1);
	ev_alloc(a, 2, 1080, 0xb3, 50, 2);  /* 600 */
	ev_alloc(a, 3, 1090, 0xc1, 50, 3);  /* 650 again: a tie is not a new peak */
	finish(a);
	check_totals(a, 7, 2, 1050, 650, 5, 650, 1, 0, 0); /* b1 was temporary */
	assert_int_equal(analysis__totals(a)->peak_time_ns, 60);
	s1 = site_named(a, "one");
	s2 = site_named(a, "two");
	s3 = site_named(a, "three");
	assert_int_equal(s1->figures.peak_bytes, 400);
	assert_int_equal(s2->figures.peak_bytes, 250);
	assert_int_equal(s3->figures.peak_bytes, 0);
	assert_int_equal(s1->figures.leaked_bytes, 300);
	assert_int_equal(s2->figures.leaked_bytes, 300);
	assert_int_equal(s3->figures.leaked_bytes, 50);
	analysis__free(a);
}

static void test_leaks(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s;

	add_stack1(a, 1, 0x401000);
	add_symbol(a, 0x401000, -1, "leaky", "l.c", 7);
	ev_alloc(a, 1, 1100, 0x1000, 10, 1);
	ev_alloc(a, 1, 1200, 0x2000, 20, 1);
	ev_alloc(a, 1, 1300, 0x3000, 40, 1);
	ev_free(a, 1, 1400, 0x2000);
	finish(a);
	check_totals(a, 3, 1, 70, 70, 2, 50, 0, 0, 0);
	s = site_named(a, "leaky");
	assert_int_equal(s->figures.leaked_allocations, 2);
	assert_int_equal(s->figures.leaked_bytes, 50);
	assert_int_equal(s->nstacks, 1);
	assert_int_equal(s->stacks[0]->figures.leaked_bytes, 50);
	analysis__free(a);
}

static void test_temporary(void **state)
{
	struct analysis *a = new_analysis();

	/* alloc A, free A: temporary */
	ev_alloc(a, 1, 1100, 0xa, 1, 0);
	ev_free(a, 1, 1110, 0xa);
	/* alloc A, alloc B, free A: A is not; then free B: B is */
	ev_alloc(a, 1, 1200, 0xa, 1, 0);
	ev_alloc(a, 1, 1210, 0xb, 1, 0);
	ev_free(a, 1, 1220, 0xa);
	ev_free(a, 1, 1230, 0xb);
	/* another thread allocating in between does not matter */
	ev_alloc(a, 1, 1300, 0xa, 1, 0);
	ev_alloc(a, 2, 1310, 0xc, 1, 0);
	ev_free(a, 1, 1320, 0xa);
	/* nor which thread frees: C is still thread 2's latest */
	ev_free(a, 1, 1330, 0xc);
	/* a realloc counts as an allocation of its thread */
	ev_alloc(a, 1, 1400, 0xa, 1, 0);
	ev_realloc(a, 1, 1410, 0, 0xd, 1, 0);
	ev_free(a, 1, 1420, 0xa);
	finish(a);
	check_totals(a, 7, 6, 7, 2, 1, 1, 4, 0, 0);
	analysis__free(a);
}

/* A pointer freed and handed out again is a new allocation. */
static void test_pointer_reuse(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s;

	add_stack1(a, 1, 0x401000);
	add_stack1(a, 2, 0x402000);
	add_symbol(a, 0x401000, -1, "first", "r.c", 1);
	add_symbol(a, 0x402000, -1, "second", "r.c", 2);
	ev_alloc(a, 1, 1100, 0x1000, 10, 1);
	ev_free(a, 1, 1200, 0x1000);
	ev_alloc(a, 1, 1300, 0x1000, 30, 2);
	ev_free(a, 1, 1400, 0x1000);
	ev_free(a, 1, 1500, 0x1000); /* freed again, not reallocated: internal */
	ev_alloc(a, 1, 1600, 0x1000, 5, 1);
	finish(a);
	check_totals(a, 3, 2, 45, 30, 1, 5, 2, 0, 1);
	s = site_named(a, "first");
	assert_int_equal(s->figures.allocations, 2);
	assert_int_equal(s->figures.leaked_bytes, 5);
	s = site_named(a, "second");
	assert_int_equal(s->figures.leaked_bytes, 0);
	analysis__free(a);
}

/* A free lost to drops: the second allocation at the pointer replaces the
 * first, which stops counting as live. */
static void test_alloc_of_live_pointer(void **state)
{
	struct analysis *a = new_analysis();

	ev_alloc(a, 1, 1100, 0x1000, 10, 0);
	ev_alloc(a, 1, 1200, 0x1000, 20, 0);
	finish(a);
	check_totals(a, 2, 0, 30, 20, 1, 20, 0, 0, 0);
	analysis__free(a);
}

/* Two return addresses on the same line are one site; another line is not. */
static void test_sites_merge(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s;

	add_module(a, "/bin/prog", 0x400000, 0x500000);
	add_stack1(a, 1, 0x401000);
	add_stack1(a, 2, 0x401010);
	add_stack1(a, 3, 0x401020);
	add_symbol(a, 0x401000, 0, "foo", "f.c", 10);
	add_symbol(a, 0x401010, 0, "foo", "f.c", 10);
	add_symbol(a, 0x401020, 0, "foo", "f.c", 11);
	ev_alloc(a, 1, 1100, 0x1000, 10, 1);
	ev_alloc(a, 1, 1200, 0x2000, 30, 2);
	ev_alloc(a, 1, 1300, 0x3000, 5, 3);
	finish(a);
	assert_int_equal(site_count(a), 2);
	s = &analysis__sites(a, &(size_t){ 0 })[0]; /* largest first */
	assert_string_equal(s->function, "foo");
	assert_string_equal(s->file, "f.c");
	assert_int_equal(s->line, 10);
	assert_string_equal(s->module, "/bin/prog");
	assert_int_equal(s->figures.allocations, 2);
	assert_int_equal(s->figures.allocated_bytes, 40);
	assert_int_equal(s->nstacks, 2);
	assert_int_equal(s->stacks[0]->id, 2); /* its larger stack first */
	assert_int_equal(s->stacks[0]->figures.allocated_bytes, 30);
	s = &analysis__sites(a, &(size_t){ 0 })[1];
	assert_int_equal(s->line, 11);
	assert_int_equal(s->figures.allocated_bytes, 5);
	analysis__free(a);
}

static void test_unsymbolized_site(void **state)
{
	struct analysis *a = new_analysis();
	struct trace_symbol bare = { .addr = 0x7f0000002000, .module = 0, .module_offset = 0x2000 };
	const struct analysis_site *s;

	add_module(a, "/usr/lib/libx.so", 0x7f0000000000, 0x7f0000100000);
	add_stack1(a, 1, 0x7f0000001234); /* no symbol record at all */
	add_stack1(a, 2, 0x7f0000001234 + 0); /* same address, another stack */
	add_stack1(a, 3, 0x7f0000002000); /* a symbol record with no frames */
	add_stack1(a, 4, 0x900000);       /* in no module */
	assert_int_equal(analysis__add_symbol(a, &bare), 0);
	ev_alloc(a, 1, 1100, 0x1000, 100, 1);
	ev_alloc(a, 1, 1200, 0x2000, 50, 2);
	ev_alloc(a, 1, 1300, 0x3000, 20, 3);
	ev_alloc(a, 1, 1400, 0x4000, 10, 4);
	finish(a);
	assert_int_equal(site_count(a), 3);
	s = site_named(a, "libx.so+0x1234");
	assert_null(s->function);
	assert_null(s->file);
	assert_int_equal(s->line, 0);
	assert_string_equal(s->module, "/usr/lib/libx.so");
	assert_int_equal(s->figures.allocated_bytes, 150);
	assert_int_equal(s->nstacks, 2);
	s = site_named(a, "libx.so+0x2000");
	assert_int_equal(s->figures.allocated_bytes, 20);
	s = site_named(a, "0x900000");
	assert_null(s->module);
	analysis__free(a);
}

static void test_no_stack(void **state)
{
	struct analysis *a = new_analysis();
	const struct analysis_site *s;

	ev_alloc(a, 1, 1100, 0x1000, 8, 0);
	ev_alloc(a, 1, 1200, 0x2000, 8, 0);
	finish(a);
	assert_int_equal(site_count(a), 1);
	s = site_named(a, "[no stack]");
	assert_null(s->function);
	assert_null(s->module);
	assert_int_equal(s->figures.allocations, 2);
	assert_int_equal(s->nstacks, 1);
	assert_int_equal(s->stacks[0]->nframes, 0);
	analysis__free(a);
}

/* The site is the innermost inlined call; the frames mark inlining. */
static void test_inline_frames(void **state)
{
	struct analysis *a = new_analysis();
	struct trace_frame fr[2] = { { "xalloc", "util.h", 3, 0 }, { "make", "a.c", 10, 0 } };
	struct trace_symbol sym = { .addr = 0x401000, .module = 0, .module_offset = 0x1000,
				    .nframes = 2, .frames = fr };
	uint64_t frames[2] = { 0x401000, 0x402000 };
	struct trace_stack st = { .id = 7, .nr = 2, .frames = frames };
	const struct analysis_stack *stack;
	const struct analysis_site *s;

	add_module(a, "/bin/prog", 0x400000, 0x500000);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	ev_alloc(a, 1, 1100, 0x1000, 8, 7);
	assert_int_equal(analysis__add_symbol(a, &sym), 0); /* symbols come last */
	add_symbol(a, 0x402000, 0, "main", "a.c", 20);
	finish(a);
	s = site_named(a, "xalloc");
	assert_string_equal(s->file, "util.h");
	assert_int_equal(s->line, 3);
	stack = s->stacks[0];
	assert_int_equal(stack->nframes, 3);
	assert_string_equal(stack->frames[0].function, "xalloc");
	assert_true(stack->frames[0].inlined);
	assert_string_equal(stack->frames[1].function, "make");
	assert_false(stack->frames[1].inlined);
	assert_int_equal(stack->frames[1].address, 0x401000);
	assert_string_equal(stack->frames[2].function, "main");
	assert_false(stack->frames[2].inlined);
	analysis__free(a);
}

/* A tiny trace: one module, one two-address stack (the first inlined),
 * two allocations, one freed. */
static struct analysis *tiny_trace(void)
{
	struct analysis *a = new_analysis();
	struct trace_frame fr[2] = { { "xalloc", "util.h", 3, 0 }, { "make", "a \"b\".c", 10, 0 } };
	struct trace_symbol sym = { .addr = 0x401000, .module = 0, .module_offset = 0x1000,
				    .nframes = 2, .frames = fr };
	uint64_t frames[2] = { 0x401000, 0x402000 };
	struct trace_stack st = { .id = 1, .nr = 2, .frames = frames };
	struct trace_end end = { .end_mono_ns = 2000, .events = 3 };

	add_module(a, "/bin/prog", 0x400000, 0x500000);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	ev_alloc(a, 1, 1100, 0x10, 8, 1);
	ev_alloc(a, 1, 1200, 0x20, 24, 1);
	ev_free(a, 1, 1300, 0x10);
	assert_int_equal(analysis__add_symbol(a, &sym), 0);
	assert_int_equal(analysis__set_end(a, &end), 0);
	finish(a);
	return a;
}

static const char tiny_json[] =
	"{\n"
	"  \"format\": 2,\n"
	"  \"trace\": {\n"
	"    \"command\": \"prog a\",\n"
	"    \"pid\": 42,\n"
	"    \"comm\": \"prog\",\n"
	"    \"duration_ns\": 1000,\n"
	"    \"sample_bytes\": 0,\n"
	"    \"no_heap\": false,\n"
	"    \"ended\": true,\n"
	"    \"target_exited\": false,\n"
	"    \"partial\": false,\n"
	"    \"problem\": null,\n"
	"    \"stop_reason\": null,\n"
	"    \"budget\": null,\n"
	"    \"capture\": \"probes\"\n"
	"  },\n"
	"  \"last_minute\": null,\n"
	"  \"totals\": {\n"
	"    \"allocations\": 2,\n"
	"    \"frees\": 1,\n"
	"    \"allocated_bytes\": 32,\n"
	"    \"peak_bytes\": 32,\n"
	"    \"peak_time_ns\": 200,\n"
	"    \"leaked_allocations\": 1,\n"
	"    \"leaked_bytes\": 24,\n"
	"    \"temporary_allocations\": 0,\n"
	"    \"unmatched_frees\": 0,\n"
	"    \"internal_frees\": 0,\n"
	"    \"dropped_events\": 0\n"
	"  },\n"
	"  \"rss\": null,\n"
	"  \"sites\": [\n"
	"    {\n"
	"      \"name\": \"xalloc\",\n"
	"      \"function\": \"xalloc\",\n"
	"      \"file\": \"util.h\",\n"
	"      \"line\": 3,\n"
	"      \"module\": \"/bin/prog\",\n"
	"      \"allocations\": 2,\n"
	"      \"allocated_bytes\": 32,\n"
	"      \"peak_bytes\": 32,\n"
	"      \"leaked_allocations\": 1,\n"
	"      \"leaked_bytes\": 24,\n"
	"      \"temporary_allocations\": 0,\n"
	"      \"resident_bytes\": 0,\n"
	"      \"stacks\": [0]\n"
	"    }\n"
	"  ],\n"
	"  \"zones\": [],\n"
	"  \"frames\": {\n"
	"    \"count\": 0,\n"
	"    \"frames\": []\n"
	"  },\n"
	"  \"pools\": [],\n"
	"  \"threads\": [],\n"
	"  \"stacks\": [\n"
	"    {\"allocations\": 2, \"allocated_bytes\": 32, \"peak_bytes\": 32, \"leaked_allocations\": 1, "
	"\"leaked_bytes\": 24, \"temporary_allocations\": 0, \"resident_bytes\": 0, \"frames\": [0, 1, 2]}\n"
	"  ],\n"
	"  \"stack_frames\": [\n"
	"    {\"address\": \"0x401000\", \"function\": \"xalloc\", \"file\": \"util.h\", "
	"\"line\": 3, \"module\": \"/bin/prog\", \"inlined\": true, \"language\": \"native\"},\n"
	"    {\"address\": \"0x401000\", \"function\": \"make\", \"file\": \"a \\\"b\\\".c\", "
	"\"line\": 10, \"module\": \"/bin/prog\", \"inlined\": false, \"language\": \"native\"},\n"
	"    {\"address\": \"0x402000\", \"function\": null, \"file\": null, "
	"\"line\": 0, \"module\": \"/bin/prog\", \"inlined\": false, \"language\": \"native\"}\n"
	"  ]\n"
	"}\n";

static char *render(const struct analysis *a, bool json, unsigned int top)
{
	struct report_options opts = { .top = top };
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

static void test_json_tiny(void **state)
{
	struct analysis *a = tiny_trace();
	char *out = render(a, true, 0);

	assert_string_equal(out, tiny_json);
	free(out);
	analysis__free(a);
}

/* The JSON and the text say internal frees; the text only when there are. */
static void test_internal_frees_reported(void **state)
{
	struct analysis *a = new_analysis();
	char *out;

	ev_alloc(a, 1, 1100, 0x10, 8, 0);
	ev_free(a, 1, 1200, 0x10);
	ev_free(a, 1, 1300, 0x10);
	ev_free(a, 1, 1400, 0x10);
	ev_free(a, 1, 1500, 0x20);
	finish(a);
	out = render(a, true, 0);
	assert_non_null(strstr(out, "    \"unmatched_frees\": 1,\n"
				    "    \"internal_frees\": 2,\n"));
	free(out);
	out = render(a, false, 10);
	assert_non_null(strstr(out, "  unmatched frees:  1 (memory allocated before tracing "
				    "began)\n"
				    "  internal frees:   2 (the allocator releasing memory it had "
				    "cached, e.g. at thread exit)\n"));
	free(out);
	analysis__free(a);

	a = tiny_trace();
	out = render(a, false, 10);
	assert_null(strstr(out, "internal frees"));
	free(out);
	analysis__free(a);
}

static void test_json_escapes(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_out j;

	json_out__init(&j, f);
	json_out__begin_array(&j, true);
	json_out__string(&j, "tab\tnl\n\x01 \\ \"q\"");
	json_out__string(&j, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"); /* valid UTF-8 kept */
	json_out__string(&j, "bad\xff\xc3(\xed\xa0\x80");                  /* invalid replaced */
	json_out__end_array(&j);
	assert_int_equal(json_out__finish(&j), 0);
	fclose(f);
	assert_string_equal(buf, "[\"tab\\tnl\\n\\u0001 \\\\ \\\"q\\\"\", "
				 "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\", "
				 "\"bad\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\"]\n");
	free(buf);
}

/* Drops and a partial trace are said before anything else. */
static void test_text_warnings_first(void **state)
{
	struct analysis *a = new_analysis();
	struct trace_drops d = { .cpu = 1, .count = 1234 };
	char *out;

	ev_alloc(a, 1, 1100, 0x10, 2 * 1024 * 1024, 0);
	assert_int_equal(analysis__add_drops(a, &d), 0);
	assert_int_equal(analysis__set_partial(a, "last chunk truncated"), 0);
	finish(a);
	assert_int_equal(analysis__totals(a)->dropped_events, 1234);
	out = render(a, false, 10);
	assert_true(!strncmp(out, "WARNING: 1234 events dropped: figures are lower bounds\n"
				  "WARNING: trace is partial: last chunk truncated\n",
			     strlen("WARNING: 1234 events dropped: figures are lower bounds\n"
				    "WARNING: trace is partial: last chunk truncated\n")));
	assert_non_null(strstr(out, "2.0 MiB (2097152 bytes)"));
	assert_non_null(strstr(out, "[no stack]"));
	free(out);
	analysis__free(a);
}

static void test_text_sections(void **state)
{
	struct analysis *a = tiny_trace();
	char *out = render(a, false, 1);

	assert_null(strstr(out, "WARNING"));
	assert_non_null(strstr(out, "Top sites by allocated bytes\n"
				    "    1.       32 B  2 calls        xalloc  util.h:3  [prog]\n"
				    "        #0  xalloc (inlined)  util.h:3\n"
				    "        #1  make  a \"b\".c:10\n"
				    "        #2  prog+0x2000\n"));
	assert_non_null(strstr(out, "Leaks (bytes still live at the end)\n"
				    "    1.       24 B  1 block        xalloc  util.h:3  [prog]\n"));
	assert_non_null(strstr(out, "Temporary allocations (freed before their thread allocated "
				    "again)\n  (none)\n"));
	free(out);
	analysis__free(a);
}

/* 2M pointers live at once, then freed in a scrambled order, every 1000th
 * freed twice: the second free is internal (freed already, not reused). */
static void test_live_table_stress(void **state)
{
	const uint64_t n = 2000000, base = 0x555500000000ULL;
	struct analysis *a = new_analysis();
	uint64_t i, ts = 1001;

	for (i = 0; i < n; i++)
		ev_alloc(a, (uint32_t)(i & 7), ts++, base + i * 48, 1 + (i & 63), 0);
	/* i * 999983 mod n visits every index once: 999983 is prime and
	 * does not divide n. */
	for (i = 0; i < n; i++)
		ev_free(a, 1, ts++, base + (i * 999983 % n) * 48);
	for (i = 0; i < n; i += 1000)
		ev_free(a, 1, ts++, base + i * 48);
	finish(a);
	/* Bytes: 31250 rounds of 1..64. Temporary: each of the 8 threads'
	 * last allocation, freed with no later one of its thread. */
	check_totals(a, n, n, 31250ULL * 64 * 65 / 2, 31250ULL * 64 * 65 / 2, 0, 0, 8, 0, n / 1000);
	print_message("2M live pointers inserted, freed, double-freed: totals exact\n");
	analysis__free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_free),
		cmocka_unit_test(test_calloc_bytes),
		cmocka_unit_test(test_realloc_moving),
		cmocka_unit_test(test_realloc_in_place_and_zero),
		cmocka_unit_test(test_realloc_null_is_alloc),
		cmocka_unit_test(test_realloc_unknown),
		cmocka_unit_test(test_free_unknown),
		cmocka_unit_test(test_free_twice_is_internal),
		cmocka_unit_test(test_free_never_seen_is_unmatched),
		cmocka_unit_test(test_reuse_then_free_twice),
		cmocka_unit_test(test_realloc_moved_then_free_old),
		cmocka_unit_test(test_freed_pointers_bounded),
		cmocka_unit_test(test_peak_two_sites),
		cmocka_unit_test(test_leaks),
		cmocka_unit_test(test_temporary),
		cmocka_unit_test(test_pointer_reuse),
		cmocka_unit_test(test_alloc_of_live_pointer),
		cmocka_unit_test(test_sites_merge),
		cmocka_unit_test(test_unsymbolized_site),
		cmocka_unit_test(test_no_stack),
		cmocka_unit_test(test_inline_frames),
		cmocka_unit_test(test_json_tiny),
		cmocka_unit_test(test_internal_frees_reported),
		cmocka_unit_test(test_json_escapes),
		cmocka_unit_test(test_text_warnings_first),
		cmocka_unit_test(test_text_sections),
		cmocka_unit_test(test_live_table_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
