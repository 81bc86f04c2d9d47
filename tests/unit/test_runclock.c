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
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runclock.h"
#include "util.h"
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

/* The same child with its main thread gone (pthread_exit): /proc shows it
 * as a zombie (state Z), its second thread still spinning. */
static void child_main_exits(void)
{
	pthread_t t;

	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, second, NULL))
		_exit(1);
	pthread_exit(NULL);
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

/* The child forked, running BODY, its figures in OWN. */
static void spinner_fork(void (*body)(void))
{
	own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(own != MAP_FAILED);
	spinner = fork();
	assert_true(spinner >= 0);
	if (!spinner)
		body();
}

/* The spinning child started, both its threads running, and its run
 * clock: the clock, its pidfd in *PIDFD. */
static struct runclock *spinner_start(int *pidfd)
{
	struct runclock *rc;

	spinner_fork(child);
	while (!own[0] || !own[1]) /* both threads are running */
		sleep_ms(1);
	*pidfd = (int)syscall(SYS_pidfd_open, spinner, 0);
	assert_true(*pidfd >= 0);
	rc = runclock__open((int)spinner, *pidfd);
	assert_non_null(rc);
	return rc;
}

/* N reads of RC 3 ms apart, each within its reference's bounds: from
 * LAST (read between BEFORE and AFTER) on, it counts the reference's time
 * (slack aside) and no more; the three are moved on to the last read. */
static void reads_track(struct runclock *rc, int n, uint64_t *last, uint64_t *before, uint64_t *after)
{
	for (int i = 0; i < n; i++) {
		uint64_t v, b, a;

		sleep_ms(3);
		b = reference();
		v = runclock__read(rc);
		a = reference();
		assert_true(v >= *last);
		assert_true(v - *last + slack(b - *after) >= b - *after);
		assert_true(v - *last <= a - *before + slack(a - *before));
		*last = v;
		*before = b;
		*after = a;
	}
}

static void test_exact_reads(void **state)
{
	uint64_t first, last, before, after, kept;
	struct runclock *rc;
	int pidfd;

	rc = spinner_start(&pidfd);
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
	reads_track(rc, 10, &last, &before, &after);
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
	close(pidfd);
	munmap((void *)own, 4096);
}

/* perf events this process holds */
static int perf_fds(void)
{
	char path[64], link[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len > 0) {
			link[len] = 0;
			n += !strcmp(link, "anon_inode:[perf_event]");
		}
	}
	return n;
}

/* Asleep (between --budget's windows) it holds no perf event and goes on
 * from the exact count, never back; woken, a perf event a thread again,
 * and exact from there. */
static void test_sleep_wake(void **state)
{
	uint64_t asleep, last, before, after, v, went;
	struct runclock *rc;
	int pidfd;

	rc = spinner_start(&pidfd);
	assert_int_equal(perf_fds(), 2);
	sleep_ms(3);
	last = runclock__read(rc);
	runclock__sleep(rc);
	assert_int_equal(perf_fds(), 0);
	asleep = runclock__read(rc);
	assert_true(asleep >= last);
	for (int i = 0; i < 10; i++) {
		sleep_ms(5);
		v = runclock__read(rc);
		assert_true(v >= asleep);
		asleep = v;
	}
	assert_true(asleep > last); /* two threads spun 50 ms: the process clock moved */
	went = asleep - last;
	runclock__wake(rc);
	assert_int_equal(perf_fds(), 2);
	before = reference();
	last = runclock__read(rc);
	after = reference();
	assert_true(last >= asleep);
	reads_track(rc, 5, &last, &before, &after);
	print_message("perf events awake 2, asleep 0; asleep, the count went on %.2f ms in 50 ms\n",
		      (double)went / 1e6);
	runclock__free(rc);
	close(pidfd);
	munmap((void *)own, 4096);
}

/* PID's start time, read with its pidfd (into *PIDFD), and its /proc
 * directory opened by it: a process that runs, known as itself. */
static uint64_t known_running(pid_t pid, int *pidfd)
{
	uint64_t start;
	int dir;

	*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(*pidfd >= 0);
	start = proc_start_time((int)pid, *pidfd);
	assert_true(start > 0);
	dir = proc_dir_open((int)pid, start);
	assert_true(dir >= 0);
	close(dir);
	return start;
}

/* A process that is gone cannot be opened, though its pidfd was opened
 * while it lived: not even while its /proc directory is still there (a
 * zombie; once reaped, its PID may be another's). And it is known by its
 * start time, not by its PID alone. */
static void test_gone(void **state)
{
	int fds[2], status, pidfd;
	char c;
	siginfo_t info;
	uint64_t start;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[1]);
		_exit(read(fds[0], &c, 1) < 0);
	}
	start = known_running(pid, &pidfd);
	/* another process's start time: not ours, whatever its PID */
	assert_int_equal(proc_dir_open((int)pid, start + 1), -ESRCH);
	close(fds[1]);
	/* ended, not reaped: its /proc directory stays */
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	assert_int_equal(proc_dir_open((int)pid, start), -ESRCH);
	assert_int_equal(proc_start_time((int)pid, pidfd), 0);
	assert_null(runclock__open((int)pid, pidfd));
	waitpid(pid, &status, 0);
	assert_null(runclock__open((int)pid, pidfd));
	close(pidfd);
	close(fds[0]);
}

/* A process whose main thread ended (pthread_exit) runs on in its other
 * threads: known as itself and counted, not taken for gone though /proc
 * says Z of it (its main thread's state; field 20 counts 2 threads). */
static void test_main_thread_exited(void **state)
{
	uint64_t last, v, before, after;
	struct runclock *rc;
	char path[64], buf[512];
	int pidfd;
	FILE *f;

	spinner_fork(child_main_exits);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)spinner);
	for (int i = 0; i < 2000; i++) { /* its main thread gone, the other running */
		f = fopen(path, "re");
		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		if (strstr(buf, ") Z ") && own[1])
			break;
		sleep_ms(1);
	}
	assert_non_null(strstr(buf, ") Z "));
	assert_false(proc_stat_ended(buf));
	known_running(spinner, &pidfd);
	rc = runclock__open((int)spinner, pidfd);
	assert_non_null(rc);
	last = runclock__read(rc);
	before = own[1];
	sleep_ms(30);
	v = runclock__read(rc);
	after = own[1];
	assert_true(v > last);
	assert_true(v - last + slack(after - before) >= after - before);
	print_message("main thread exited (state Z, 2 threads): still its own, %.2f ms counted of %.2f ms run\n",
		      (double)(v - last) / 1e6, (double)(after - before) / 1e6);
	runclock__free(rc);
	close(pidfd);
	munmap((void *)own, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_exact_reads, kill_spinner),
		cmocka_unit_test_teardown(test_sleep_wake, kill_spinner),
		cmocka_unit_test(test_gone),
		cmocka_unit_test_teardown(test_main_thread_exited, kill_spinner),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
