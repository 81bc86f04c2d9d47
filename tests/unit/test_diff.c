// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * diff.h's matching and order on hand-made sites: what counts as the same
 * site in two traces, what is summed, and which site comes first.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "diff.h"

#define SITE(fn, fl, ln, mod, bytes, leaked)                                                   \
	{ .name = (fn), .function = (fn), .file = (fl), .line = (ln), .module = (mod),        \
	  .figures = { .allocations = 1, .allocated_bytes = (bytes), .leaked_bytes = (leaked) } }
#define RAW(nm, mod, bytes)                                                                    \
	{ .name = (nm), .module = (mod), .figures = { .allocations = 1, .allocated_bytes = (bytes) } }

static const struct diff_site *find(const struct diff *d, const char *name, uint32_t line)
{
	for (size_t i = 0; i < d->nsites; i++) {
		if (!strcmp(d->sites[i].name, name) && d->sites[i].line == line)
			return &d->sites[i];
	}
	fail_msg("no site %s:%u", name, line);
	return NULL;
}

/* A rebuilt binary at another path: same function, file, line and module
 * basename is the same site, whatever the addresses and directories. */
static void test_match_by_symbol_not_path(void **state)
{
	const struct analysis_site a[] = { SITE("f", "f.c", 10, "/old/build/prog", 100, 0) };
	const struct analysis_site b[] = { SITE("f", "f.c", 10, "/new/build/prog", 250, 50) };
	struct diff d;

	assert_int_equal(diff__sites(&d, a, 1, b, 1), 0);
	assert_int_equal(d.nsites, 1);
	assert_int_equal(d.sites[0].a.allocated_bytes, 100);
	assert_int_equal(d.sites[0].b.allocated_bytes, 250);
	assert_int_equal(diff_delta(d.sites[0].a.allocated_bytes, d.sites[0].b.allocated_bytes), 150);
	assert_int_equal(diff_delta(d.sites[0].a.leaked_bytes, d.sites[0].b.leaked_bytes), 50);
	assert_string_equal(d.sites[0].module, "/new/build/prog"); /* NEW's names win */
	diff__free(&d);
}

/* Another line, file or module name is another site. */
static void test_keys_that_differ(void **state)
{
	const struct analysis_site a[] = {
		SITE("f", "f.c", 10, "/bin/prog", 100, 0),
		SITE("f", "f.c", 11, "/bin/prog", 100, 0),
		SITE("f", "g.c", 10, "/bin/prog", 100, 0),
		SITE("f", "f.c", 10, "/lib/libf.so", 100, 0),
	};
	struct diff d;

	assert_int_equal(diff__sites(&d, a, 4, a, 4), 0);
	assert_int_equal(d.nsites, 4);
	for (size_t i = 0; i < d.nsites; i++) {
		assert_int_equal(d.sites[i].a.allocated_bytes, 100);
		assert_int_equal(d.sites[i].b.allocated_bytes, 100);
		assert_int_equal(diff_site__growth(&d.sites[i]), 0);
	}
	diff__free(&d);
}

/* Unsymbolized sites match by name ("module+0xOFF", "[no stack]"); a name
 * that is also a function's is still not that function's site. */
static void test_unsymbolized_by_name(void **state)
{
	const struct analysis_site a[] = {
		RAW("libx.so+0x10", "/lib/libx.so", 10),
		RAW("[no stack]", NULL, 5),
	};
	const struct analysis_site b[] = {
		RAW("libx.so+0x10", "/usr/lib/libx.so", 30),
		RAW("[no stack]", NULL, 5),
		SITE("[no stack]", NULL, 0, NULL, 7, 0),
	};
	struct diff d;

	assert_int_equal(diff__sites(&d, a, 2, b, 3), 0);
	assert_int_equal(d.nsites, 3);
	assert_string_equal(d.sites[0].name, "libx.so+0x10"); /* +20: the largest growth */
	assert_int_equal(d.sites[0].a.allocated_bytes, 10);
	assert_int_equal(d.sites[0].b.allocated_bytes, 30);
	assert_string_equal(d.sites[1].name, "[no stack]"); /* +7, the function, new */
	assert_non_null(d.sites[1].function);
	assert_int_equal(d.sites[1].a.allocated_bytes, 0);
	assert_null(d.sites[2].function); /* unchanged */
	assert_int_equal(d.sites[2].a.allocated_bytes, 5);
	assert_int_equal(d.sites[2].b.allocated_bytes, 5);
	diff__free(&d);
}

