// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libcountalloc.so: a program's own malloc interposer, as a user would put
 * in LD_PRELOAD before running memtrace: it counts malloc and free calls
 * and passes them on (dlsym(RTLD_NEXT)), and says its counts at exit on
 * stderr ("countalloc: N mallocs, N frees"). tests/e2e/preload.sh: memtrace
 * --preload keeps it, and both see every call.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static unsigned long mallocs, frees;

void *malloc(size_t n)
{
	if (!next_malloc)
		next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	__atomic_fetch_add(&mallocs, 1, __ATOMIC_RELAXED);
	return next_malloc(n);
}

void free(void *p)
{
	if (!next_free)
		next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	if (p)
		__atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
	next_free(p);
}

__attribute__((destructor)) static void say(void)
{
	fprintf(stderr, "countalloc: %lu mallocs, %lu frees\n", mallocs, frees);
}
