// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// link: -Lbuild/progs -ltinyalloc '-Wl,-rpath,$ORIGIN'
/*
 * uses_tinyalloc: known allocations served by libtinyalloc.so instead of
 * glibc. memtrace can only see them if it probes the malloc the process
 * resolves, so tests/e2e/tinyalloc.sh asserts these exact figures:
 *
 *   site                    calls                    allocs bytes leaked leaked_b temp
 *   site_tiny_malloc_64     malloc(64) x6            6      384   1      64       0
 *   site_tiny_calloc_5x20   calloc(5, 20) x4         4      400   1      100      0
 *   site_tiny_realloc_200   realloc(64B, 200) x3     3      600   0      0        0
 *   site_tiny_big_4096      malloc(4096) x1          1      4096  0      0        1
 *
 *   measured part: 14 allocations, 5480 bytes, 12 frees (3 of them by
 *   realloc), leaked 2 (164 bytes), temporary 1, peak 5288 (1192 live after
 *   the reallocs, plus the 4096-byte block; whichever order a realloc's free
 *   and allocation are taken in, the peak is the same).
 *
 * Build note: the link needs build/progs/libtinyalloc.so first; the Makefile
 * rule for build/progs/uses_tinyalloc must depend on it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile m[6], *volatile cz[4], *volatile r[3], *volatile big;

NOINLINE void *site_tiny_malloc_64(void) { return malloc(64); }
NOINLINE void *site_tiny_calloc_5x20(void) { return calloc(5, 20); }
NOINLINE void *site_tiny_realloc_200(void *p) { return realloc(p, 200); }
NOINLINE void *site_tiny_big_4096(void) { return malloc(4096); }

int main(void)
{
	static const char done[] = "uses_tinyalloc: done\n";
	int i;

	for (i = 0; i < 6; i++)
		m[i] = site_tiny_malloc_64();
	for (i = 0; i < 4; i++)
		cz[i] = site_tiny_calloc_5x20();
	for (i = 0; i < 3; i++)
		r[i] = site_tiny_realloc_200(m[i]); /* frees m[0..2] */
	big = site_tiny_big_4096(); /* the peak; temporary, freed last */
	for (i = 3; i < 5; i++)
		free(m[i]); /* m[5] leaks */
	for (i = 0; i < 3; i++)
		free(cz[i]); /* cz[3] leaks */
	for (i = 0; i < 3; i++)
		free(r[i]);
	free(big);
	for (i = 0; i < 6; i++)
		if (!m[i])
			return 2;
	if (write(1, done, sizeof(done) - 1) < 0)
		return 2;
	return 0;
}