/* A site in one trace only has zeros on the other side; sites of one trace
 * with one key (same basename, two directories) are summed. */
static void test_one_sided_and_summed(void **state)
{
	const struct analysis_site a[] = {
		SITE("gone", "g.c", 1, "/bin/prog", 64, 64),
		SITE("kept", "k.c", 2, "/bin/prog", 10, 0),
	};
	const struct analysis_site b[] = {
		SITE("kept", "k.c", 2, "/bin/prog", 10, 0),
		SITE("born", "b.c", 3, "/opt/a/libb.so", 8, 0),
		SITE("born", "b.c", 3, "/opt/b/libb.so", 24, 16),
	};
	const struct diff_site *s;
	struct diff d;

	assert_int_equal(diff__sites(&d, a, 2, b, 3), 0);
	assert_int_equal(d.nsites, 3);
	s = find(&d, "born", 3);
	assert_int_equal(s->a.allocations, 0);
	assert_int_equal(s->b.allocations, 2);
	assert_int_equal(s->b.allocated_bytes, 32);
	assert_int_equal(s->b.leaked_bytes, 16);
	s = find(&d, "gone", 1);
	assert_int_equal(s->a.allocated_bytes, 64);
	assert_int_equal(s->b.allocated_bytes, 0);
	assert_int_equal(s->b.leaked_bytes, 0);
	assert_int_equal(diff_delta(s->a.leaked_bytes, s->b.leaked_bytes), -64);
	diff__free(&d);
}

/* Largest growth of allocated bytes first, largest shrink last; ties by
 * leaked bytes, then by name. */
static void test_order_by_growth(void **state)
{
	const struct analysis_site a[] = {
		SITE("shrinks_a_lot", "s.c", 1, "/p", 1000, 0),
		SITE("shrinks", "s.c", 2, "/p", 100, 0),
		SITE("same", "s.c", 3, "/p", 100, 0),
		SITE("grows", "s.c", 4, "/p", 100, 0),
		SITE("grows_leaks", "s.c", 5, "/p", 100, 0),
		SITE("b_ties", "s.c", 6, "/p", 0, 0),
		SITE("a_ties", "s.c", 7, "/p", 0, 0),
	};
	const struct analysis_site b[] = {
		SITE("shrinks_a_lot", "s.c", 1, "/p", 0, 0),
		SITE("shrinks", "s.c", 2, "/p", 50, 0),
		SITE("same", "s.c", 3, "/p", 100, 0),
		SITE("grows", "s.c", 4, "/p", 200, 0),
		SITE("grows_leaks", "s.c", 5, "/p", 200, 10),
		SITE("b_ties", "s.c", 6, "/p", 50, 0),
		SITE("a_ties", "s.c", 7, "/p", 50, 0),
	};
	static const char *const want[] = { "grows_leaks", "grows", "a_ties", "b_ties",
					    "same", "shrinks", "shrinks_a_lot" };
	static const int growth[] = { 1, 1, 1, 1, 0, -1, -1 };
	struct diff d;

	assert_int_equal(diff__sites(&d, a, 7, b, 7), 0);
	assert_int_equal(d.nsites, 7);
	for (size_t i = 0; i < d.nsites; i++) {
		assert_string_equal(d.sites[i].name, want[i]);
		assert_int_equal(diff_site__growth(&d.sites[i]), growth[i]);
	}
	diff__free(&d);
}

static void test_empty(void **state)
{
	struct diff d;

	assert_int_equal(diff__sites(&d, NULL, 0, NULL, 0), 0);
	assert_int_equal(d.nsites, 0);
	diff__free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_by_symbol_not_path),
		cmocka_unit_test(test_keys_that_differ),
		cmocka_unit_test(test_unsymbolized_by_name),
		cmocka_unit_test(test_one_sided_and_summed),
		cmocka_unit_test(test_order_by_growth),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
