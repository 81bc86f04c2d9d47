// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pool_new: a program that replaces operator new and delete with its own:
 * blocks of up to 64 bytes come from a static pool, larger ones from
 * malloc. Its operator new calls malloc on some paths only, so it is no
 * forwarder and must keep its own probe (tests/e2e/placement.sh):
 *
 *   site_pool_small()  5 x new of 16 bytes (from the pool)   80 bytes, all deleted
 *   site_large()       3 x new of 1000 bytes (from malloc) 3000 bytes, all deleted
 */
#include <cstdio>
#include <cstdlib>
#include <new>

static char pool[64 * 8];
static size_t pool_used;

void *operator new(size_t n)
{
	void *p;

	if (n <= 64 && pool_used + 64 <= sizeof(pool)) {
		p = pool + pool_used;
		pool_used += 64;
		return p;
	}
	p = std::malloc(n);
	if (!p)
		throw std::bad_alloc();
	return p;
}

void operator delete(void *p) noexcept
{
	if (p >= static_cast<void *>(pool) && p < static_cast<void *>(pool + sizeof(pool)))
		return; /* pool blocks are never reused: the pool is only a test */
	std::free(p);
}

void operator delete(void *p, size_t) noexcept
{
	operator delete(p);
}

/* The blocks must really be made: each pointer escapes through this. */
static void *volatile sink;

__attribute__((noinline)) static char *site_pool_small()
{
	return static_cast<char *>(operator new(16));
}

__attribute__((noinline)) static char *site_large()
{
	return static_cast<char *>(operator new(1000));
}

int main()
{
	char *small[5], *large[3];

	for (int i = 0; i < 5; i++)
		sink = small[i] = site_pool_small();
	for (int i = 0; i < 3; i++)
		sink = large[i] = site_large();
	for (int i = 0; i < 5; i++)
		operator delete(small[i]);
	for (int i = 0; i < 3; i++)
		operator delete(large[i]);
	std::puts("pool_new: done");
	return 0;
}
