/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `memtrace diff --html OUT BASE NEW`: one self-contained page (nothing
 * fetched) with a differential flame graph (growth and shrinkage in two
 * colours, with a legend) and the sites with their changes. Leaf code.
 */
#ifndef MEMTRACE_DIFF_HTML_H
#define MEMTRACE_DIFF_HTML_H

#include "analysis.h"
#include "diff.h"
#include <stdio.h>

/* The page for D, the diff of BASE and NEW (finished), to F. 0, -ENOMEM,
 * or -EIO if writing to F failed. */
int diff_html__write(FILE *f, const struct analysis *base, const struct analysis *new_,
		     const struct diff *d);

#endif /* MEMTRACE_DIFF_HTML_H */
