// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * exit_watch.h's limit of an OOM kill where no memory cgroup limits the
 * process: the host's memory, /proc/meminfo's MemTotal, named "host"; and
 * the sentence that goes with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "exit_watch.h"

static uint64_t mem_total(void)
{
	char line[256];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
}

/* No memory cgroup known, or one with no limit (a v1 path that is not
 * there reads as none): the host's MemTotal. */
static void test_host_limit(void **state)
{
	uint64_t bytes = 0;
	char of[64] = "x";

	(void)state;
	exit_watch_limit("", &bytes, of, sizeof(of));
	assert_true(bytes > 0);
	assert_int_equal(bytes, mem_total());
	assert_string_equal(of, "host");
	bytes = 0;
	exit_watch_limit("v1:/memtrace-no-such-cgroup", &bytes, of, sizeof(of));
	assert_int_equal(bytes, mem_total());
	assert_string_equal(of, "host");
	printf("no memory cgroup limit: the host's MemTotal, %" PRIu64 " bytes, \"host\"\n", bytes);
}

/* The sentence of an OOM kill without a cgroup limit says the host ran out. */
static void test_host_sentence(void **state)
{
	struct exit_info e = { .kind = EXIT_OOM_KILLED, .status = 9, .death_real_ns = 1800000000ull * 1000000000ull };
	char buf[256];

	(void)state;
	exit_watch_describe(&e, "", buf, sizeof(buf));
	assert_non_null(strstr(buf, "killed by the OOM killer at 2027-01-15 08:00:00 UTC, its memory cgroup unknown or unlimited: the host's memory ran out"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_limit),
		cmocka_unit_test(test_host_sentence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
