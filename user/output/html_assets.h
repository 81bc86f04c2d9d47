/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTML report's and the diff page's own files, embedded at build time
 * (html_assets.S): user/output/html/report.html and diff.html are the
 * pages, with a line `<!-- memtrace:NAME -->` wherever a file of the same
 * folder goes (style.css, common.js, rss.js, report.js, diff.js) and where the C
 * side writes the page's data (`<!-- memtrace:data -->`, report_html.c).
 * Everything inline, so a page works offline and can be mailed as one file.
 * The scripts use no library: a step chart in SVG, the flame graph as
 * positioned divs, sortable tables, all built with DOM calls (textContent,
 * never innerHTML, since function names and paths come from the traced
 * program). A page marks its <html> element data-status="ok" (or "error:
 * ...", from window.onerror) and data-ready="1" when done, which the e2e
 * tests read. make test checks each script with node --check and the
 * style with a CSS parser (tests/golden/html_assets.sh).
 */
#ifndef MEMTRACE_HTML_ASSETS_H
#define MEMTRACE_HTML_ASSETS_H

extern const char html_report_html[];
extern const char html_diff_html[];
extern const char html_style_css[];
extern const char html_common_js[];
extern const char html_report_js[];
extern const char html_diff_js[];
extern const char html_rss_js[];

/* The embedded file of user/output/html/ called NAME (LEN bytes), or NULL. */
const char *html_asset(const char *name, size_t len);

#endif /* MEMTRACE_HTML_ASSETS_H */
