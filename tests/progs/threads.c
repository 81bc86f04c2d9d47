// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * threads: T=4 threads started after the tracer attached, each making a known
 * number of allocations from three named sites. tests/e2e/threads.sh asserts
 * the per-site figures exactly.
 *
 * usage: threads [wait]
 *   wait  block until SIGUSR1 before starting any thread (for memtrace -p);
 *         without it the threads start at once (for memtrace -- CMD)
 * On stdout it writes exactly one line, "threads: done".
 *
 * Thread i (0..3) runs, for j = 0..999: q = site_thread_work() (malloc of
 * 32*(i+1) bytes), free the previous q; every 20th j also t =
 * site_thread_temp() (malloc(16)) freed at once. Then 10 x site_thread_leak()
 * (malloc(100), never freed), then the last q is freed.
 *
 *   site               allocs  bytes   leaked  leaked_b  temporary
 *   site_thread_work   4000    320000  0       0         0
 *   site_thread_temp   200     3200    0       0         200
 *   site_thread_leak   40      4000    40      4000      0
 *
 * temporary is per thread: a global "last allocation" would count fewer
 * when the threads interleave.
 *
 * glibc adds, outside these sites: pthread_create's calloc of the new
 * thread's DTV (one per thread, 272 bytes with glibc 2.36, called from
 * ld.so, never freed while the thread stack is cached); and at thread exit
 * tcache_thread_shutdown calls free (__libc_free, the same address) on each
 * chunk still cached in the thread's tcache (11 in all, each already freed by
 * the program) and on the tcache itself (4; allocated inside malloc, never
 * seen): 4 unmatched frees and 11 internal frees. glibc also calls free(NULL) twice per exiting
 * thread (not events). So the totals are: allocations 4244, allocated_bytes
 * 328288, frees 4200, leaked_allocations 44, leaked_bytes 5088,
 * temporary_allocations 200, unmatched_frees 4, internal_frees 11; the peak depends on how
 * the threads interleave: between 5088 and 5088 + 4 x 16 + 2 x (32 + 64 +
 * 96 + 128) = 5792.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define NTHREADS 4
#define NWORK 1000
#define TEMP_EVERY 20
#define NLEAK 10

static void *volatile leaks[NTHREADS][NLEAK];

static void die(const char *msg)
{
	if (write(2, msg, strlen(msg)) < 0)
		_exit(2);
	_exit(2);
}

NOINLINE void *site_thread_work(size_t size) { return malloc(size); }
NOINLINE void *site_thread_temp(void) { return malloc(16); }
NOINLINE void *site_thread_leak(void) { return malloc(100); }

NOINLINE void *thread_main(void *arg)
{
	long idx = (long)arg;
	void *volatile prev = NULL;
	void *volatile q;
	int j;

	for (j = 0; j < NWORK; j++) {
		q = site_thread_work(32 * (idx + 1));
		if (!q)
			die("threads: allocation failed\n");
		if (prev)
			free(prev);
		prev = q;
		if (j % TEMP_EVERY == 0) {
			void *volatile t = site_thread_temp();

			free(t);
		}
	}
	for (j = 0; j < NLEAK; j++)
		leaks[idx][j] = site_thread_leak();
	free(prev);
	return NULL;
}

NOINLINE void wait_for_tracer(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (write(2, "threads: waiting for SIGUSR1\n", 29) < 0)
		_exit(2);
	if (sigwait(&set, &sig) != 0)
		die("threads: sigwait failed\n");
}

int main(int argc, char **argv)
{
	static const char done[] = "threads: done\n";
	pthread_t tid[NTHREADS];
	long i;

	if (argc > 1 && strcmp(argv[1], "wait") == 0)
		wait_for_tracer();
	for (i = 0; i < NTHREADS; i++)
		if (pthread_create(&tid[i], NULL, thread_main, (void *)i) != 0)
			die("threads: pthread_create failed\n");
	for (i = 0; i < NTHREADS; i++)
		pthread_join(tid[i], NULL);
	if (write(1, done, sizeof(done) - 1) < 0)
		return 2;
	return 0;
}
