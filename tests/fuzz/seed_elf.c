// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The small library tests/fuzz/gen_elf_corpus.py builds and then damages:
 * what record and the symbolizer read in every module, in a few KiB. An
 * allocator's names with a versioned alias (symbol lookup and its ranks),
 * memtrace.h marks with a pool and a semaphore (.note.stapsdt,
 * .probes), an inlined call (DWARF inline frames), functions with and
 * without a frame pointer (.eh_frame rows of several kinds), a build-id.
 * It is never run.
 */
#include "memtrace.h"

#include <stddef.h>

static char arena[4096];
static size_t used;

static inline __attribute__((always_inline)) size_t round_up(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

__attribute__((noinline)) void *seed_alloc(size_t n)
{
	char *p;

	n = round_up(n);
	if (n > sizeof(arena) - used)
		return NULL;
	p = arena + used;
	used += n;
	MEMTRACE_ALLOC("seed", p, n);
	return p;
}

void *malloc(size_t n)
{
	return seed_alloc(n);
}

__attribute__((symver("free@@SEED_1"))) void free_new(void *p)
{
	MEMTRACE_FREE("seed", p);
}

/* An older version of free beside the default one: the lookup must take free@@. */
__attribute__((symver("free@SEED_0"))) void free_old(void *p)
{
	(void)p;
}

__attribute__((optimize("omit-frame-pointer"))) int seed_frame(int n)
{
	int sum = 0;

	MEMTRACE_ZONE_BEGIN("seed zone");
	for (int i = 0; i < n; i++) {
		MEMTRACE_FRAME_MARK();
		sum += (int)(size_t)malloc((size_t)i);
	}
	MEMTRACE_ZONE_END("seed zone");
	return sum;
}
