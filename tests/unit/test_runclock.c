// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * runclock.h: a process's run time read exactly, on a child that spins on
 * two threads, one of which ends half way. What it counts between two
 * reads must lie between what the threads measured of themselves (each its
 * own CPU clock) over the shortest and the longest bracket of those reads,
 * it must never go back, and keep what an ended thread ran (the coarse
 * figure, schedstat, fails that: 10 runs in 10, it went back when the
 * second thread ended).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runclock.h"
#include <cmocka.h>

#define MS 1000000ULL
/* The two clocks drift apart by a few percent on a busy host (the
 * thread's own leaves out interrupts, the perf event does not). */
static uint64_t slack(uint64_t ran)
{
	return 3 * MS / 10 + ran / 10;
}

static volatile int stop_second;
/* Each thread's own CPU time (CLOCK_THREAD_CPUTIME_ID, exact for itself),
 * published by the child in memory the test shares: the reference. */
static volatile uint64_t *own;

static void spin_publishing(volatile uint64_t *slot, bool until_stopped)
{
	volatile uint64_t x = 0;

	while (!until_stopped || !stop_second) {
		struct timespec ts;

		for (int i = 0; i < 1000; i++)
			x++;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		*slot = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
}

static void *second(void *arg)
{
	spin_publishing(&own[1], true);
	return arg;
}

/* The child: two threads spin; the second ends when SIGUSR1 arrives. */
static void on_usr1(int sig)
{
	stop_second = sig;
}

static void child(void)
{
	pthread_t t;

	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, second, NULL))
		_exit(1);
	spin_publishing(&own[0], false);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * (long)MS };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* What the child's threads ran, as they measured it themselves. */
static uint64_t reference(void)
{
	return own[0] + own[1];
}

static pid_t spinner; /* killed by the teardown, whatever failed */

static int kill_spinner(void **state)
{
	int status;

	if (spinner > 0) {
		kill(spinner, SIGKILL);
		waitpid(spinner, &status, 0);
	}
	spinner = 0;
	return 0;
}

static void test_exact_reads(void **state)
{
	uint64_t first, last, before, after, kept;
	struct runclock *rc;
	char dir[64];
	int proc_fd;

	own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(own != MAP_FAILED);
	spinner = fork();
	assert_true(spinner >= 0);
	if (!spinner)
		child();
	while (!own[0] || !own[1]) /* both threads are running */
		sleep_ms(1);
	snprintf(dir, sizeof(dir), "/proc/%d", (int)spinner);
	proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc_fd >= 0);
	rc = runclock__open(proc_fd);
	assert_non_null(rc);
	assert_true(runclock__exact(rc));
	/* Each interval between two reads bracketed by the threads' own
	 * figures: what they ran from just after the first read to just
	 * before the second, and from just before the first to just after
	 * the second. However long this test waits between its reads (a busy
	 * host), the exact count lies between, give or take slack(). */
	before = reference();
	last = runclock__read(rc);
	after = reference();
	first = last;
	for (int i = 0; i < 10; i++) {
		uint64_t v, b, a;

		sleep_ms(3);
		b = reference();
		v = runclock__read(rc);
		a = reference();
		assert_true(v >= last);
		assert_true(v - last + slack(b - after) >= b - after);
		assert_true(v - last <= a - before + slack(a - before));
		last = v;
		before = b;
		after = a;
	}
	kept = last;
	kill(spinner, SIGUSR1); /* the second thread ends; what it ran stays counted */
	for (int i = 0; i < 10; i++) {
		sleep_ms(3);
		assert_true(runclock__read(rc) >= last);
		last = runclock__read(rc);
	}
	assert_true(last > kept);
	print_message("run time over 60 ms of a child on two threads (one ended half way): %.2f ms\n",
		      (double)(last - first) / 1e6);
	runclock__free(rc);
	close(proc_fd);
	munmap((void *)own, 4096);
}

/* A process that is gone cannot be opened, though its /proc directory
 * was opened while it lived (its PID may be another's by now). */
static void test_gone(void **state)
{
	int fds[2], status, proc_fd;
	char dir[64], c;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[1]);
		_exit(read(fds[0], &c, 1) < 0);
	}
	snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
	proc_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(proc_fd >= 0);
	close(fds[1]);
	waitpid(pid, &status, 0);
	assert_null(runclock__open(proc_fd));
	close(proc_fd);
	close(fds[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exact_reads, kill_spinner),
		cmocka_unit_test(test_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
