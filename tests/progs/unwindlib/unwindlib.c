// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libunwindlib.so, for tests/progs/unwind_levels: allocations made two
 * levels inside a shared library, reached through the PLT. Built twice,
 * with and without frame pointers, like its program.
 */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

void *volatile unwindlib_keep[64];

NOINLINE void unwindlib_inner(int i)
{
	unwindlib_keep[i & 63] = malloc(200);
}

NOINLINE void unwindlib_entry(int n)
{
	for (int i = 0; i < n; i++)
		unwindlib_inner(i);
}
