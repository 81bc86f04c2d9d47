// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_many [wait] N PROGRAM: a server's burst of forks for
 * --follow-children. With "wait" it first blocks until SIGUSR1 (for
 * memtrace -p).
 *   parent: forks N children at once, then waits for all; exits 0 if every
 *           child did.
 *   child i (i % 10 != 9): its first act after the fork is 12 x malloc(96)
 *           at site_first_act, leaked (1152 bytes), then _exit(0): a child
 *           whose probes are attached late loses exactly these.
 *   child i (i % 10 == 9): execs PROGRAM (alloc_patterns: 56 allocations).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIRST_ACT 12

static void *volatile keep[FIRST_ACT];

__attribute__((noinline)) static void site_first_act(int i)
{
	keep[i] = malloc(96);
}

int main(int argc, char **argv)
{
	pid_t kids[256];
	int n, status, ok = 1;

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
	if (argc < 3 || (n = atoi(argv[1])) < 1 || n > 256)
		return 2;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0 && i % 10 == 9) {
			execv(argv[2], argv + 2);
			_exit(127);
		}
		if (kids[i] == 0) {
			for (int j = 0; j < FIRST_ACT; j++)
				site_first_act(j);
			_exit(0);
		}
		if (kids[i] < 0)
			return 3;
	}
	for (int i = 0; i < n; i++)
		ok &= waitpid(kids[i], &status, 0) == kids[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return ok ? 0 : 1;
}
