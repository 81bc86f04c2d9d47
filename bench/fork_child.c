// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_child [N]: what a process forked by a recorded one pays for its
 * allocator calls. Waits for SIGUSR1 ("fork_child: waiting for SIGUSR1" on
 * stderr: for memtrace record -p), then forks a child that times N
 * (default 1,000,000) malloc(64)+free pairs from its first instruction
 * on, and looks at malloc's first byte every 1000 pairs: prints
 * "fork_child ns_per_pair=X clean_ms=Y", Y the milliseconds from the fork
 * to the first look that found no breakpoint (0xcc) there, -1 if none
 * did. On this host's glibc malloc's probe sits on its first byte (record
 * -v says where each probe is); elsewhere Y says nothing.
 */
#include <signal.h>
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

void *volatile sink;

static int child(long n, uint64_t forked)
{
	void *(*volatile m)(size_t) = malloc;
	double clean_ms = -1;
	uint64_t t0 = now_ns(), t1;

	for (long i = 0; i < n; i++) {
		if (i % 1000 == 0 && clean_ms < 0 && *(volatile unsigned char *)m != 0xcc)
			clean_ms = (double)(now_ns() - forked) / 1e6;
		sink = m(64);
		free(sink);
	}
	t1 = now_ns();
	printf("fork_child ns_per_pair=%.1f clean_ms=%.1f\n", (double)(t1 - t0) / (double)n, clean_ms);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	sigset_t set;
	uint64_t forked;
	int sig, status;
	pid_t pid;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fprintf(stderr, "fork_child: waiting for SIGUSR1\n");
	sigwait(&set, &sig);
	fflush(stdout);
	forked = now_ns();
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0)
		_exit(child(n, forked));
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
