// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mark_bench ITERATIONS: the cost of one MEMTRACE_ZONE_BEGIN + ZONE_END pair
 * (inproc/memtrace.h), printed as "mark_bench pairs=N ns_per_pair=X". Built
 * twice by bench/run.sh: as is, and with -DMEMTRACE_DISABLE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "memtrace.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	volatile long sink = 0;
	double t0, t1;

	for (long i = 0; i < 1000; i++) { /* warm up */
		MEMTRACE_ZONE_BEGIN("bench");
		sink += i;
		MEMTRACE_ZONE_END("bench");
	}
	t0 = now();
	for (long i = 0; i < n; i++) {
		MEMTRACE_ZONE_BEGIN("bench");
		sink += i;
		MEMTRACE_ZONE_END("bench");
	}
	t1 = now();
	printf("mark_bench pairs=%ld ns_per_pair=%.2f\n", n, (t1 - t0) / n);
	return 0;
}
