// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A library dlopen'ed after attach that carries its own allocator
 * (tests/progs/tinyalloc linked in, -Bsymbolic-functions so its own calls
 * bind to it, not to libc): each plugin_work call makes one malloc(33) there,
 * leaked. memtrace must probe the allocator of a library that appears late.
 */
#include <stdlib.h>

void *volatile plugalloc_keep[16];

__attribute__((noinline)) void plugin_work(int i)
{
	plugalloc_keep[i & 15] = malloc(33);
}
