/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `memtrace diff`'s outputs. Leaf code: 0 or -EIO, nothing on stderr. */
#ifndef MEMTRACE_DIFF_PRINT_H
#define MEMTRACE_DIFF_PRINT_H

#include "diff.h"
#include <stdio.h>

#define DIFF_DEFAULT_TOP 10

/* {"totals": {METRIC: {"a", "b", "delta"}, ...}, "sites": [{"name",
 * "function", "file", "line", "module", METRIC: {"a", "b", "delta"}, ...}]},
 * sites in diff.h's order of growth (docs/contract.md, "diff --json"). */
int diff_print__json(FILE *f, const struct diff *d);

/* The totals and the TOP sites that grew most and shrank most, with signed
 * changes and percentages; BASE and NEW name the traces. */
int diff_print__text(FILE *f, const struct diff *d, const char *base, const char *new_,
		     unsigned int top);

#endif /* MEMTRACE_DIFF_PRINT_H */
