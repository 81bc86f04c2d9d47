// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTML report (report_html.h): the page's shell, style and script are
 * files of their own (user/output/html/, embedded: html_assets.h); this
 * file writes the data they render and puts the page together.
 */
#include "report_html.h"
#include "report.h"
#include "export.h"
#include "json_out.h"
#include "marks.h"
#include "html_assets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Flat [t0, bytes0, t1, bytes1, ...]: a third of the size of objects. */
static void data_series(struct json_out *j, const struct heap_series *s)
{
	const struct heap_point *p;
	size_t n;

	p = heap_series__points(s, &n);
	json_out__key(j, "series");
	json_out__begin_array(j, true);
	for (size_t i = 0; i < n; i++) {
		json_out__u64(j, p[i].t_ns);
		json_out__u64(j, p[i].bytes);
	}
	json_out__end_array(j);
}

/* A site as report --json writes it, without its stacks. */
static void data_site(struct json_out *j, const struct analysis_site *s)
{
	json_out__begin_object(j, true);
	report_json__site_keys(j, s->name, s->function, s->file, s->line, s->module);
	report_json__figures(j, &s->figures);
	json_out__end_object(j);
}

static int leak_cmp(const void *x, const void *y)
{
	const struct analysis_site *a = *(const struct analysis_site *const *)x;
	const struct analysis_site *b = *(const struct analysis_site *const *)y;

	if (a->figures.leaked_bytes != b->figures.leaked_bytes)
		return a->figures.leaked_bytes > b->figures.leaked_bytes ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* The top sites by allocated bytes (the analysis's order) and, apart, the
 * top leaking ones: a leak can come from a site that allocates little. */
static int data_sites(struct json_out *j, const struct analysis *a)
{
	const struct analysis_site *sites, **leaks;
	size_t nsites, nleaks = 0;

	sites = analysis__sites(a, &nsites);
	json_out__key_u64(j, "nsites", nsites);
	json_out__key(j, "sites");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < nsites && i < REPORT_HTML_SITES; i++)
		data_site(j, &sites[i]);
	json_out__end_array(j);

	leaks = calloc(nsites ? nsites : 1, sizeof(*leaks));
	if (!leaks)
		return -ENOMEM;
	for (size_t i = 0; i < nsites; i++) {
		if (sites[i].figures.leaked_bytes)
			leaks[nleaks++] = &sites[i];
	}
	qsort(leaks, nleaks, sizeof(*leaks), leak_cmp);
	json_out__key(j, "leaks");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < nleaks && i < REPORT_HTML_SITES; i++)
		data_site(j, leaks[i]);
	json_out__end_array(j);
	free(leaks);
	return 0;
}

/* The count and the frames that allocate most, with their sites: a trace
 * of a game holds thousands of frames, which no table shows usefully. */
static void data_frames(struct json_out *j, const struct marks *m)
{
	const struct marks_totals *t = marks__totals(m);
	const struct marks_top_frame *top;
	size_t n;

	top = marks__top_frames(m, &n);
	json_out__key(j, "frames");
	json_out__begin_object(j, false);
	json_out__key_u64(j, "count", t->frame_marks);
	json_out__key_u64(j, "tail_allocations", t->tail_allocations);
	json_out__key_u64(j, "tail_allocated_bytes", t->tail_allocated_bytes);
	json_out__key(j, "top");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_out__key_u64(j, "index", top[i].index);
		json_out__key_string(j, "name", top[i].frame->name);
		json_out__key_u64(j, "end_ns", top[i].frame->end_ns);
		json_out__key_u64(j, "duration_ns", top[i].frame->duration_ns);
		json_out__key_u64(j, "allocations", top[i].frame->allocations);
		json_out__key_u64(j, "allocated_bytes", top[i].frame->allocated_bytes);
		json_out__key(j, "sites");
		json_out__begin_array(j, true);
		for (size_t k = 0; k < top[i].nsites; k++) {
			json_out__begin_object(j, true);
			json_out__key_string(j, "name", top[i].sites[k].site->name);
			json_out__key_u64(j, "allocations", top[i].sites[k].allocations);
			json_out__key_u64(j, "allocated_bytes", top[i].sites[k].allocated_bytes);
			json_out__end_object(j);
		}
		json_out__end_array(j);
		json_out__end_object(j);
	}
	json_out__end_array(j);
	json_out__end_object(j);
}

