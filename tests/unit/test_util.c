// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/lib/util.c: proc_stat_parse, the one reader of /proc/PID/stat's
 * fields (the --budget recorder's target CPU time, the agent's start times
 * and zombies): past a name that holds spaces and parentheses, and on this
 * process's own line. exponential_gaps, sampled mode's table of gaps: its
 * mean is the mean asked for, whatever the seed, and its shape exponential.
 */
#include "util.h" /* before cmocka.h, whose fail() macro would rename util.h's */

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <unistd.h>

static void test_name_with_parentheses(void **state)
{
	/* fields 1 to 22 of proc(5), the name "a) b (c" */
	const char *line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 120 0 0 0 37 5 0 0 20 0 1 0 987654 "
			   "2265088 166\n";
	uint64_t f[19];
	char st = 0;

	(void)state;
	assert_int_equal(proc_stat_parse(line, &st, f, 19), 0);
	assert_int_equal(st, 'S');
	assert_int_equal(f[0], 1);              /* ppid, field 4 */
	assert_int_equal(f[4], UINT64_MAX);     /* tpgid -1, field 8 */
	assert_int_equal(f[10], 37);            /* utime, field 14 */
	assert_int_equal(f[11], 5);             /* stime, field 15 */
	assert_int_equal(f[18], 987654);        /* starttime, field 22 */
	assert_int_equal(proc_stat_start(line, &st), 987654);
	assert_int_equal(proc_stat_start("4242 (cut) S 1 2", &st), 0);
	/* ended: dead, or a zombie with its main thread alone (field 20);
	 * a zombie main thread with others running has not */
	assert_false(proc_stat_ended(line));
	assert_true(proc_stat_ended("9 (z) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n"));
	assert_false(proc_stat_ended("9 (z) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 5\n"));
	assert_true(proc_stat_ended("9 (x) X 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5\n"));
	assert_true(proc_stat_ended("4242 (cut) Z 1 2"));
	assert_int_equal(proc_stat_parse("4242 (cut) S 1 2", &st, f, 19), -EINVAL);
	assert_int_equal(proc_stat_parse("no name at all", &st, f, 1), -EINVAL);
}

static void test_own_line(void **state)
{
	char buf[1024], st = 0;
	uint64_t f[19];

	(void)state;
	assert_true(read_proc_file(getpid(), "stat", buf, sizeof(buf)) > 0);
	assert_int_equal(proc_stat_parse(buf, &st, f, 19), 0);
	assert_int_equal(st, 'R'); /* reading its own stat, it runs */
	assert_int_equal(f[0], (uint64_t)getppid());
	assert_true(f[18] > 0);
}

/* Over 200 seeds: each table's mean within 0.5% of the mean asked for (1024
 * independent draws are that close about one time in eight), and the share
 * of gaps at most the mean 1 - 1/e, as an exponential's. */
static void test_exponential_gaps(void **state)
{
	enum { N = 1024 };
	int64_t gaps[N];
	const uint64_t mean = 16384;

	(void)state;
	for (unsigned short k = 0; k < 200; k++) {
		unsigned short seed[3] = { k, (unsigned short)(k * 7919u), 0x4d54 };
		double sum = 0;
		int below = 0;

		exponential_gaps(gaps, N, mean, seed);
		for (int i = 0; i < N; i++) {
			assert_true(gaps[i] >= 1);
			sum += (double)gaps[i];
			below += gaps[i] <= (int64_t)mean;
		}
		assert_true(fabs(sum / N / mean - 1.0) < 0.005);
		assert_true(fabs((double)below / N - (1.0 - exp(-1.0))) < 0.002);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name_with_parentheses),
		cmocka_unit_test(test_own_line),
		cmocka_unit_test(test_exponential_gaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
