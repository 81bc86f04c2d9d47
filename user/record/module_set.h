/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_MODULE_SET_H
#define MEMTRACE_MODULE_SET_H

#include "procmaps.h"
#include "trace.h"
#include <stddef.h>

/*
 * Every executable mapping the target has had during the recording: what
 * was mapped at attach, and what dlopen added later, so late-loaded code
 * symbolizes too. Mappings are never removed (a library unloaded before the
 * end still explains the addresses it left in stacks).
 */
struct module_set {
	struct trace_module *mods; /* paths owned */
	size_t nr;
	size_t cap;
};

/* Add the mappings of PM not already in SET; FN is called for each new one
 * (e.g. to write it to the trace). 0 or -errno. */
int module_set__merge(struct module_set *set, const struct procmaps *pm,
		      int (*fn)(void *ctx, const struct trace_module *m), void *ctx);

void module_set__free(struct module_set *set);

#endif /* MEMTRACE_MODULE_SET_H */