static int data_write(FILE *f, struct analysis *a, const struct heap_series *s,
		      const struct view_cells *v)
{
	const struct marks *m = analysis__marks(a);
	struct json_out j;
	int err;

	json_out__init(&j, f);
	json_out__begin_object(&j, false);
	report_json__trace(&j, analysis__trace(a));
	report_json__last_minute(&j, a, 5);
	report_json__totals(&j, analysis__totals(a));
	report_json__rss(&j, analysis__trace(a));
	data_series(&j, s);
	err = data_sites(&j, a);
	if (!err)
		err = report_html__view(&j, analysis__replay(a), a, v);
	if (err)
		return err;
	report_json__zones(&j, m);
	data_frames(&j, m);
	report_json__pools(&j, m);
	report_json__threads(&j, m);
	json_out__end_object(&j);
	return json_out__finish(&j);
}

/* JSON inside <script> ends at the first "</script" whatever the quotes
 * say, and "<!--" changes how it is parsed: '<' only ever occurs inside
 * JSON strings, where \u003c means the same. */
void report_html__put_json(FILE *f, const char *json, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (json[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(json[i], f);
	}
}

const char *html_asset(const char *name, size_t len)
{
	static const struct {
		const char *name;
		const char *text;
	} assets[] = {
		{ "report.html", html_report_html }, { "diff.html", html_diff_html },
		{ "style.css", html_style_css },     { "common.js", html_common_js },
		{ "report.js", html_report_js },     { "diff.js", html_diff_js },
		{ "rss.js", html_rss_js },
	};

	for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++)
		if (strlen(assets[i].name) == len && !memcmp(assets[i].name, name, len))
			return assets[i].text;
	return NULL;
}

#define MARK_OPEN "<!-- memtrace:"
#define MARK_CLOSE " -->"

/* LINE (LEN bytes, without its newline) is a mark: the name it holds, or NULL. */
static const char *mark_name(const char *line, size_t len, size_t *name_len)
{
	size_t open = strlen(MARK_OPEN), close = strlen(MARK_CLOSE);

	if (len <= open + close || memcmp(line, MARK_OPEN, open) || memcmp(line + len - close, MARK_CLOSE, close))
		return NULL;
	*name_len = len - open - close;
	return line + open;
}

int report_html__page(FILE *f, const char *page, int (*write_data)(FILE *, void *), void *ctx)
{
	const char *tpl = html_asset(page, strlen(page));
	char *json = NULL;
	size_t len = 0;
	FILE *mem;
	int err;

	if (!tpl)
		return -ENOENT;
	mem = open_memstream(&json, &len);
	if (!mem)
		return -ENOMEM;
	err = write_data(mem, ctx);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (err) {
		free(json);
		return err == -EIO ? -ENOMEM : err; /* a memory stream fails only for want of memory */
	}
	/* the template line by line: a mark line becomes its file, or the data */
	for (const char *line = tpl; *line;) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line), name_len;
		const char *name = mark_name(line, n, &name_len), *asset;

		if (name && name_len == 4 && !memcmp(name, "data", 4)) {
			fputs("<script type=\"application/json\" id=\"memtrace-data\">\n", f);
			report_html__put_json(f, json, len);
			fputs("</script>\n", f);
		} else if (name && (asset = html_asset(name, name_len))) {
			fputs(asset, f);
		} else {
			fwrite(line, 1, n, f);
			if (nl)
				fputc('\n', f);
		}
		line += n + (nl != NULL);
	}
	free(json);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

struct report_page {
	struct analysis *a;
	const struct heap_series *s;
	const struct view_cells *v;
};

static int report_page_data(FILE *f, void *ctx)
{
	struct report_page *p = ctx;

	return data_write(f, p->a, p->s, p->v);
}

int report_html__write(FILE *f, struct analysis *a, const struct heap_series *s,
		       const struct view_cells *v)
{
	struct report_page p = { a, s, v };

	return report_html__page(f, "report.html", report_page_data, &p);
}
