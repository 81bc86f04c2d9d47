// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A steady leak for tests/e2e/top.sh: leak_step() keeps 1000 bytes every
 * 10 ms (100,000 bytes a second, on an absolute schedule so it does not
 * drift), and churn() allocates and frees 4000 bytes at each step, more
 * bytes than the leak but none live. Runs for argv[1] seconds (default 5).
 */
#include <stdlib.h>
#include <time.h>

#define STEP_NS 10000000L
#define LEAK_BYTES 1000

/* The pointers escape through this, so the compiler keeps every malloc. */
void *volatile sink;

__attribute__((noinline)) void leak_step(void)
{
	sink = malloc(LEAK_BYTES);
}

__attribute__((noinline)) void churn(void)
{
	void *p = malloc(4000);

	sink = p; /* escapes, so the malloc/free pair is not deleted */
	free(p);
}

int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 5;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < seconds * (1000000000L / STEP_NS); i++) {
		leak_step();
		churn();
		next.tv_nsec += STEP_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
