// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * heap_workload: a deterministic workload for comparing memtrace with
 * heaptrack (tests/e2e/heaptrack.sh): 200000 allocations of varied sizes
 * and one clear peak.
 *
 *   phase build: 100000 blocks kept live, sizes 16..527 from a fixed LCG, one
 *                in 8 by calloc (site_build_node / site_build_array);
 *                the peak is reached at its end, 27.1 MB live
 *   phase free:  all of them freed, in a scattered order
 *   phase churn: 100000 short-lived blocks (site_churn), each freed 64
 *                allocations later, sizes 8..263
 *
 * Exact figures (checked with an LD_PRELOAD counting shim and heaptrack):
 * allocations 200000 (87500 site_build_node, 12500 site_build_array, 100000
 * site_churn), frees 200000, allocated_bytes 40683789, leaked 0, peak_bytes
 * 27117795, temporary 2 (the last block of each phase). heaptrack reports one
 * allocation more (200001) and 72704 bytes more peak: the emergency pool of
 * the libstdc++ its preload library pulls in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define NBUILD 100000
#define NCHURN 100000
#define RING 64

static void *volatile nodes[NBUILD];
static void *volatile ring[RING];
static uint32_t lcg_state = 12345;

static uint32_t lcg(void)
{
	lcg_state = lcg_state * 1103515245u + 12345u;
	return lcg_state >> 8;
}

NOINLINE void *site_build_node(size_t size) { return malloc(size); }
NOINLINE void *site_build_array(size_t n) { return calloc(n, 8); }
NOINLINE void *site_churn(size_t size) { return malloc(size); }

static void *check(void *p)
{
	if (!p) {
		if (write(2, "heap_workload: out of memory\n", 29) < 0)
			_exit(2);
		_exit(2);
	}
	return p;
}

NOINLINE void phase_build(void)
{
	uint32_t i;

	for (i = 0; i < NBUILD; i++) {
		size_t size = 16 + lcg() % 512;

		if (i % 8 == 0)
			nodes[i] = check(site_build_array(size / 8));
		else
			nodes[i] = check(site_build_node(size));
	}
}

NOINLINE void phase_free(void)
{
	uint32_t i;

	/* 7919 is prime and coprime with NBUILD: visits every slot once */
	for (i = 0; i < NBUILD; i++)
		free(nodes[(i * 7919u) % NBUILD]);
}

NOINLINE void phase_churn(void)
{
	uint32_t i;

	for (i = 0; i < NCHURN; i++) {
		uint32_t slot = i % RING;

		if (ring[slot])
			free(ring[slot]);
		ring[slot] = check(site_churn(8 + lcg() % 256));
	}
	for (i = 0; i < RING; i++)
		free(ring[i]);
}

int main(void)
{
	static const char done[] = "heap_workload: done\n";

	phase_build();
	phase_free();
	phase_churn();
	if (write(1, done, sizeof(done) - 1) < 0)
		return 2;
	return 0;
}
