// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * diff_growth: a workload whose one growing site is known, for
 * tests/e2e/diff.sh. Recorded with N = 1 and with N = 5, `memtrace diff`
 * must put site_grow first with exactly +4000 allocated and leaked bytes.
 *
 * usage: diff_growth N     (N from 1 to 1000)
 *
 *   site              calls                      allocs  bytes     leaked_b
 *   site_steady       malloc(100) x10, each      10      1000      0
 *                     freed at once (temporary)
 *   site_grow         malloc(1000) x N           N       1000 N    1000 N
 *   site_only_base    malloc(32), if N < 2       1       32        32
 *   site_only_new     malloc(48), if N >= 2      1       48        48
 *
 *   totals for N = 1: 12 allocations, 2032 bytes, leaked and peak 1032;
 *   for N = 5: 16 allocations, 6048 bytes, leaked and peak 5048; so from
 *   1 to 5 leaked and peak bytes grow by 4016.
 *
 * Nothing else allocates: no stdio (one write(2) says "diff_growth: done").
 */
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

/* volatile: the compiler may neither drop the allocations nor fuse them */
static void *volatile kept[1001], *volatile once;

NOINLINE void *site_steady(void) { return malloc(100); }
NOINLINE void *site_grow(void) { return malloc(1000); }
NOINLINE void *site_only_base(void) { return malloc(32); }
NOINLINE void *site_only_new(void) { return malloc(48); }

/* atoi without the locale machinery: nothing here may allocate */
static int parse_n(const char *s)
{
	int n = 0;

	for (; *s >= '0' && *s <= '9' && n <= 1000; s++)
		n = n * 10 + (*s - '0');
	return *s || n < 1 || n > 1000 ? -1 : n;
}

int main(int argc, char **argv)
{
	static const char done[] = "diff_growth: done\n";
	int n = argc == 2 ? parse_n(argv[1]) : -1;

	if (n < 0) {
		if (write(2, "usage: diff_growth N (1 to 1000)\n", 33) < 0)
			return 2;
		return 2;
	}
	for (int i = 0; i < 10; i++) {
		void *p = site_steady();

		free(p);
	}
	once = n < 2 ? site_only_base() : site_only_new();
	for (int i = 0; i < n; i++)
		kept[i] = site_grow();
	if (write(1, done, sizeof(done) - 1) < 0)
		return 1;
	return 0;
}
