// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Three sites that allocate in known proportions, for --budget:
 *   site_small: 1 block of 100 bytes per round, freed at once (temporary)
 *   site_mid:   3 blocks of 200 bytes per round, freed at the end of the round
 *   site_keep:  6 blocks of 50 bytes per round, kept in a ring of 60000 (long-lived)
 * So calls are 1 : 3 : 6 and bytes 100 : 600 : 300, however long it runs.
 * Each round also does some work of its own (WORK iterations of a hash, 200
 * by default: about a microsecond), as a program does between allocations.
 *
 * usage: proportions SECONDS [ROUNDS_PER_SEC [BURST_AT_SEC [WORK [wait]]]]
 * ROUNDS_PER_SEC 0 (default): as fast as it can. BURST_AT_SEC: from then on,
 * as fast as it can (the controller's burst). Prints "rounds N" and, with a
 * "rounds per second R", and with BURST_AT_SEC "burst rounds N": the rounds
 * made from then on, which the bench compares traced and untraced. With
 * "wait" it first says "proportions: waiting for SIGUSR1" on stderr and
 * waits for it, so that a recorder attached with -p sees every round.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 60000

static void *volatile sink; /* every pointer escapes: nothing is elided */
static void *ring[RING];
static size_t ring_at;

__attribute__((noinline)) static void site_small(void)
{
	void *p = malloc(100);

	sink = p;
	free(p);
}

__attribute__((noinline)) static void site_mid(void **out)
{
	for (int i = 0; i < 3; i++) {
		out[i] = malloc(200);
		sink = out[i];
	}
}

__attribute__((noinline)) static void site_keep(void)
{
	for (int i = 0; i < 6; i++) {
		free(ring[ring_at]);
		ring[ring_at] = malloc(50);
		sink = ring[ring_at];
		ring_at = (ring_at + 1) % RING;
	}
}

static volatile uint64_t work_sink;

__attribute__((noinline)) static void work(int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)i) * 0x100000001b3ULL;
	work_sink = h;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;
	double rate = argc > 2 ? atof(argv[2]) : 0;
	double burst_at = argc > 3 ? atof(argv[3]) : -1;
	int iterations = argc > 4 ? atoi(argv[4]) : 200;
	double start, t;
	uint64_t rounds = 0, burst_rounds = 0;

	if (argc > 5 && !strcmp(argv[5], "wait")) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		if (write(2, "proportions: waiting for SIGUSR1\n", 33) < 0 || sigwait(&set, &sig))
			return 2;
	}
	start = t = now();

	while (t - start < seconds) {
		void *mid[3];

		work(iterations);
		site_small();
		site_mid(mid);
		site_keep();
		for (int i = 0; i < 3; i++)
			free(mid[i]);
		rounds++;
		if (burst_at >= 0 && t - start >= burst_at)
			burst_rounds++;
		if ((rounds & 63) == 0 || rate > 0)
			t = now();
		if (rate > 0 && !(burst_at >= 0 && t - start >= burst_at)) {
			double due = start + rounds / rate;

			if (due > t) {
				struct timespec ts = { (time_t)(due - t), (long)((due - t - (time_t)(due - t)) * 1e9) };

				nanosleep(&ts, NULL);
			}
		}
	}
	printf("rounds %llu\n", (unsigned long long)rounds);
	printf("rounds per second %.0f\n", rounds / (now() - start));
	if (burst_at >= 0)
		printf("burst rounds %llu\n", (unsigned long long)burst_rounds);
	return 0;
}
