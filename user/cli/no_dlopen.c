// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libdw dlopen()s libdebuginfod when a module has no local debug info. In a
 * static memtrace that would load a shared library built against whatever
 * glibc the host has, and with DEBUGINFOD_URLS set it would fetch from the
 * network in the middle of a production recording. record symbolizes from
 * what is on the host (and /usr/lib/debug), so the link routes dlopen here
 * (-Wl,--wrap=dlopen) and nothing is ever loaded. report, diff and export
 * reach debuginfod on request through its client program instead
 * (user/symbols/debuginfod.c says why).
 */
#include <stddef.h>

void *__wrap_dlopen(const char *file, int mode);

void *__wrap_dlopen(const char *file, int mode)
{
	(void)file;
	(void)mode;
	return NULL;
}
