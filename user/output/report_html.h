/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `memtrace report --html OUT`: one self-contained page (inline CSS and
 * script, nothing fetched, works offline) with memory over time, a flame
 * graph of allocated, leaked or peak bytes, and the site, leak, zone, frame,
 * pool and thread tables. The figures travel as one JSON document in a
 * <script type="application/json" id="memtrace-data"> element that the
 * page's script (user/output/html/, html_assets.h) renders. Leaf code: prints nothing.
 */
#ifndef MEMTRACE_REPORT_HTML_H
#define MEMTRACE_REPORT_HTML_H

#include "analysis.h"
#include "heap_series.h"
#include "view_cells.h"
#include <stdio.h>

struct json_out;
struct replay;

#define REPORT_HTML_POINTS 2000 /* most points of the memory chart */
#define REPORT_HTML_SITES 100   /* rows of the site and the leak tables */

/* The page for A (finished), S (finished: live bytes over time) and V
 * (the viewer's cells of the same pass) to F. 0, -ENOMEM, or -EIO if
 * writing to F failed. */
int report_html__write(FILE *f, struct analysis *a, const struct heap_series *s,
		       const struct view_cells *v);

/* JSON text to F inside a <script> element, "<" escaped so that nothing in
 * it can end the element. */
void report_html__put_json(FILE *f, const char *json, size_t len);

/* The page PAGE ("report.html" or "diff.html" of user/output/html/) to F,
 * its marks filled: the files they name, and the data WRITE_DATA(CTX)
 * renders (as JSON, rendered in memory first). 0, -ENOMEM, the error
 * WRITE_DATA returned, or -EIO if writing to F failed. */
int report_html__page(FILE *f, const char *page, int (*write_data)(FILE *, void *), void *ctx);

/* A's figures as the pages' scripts read them: allocations, allocated,
 * leaked allocations, leaked bytes, peak, temporary (numbers in order). */
void report_html__figures(struct json_out *j, const struct analysis_figures *f);

/* The viewer's data, key "view" (report_html_view.c). 0 or -ENOMEM. */
int report_html__view(struct json_out *j, struct replay *r, const struct analysis *a,
		      const struct view_cells *v);

#endif /* MEMTRACE_REPORT_HTML_H */
