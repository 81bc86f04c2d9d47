// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * glibc_probes: fires the probes glibc's allocator carries where the C
 * library is built with them (provider libc: memory_arena_new,
 * memory_heap_more, memory_sbrk_less, ...; Debian 12's is not), with
 * sys/sdt.h, as glibc's own LIBC_PROBE does, so that memtrace --rss reads
 * them from a program it can be tested on (tests/e2e/glibc_probes.sh). The
 * arguments are what glibc passes, some through a structure in memory (as
 * glibc's h->size), some 4-byte signed ints (mallopt's), so the notes hold
 * register, memory and 32-bit forms. Known numbers, printed at the end:
 *   arenas made 3 (2200 bytes each, by new_arena_for_thread), taken
 *   again 3 (2 memory_arena_reuse, 1 memory_arena_reuse_free_list);
 *   non-main heaps: 2 made (135168 bytes each), grown 3 times by 65536,
 *   shrunk once by 131072, one unmapped at 200704 bytes;
 *   the main heap: grown 4 times by 135168, trimmed once by 65536;
 *   mallopt(M_ARENA_MAX, 2) once; 2 retries (malloc's and calloc's).
 * Each probe fires once per call, the program's own allocations apart.
 * "glibc_probes wait" first prints "glibc_probes waiting" and fires only
 * after a SIGUSR1 (memtrace -p attached by then).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>

#define ARENA_BYTES 2200
#define HEAP_BYTES 135168
#define HEAP_STEP 65536

struct heap {
	void *arena;
	size_t size;
};

struct arena {
	char space[ARENA_BYTES];
};

static struct arena arenas[3];
static struct heap heaps[2];
static void *volatile sink;

__attribute__((noinline)) static void new_arena_for_thread(struct arena *a, size_t size)
{
	STAP_PROBE2(libc, memory_arena_new, a, size);
	sink = a;
}

__attribute__((noinline)) static void reuse_arena(struct arena *a, struct arena *avoid)
{
	STAP_PROBE2(libc, memory_arena_reuse, a, avoid);
}

__attribute__((noinline)) static void reuse_free_arena(struct arena *a)
{
	STAP_PROBE1(libc, memory_arena_reuse_free_list, a);
}

/* The size from the structure, as glibc's probes take h->size. */
__attribute__((noinline)) static void heap_new(struct heap *h, size_t size)
{
	h->size = size;
	STAP_PROBE2(libc, memory_heap_new, h, h->size);
}

__attribute__((noinline)) static void heap_grow(struct heap *h, long diff)
{
	h->size += diff;
	if (diff > 0)
		STAP_PROBE2(libc, memory_heap_more, h, h->size);
	else
		STAP_PROBE2(libc, memory_heap_less, h, h->size);
}

__attribute__((noinline)) static void heap_free(struct heap *h)
{
	STAP_PROBE2(libc, memory_heap_free, h, h->size);
	h->size = 0;
}

__attribute__((noinline)) static void sbrk_more(char *brk, size_t size)
{
	STAP_PROBE2(libc, memory_sbrk_more, brk, size);
}

__attribute__((noinline)) static void sbrk_less(char *brk, size_t extra)
{
	STAP_PROBE2(libc, memory_sbrk_less, brk, extra);
}

/* mallopt's arguments are ints: 4-byte, signed (M_ARENA_MAX is -8). */
__attribute__((noinline)) static void set_option(int param_number, int value)
{
	STAP_PROBE2(libc, memory_mallopt, param_number, value);
}

__attribute__((noinline)) static void retry(size_t bytes, int calloc_too)
{
	if (calloc_too)
		STAP_PROBE1(libc, memory_calloc_retry, bytes);
	else
		STAP_PROBE1(libc, memory_malloc_retry, bytes);
}

int main(int argc, char **argv)
{
	static char fake_brk[4 * HEAP_BYTES];

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("glibc_probes waiting\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}

	for (int i = 0; i < 3; i++)
		new_arena_for_thread(&arenas[i], ARENA_BYTES);
	reuse_arena(&arenas[0], &arenas[1]);
	reuse_arena(&arenas[1], &arenas[0]);
	reuse_free_arena(&arenas[2]);
	heap_new(&heaps[0], HEAP_BYTES);
	heap_new(&heaps[1], HEAP_BYTES);
	heap_grow(&heaps[0], HEAP_STEP);
	heap_grow(&heaps[0], HEAP_STEP);
	heap_grow(&heaps[1], HEAP_STEP);
	heap_grow(&heaps[0], -2 * HEAP_STEP);
	heap_free(&heaps[1]);
	for (int i = 0; i < 4; i++)
		sbrk_more(fake_brk + i * HEAP_BYTES, HEAP_BYTES);
	sbrk_less(fake_brk + 3 * HEAP_BYTES + HEAP_STEP, HEAP_STEP);
	set_option(-8, 2);
	retry(1000, 0);
	retry(1000, 1);
	sink = malloc(100);
	free(sink);
	printf("glibc_probes arenas_new=3 arenas_reused=3 heaps_new=2 heap_grown_bytes=%d heap_shrunk_bytes=%d "
	       "heap_freed_bytes=%d sbrk_more_bytes=%d sbrk_less_bytes=%d mallopt=M_ARENA_MAX,2 retries=2\n",
	       3 * HEAP_STEP, 2 * HEAP_STEP, HEAP_BYTES + HEAP_STEP, 4 * HEAP_BYTES, HEAP_STEP);
	return 0;
}
