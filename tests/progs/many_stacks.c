// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Many distinct deep stacks, for tests/e2e/json_size.sh: allocation i is
 * made at the bottom of a DEPTH-level walk through left() and right() chosen
 * by the bits of i, so 2^DEPTH allocations have 2^DEPTH different stacks of
 * DEPTH + 3 frames or more, all ending in the same few functions.
 * usage: many_stacks [DEPTH [SECONDS]]  (default 17: 131072 stacks; SECONDS:
 * walk them again and again for that long, as a long-running process
 * would: bench/agent_soak.sh)
 */
#include <stdlib.h>
#include <time.h>

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
	double seconds = argc > 2 ? atof(argv[2]) : 0;
	struct timespec t0, now;

	if (depth < 1 || depth > 24)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (unsigned i = 0; i < 1u << depth; i++)
			walk(depth, i);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	return 0;
}
