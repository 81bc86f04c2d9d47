// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* memtrace report [--json | --html OUT] [--top N] FILE */
#include "analysis.h"
#include "commands.h"
#include "export.h"
#include "heap_series.h"
#include "html_file.h"
#include "report.h"
#include "report_html.h"
#include "trace_load.h"
#include "trace_reader.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct report_args {
	bool json;
	const char *html; /* write the HTML page there instead; NULL: no */
	struct report_options opts;
	bool top_given; /* --top: the JSON lists that many sites too */
	const char *path;
};

#define REPORT_USAGE "usage: memtrace report [--json | --html OUT] [--top N] [--alloc-fn GLOB]... [--strict] [--symfs DIR] FILE"

static void report_usage(FILE *f)
{
	fprintf(f, "%s\n"
		   "  --json       print the sites as JSON (the shape scripts rely on): every\n"
		   "               site, or the first N with --top N\n"
		   "  --html OUT   write one self-contained HTML page to OUT, which must not\n"
		   "               exist yet: memory over time, flame graph (top-down, bottom-up),\n"
		   "               sites and sizes for a chosen thread, zone, time range, search\n"
		   "  --top N      entries per ranked list (text default %d; JSON default all)\n"
		   "  --strict     a partial or damaged trace is an error, not a warning\n"
		   "  --symfs DIR  the recording machine's files under DIR, for frames the trace\n"
		   "               does not name (matched by build-id)\n"
		   "  -h, --help   show this help\n",
		REPORT_USAGE, REPORT_DEFAULT_TOP);
}

/* 0 to go on, 1 when --help was served, -EINVAL after printing why not. */
static int report_parse_args(int argc, char **argv, struct report_args *args)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "html", required_argument, NULL, 'H' },
		{ "top", required_argument, NULL, 't' },
		TRACE_LOAD_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(args, 0, sizeof(*args));
	args->opts.top = REPORT_DEFAULT_TOP;
	while ((c = trace_load_getopt(argc, argv, "h", longopts)) != -1) {
		if (c == TRACE_LOAD_BAD_OPTION)
			return -EINVAL;
		switch (c) {
		case 'j':
			args->json = true;
			break;
		case 'H':
			args->html = optarg;
			break;
		case 't':
			if (parse_top(optarg, &args->opts.top))
				return -EINVAL;
			args->top_given = true;
			break;
		case 'h':
			report_usage(stdout);
			return 1;
		default:
			return trace_load_unknown_option("report", argv);
		}
	}
	if (args->json && args->html) {
		fprintf(stderr, "memtrace: failed to start report: --json and --html are two "
				"reports; pass one of them\n");
		return -EINVAL;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s\n", REPORT_USAGE); /* no file, or more than one */
		return -EINVAL;
	}
	args->path = argv[optind];
	return 0;
}

static void report_out_of_memory(const char *path)
{
	fprintf(stderr, "memtrace: failed to read %s: %s; free some memory or use a machine with more\n",
		path, strerror(ENOMEM));
}

static int report_print(const struct report_args *args, const struct analysis *a)
{
	int err;

	if (args->json)
		err = report_json__write(stdout, a, args->top_given ? args->opts.top : 0);
	else
		err = report_text__write(stdout, a, &args->opts);
	if (err)
		fprintf(stderr, "memtrace: failed to write the report: %s; check where stdout goes\n",
			strerror(-err));
	return err;
}

struct report_page {
	struct analysis *a;
	const struct heap_series *s;
	const struct view_cells *v;
};

static int report_page_write(FILE *f, void *ctx)
{
	struct report_page *p = ctx;

	return report_html__write(f, p->a, p->s, p->v);
}

/* The page, rendered in memory first so that a failure leaves no half
 * file. Malloc'ed into *DATA, *LEN; 0 or -errno after printing why. */
static int report_render_html(struct analysis *a, const struct heap_series *s,
			      const struct view_cells *v, char **data, size_t *len)
{
	struct report_page p = { a, s, v };

	return render_in_memory("the HTML report", report_page_write, &p, data, len);
}

/* S and V, fed by the same pass as A, settled and drawn into the page. */
static int report_write_html(const struct report_args *args, struct analysis *a,
			     struct heap_series *s, const struct view_cells *v)
{
	char *data;
	size_t len;
	int err;

	err = heap_series__finish(s, analysis__trace(a)->duration_ns);
	if (err) {
		report_out_of_memory(args->path);
		return err;
	}
	err = report_render_html(a, s, v, &data, &len);
	if (err)
		return err;
	err = html_file_save(args->html, data, len);
	free(data);
	return err;
}

int report_html_of(const char *path, bool hide_command, char **data, size_t *len, int *partial)
{
	struct analysis *a = analysis__new();
	struct heap_series *s = NULL;
	struct view_cells *v = NULL;
	int err = -ENOMEM;

	*partial = 0;
	if (!a || !(s = heap_series__new(analysis__replay(a), REPORT_HTML_POINTS)) ||
	    !(v = view_cells__new(analysis__replay(a)))) {
		report_out_of_memory(path);
		goto out;
	}
	err = trace_load(path, a);
	if (!err && hide_command) /* the page is made from the analysis' own record of the trace */
		((struct analysis_trace *)analysis__trace(a))->command = NULL;
	if (!err) {
		*partial = analysis__trace(a)->partial;
		err = heap_series__finish(s, analysis__trace(a)->duration_ns);
		if (err)
			report_out_of_memory(path);
	}
	if (!err)
		err = report_render_html(a, s, v, data, len);
out:
	view_cells__free(v);
	heap_series__free(s);
	analysis__free(a);
	return err;
}

int cmd_report(int argc, char **argv)
{
	struct report_args args;
	struct heap_series *s = NULL;
	struct view_cells *v = NULL;
	struct analysis *a;
	int err;

	err = report_parse_args(argc, argv, &args);
	if (err)
		return err > 0 ? MEMTRACE_EXIT_OK : MEMTRACE_EXIT_USAGE;

	a = analysis__new();
	if (!a) {
		report_out_of_memory(args.path);
		return 1;
	}
	/* Live bytes over time and the viewer's cells, which the analysis does
	 * not keep, observe the same pass. */
	if (args.html && (!(s = heap_series__new(analysis__replay(a), REPORT_HTML_POINTS)) ||
			  !(v = view_cells__new(analysis__replay(a))))) {
		report_out_of_memory(args.path);
		err = -ENOMEM;
		goto out_free;
	}
	err = trace_load(args.path, a);
	if (err)
		goto out_free;
	if (args.html)
		err = report_write_html(&args, a, s, v);
	else
		err = report_print(&args, a);

out_free:
	view_cells__free(v);
	heap_series__free(s);
	analysis__free(a);
	return err ? 1 : 0;
}
