// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// link: -lm
/*
 * Sites whose allocations --budget must estimate, in no fixed order, and
 * the program's own count of each, printed at the end as the truth. A round
 * of the loop does WORK iterations of a hash (2000 by default, about 1.5 us
 * here), as a program does between allocations, and is the program's clock:
 *   site_steady: 128 bytes, freed at once, every round
 *   site_phase:  160 bytes a round, freed at once, only in "on" phases of
 *                20000 to 80000 rounds (off as long)
 *   site_burst:  bursts of BURST_N blocks of 512 bytes (1500: a millisecond
 *                or two), each freed at once after BURST_WORK iterations of the
 *                hash (1000), with exponential gaps of mean GAP rounds (3000)
 *   site_rare:   one block of 1000 bytes every 2500 to 10000 rounds, kept until
 *                the next (about 0.03% of the bytes: below what is checked)
 *   site_large:  one block of 64 MiB (glibc maps it on its own: past its mmap
 *                threshold) at a random moment of the run's middle by the clock,
 *                its first and last pages written, freed at another
 *
 * usage: budget_truth SECONDS [SEED [WORK [GAP [BURST_N [BURST_WORK]]]]]
 * SEED 0 (default): from the clock. Prints "seed N", "rounds N", then per
 * site "site NAME calls N bytes B", then "large BYTES usable U" (U: what
 * malloc_usable_size said of the block).
 */
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LARGE (64u << 20)

enum { STEADY, PHASE, BURSTY, RARE, LARGE_SITE, NSITES };
static const char *const names[NSITES] = { "site_steady", "site_phase", "site_burst", "site_rare", "site_large" };
static uint64_t calls[NSITES], bytes[NSITES];

static void *volatile sink; /* every pointer escapes: nothing is elided */

/* malloc called from the site's own function (its stack's first frame), counted */
#define counted(site, size) count_block((site), (size), malloc(size))

static void *count_block(int site, size_t size, void *p)
{
	if (!p) {
		perror("malloc");
		exit(1);
	}
	calls[site]++;
	bytes[site] += size;
	sink = p;
	return p;
}

static volatile uint64_t work_sink;

__attribute__((noinline)) static void work(int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)i) * 0x100000001b3ULL;
	work_sink = h;
}

__attribute__((noinline)) static void site_steady(void)
{
	free(counted(STEADY, 128));
}

__attribute__((noinline)) static void *site_phase(void)
{
	return counted(PHASE, 160);
}

static int burst_n = 1500, burst_work = 1000;

__attribute__((noinline)) static void site_burst(void)
{
	for (int i = 0; i < burst_n; i++) {
		free(counted(BURSTY, 512));
		work(burst_work);
	}
}

__attribute__((noinline)) static void *site_rare(void)
{
	return counted(RARE, 1000);
}

__attribute__((noinline)) static char *site_large(void)
{
	char *p = counted(LARGE_SITE, LARGE);

	p[0] = 1;
	p[LARGE - 1] = 1;
	return p;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng;

static double uniform(void) /* [0, 1) */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double)((rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static double exponential(double mean)
{
	double u = uniform();

	return -mean * log(1 - u);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	int iterations = argc > 3 ? atoi(argv[3]) : 2000;
	double burst_gap = argc > 4 ? atof(argv[4]) : 3000;
	double start = now(), t = start, large_at, large_free_at;
	uint64_t round = 0, next_phase, next_burst, next_rare;
	void *rare = NULL;
	char *large = NULL;
	size_t usable = 0;
	int on = 0;

	if (argc > 5)
		burst_n = atoi(argv[5]);
	if (argc > 6)
		burst_work = atoi(argv[6]);
	if (!seed)
		seed = (uint64_t)(start * 1e9) ^ ((uint64_t)getpid() << 32);
	rng = seed | 1;
	/* Paced by its own rounds, not the clock: the probes slow the program
	 * in a window, and what the clock paced would come more often per unit
	 * of its work there (docs/budget.md: a window stands for the target's
	 * work). The large block alone goes by the clock: it comes once. */
	next_phase = 20000 + (uint64_t)(60000 * uniform());
	next_burst = (uint64_t)exponential(burst_gap);
	next_rare = 2500 + (uint64_t)(7500 * uniform());
	large_at = start + seconds * (0.2 + 0.3 * uniform());
	large_free_at = large_at + seconds * (0.1 + 0.3 * uniform());
	while (t - start < seconds) {
		work(iterations);
		site_steady();
		if (on)
			free(site_phase());
		if ((++round & 7) == 0)
			t = now();
		if (round >= next_phase) {
			on = !on;
			next_phase = round + 20000 + (uint64_t)(60000 * uniform());
		}
		if (round >= next_burst) {
			site_burst();
			next_burst = round + (uint64_t)exponential(burst_gap);
		}
		if (round >= next_rare) {
			free(rare);
			rare = site_rare();
			next_rare = round + 2500 + (uint64_t)(7500 * uniform());
		}
		if (!large && !usable && t >= large_at) {
			large = site_large();
			usable = malloc_usable_size(large);
		}
		if (large && t >= large_free_at) {
			free(large);
			large = NULL;
		}
	}
	free(large);
	free(rare);
	printf("seed %llu\n", (unsigned long long)seed);
	printf("rounds %llu\n", (unsigned long long)round);
	for (int i = 0; i < NSITES; i++)
		printf("site %s calls %llu bytes %llu\n", names[i], (unsigned long long)calls[i],
		       (unsigned long long)bytes[i]);
	printf("large %u usable %zu\n", LARGE, usable);
	return 0;
}
