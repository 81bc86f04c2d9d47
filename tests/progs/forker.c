// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * forker [wait] PROGRAM: a process tree for --follow-children. With "wait"
 * it first blocks until SIGUSR1 (for memtrace -p).
 *   parent: 10 x malloc(100) at site_parent, leaked; then forks A and B and
 *           waits for both; exits 0.
 *   A:      20 x malloc(200) at site_child, leaked; exits 0.
 *   B:      execs PROGRAM (e.g. alloc_patterns, whose figures are known).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile keep[32];

__attribute__((noinline)) static void site_parent(int i)
{
	keep[i] = malloc(100);
}

__attribute__((noinline)) static void site_child(int i)
{
	keep[i] = malloc(200);
}

int main(int argc, char **argv)
{
	pid_t a, b;
	int status, ok = 1;

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
	if (argc < 2)
		return 2;
	for (int i = 0; i < 10; i++)
		site_parent(i);
	a = fork();
	if (a == 0) {
		for (int i = 0; i < 20; i++)
			site_child(i);
		_exit(0);
	}
	b = fork();
	if (b == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	ok &= waitpid(a, &status, 0) == a && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	ok &= waitpid(b, &status, 0) == b && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return ok ? 0 : 1;
}
