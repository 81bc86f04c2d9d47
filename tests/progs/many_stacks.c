// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many distinct deep stacks, for tests/e2e/json_size.sh: allocation i is
 * made at the bottom of a DEPTH-level walk through left() and right() chosen
 * by the bits of i, so 2^DEPTH allocations have 2^DEPTH different stacks of
 * DEPTH + 3 frames or more, all ending in the same few functions.
 * usage: many_stacks [DEPTH]  (default 17: 131072 stacks)
 */
#include <stdlib.h>

#define DEFAULT_DEPTH 17

/* The pointers escape through this, so every malloc stays. */
void *volatile sink;

__attribute__((noinline)) void walk(int depth, unsigned path);

__attribute__((noinline)) void left(int depth, unsigned path)
{
	walk(depth, path);
	__asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
}

__attribute__((noinline)) void right(int depth, unsigned path)
{
	walk(depth, path);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void walk(int depth, unsigned path)
{
	if (!depth) {
		free(sink);
		sink = malloc(16);
		return;
	}
	if (path & 1)
		left(depth - 1, path >> 1);
	else
		right(depth - 1, path >> 1);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : DEFAULT_DEPTH;

	if (depth < 1 || depth > 24)
		return 2;
	for (unsigned i = 0; i < 1u << depth; i++)
		walk(depth, i);
	return 0;
}
