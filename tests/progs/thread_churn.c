// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * thread_churn SECONDS: maps one large block first (a 1 MiB malloc, which
 * glibc serves with an mmap of its own), then for SECONDS starts threads one
 * after the other, each mapping and unmapping 16 KiB (as a Python thread
 * does for its frames) and making one malloc of 100 bytes it frees; frees the
 * large block last. What a server starting a thread a request asks of the C
 * library's mmap and munmap, with little work between.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void *one(void *arg)
{
	char *p = mmap(NULL, 16384, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *volatile q;

	if (p == MAP_FAILED)
		return (void *)1;
	p[0] = 1;
	q = malloc(100);
	free(q);
	munmap(p, 16384);
	return arg;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1, end = now() + secs;
	char *volatile large = malloc(1 << 20);
	long n = 0;

	if (!large)
		return 1;
	memset(large, 1, 4096);
	while (now() < end) {
		pthread_t t;
		void *r;

		if (pthread_create(&t, NULL, one, NULL) || pthread_join(t, &r) || r) {
			fprintf(stderr, "thread_churn: thread %ld failed\n", n);
			return 1;
		}
		n++;
	}
	free(large);
	printf("thread_churn %ld threads\n", n);
	return 0;
}
