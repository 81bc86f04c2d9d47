// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * thread_names: threads named every way a program names them, each making
 * one allocation of a known size after it has its name, for
 * tests/e2e/thread_names.sh:
 *
 *   thread  named by                                   name             allocates
 *   main    its command name                           thread_names     malloc(50)
 *   A       pthread_setname_np(pthread_self(), ...)    net-io           malloc(100)
 *   B       prctl(PR_SET_NAME, ...)                    disk-io          malloc(200)
 *   C       nothing: the name it was created with      thread_names     malloc(300)
 *   D       main's pthread_setname_np(D, ...)          named-by-main    malloc(400)
 *
 * usage: thread_names [wait]
 *   wait  start and name the threads, then block until SIGUSR1 before any
 *         allocation (for memtrace -p: the names are there before attach)
 * Every block escapes to a global, so no malloc is optimized away.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

static void *volatile sink[5];
static pthread_barrier_t named, go;
static sigset_t usr1;
static int waiting;

static void wait_turn(void)
{
	pthread_barrier_wait(&named); /* every thread has its name */
	pthread_barrier_wait(&go);    /* main let them go */
}

static void *thread_a(void *arg)
{
	pthread_setname_np(pthread_self(), "net-io");
	wait_turn();
	sink[1] = malloc(100);
	return arg;
}

static void *thread_b(void *arg)
{
	prctl(PR_SET_NAME, "disk-io");
	wait_turn();
	sink[2] = malloc(200);
	return arg;
}

static void *thread_plain(void *arg)
{
	wait_turn();
	sink[(long)arg] = malloc((size_t)(long)arg * 100); /* C: 300, D: 400 */
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[4];
	int sig;

	waiting = argc > 1 && !strcmp(argv[1], "wait");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	pthread_barrier_init(&named, NULL, 5);
	pthread_barrier_init(&go, NULL, 5);
	pthread_create(&t[0], NULL, thread_a, NULL);
	pthread_create(&t[1], NULL, thread_b, NULL);
	pthread_create(&t[2], NULL, thread_plain, (void *)3L);
	pthread_create(&t[3], NULL, thread_plain, (void *)4L);
	pthread_setname_np(t[3], "named-by-main");
	pthread_barrier_wait(&named);
	if (waiting) {
		fprintf(stderr, "thread_names: waiting for SIGUSR1\n");
		sigwait(&usr1, &sig);
	}
	sink[0] = malloc(50);
	pthread_barrier_wait(&go);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("thread_names: done\n");
	return 0;
}
