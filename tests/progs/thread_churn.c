// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * thread_churn N: starts N threads one after the other, each mapping and
 * unmapping 16 KiB (as a Python thread does for its frames) and making one
 * malloc of 100 bytes it frees. What a server starting a thread a request
 * asks of the C library's mmap and munmap, with little work between.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	for (long i = 0; i < n; i++) {
		pthread_t t;
		void *r;

		if (pthread_create(&t, NULL, one, NULL) || pthread_join(t, &r) || r) {
			fprintf(stderr, "thread_churn: thread %ld failed\n", i);
			return 1;
		}
	}
	return 0;
}
