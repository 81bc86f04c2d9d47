// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rss_read_resident on a real child process: the runs of a mapping whose
 * touched pages are known, exactly; and, while another child maps and
 * unmaps without pause, every snapshot is one the trace writer takes (in
 * address order, no overlap), which a walk raced by those changes could
 * break.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rss.h"
#include "trace_writer.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 64

/* A child that maps PAGES pages, writes pages 3-9 and 20-21, tells us
 * where (one pointer down the pipe) and waits to be killed. */
static pid_t known_child(uintptr_t *at)
{
	int fds[2];
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		long ps = sysconf(_SC_PAGESIZE);
		volatile char *m = mmap(NULL, PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uintptr_t a = (uintptr_t)m;

		if (m == MAP_FAILED)
			_exit(1);
		for (int i = 3; i < 10; i++)
			m[i * ps] = 1;
		m[20 * ps] = m[21 * ps] = 1;
		if (write(fds[1], &a, sizeof(a)) != sizeof(a))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], at, sizeof(*at)), sizeof(*at));
	close(fds[0]);
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static void test_known_runs(void **state)
{
	struct rss_resident res = { 0 };
	uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t at;
	pid_t pid = known_child(&at);
	const struct trace_vma *v = NULL;
	uint32_t run = 0;

	(void)state;
	assert_int_equal(rss_read_resident(pid, &res), 0);
	for (uint32_t i = 0; i < res.r.nvmas && !v; i++) {
		if (res.r.vmas[i].start <= at && at < res.r.vmas[i].end)
			v = &res.r.vmas[i];
		else
			run += res.r.vmas[i].nruns;
	}
	assert_non_null(v);
	assert_int_equal(v->kind, TRACE_VMA_ANON);
	assert_int_equal(v->nruns, 2);
	assert_int_equal(res.r.runs[run].start, at + 3 * ps);
	assert_int_equal(res.r.runs[run].end, at + 10 * ps);
	assert_int_equal(res.r.runs[run + 1].start, at + 20 * ps);
	assert_int_equal(res.r.runs[run + 1].end, at + 22 * ps);
	reap(pid);
	rss_resident_free(&res);
}

/* A child that maps, writes and unmaps regions of changing sizes without
 * a pause, so the maps change under every walk. */
static pid_t churning_child(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		long ps = sysconf(_SC_PAGESIZE);
		char *keep[16] = { 0 };

		for (unsigned n = 0;; n++) {
			unsigned slot = n % 16;
			size_t len = (1 + n % 7) * 8 * ps;

			if (keep[slot])
				munmap(keep[slot], (1 + (n - 16) % 7) * 8 * ps);
			keep[slot] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (keep[slot] == MAP_FAILED)
				_exit(1);
			for (size_t i = 0; i < len; i += 2 * ps)
				keep[slot][i] = 1;
		}
	}
	return pid;
}

static void test_churn_stays_in_order(void **state)
{
	struct trace_meta m = { .command_line = "test", .comm = "test", .kernel = "k", .hostname = "h" };
	struct trace_writer *w = trace_writer__open_discard(&m);
	struct rss_resident res = { 0 };
	pid_t pid = churning_child();
	int taken = 0;

	(void)state;
	assert_non_null(w);
	usleep(20 * 1000);
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rss_read_resident(pid, &res), 0);
		for (uint32_t j = 1; j < res.r.nvmas; j++)
			assert_true(res.r.vmas[j].start >= res.r.vmas[j - 1].end);
		res.r.ts = (uint64_t)i + 1;
		assert_int_equal(trace_writer__add_resident(w, &res.r), 0);
		taken += res.r.nvmas > 0;
	}
	assert_int_equal(taken, 200);
	reap(pid);
	trace_writer__abort(w);
	rss_resident_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_runs),
		cmocka_unit_test(test_churn_stays_in_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
