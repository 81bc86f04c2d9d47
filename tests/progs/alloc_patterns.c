// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * alloc_patterns: every C allocation entry point glibc exports, each called
 * from its own noinline site function, in a fixed order with known leaks,
 * known temporaries and one unambiguous peak. tests/e2e/record_cmd.sh and
 * record_pid.sh assert the figures below exactly.
 *
 * usage: alloc_patterns [wait] [STATUS]
 *   wait    make K=4 allocations of 512 bytes (site_before_attach), block
 *           until SIGUSR1, free them (4 unmatched frees when traced with -p),
 *           then run the pattern
 *   STATUS  exit with this status (default 0)
 * On stdout it writes exactly one line, "alloc_patterns: done".
 *
 * Nothing else allocates during the measured part: no stdio, no locale, no
 * threads; glibc 2.36 makes no malloc call of its own before main or at exit
 * in this program (checked with uprobes on every libc allocator entry).
 *
 * Expected figures (sizes in bytes; "temp" = temporary allocations):
 *
 *   site                  calls                       allocs  bytes    leaked  leaked_b temp peak_b
 *   site_malloc_100       malloc(100) x10              10      1000     1       100      0    100
 *   site_calloc_10x32     calloc(10, 32) x5            5       1600     1       320      0    320
 *   site_realloc_grow     realloc(100B->400) x5        5       2000     0       0        0    0
 *   site_realloc_shrink   realloc(400B->40) x5         5       200      0       0        0    0
 *   site_realloc_null     realloc(NULL, 64) x3         3       192      1       64       0    64
 *   site_reallocarray     reallocarray(NULL, 8, 16),   2       328      0       0        0    0
 *                         reallocarray(40B, 20, 10)
 *   site_posix_memalign   posix_memalign(64, 200) x2   2       400      1       200      0    200
 *   site_aligned_alloc    aligned_alloc(64, 256) x2    2       512      0       0        0    0
 *   site_memalign         memalign(32, 100) x2         2       200      0       0        0    0
 *   site_valloc           valloc(1000) x1              1       1000     0       0        0    0
 *   site_pvalloc          pvalloc(4096) x1             1       4096     1       4096     0    4096
 *   site_temporary        malloc(48) x7, each freed    7       336      0       0        7    0
 *                         before the next allocation
 *   site_peak_block       malloc(1 MiB) x8             8       8388608  0       0        0    8388608
 *   site_leak_24          malloc(24) x3                3       72       3       72       0    72
 *
 *   totals: allocations 56, frees 48 (realloc counts a free of its old
 *   pointer; free(NULL) is called once and is not an event), allocated_bytes
 *   8400544, peak_bytes 8393460 (= 4780 leaked before the peak phase + 8 MiB
 *   + 72), leaked_allocations 8, leaked_bytes 4852, temporary_allocations 7,
 *   unmatched_frees 0 (4 with "wait" under -p), dropped_events 0.
 *
 * Every block other than site_temporary's is freed only after the thread made
 * a later allocation, so whether a realloc is seen as free-then-allocate or
 * allocate-then-free, nothing else is temporary.
 */
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define MIB (1024 * 1024)

/* volatile so the compiler can neither drop an allocation nor fuse a pair */
static void *volatile a[10], *volatile b[5], *volatile c[5], *volatile cz[5];
static void *volatile n[3], *volatile ra[2], *volatile pm[2], *volatile aa[2];
static void *volatile ma[2], *volatile va, *volatile pv, *volatile pk[8];
static void *volatile lk[3], *volatile pre[4];
/* NULL the compiler cannot see: it folds realloc(NULL, n) into malloc(n) and
 * drops free(NULL) otherwise */
static void *volatile null_ptr;

NOINLINE void *site_before_attach(void) { return malloc(512); }
NOINLINE void *site_malloc_100(void) { return malloc(100); }
NOINLINE void *site_calloc_10x32(void) { return calloc(10, 32); }
NOINLINE void *site_realloc_grow(void *p) { return realloc(p, 400); }
NOINLINE void *site_realloc_shrink(void *p) { return realloc(p, 40); }
NOINLINE void *site_realloc_null(void) { return realloc(null_ptr, 64); }
NOINLINE void *site_reallocarray(void *p, size_t nmemb, size_t size)
{
	return reallocarray(p, nmemb, size);
}
NOINLINE void *site_posix_memalign(void)
{
	void *p = NULL;

	return posix_memalign(&p, 64, 200) == 0 ? p : NULL;
}
NOINLINE void *site_aligned_alloc(void) { return aligned_alloc(64, 256); }
NOINLINE void *site_memalign(void) { return memalign(32, 100); }
NOINLINE void *site_valloc(void) { return valloc(1000); }
NOINLINE void *site_pvalloc(void) { return pvalloc(4096); }
NOINLINE void *site_temporary(void) { return malloc(48); }
NOINLINE void *site_peak_block(void) { return malloc(MIB); }
NOINLINE void *site_leak_24(void) { return malloc(24); }

