/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What makes stacks one allocation site (analysis.h's "Site" rule), for the
 * report's sites and the live view's alike: stacks with figures and
 * resolved frames in, sites ranked by allocated bytes out.
 */
#ifndef MEMTRACE_SITES_H
#define MEMTRACE_SITES_H

#include "analysis.h"

struct arena;

/* Group the N stacks BY (reordered) into sites, ranked by allocated bytes
 * (ties: more calls, then name), each site's stacks likewise (ties: stack
 * id); names made up for unnamed sites come from ARENA. *OUT (free with
 * sites__free) and *NOUT; 0 or -ENOMEM. */
int sites__group(struct arena *arena, const struct analysis_stack **by, size_t n,
		 struct analysis_site **out, size_t *nout);
void sites__free(struct analysis_site *sites, size_t n);

#endif /* MEMTRACE_SITES_H */
