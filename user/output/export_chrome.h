/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `memtrace export --format chrome`: the Chrome trace event format (JSON
 * object form) that ui.perfetto.dev and chrome://tracing open. Leaf code:
 * it prints nothing; the command runs the reader pass that feeds it.
 *
 * What it holds, timestamps in microseconds after the trace's start:
 * - metadata: process_name (the target's comm) and thread_name per named
 *   thread (the analysis's, last name wins);
 * - a counter "heap" (ph "C", args.bytes): live heap bytes over time,
 *   thinned as heap_series.h says; its maximum is the report's peak_bytes;
 * - one complete slice (ph "X", cat "zone") per zone entry, on its thread,
 *   nested as marks.h nests zones, with the allocations made while it was
 *   the innermost open zone in args; zones open at the end close there;
 * - one instant event (ph "i", s "p", cat "frame") per frame mark, named by
 *   its label or "frame", args.frame its index.
 */
#ifndef MEMTRACE_EXPORT_CHROME_H
#define MEMTRACE_EXPORT_CHROME_H

#include "analysis.h"
#include <stddef.h>
#include <stdio.h>

#define EXPORT_CHROME_POINTS 2000 /* most points of the heap counter */

struct export_chrome;
struct replay;

/* Start the document on F and subscribe to R, the engine of the analysis
 * the trace is loaded into; zones and frames are written as the pass
 * meets them. NULL with errno set. */
struct export_chrome *export_chrome__new(FILE *f, struct replay *r);
void export_chrome__free(struct export_chrome *c);

/* After the pass and analysis__finish(A): the names, the heap counter and
 * the end of the document. 0, -ENOMEM or -EIO. */
int export_chrome__finish(struct export_chrome *c, const struct analysis *a);

#endif /* MEMTRACE_EXPORT_CHROME_H */