static void die(const char *msg)
{
	if (write(2, msg, strlen(msg)) < 0)
		_exit(2);
	_exit(2);
}

static void *check(void *p)
{
	if (!p)
		die("alloc_patterns: allocation failed\n");
	return p;
}

/* Phase A: one or more calls of every entry point; 11528 bytes live at most. */
NOINLINE void phase_allocate(void)
{
	int i;

	for (i = 0; i < 10; i++)
		a[i] = check(site_malloc_100());
	for (i = 0; i < 5; i++)
		cz[i] = check(site_calloc_10x32());
	for (i = 0; i < 5; i++)
		b[i] = check(site_realloc_grow(a[i])); /* frees a[0..4] */
	for (i = 0; i < 5; i++)
		c[i] = check(site_realloc_shrink(b[i])); /* frees b[0..4] */
	for (i = 0; i < 3; i++)
		n[i] = check(site_realloc_null());
	ra[0] = check(site_reallocarray(null_ptr, 8, 16));
	ra[1] = check(site_reallocarray(c[0], 20, 10)); /* frees c[0] */
	for (i = 0; i < 2; i++)
		pm[i] = check(site_posix_memalign());
	for (i = 0; i < 2; i++)
		aa[i] = check(site_aligned_alloc());
	for (i = 0; i < 2; i++)
		ma[i] = check(site_memalign());
	va = check(site_valloc());
	pv = check(site_pvalloc()); /* leaked */
}

/* Phase B: free all of phase A but a[9], cz[4], n[2], pm[1] and pv (4780 B). */
NOINLINE void phase_free(void)
{
	int i;

	for (i = 5; i < 9; i++)
		free(a[i]);
	for (i = 0; i < 4; i++)
		free(cz[i]);
	for (i = 1; i < 5; i++)
		free(c[i]);
	for (i = 0; i < 2; i++)
		free(n[i]);
	free(ra[0]);
	free(ra[1]);
	free(pm[0]);
	free(aa[0]);
	free(aa[1]);
	free(ma[0]);
	free(ma[1]);
	free(va);
	free(null_ptr); /* not an event */
}

/* Phase C: seven allocations each freed before the next one. */
NOINLINE void phase_temporary(void)
{
	int i;

	for (i = 0; i < 7; i++) {
		void *p = check(site_temporary());
		free(p);
	}
}

/*
 * Phase D: the peak. 8 MiB on top of the 4780 bytes still live, then the
 * three leaks (so the last block is not temporary), then the 8 MiB go.
 */
NOINLINE void phase_peak(void)
{
	int i;

	for (i = 0; i < 8; i++)
		pk[i] = check(site_peak_block());
	for (i = 0; i < 3; i++)
		lk[i] = check(site_leak_24());
	for (i = 0; i < 8; i++)
		free(pk[i]);
}

NOINLINE void run_pattern(void)
{
	phase_allocate();
	phase_free();
	phase_temporary();
	phase_peak();
}

/* Allocate before the tracer attaches, wait for SIGUSR1, free: unmatched. */
NOINLINE void wait_for_tracer(void)
{
	sigset_t set;
	int sig, i;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < 4; i++)
		pre[i] = check(site_before_attach());
	if (write(2, "alloc_patterns: waiting for SIGUSR1\n", 36) < 0)
		_exit(2);
	if (sigwait(&set, &sig) != 0)
		die("alloc_patterns: sigwait failed\n");
	for (i = 0; i < 4; i++)
		free(pre[i]);
}

int main(int argc, char **argv)
{
	static const char done[] = "alloc_patterns: done\n";
	int status = 0, i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "wait") == 0)
			wait_for_tracer();
		else
			status = atoi(argv[i]);
	}
	run_pattern();
	if (write(1, done, sizeof(done) - 1) < 0)
		return 2;
	return status;
}
