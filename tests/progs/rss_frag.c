// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rss_frag MODE [HOLD_MS]: resident memory the allocator holds free, with
 * the program's own accounting, for --rss's reconciliation (tests/e2e/rss.sh).
 *   frag    the main thread allocates 100000 blocks of 1000 bytes, touches
 *           them all, then frees every other one: half the heap's pages
 *           hold free chunks between live ones, so glibc keeps them;
 *   arenas  4 threads (each with a glibc arena of its own) allocate 2000
 *           blocks of 10000 bytes each, touch them and free every other one.
 * Then it prints one line (write(2), nothing on the heap):
 *   rss_frag MODE live=L freed=F
 * L: the bytes asked for of the blocks still live; F: the chunks freed,
 * malloc_usable_size + 8 (glibc's chunk header) each. It holds HOLD_MS
 * (default 1500) with nothing changing, so a resident snapshot comes after
 * the frees, and exits 0 without freeing the rest.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static void *volatile sink;

struct work {
	size_t n, size;
	size_t live, freed;
	char **blocks;
	pthread_barrier_t *together; /* arenas: no thread ends before all have allocated */
};

static void *run(void *arg)
{
	struct work *w = arg;

	for (size_t i = 0; i < w->n; i++) {
		w->blocks[i] = malloc(w->size);
		if (!w->blocks[i])
			abort();
		memset(w->blocks[i], 1, w->size);
		sink = w->blocks[i];
	}
	for (size_t i = 0; i < w->n; i++) {
		if (i % 2) {
			w->freed += malloc_usable_size(w->blocks[i]) + 8;
			free(w->blocks[i]);
		} else {
			w->live += w->size;
		}
	}
	/* A thread that ended gives its arena to the next one that starts:
	 * each thread's arena its own, all four alive at once. */
	if (w->together)
		pthread_barrier_wait(w->together);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "frag";
	long hold_ms = argc > 2 ? atol(argv[2]) : 1500;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000 };
	static char *frag_blocks[100000], *arena_blocks[THREADS][2000];
	struct work w[THREADS] = { 0 };
	size_t live = 0, freed = 0;
	char line[160];
	int len;

	/* 4 KiB pages only, whatever the host's THP setting: one write fault a page */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	if (!strcmp(mode, "frag")) {
		w[0] = (struct work){ .n = 100000, .size = 1000, .blocks = frag_blocks };
		run(&w[0]);
		live = w[0].live, freed = w[0].freed;
	} else if (!strcmp(mode, "arenas")) {
		static pthread_barrier_t together;
		pthread_t t[THREADS];

		if (pthread_barrier_init(&together, NULL, THREADS))
			return 1;
		for (int i = 0; i < THREADS; i++) {
			w[i] = (struct work){ .n = 2000, .size = 10000, .blocks = arena_blocks[i], .together = &together };
			if (pthread_create(&t[i], NULL, run, &w[i]))
				return 1;
		}
		for (int i = 0; i < THREADS; i++) {
			pthread_join(t[i], NULL);
			live += w[i].live, freed += w[i].freed;
		}
	} else {
		return 2;
	}
	len = snprintf(line, sizeof(line), "rss_frag %s live=%zu freed=%zu\n", mode, live, freed);
	if (write(1, line, (size_t)len) != len)
		return 1;
	nanosleep(&ts, NULL);
	return 0;
}
