// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace diff [--json] [--top N] [--fail-on-growth=SIZE] BASE NEW
 *
 * Exit status: 0, or 1 when a trace cannot be read, 2 for bad options, 3
 * when --fail-on-growth's limit was passed (so CI can tell "it grew" from
 * "it broke").
 */
#include "analysis.h"
#include "commands.h"
#include "diff.h"
#include "diff_html.h"
#include "diff_print.h"
#include "html_file.h"
#include "trace_load.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_EXIT_GREW 3

struct diff_args {
	bool json;
	const char *html; /* write the HTML page there instead; NULL: no */
	unsigned int top;
	bool fail_on_growth;
	uint64_t growth_limit; /* bytes */
	const char *base;
	const char *new_;
};

#define DIFF_USAGE "usage: memtrace diff [--json | --html OUT] [--top N] [--fail-on-growth=SIZE] [--alloc-fn GLOB]... [--strict] [--symfs DIR] BASE NEW"

static void diff_usage(FILE *f)
{
	fprintf(f, "%s\n"
		   "  --json                 every site and total as {\"a\", \"b\", \"delta\"}\n"
		   "  --html OUT             write one self-contained HTML page (a differential\n"
		   "                         flame graph, the sites with their changes) to OUT,\n"
		   "                         which must not exist yet\n"
		   "  --top N                sites per list in the text output (default %d)\n"
		   "  --fail-on-growth=SIZE  exit 3 if total leaked or peak bytes grew by more\n"
		   "                         than SIZE (K, M, G suffixes: powers of 1024)\n"
		   "  --strict               a partial or damaged trace is an error, not a warning\n"
		   "  --symfs DIR            the recording machine's files under DIR, for frames a\n"
		   "                         trace does not name (matched by build-id)\n"
		   "  -h, --help             show this help\n"
		   "Sites match by function, file, line and module name, not by address; they\n"
		   "are listed by growth of allocated bytes, largest first.\n"
		   "Exit status: 0; 1 a trace could not be read; 2 bad options; 3 grew too much.\n",
		DIFF_USAGE, DIFF_DEFAULT_TOP);
}

/* 0 to go on, 1 when --help was served, -EINVAL after printing why not. */
static int diff_parse_args(int argc, char **argv, struct diff_args *args)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "html", required_argument, NULL, 'H' },
		{ "top", required_argument, NULL, 't' },
		{ "fail-on-growth", required_argument, NULL, 'g' },
		TRACE_LOAD_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(args, 0, sizeof(*args));
	args->top = DIFF_DEFAULT_TOP;
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
			if (parse_top(optarg, &args->top))
				return -EINVAL;
			break;
		case 'g':
			if (parse_size(optarg, &args->growth_limit)) {
				fprintf(stderr, "memtrace: failed to parse --fail-on-growth '%s': not a "
						"size; pass e.g. --fail-on-growth=64K\n", optarg);
				return -EINVAL;
			}
			args->fail_on_growth = true;
			break;
		case 'h':
			diff_usage(stdout);
			return 1;
		default:
			return trace_load_unknown_option("diff", argv);
		}
	}
	if (args->json && args->html) {
		fprintf(stderr, "memtrace: failed to start diff: --json and --html are two "
				"outputs; pass one of them\n");
		return -EINVAL;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s\n", DIFF_USAGE); /* not two files */
		return -EINVAL;
	}
	args->base = argv[optind];
	args->new_ = argv[optind + 1];
	if (!strcmp(args->base, "-") && !strcmp(args->new_, "-")) {
		fprintf(stderr, "memtrace: failed to start diff: only one of BASE and NEW can be - (stdin)\n");
		return -EINVAL;
	}
	return 0;
}

/* A new analysis of the trace at PATH; NULL after printing why not. */
static struct analysis *diff_load(const char *path)
{
	struct analysis *a = analysis__new();

	if (!a) {
		fprintf(stderr, "memtrace: failed to read %s: %s; free some memory\n", path,
			strerror(errno));
		return NULL;
	}
	if (trace_load(path, a)) {
		analysis__free(a);
		return NULL;
	}
	return a;
}

/* The page, rendered in memory first so that a failure leaves no half
 * file, then saved. 0 or -errno after printing why. */
struct diff_page {
	const struct analysis *base, *new_;
	const struct diff *d;
};

static int diff_page_write(FILE *f, void *ctx)
{
	struct diff_page *p = ctx;

	return diff_html__write(f, p->base, p->new_, p->d);
}

static int diff_write_html(const struct diff_args *args, const struct analysis *base,
			   const struct analysis *new_, const struct diff *d)
{
	struct diff_page p = { base, new_, d };
	char *data;
	size_t len;
	int err;

	err = render_in_memory("the HTML diff", diff_page_write, &p, &data, &len);
	if (err)
		return err;
	err = html_file_save(args->html, data, len);
	free(data);
	return err;
}

static int diff_print(const struct diff_args *args, const struct diff *d)
{
	int err;

	if (args->json)
		err = diff_print__json(stdout, d);
	else
		err = diff_print__text(stdout, d, args->base, args->new_, args->top);
	if (err)
		fprintf(stderr, "memtrace: failed to write the diff: %s; check where stdout goes\n",
			strerror(-err));
	return err;
}

/* Growth of total leaked or peak bytes beyond the limit, in one line. True
 * if either grew too much. */
static bool diff_check_growth(const struct diff_args *args, const struct diff *d)
{
	int64_t leaked = diff_delta(d->a.leaked_bytes, d->b.leaked_bytes);
	int64_t peak = diff_delta(d->a.peak_bytes, d->b.peak_bytes);
	int64_t limit = args->growth_limit > INT64_MAX ? INT64_MAX : (int64_t)args->growth_limit;
	bool leaked_over = leaked > limit, peak_over = peak > limit;

	if (!args->fail_on_growth || (!leaked_over && !peak_over))
		return false;
	fprintf(stderr, "memtrace: grew by more than %" PRIu64 " bytes (--fail-on-growth):", args->growth_limit);
	if (leaked_over)
		fprintf(stderr, " leaked bytes +%" PRId64 " (%" PRIu64 " -> %" PRIu64 ")%s", leaked,
			d->a.leaked_bytes, d->b.leaked_bytes, peak_over ? "," : "");
	if (peak_over)
		fprintf(stderr, " peak bytes +%" PRId64 " (%" PRIu64 " -> %" PRIu64 ")", peak,
			d->a.peak_bytes, d->b.peak_bytes);
	fputc('\n', stderr);
	return true;
}

int cmd_diff(int argc, char **argv)
{
	struct analysis *base = NULL, *new_ = NULL;
	struct diff_args args;
	struct diff d;
	int err, status = 1;

	err = diff_parse_args(argc, argv, &args);
	if (err)
		return err > 0 ? MEMTRACE_EXIT_OK : MEMTRACE_EXIT_USAGE;

	base = diff_load(args.base);
	if (!base)
		return 1;
	new_ = diff_load(args.new_);
	if (!new_)
		goto out_base;
	err = diff__analyses(&d, base, new_);
	if (err) {
		fprintf(stderr, "memtrace: failed to compare the traces: %s; free some memory\n",
			strerror(-err));
		goto out_new;
	}
	if (args.html)
		err = diff_write_html(&args, base, new_, &d);
	else
		err = diff_print(&args, &d);
	if (!err)
		status = diff_check_growth(&args, &d) ? DIFF_EXIT_GREW : 0;

	diff__free(&d);
out_new:
	analysis__free(new_);
out_base:
	analysis__free(base);
	return status;
}
