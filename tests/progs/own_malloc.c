// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * own_malloc: a program that defines malloc and free itself (passing them
 * on to glibc's), which the dynamic linker binds before any preloaded
 * library's: record --preload says it cannot preload it and records it
 * with uprobes (tests/e2e/preload.sh). 10 x malloc(48) from site_own,
 * all freed. On stdout: "own_malloc: done".
 */
#include <stdio.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void free(void *p)
{
	__libc_free(p);
}

__attribute__((noinline, noclone)) static void *site_own(void)
{
	return malloc(48);
}

int main(void)
{
	for (int i = 0; i < 10; i++)
		free(site_own());
	fputs("own_malloc: done\n", stdout);
	return 0;
}
