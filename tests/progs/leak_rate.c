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

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 100 steps a second, 2 allocations (5000 bytes) a step and no other
 * allocation. With "wait" as argv[2] it first says "leak_rate: waiting for
 * SIGUSR1" on stderr and waits for it (so that a recorder attached with -p
 * sees every step), and at its end prints "leak_rate: N steps". (Here, not
 * at the top: leak_step's malloc stays at line 19, which tests and the
 * README's examples show.) */
int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 5, steps = 0;
	int wait_usr1 = argc > 2 && !strcmp(argv[2], "wait");
	struct timespec next;

	if (wait_usr1) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		if (write(2, "leak_rate: waiting for SIGUSR1\n", 31) < 0 || sigwait(&set, &sig))
			return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < seconds * (1000000000L / STEP_NS); i++, steps++) {
		leak_step();
		churn();
		next.tv_nsec += STEP_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	if (wait_usr1) {
		char line[64];
		int n = snprintf(line, sizeof(line), "leak_rate: %ld steps\n", steps);

		/* write, not printf: stdout's buffer would be one allocation more */
		if (write(1, line, n) != n)
			return 2;
	}
	return 0;
}
