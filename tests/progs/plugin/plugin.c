// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A library dlopen'ed by dlopen_host after memtrace attached: its
 * allocations must be symbolized like any other. */
#include <stdlib.h>

void *volatile plugin_keep[16];

__attribute__((noinline)) void plugin_work(int i)
{
	plugin_keep[i & 15] = malloc(77); /* leaked on purpose: 77 bytes a call */
}
