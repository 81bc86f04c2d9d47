// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_hold [N]: how long a forked child waits before its first instruction
 * after fork() returns in the parent: N children (default 40), one at a
 * time, each writing CLOCK_MONOTONIC from its first line back to the
 * parent, which took the clock just before fork(). Prints the median and
 * the largest wait in microseconds, and the mean of the whole cycle, fork
 * to the parent's waitpid returning on the child's exit (the mean: a cost
 * paid for every few forks at once counts):
 * "fork_hold median_us max_us cycle_us". Under `memtrace record
 * --follow-children` the first is how long memtrace holds a new process, the
 * last what a server forking a process per connection waits for each
 * (bench/attach.sh); each child allocates once, so it is traced.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void *volatile sink;

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 40;
	uint64_t *wait = calloc((size_t)n, sizeof(*wait)), *cycle = calloc((size_t)n, sizeof(*cycle));
	double cycles_ns = 0;
	int fds[2];

	if (!wait || !cycle || n <= 0 || pipe(fds))
		return 1;
	for (int i = 0; i < n; i++) {
		uint64_t t0 = now_ns(), t1;
		pid_t pid = fork();

		if (pid == 0) {
			t1 = now_ns();
			sink = malloc(64);
			if (write(fds[1], &t1, sizeof(t1)) != sizeof(t1))
				_exit(1);
			_exit(0);
		}
		if (pid < 0 || read(fds[0], &t1, sizeof(t1)) != sizeof(t1))
			return 1;
		waitpid(pid, NULL, 0);
		wait[i] = t1 - t0;
		cycle[i] = now_ns() - t0;
	}
	qsort(wait, (size_t)n, sizeof(*wait), cmp);
	for (int i = 0; i < n; i++)
		cycles_ns += cycle[i];
	printf("fork_hold %.0f %.0f %.0f\n", wait[n / 2] / 1e3, wait[n - 1] / 1e3, cycles_ns / 1e3 / n);
	return 0;
}
