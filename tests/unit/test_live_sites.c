// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * live_sites.h: the live view's snapshots, taken while events still come,
 * for every thread and zone or for one of each, grouped into sites by the
 * report's rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "live_sites.h"
#include "replay.h"

#define START 1000

struct fixture {
	struct replay *r;
	struct live_sites *l;
};

static void setup(struct fixture *f)
{
	struct trace_meta m = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	struct trace_module mod = { .start = 0x400000, .end = 0x500000, .path = "/bin/prog" };
	static const struct trace_frame alpha = { .function = "alpha", .file = "p.c", .line = 10 };
	static const struct trace_frame beta = { .function = "beta", .file = "p.c", .line = 20 };
	static const uint64_t a1[] = { 0x401000, 0x402000 }, a2[] = { 0x401000, 0x403000 }, b[] = { 0x405000 };
	const struct trace_stack stacks[] = { { 1, 2, a1 }, { 2, 2, a2 }, { 3, 1, b } };
	const struct trace_symbol syms[] = {
		{ .addr = 0x401000, .module = 0, .module_offset = 0x1000, .nframes = 1, .frames = &alpha },
		{ .addr = 0x405000, .module = 0, .module_offset = 0x5000, .nframes = 1, .frames = &beta },
	};
	struct trace_string zone = { .id = 1, .str = "render" };

	f->r = replay__new();
	assert_non_null(f->r);
	f->l = live_sites__new(f->r);
	assert_non_null(f->l);
	assert_int_equal(replay__set_meta(f->r, &m), 0);
	assert_int_equal(replay__add_module(f->r, &mod), 0);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(replay__add_stack(f->r, &stacks[i]), 0);
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(replay__add_symbol(f->r, &syms[i]), 0);
	assert_int_equal(replay__add_string(f->r, &zone), 0);
}

static void ev(struct fixture *f, uint32_t type, uint32_t tid, uint64_t ptr, uint64_t size, uint32_t stack)
{
	static uint64_t ts;
	struct trace_event e = { .type = type, .tid = tid, .ts = START + ++ts, .ptr = ptr, .size = size,
				 .stack_id = stack };

	assert_int_equal(replay__add_event(f->r, &e), 0);
}

static void zone(struct fixture *f, uint32_t kind, uint32_t tid)
{
	struct trace_mark m = { .kind = kind, .tid = tid, .ts = START + 1, .name = 1 };

	assert_int_equal(replay__add_mark(f->r, &m), 0);
}

static const struct analysis_site *find(const struct analysis_site *s, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

static void test_snapshots_while_events_come(void **state)
{
	const struct analysis_site *s, *x;
	struct fixture f;
	size_t n;

	setup(&f);
	ev(&f, MT_EVENT_ALLOC, 7, 0x10, 100, 1);       /* alpha, thread 7 */
	ev(&f, MT_EVENT_ALLOC, 7, 0x20, 50, 2);        /* alpha again: another stack, one site */
	ev(&f, MT_EVENT_ALLOC, 8, 0x30, 1000, 3);      /* beta, thread 8 */
	assert_int_equal(live_sites__snapshot(f.l, NULL, &s, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "beta");        /* ranked by allocated bytes */
	x = find(s, n, "alpha");
	assert_non_null(x);
	assert_int_equal(x->nstacks, 2);
	assert_int_equal(x->figures.allocations, 2);
	assert_int_equal(x->figures.allocated_bytes, 150);
	assert_int_equal(x->figures.leaked_bytes, 150); /* live now */

	ev(&f, MT_EVENT_FREE, 8, 0x10, 0, 0);          /* freed by another thread */
	ev(&f, MT_EVENT_FREE, 8, 0x999, 0, 0);         /* allocated before attach: nothing */
	zone(&f, MT_MARK_ZONE_BEGIN, 8);
	ev(&f, MT_EVENT_ALLOC, 8, 0x40, 7, 1);         /* alpha, thread 8, in render */
	zone(&f, MT_MARK_ZONE_END, 8);
	assert_int_equal(live_sites__snapshot(f.l, NULL, &s, &n), 0);
	x = find(s, n, "alpha");
	assert_int_equal(x->figures.allocations, 3);
	assert_int_equal(x->figures.allocated_bytes, 157);
	assert_int_equal(x->figures.leaked_allocations, 2);
	assert_int_equal(x->figures.leaked_bytes, 57);

	/* thread 7: what it allocated, whoever freed it */
	assert_int_equal(live_sites__snapshot(f.l, &(struct live_filter){ .tid = 7 }, &s, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].name, "alpha");
	assert_int_equal(s[0].figures.allocated_bytes, 150);
	assert_int_equal(s[0].figures.leaked_bytes, 50);
	/* the zone: what was made while it was innermost */
	assert_int_equal(live_sites__snapshot(f.l, &(struct live_filter){ .zone = "render" }, &s, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(s[0].name, "alpha");
	assert_int_equal(s[0].figures.allocated_bytes, 7);
	/* a zone never seen: nothing */
	assert_int_equal(live_sites__snapshot(f.l, &(struct live_filter){ .zone = "nope" }, &s, &n), 0);
	assert_int_equal(n, 0);
	{
		const char *zones[4];

		assert_int_equal(live_sites__zones(f.l, zones, 4), 1);
		assert_string_equal(zones[0], "render");
	}
	live_sites__free(f.l);
	replay__free(f.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshots_while_events_come),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
