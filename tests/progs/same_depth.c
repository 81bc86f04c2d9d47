// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Two paths to the same allocation at the same depth: main calls via_a or
 * via_b from one place, and each calls leaf, which calls malloc. The stack
 * pointer and frame pointer at malloc are the same on both paths; only the
 * return address into via_a or via_b differs. The probes' stack templates
 * (bpf/memtrace.bpf.c) key on where the walk starts and must check that
 * word: 3000 rounds of a, b, b give exactly 3000 allocations of 16 bytes
 * through via_a and 6000 of 48 through via_b.
 */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink; /* the pointers escape: no malloc/free pair is removed */

__attribute__((noinline)) static void *leaf(size_t n)
{
	void *p = malloc(n);

	sink = p;
	return p;
}

__attribute__((noinline)) static void via_a(size_t n)
{
	free(leaf(n));
	sink = NULL;
}

__attribute__((noinline)) static void via_b(size_t n)
{
	free(leaf(n + 32));
	sink = NULL;
}

int main(void)
{
	for (int i = 0; i < 9000; i++) {
		if (i % 3 == 0)
			via_a(16);
		else
			via_b(16);
	}
	printf("same_depth: done\n");
	return 0;
}
