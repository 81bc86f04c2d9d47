// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heavy_bench: the malloc-heavy program of issue 47, the one heaptrack is
 * measured against (bench/preload.sh).
 *
 *   heavy_bench THREADS PAIRS
 *
 * THREADS threads (released together) make PAIRS malloc+free pairs in all,
 * each thread keeping 64 blocks live: pair i frees block i % 64 and puts a
 * malloc of 16..512 bytes in its place, from a call path 3 to 6 frames
 * deep (i % 4 picks it), so the trace has a handful of stacks and every
 * pair is one allocation and one free.
 *
 * Prints one line: heavy_bench threads=T pairs=N seconds=S
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LIVE 64
#define NOINLINE __attribute__((noinline, noclone))

struct worker {
	pthread_t tid;
	uint64_t pairs;
	void *live[LIVE];
};

static pthread_barrier_t start;

NOINLINE static void *leaf(size_t size)
{
	void *p = malloc(size);

	if (p)
		*(volatile char *)p = 1;
	return p;
}
NOINLINE static void *depth4(size_t size) { return leaf(size); }
NOINLINE static void *depth5(size_t size) { return depth4(size); }
NOINLINE static void *depth6(size_t size) { return depth5(size); }

/* a call path of 3 + (i % 4) frames from the thread's loop: the loop,
 * path's dispatch, then leaf alone or under 1 to 3 more */
NOINLINE static void *path(uint64_t i, size_t size)
{
	switch (i & 3) {
	case 0: return leaf(size);
	case 1: return depth4(size);
	case 2: return depth5(size);
	default: return depth6(size);
	}
}

static void *run(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start);
	for (uint64_t i = 0; i < w->pairs; i++) {
		free(w->live[i % LIVE]);
		w->live[i % LIVE] = path(i, 16 + (i * 2654435761u) % 497);
	}
	for (int i = 0; i < LIVE; i++)
		free(w->live[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	uint64_t pairs = argc > 2 ? strtoull(argv[2], NULL, 10) : 10000000;
	struct worker *w = calloc(threads, sizeof(*w));
	struct timespec t0, t1;

	if (threads < 1 || !w)
		return 2;
	pthread_barrier_init(&start, NULL, threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i].pairs = pairs / threads;
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_barrier_wait(&start);
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("heavy_bench threads=%d pairs=%llu seconds=%.3f\n", threads, (unsigned long long)pairs,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
