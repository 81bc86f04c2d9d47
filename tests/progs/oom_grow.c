// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Grows until the OOM killer ends it, for tests/e2e/agent_oom.sh: waits for
 * SIGUSR1 (30 s at most: its recorder attaches first), then grow_step()
 * allocates STEP_KIB KiB and writes every page of it, every 20 ms, up to
 * MAX_STEPS steps. After each whole step it prints "step N BYTES T" (the
 * bytes it allocated so far; T the step's start, CLOCK_MONOTONIC ns, taken
 * before its malloc), so a test knows what it had before the kill, and
 * when.
 * Past MAX_STEPS it exits 0, or with "segv" writes through a null pointer.
 *
 * usage: oom_grow STEP_KIB MAX_STEPS [segv]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *volatile sink; /* every block escapes: the compiler keeps each malloc */

__attribute__((noinline)) void *grow_step(size_t bytes)
{
	char *p = malloc(bytes);

	if (p)
		memset(p, 0x5a, bytes); /* resident, so charged to the memory cgroup */
	sink = p;
	return p;
}

__attribute__((noinline)) void crash(void)
{
	*(volatile int *)sink = 0;
}

int main(int argc, char **argv)
{
	size_t step = argc > 1 ? strtoul(argv[1], NULL, 10) * 1024 : 4u << 20;
	long max = argc > 2 ? atol(argv[2]) : 1000;
	struct timespec wait = { .tv_sec = 30 }, gap = { .tv_nsec = 20000000 };
	unsigned long long total = 0;
	sigset_t usr1;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	printf("oom_grow: waiting\n");
	fflush(stdout);
	if (sigtimedwait(&usr1, NULL, &wait) != SIGUSR1)
		return 2;
	for (long i = 1; i <= max; i++) {
		struct timespec t;

		clock_gettime(CLOCK_MONOTONIC, &t);
		if (!grow_step(step))
			return 3;
		total += step;
		printf("step %ld %llu %llu\n", i, total, (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec);
		fflush(stdout);
		nanosleep(&gap, NULL);
	}
	if (argc > 3 && !strcmp(argv[3], "segv")) {
		sink = NULL;
		crash();
	}
	return 0;
}
