// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * signal_cancel: allocations from a signal handler (on the thread's stack,
 * and on an alternate stack), and from a thread being cancelled (in the
 * cleanup handlers its cancellation runs), for tests/e2e/preload.sh.
 *
 *   site                 where                                      allocs  bytes  leaked
 *   site_in_handler      SIGUSR1's handler, 50 signals               50      3200   0
 *   site_on_altstack     SIGUSR2's handler on a sigaltstack, 20      20      640    0
 *   site_cancelled       the cancelled thread, before it is          1       1000   0
 *   site_in_cleanup      its cleanup handler, during the cancel      3       384    0
 *
 * The handlers interrupt only a loop that allocates nothing (malloc is not
 * async-signal-safe). On stdout: "signal_cancel: done".
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static volatile sig_atomic_t seen1, seen2;
static void *volatile hold;

NOINLINE static void *site_in_handler(void) { return malloc(64); }
NOINLINE static void *site_on_altstack(void) { return malloc(32); }
NOINLINE static void *site_cancelled(void) { return malloc(1000); }
NOINLINE static void *site_in_cleanup(void) { return malloc(128); }

static void on_usr1(int sig)
{
	free(site_in_handler());
	seen1++;
}

static void on_usr2(int sig)
{
	free(site_on_altstack());
	seen2++;
}

static void cleanup(void *block)
{
	for (int i = 0; i < 3; i++)
		free(site_in_cleanup());
	free(block);
}

static void *victim(void *started)
{
	void *block = site_cancelled();

	pthread_cleanup_push(cleanup, block);
	*(volatile int *)started = 1;
	for (;;)
		pause(); /* a cancellation point */
	pthread_cleanup_pop(1);
	return NULL;
}

int main(void)
{
	static char alt[64 * 1024];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa;
	volatile int started = 0;
	pthread_t t;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sigaltstack(&ss, NULL);
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < 50; i++) {
		int want = seen1 + 1;

		kill(getpid(), SIGUSR1);
		while (seen1 < want)
			;
	}
	for (int i = 0; i < 20; i++) {
		int want = seen2 + 1;

		kill(getpid(), SIGUSR2);
		while (seen2 < want)
			;
	}
	pthread_create(&t, NULL, victim, (void *)&started);
	while (!started)
		usleep(1000);
	pthread_cancel(t);
	pthread_join(t, NULL);
	fputs("signal_cancel: done\n", stdout);
	return 0;
}
