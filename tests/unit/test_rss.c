// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rss_read_resident on a real child process: the runs of a mapping whose
 * touched pages are known, exactly; and, while another child grows and
 * shrinks its mappings without a pause, every snapshot is one the trace
 * writer takes (in address order, no overlap): a walk that read the maps
 * line by line as they changed made one the writer refused, and the
 * recording stopped.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rss.h"
#include "trace_writer.h"

#include <signal.h>
#include <sys/prctl.h>
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
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed check leaves no child behind */
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

/* A child whose maps change without a pause, the way glibc grows a
 * thread's arena: 64 reservations of 256 pages, each a writable prefix
 * (its pages written) and the rest PROT_NONE, the prefixes grown a page
 * at a time in turn with mprotect and shrunk back when full. Its maps run
 * past the 4 KiB the kernel gives one read, so a walk reads them in
 * pieces; a prefix grown between two pieces comes back whole, starting
 * before where the last piece ended. */
#define REGIONS 64
#define REGION_PAGES 256

static pid_t churning_child(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		char *reg[REGIONS];
		size_t len[REGIONS];

		for (int i = 0; i < REGIONS; i++) {
			reg[i] = mmap(NULL, REGION_PAGES * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (reg[i] == MAP_FAILED)
				_exit(1);
			len[i] = 0;
		}
		for (unsigned n = 0;; n++) {
			int i = (int)(n % REGIONS);

			if (len[i] == REGION_PAGES - 1) {
				mprotect(reg[i], REGION_PAGES * ps, PROT_NONE);
				madvise(reg[i], REGION_PAGES * ps, MADV_DONTNEED);
				len[i] = 0;
			}
			len[i]++;
			if (mprotect(reg[i], len[i] * ps, PROT_READ | PROT_WRITE))
				_exit(1);
			reg[i][(len[i] - 1) * ps] = 1;
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
