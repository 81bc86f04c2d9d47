// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rss_merged [HOLD_MS [STEP_MS]]: resident memory whose mappings the kernel merged,
 * with the program's own truth, for --rss's reconciliation
 * (tests/e2e/rss_reconcile.sh).
 *   1. 8000 blocks of 2000 bytes on the main heap, all touched, every other
 *      one freed: glibc holds the freed chunks resident;
 *   2. malloc(96 MiB), all touched: glibc mmaps it;
 *   3. mmap 64 MiB anonymous outside malloc, placed right below that block
 *      (MAP_FIXED_NOREPLACE, else wherever the kernel puts it, which is
 *      there too), all touched: the kernel merges the two into one mapping;
 *   4. munmap 16 MiB in the middle of its own mapping: a hole, 48 MiB of it
 *      left, 32 MiB still merged with malloc's block;
 *   5. madvise(MADV_DONTNEED) on 32 MiB inside the 96 MiB block: live, not
 *      resident any more.
 * Then it prints one line (write(2), nothing on the heap):
 *   rss_merged live=L live_resident=R freed=F outside=O merged=M anon_kb=K
 * L: the bytes asked for of the blocks still live; R: of them, on pages it
 * touched and did not give back; F: the chunks freed, malloc_usable_size +
 * 8 (glibc's chunk header) each; O: its own mapping's bytes still mapped,
 * all touched; M: 1 when /proc/self/maps shows one mapping from its own
 * pages past the hole to the end of malloc's block (what the test is
 * about); K: its RssAnon. It holds HOLD_MS (default 1500) with nothing
 * changing, so a resident snapshot comes after, and exits 0. With STEP_MS
 * (default 0) it also holds that long after each of steps 1 to 5, so that
 * resident snapshots (one at least every half second) come between them
 * (tests/e2e/rss_html.sh: the parts over time).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define SMALL_N 8000
#define SMALL 2000
#define BIG (96ul << 20)
#define OWN (64ul << 20)
#define HOLE (16ul << 20)    /* at OWN's 16 MiB */
#define DROPPED (32ul << 20) /* at BIG's 16 MiB */

static char *small[SMALL_N];
static char maps[1 << 16];

static long own_anon_kb(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *p;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "RssAnon:");
	return p ? strtol(p + 8, NULL, 10) : -1;
}

/* Whether one line of /proc/self/maps spans [START, END). */
static int one_mapping(uintptr_t start, uintptr_t end)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	while (len < sizeof(maps) - 1 && (n = read(fd, maps + len, sizeof(maps) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	maps[len] = 0;
	for (char *line = maps; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		unsigned long s, e;

		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s <= start && e >= end)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long hold_ms = argc > 1 ? atol(argv[1]) : 1500, step_ms = argc > 2 ? atol(argv[2]) : 0;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000 };
	struct timespec step = { step_ms / 1000, (step_ms % 1000) * 1000000 };
	size_t live = 0, freed = 0;
	uintptr_t chunk, chunk_end;
	char line[256], *big, *own;
	int len, merged;

	/* 4 KiB pages only, whatever the host's THP setting */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	for (int i = 0; i < SMALL_N; i++) {
		if (!(small[i] = malloc(SMALL)))
			return 1;
		memset(small[i], 1, SMALL);
	}
	for (int i = 0; i < SMALL_N; i++) {
		if (i % 2) {
			freed += malloc_usable_size(small[i]) + 8;
			free(small[i]);
		} else {
			live += SMALL;
		}
	}
	nanosleep(&step, NULL);
	big = malloc(BIG);
	if (!big)
		return 1;
	memset(big, 1, BIG);
	live += BIG;
	nanosleep(&step, NULL);
	/* glibc's mmapped chunk: its header on the page before, its usable
	 * size 16 bytes short of the pages it maps */
	chunk = (uintptr_t)big & ~(uintptr_t)4095;
	chunk_end = chunk + malloc_usable_size(big) + 16;
	own = mmap((void *)(chunk - OWN), OWN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		   -1, 0);
	if (own == MAP_FAILED)
		own = mmap(NULL, OWN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own == MAP_FAILED)
		return 1;
	memset(own, 1, OWN);
	nanosleep(&step, NULL);
	if (munmap(own + HOLE, HOLE))
		return 1;
	nanosleep(&step, NULL);
	if (madvise((char *)chunk + 4096 + (16ul << 20), DROPPED, MADV_DONTNEED))
		return 1;
	merged = one_mapping((uintptr_t)own + 2 * HOLE, chunk_end);
	len = snprintf(line, sizeof(line), "rss_merged live=%zu live_resident=%zu freed=%zu outside=%lu merged=%d anon_kb=%ld\n",
		       live, live - DROPPED, freed, OWN - HOLE, merged, own_anon_kb());
	if (write(1, line, (size_t)len) != len)
		return 1;
	nanosleep(&ts, NULL);
	return 0;
}
