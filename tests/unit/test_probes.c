// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_set__resolve on the C library this test runs on, from several
 * threads at once, as memtrace agent binds the targets it finds together:
 * every thread must place every probe where one thread alone places it.
 * When the function's code was read into one buffer shared by all, a
 * thread decoded another's function and put a return probe where the
 * stack's top is a saved register, not the return address: the kernel's
 * return hijack then overwrote that register in the traced process (a
 * loop bound became the [uprobes] page's address; leak_rate ran forever).
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "probes.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 40

static char libc_path[4096];
static struct probe_set alone;

/* The C library this process maps, from /proc/self/maps. */
static int find_libc(void **state)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4608];

	(void)state;
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(libc_path, sizeof(libc_path), "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
	return libc_path[0] ? 0 : -1;
}

static int resolve(struct probe_set *ps)
{
	char *cands[1] = { libc_path };

	memset(ps, 0, sizeof(*ps));
	return probe_set__resolve(ps, cands, 1, NULL, true);
}

/* How many probes of PS differ from those placed alone. */
static int differences(const struct probe_set *ps)
{
	int bad = ps->nr != alone.nr;

	for (size_t i = 0; i < ps->nr && i < alone.nr; i++) {
		const struct probe *a = &ps->v[i], *b = &alone.v[i];

		if (strcmp(a->func, b->func) || a->offset != b->offset || a->emulated != b->emulated ||
		    a->arg_cookie != b->arg_cookie || a->ret != b->ret || strcmp(a->insn, b->insn)) {
			print_error("%s: +%u %s, alone +%u %s\n", a->func, a->skipped, a->insn, b->skipped, b->insn);
			bad++;
		}
	}
	return bad;
}

static void *binder_thread(void *arg)
{
	int *bad = arg;

	for (int r = 0; r < ROUNDS; r++) {
		struct probe_set ps;

		if (resolve(&ps)) {
			(*bad)++;
			continue;
		}
		*bad += differences(&ps);
		probe_set__free(&ps);
	}
	return NULL;
}

static void test_threads_place_as_one(void **state)
{
	pthread_t t[THREADS];
	int bad[THREADS] = { 0 };

	(void)state;
	assert_int_equal(resolve(&alone), 0);
	/* malloc, free, calloc and realloc at least, malloc's with a return probe */
	assert_true(alone.nr >= 4);
	for (size_t i = 0; i < alone.nr; i++)
		if (!strcmp(alone.v[i].func, "malloc"))
			assert_true(alone.v[i].ret);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, binder_thread, &bad[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(bad[i], 0);
	}
	probe_set__free(&alone);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_place_as_one),
	};

	return cmocka_run_group_tests(tests, find_libc, NULL);
}
