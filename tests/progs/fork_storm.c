// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_storm [wait] N: a server's fork storm for --follow-children. With
 * "wait" it first blocks until SIGUSR1 (for memtrace -p).
 *   parent: forks N short children as fast as it can, reaping those that
 *           ended as it goes, then the rest; prints
 *           "fork_storm N children in US us" (fork of the first to the
 *           last reaped) and exits 0 if every child did.
 *   child i: 3 x malloc(100 + i % 7) at storm_block, the first freed, the
 *           other two leaked (2 x (100 + i % 7) bytes), then _exit(0): a
 *           child whose probes came late loses some of these.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCKS 3

static void *volatile keep[BLOCKS];

__attribute__((noinline)) static void storm_block(int j, size_t size)
{
	keep[j] = malloc(size);
}

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Collect the children that ended (OPTIONS 0: wait for one). */
static void reap(int *left, int *ok, int options)
{
	int status;

	while (*left && waitpid(-1, &status, options) > 0) {
		(*left)--;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			*ok = 0;
		if (!(options & WNOHANG))
			return;
	}
}

int main(int argc, char **argv)
{
	int n, left = 0, ok = 1;
	long long t0;

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		sigwait(&set, &sig);
		argv++;
		argc--;
	}
	if (argc < 2 || (n = atoi(argv[1])) < 1)
		return 2;
	t0 = now_us();
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid == 0) {
			for (int j = 0; j < BLOCKS; j++)
				storm_block(j, 100 + i % 7);
			free(keep[0]);
			_exit(0);
		}
		if (pid < 0) {
			/* out of processes: wait for one, then try again */
			if (!left)
				return 3;
			reap(&left, &ok, 0);
			i--;
			continue;
		}
		left++;
		reap(&left, &ok, WNOHANG);
	}
	while (left)
		reap(&left, &ok, 0);
	printf("fork_storm %d children in %lld us\n", n, now_us() - t0);
	return ok ? 0 : 1;
}
