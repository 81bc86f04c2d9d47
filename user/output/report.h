/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The two renderings of a finished analysis that `memtrace report` prints. */
#ifndef MEMTRACE_REPORT_H
#define MEMTRACE_REPORT_H

#include "analysis.h"
#include <stdio.h>

#define REPORT_DEFAULT_TOP 10

struct report_options {
	unsigned int top; /* entries per ranked list in the text report */
};

/* Human-readable report: warnings first, summary, ranked site lists.
 * 0, or -EIO if writing to F failed. */
int report_text__write(FILE *f, const struct analysis *a, const struct report_options *opts);

/* The JSON document of docs/contract.md: the first TOP sites (0: every
 * site), their stacks and frames each written once, in tables.
 * 0, -ENOMEM, or -EIO if writing to F failed. */
int report_json__write(FILE *f, const struct analysis *a, unsigned int top);

/* Its parts, each a "key": value member of the object J is in; the HTML
 * report embeds them too. */
struct json_out;
struct marks;
void report_json__trace(struct json_out *j, const struct analysis_trace *t);
void report_json__totals(struct json_out *j, const struct analysis_totals *t);
/* Key "rss": --rss's samples and rollups (docs/contract.md), or null. */
void report_json__rss(struct json_out *j, const struct analysis_trace *t);
/* KEY: one --rss sample as an object (time_ns, resident_bytes, anon_bytes,
 * file_bytes, shmem_bytes, heap_bytes), on one line. */
void report_json__rss_point(struct json_out *j, const char *key, const struct analysis_rss_point *p);
/* Key "last_minute": a trace that ended in an OOM kill or a crash, what
 * grew in its last minute (the first TOP sites, 0: all; docs/contract.md),
 * or null. */
void report_json__last_minute(struct json_out *j, const struct analysis *a, unsigned int top);
void report_json__zones(struct json_out *j, const struct marks *m);
void report_json__pools(struct json_out *j, const struct marks *m);
void report_json__threads(struct json_out *j, const struct marks *m);
/* The figures' keys (allocations ... temporary_allocations). */
void report_json__figures(struct json_out *j, const struct analysis_figures *f);
/* A site's identity keys (name, function, file, line, module). */
/* glibc's name of mallopt parameter PARAM (M_ARENA_MAX, ...), NULL if unknown. */
const char *report_mallopt_name(int64_t param);
void report_json__site_keys(struct json_out *j, const char *name, const char *function,
			    const char *file, uint32_t line, const char *module);

#endif /* MEMTRACE_REPORT_H */
