// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * execer PROGRAM [ARGS...]: waits for SIGUSR1 (a recorder attaches
 * meanwhile), makes 7 x malloc(123) at site_before_exec (kept in a volatile
 * array so the compiler keeps them) and execs PROGRAM at once. tests/e2e/privilege.sh makes PROGRAM a setuid one: a
 * recorder that may not trace root must record exactly these 7 allocations.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile keep[7];

__attribute__((noinline)) static void site_before_exec(int i)
{
	keep[i] = malloc(123);
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig;

	if (argc < 2)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fprintf(stderr, "execer: waiting for SIGUSR1\n");
	sigwait(&set, &sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	for (int i = 0; i < 7; i++)
		site_before_exec(i);
	execv(argv[1], argv + 1);
	perror("execer: execv");
	return 127;
}
