// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rss_known [HOLD_MS]: resident memory with known parts, for --rss
 * (tests/e2e/rss.sh).
 *   1. malloc(64 MiB), of which only the first 16 MiB are touched: 64 MiB
 *      of live heap, 16 MiB of it resident;
 *   2. mmap 32 MiB anonymous, outside malloc, all touched;
 *   3. reads its own RssAnon and prints one line (write(2), no stdio
 *      buffer on the heap):
 *        rss_known heap=67108864 touched=16777216 mapped=33554432 anon_kb=N
 *   4. holds HOLD_MS (default 600) with nothing changing, then frees both
 *      and exits 0.
 * Its only heap block is the 64 MiB one: the live heap while it holds is
 * exactly 67108864 bytes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define HEAP (64u << 20)
#define TOUCHED (16u << 20)
#define MAPPED (32u << 20)

static char *volatile sink;

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

int main(int argc, char **argv)
{
	long hold_ms = argc > 1 ? atol(argv[1]) : 600;
	struct timespec ts = { hold_ms / 1000, (hold_ms % 1000) * 1000000 };
	char line[256];
	char *heap, *map;
	int len;

	/* 4 KiB pages only, whatever the host's THP setting: one write fault a page */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	heap = malloc(HEAP);

	if (!heap)
		return 1;
	sink = heap;
	for (size_t i = 0; i < TOUCHED; i += 4096)
		heap[i] = 1;
	map = mmap(NULL, MAPPED, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < MAPPED; i += 4096)
		map[i] = 1;
	len = snprintf(line, sizeof(line), "rss_known heap=%u touched=%u mapped=%u anon_kb=%ld\n", HEAP, TOUCHED,
		       MAPPED, own_anon_kb());
	if (write(1, line, (size_t)len) != len)
		return 1;
	nanosleep(&ts, NULL);
	munmap(map, MAPPED);
	free(heap);
	return 0;
}
