// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tinyalloc: a minimal malloc replacement as a shared library, so the e2e
 * tests can check that memtrace probes the allocator a target actually
 * resolves rather than assuming glibc's. A program linked against it (and
 * ld.so, and libc's own callers of malloc) get every block from here; glibc's
 * malloc is never called.
 *
 * A lock-free bump allocator over one lazily mmap'ed 256 MiB arena
 * (MAP_NORESERVE: only touched pages cost memory). Each block has a 16-byte
 * header holding its size, so realloc can copy. free is a no-op: blocks are
 * never reused, which also keeps calloc's memory zero without a memset.
 * Only what a test program needs: malloc, free, calloc, realloc.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_SIZE ((size_t)256 << 20)
#define ALIGN 16
#define HDR 16 /* keeps every block 16-byte aligned */

static _Atomic(char *) arena;
static atomic_size_t top;

static char *arena_get(void)
{
	char *a = atomic_load_explicit(&arena, memory_order_acquire);
	char *expected = NULL;

	if (a)
		return a;
	a = mmap(NULL, ARENA_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED)
		return NULL;
	if (!atomic_compare_exchange_strong(&arena, &expected, a)) {
		munmap(a, ARENA_SIZE); /* another thread won the race */
		return expected;
	}
	return a;
}

static void *tiny_alloc(size_t size)
{
	char *a = arena_get();
	size_t need, off;

	if (!a || size > ARENA_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	need = HDR + ((size + ALIGN - 1) & ~(size_t)(ALIGN - 1));
	off = atomic_fetch_add_explicit(&top, need, memory_order_relaxed);
	if (off + need > ARENA_SIZE) {
		errno = ENOMEM;
		return NULL;
	}
	*(size_t *)(a + off) = size;
	return a + off + HDR;
}

static int tiny_owns(const void *p)
{
	const char *a = atomic_load_explicit(&arena, memory_order_acquire);

	return a && (const char *)p >= a + HDR && (const char *)p < a + ARENA_SIZE;
}

void *malloc(size_t size)
{
	return tiny_alloc(size);
}

void free(void *p)
{
	(void)p; /* bump allocator: nothing to give back */
}

void *calloc(size_t nmemb, size_t size)
{
	size_t total;

	if (__builtin_mul_overflow(nmemb, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return tiny_alloc(total); /* fresh arena memory is zero */
}

void *realloc(void *p, size_t size)
{
	size_t old;
	void *q;

	if (!p)
		return tiny_alloc(size);
	if (!tiny_owns(p)) {
		/* a block from ld.so's startup allocator: its size is unknown */
		errno = ENOMEM;
		return NULL;
	}
	old = *(size_t *)((char *)p - HDR);
	q = tiny_alloc(size);
	if (q)
		memcpy(q, p, old < size ? old : size);
	return q;
}
