// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A library dlopen'ed by dlopen_host after memtrace attached: its
 * allocations must be symbolized like any other, and its memtrace.h marks
 * found and attached. */
#include <stdlib.h>

#include "memtrace.h"

void *volatile plugin_keep[16];

__attribute__((noinline)) void plugin_work(int i)
{
	MEMTRACE_ZONE("plugin_zone"); /* marks in a library loaded after attach */

	plugin_keep[i & 15] = malloc(77); /* leaked on purpose: 77 bytes a call */
}
