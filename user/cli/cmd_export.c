// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* memtrace export --format pprof|folded|chrome [--metric M] [-o OUT] FILE */
#include "analysis.h"
#include "commands.h"
#include "html_file.h"
#include "export.h"
#include "export_chrome.h"
#include "live_sites.h"
#include "protobuf.h"
#include "replay.h"
#include "trace_load.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct export_args {
	const struct export_format *format;
	enum export_metric metric;
	bool metric_given;
	const char *output; /* NULL: the format's default; "-": stdout */
	const char *path;
	/* pprof: samples by stack, thread and zone, from the same pass */
	struct live_sites *live;
	/* chrome: the export rides on the analysis's one pass */
	struct export_chrome *chrome;
	FILE *chrome_f;
	char *chrome_data;
	size_t chrome_len;
};

/* The export, rendered in memory before the output file exists, so a
 * failure leaves no half-written file behind. */
struct export_content {
	void *data;
	size_t len;
	bool gzip;
};

struct export_format {
	const char *name;
	const char *suffix; /* default output: FILE + suffix; NULL: stdout */
	/* Before the pass, subscribe to the analysis's engine (may be NULL):
	 * 0, or -errno after printing why. */
	int (*prepare)(struct export_args *args, struct analysis *a);
	/* 0, or -errno after printing why */
	int (*render)(const struct export_args *args, const struct analysis *a,
		      struct export_content *out);
};

static int export_render_pprof(const struct export_args *args, const struct analysis *a,
			       struct export_content *out);
static int export_render_folded(const struct export_args *args, const struct analysis *a,
				struct export_content *out);
static int export_prepare_pprof(struct export_args *args, struct analysis *a);
static int export_prepare_chrome(struct export_args *args, struct analysis *a);
static int export_render_chrome(const struct export_args *args, const struct analysis *a,
				struct export_content *out);

static const struct export_format formats[] = {
	{ "pprof", ".pb.gz", export_prepare_pprof, export_render_pprof },
	{ "folded", NULL, NULL, export_render_folded },
	{ "chrome", NULL, export_prepare_chrome, export_render_chrome },
};

static void export_usage(FILE *f)
{
	fprintf(f, "usage: memtrace export --format pprof|folded|chrome [--metric M] [-o OUT] FILE\n"
		   "  --format pprof   gzipped profile.proto heap profile (go tool pprof, Pyroscope,\n"
		   "                   Parca, speedscope, Perfetto); OUT defaults to FILE.pb.gz\n"
		   "  --format folded  one line per stack, outermost frame first, for flamegraph.pl\n"
		   "                   and speedscope; OUT defaults to stdout\n"
		   "  --format chrome  Chrome trace event JSON (ui.perfetto.dev, chrome://tracing):\n"
		   "                   heap counter, zones, frame marks, thread names; OUT\n"
		   "                   defaults to stdout\n"
		   "  --metric M       what a folded line counts (default allocated):\n"
		   "                   %s\n"
		   "  -o OUT           write OUT, which must not exist yet; - for stdout\n"
		   "  --strict         a partial or damaged trace is an error, not a warning\n"
		   "  --symfs DIR      the recording machine's files under DIR, for frames the\n"
		   "                   trace does not name (matched by build-id)\n"
		   "  -h, --help       show this help\n",
		export_metric_names);
}

static const struct export_format *export_find_format(const char *name)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (!strcmp(name, formats[i].name))
			return &formats[i];
	}
	return NULL;
}

/* What parsing found wrong, after the options were read; NULL if nothing. */
static const char *export_check_args(int argc, char **argv, const struct export_args *args)
{
	if (!args->format)
		return "--format is required; usage: memtrace export --format pprof|folded|chrome [-o OUT] FILE";
	if (args->metric_given && strcmp(args->format->name, "folded"))
		return "--metric applies to --format folded only (pprof carries every metric)";
	if (argc - optind != 1)
		return "it takes exactly one trace file; usage: memtrace export --format pprof|folded|chrome [-o OUT] FILE";
	if (!strcmp(argv[optind], "-") && args->format->suffix && !args->output)
		return "the trace comes from stdin (-), so there is no FILE to name the output after; give -o OUT";
	return NULL;
}

/* 0 to go on, 1 when --help was served, -EINVAL after printing why not. */
static int export_parse_args(int argc, char **argv, struct export_args *args)
{
	static const struct option longopts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "metric", required_argument, NULL, 'm' },
		{ "output", required_argument, NULL, 'o' },
		TRACE_LOAD_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *problem;
	int c;

	memset(args, 0, sizeof(*args));
	while ((c = trace_load_getopt(argc, argv, "f:o:h", longopts)) != -1) {
		if (c == TRACE_LOAD_BAD_OPTION)
			return -EINVAL;
		switch (c) {
		case 'f':
			args->format = export_find_format(optarg);
			if (!args->format) {
				fprintf(stderr, "memtrace: failed to parse --format '%s': the formats are "
						"pprof, folded and chrome\n", optarg);
				return -EINVAL;
			}
			break;
		case 'm':
			if (export_metric__parse(optarg, &args->metric)) {
				fprintf(stderr, "memtrace: failed to parse --metric '%s': the metrics are "
						"%s\n", optarg, export_metric_names);
				return -EINVAL;
			}
			args->metric_given = true;
			break;
		case 'o':
			args->output = optarg;
			break;
		case 'h':
			export_usage(stdout);
			return 1;
		default:
			return trace_load_unknown_option("export", argv);
		}
	}
	problem = export_check_args(argc, argv, args);
	if (problem) {
		fprintf(stderr, "memtrace: failed to start export: %s\n", problem);
		return -EINVAL;
	}
	args->path = argv[optind];
	return 0;
}

static int export_render_pprof(const struct export_args *args, const struct analysis *a,
			       struct export_content *out)
{
	struct replay *r = analysis__replay((struct analysis *)a);
	struct export_pprof_input in = { .a = a, .live = args->live };
	struct trace_module *mods;
	struct pb_buf b;
	int err;

	mods = calloc(replay__nmodules(r) + 1, sizeof(*mods));
	if (!mods) {
		fprintf(stderr, "memtrace: failed to encode the pprof profile: %s; free some memory\n",
			strerror(ENOMEM));
		return -ENOMEM;
	}
	for (size_t i = 0; !replay__module(r, i, &mods[i]); i++)
		;
	in.modules = mods;
	in.nmodules = replay__nmodules(r);
	in.time_ns = replay__start_real_ns(r);
	pb_buf__init(&b);
	err = export_pprof__encode(&in, &b);
	free(mods);
	if (err) {
		fprintf(stderr, "memtrace: failed to encode the pprof profile: %s; free some memory\n",
			strerror(-err));
		pb_buf__free(&b);
		return err;
	}
	out->data = b.data; /* handed over: freed with the content */
	out->len = b.len;
	out->gzip = true;
	return 0;
}

struct folded_job {
	const struct analysis *a;
	enum export_metric metric;
};

static int folded_write(FILE *f, void *ctx)
{
	struct folded_job *job = ctx;

	return export_folded__write(f, job->a, job->metric);
}

static int export_render_folded(const struct export_args *args, const struct analysis *a,
				struct export_content *out)
{
	struct folded_job job = { a, args->metric };
	char *data;
	size_t len;
	int err = render_in_memory("folded stacks", folded_write, &job, &data, &len);

	if (err)
		return err;
	out->data = data;
	out->len = len;
	return 0;
}

/* Labels (thread, zone) need the blocks by thread and zone, which the
 * analysis does not keep: the live figures observe the same pass. */
static int export_prepare_pprof(struct export_args *args, struct analysis *a)
{
	args->live = live_sites__new(analysis__replay(a));
	if (!args->live) {
		fprintf(stderr, "memtrace: failed to render the pprof profile: out of memory; free some memory\n");
		return -ENOMEM;
	}
	return 0;
}

/* The heap counter and the zones need the events and marks in time order,
 * which the analysis does not keep: the export observes the same pass. */
static int export_prepare_chrome(struct export_args *args, struct analysis *a)
{
	args->chrome_f = open_memstream(&args->chrome_data, &args->chrome_len);
	if (args->chrome_f)
		args->chrome = export_chrome__new(args->chrome_f, analysis__replay(a));
	if (!args->chrome) {
		fprintf(stderr, "memtrace: failed to render the Chrome trace: out of memory; free some "
				"memory\n");
		return -ENOMEM;
	}
	return 0;
}

static int export_render_chrome(const struct export_args *args, const struct analysis *a,
				struct export_content *out)
{
	int err = export_chrome__finish(args->chrome, a);

	if (fclose(args->chrome_f) && !err)
		err = -ENOMEM;
	if (err) {
		fprintf(stderr, "memtrace: failed to render the Chrome trace: %s; free some memory\n",
			strerror(-err));
		return err;
	}
	out->data = args->chrome_data; /* handed over: freed with the content */
	out->len = args->chrome_len;
	return 0;
}

/* The output's name into *OUT: -o, else the format's default; NULL for
 * stdout. 0 or -ENOMEM. */
static int export_output_path(const struct export_args *args, char **out)
{
	*out = NULL;
	if (args->output && !strcmp(args->output, "-"))
		return 0;
	if (args->output)
		*out = strdup(args->output);
	else if (args->format->suffix && asprintf(out, "%s%s", args->path, args->format->suffix) < 0)
		*out = NULL;
	else if (!args->format->suffix)
		return 0;
	return *out ? 0 : -ENOMEM;
}

/* Create PATH the way record creates traces: never over an existing file
 * or through a symlink; 0600, as the trace it comes from. The fd, or
 * -errno after printing why. */
static int export_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		fprintf(stderr, "memtrace: failed to create %s: %s; %s\n", path, strerror(errno),
			errno == EEXIST ? "remove it or pass another name with -o" :
					  "check the directory and its permissions");
		return -errno;
	}
	return fd;
}

/* Write C to PATH (NULL: stdout); a file that could not be written in
 * full is removed. 0, or -errno after printing why. */
static int export_save(const char *path, const struct export_content *c)
{
	int fd = path ? export_create(path) : STDOUT_FILENO;
	int err;

	if (fd < 0)
		return fd;
	err = export_write(fd, c->data, c->len, c->gzip);
	if (path && close(fd) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "memtrace: failed to write %s: %s; check the disk\n",
			path ? path : "to stdout", strerror(-err));
		if (path)
			unlink(path);
	}
	return err;
}

int cmd_export(int argc, char **argv)
{
	struct export_content content = { 0 };
	struct export_args args;
	struct analysis *a;
	char *output = NULL;
	int err;

	err = export_parse_args(argc, argv, &args);
	if (err)
		return err > 0 ? MEMTRACE_EXIT_OK : MEMTRACE_EXIT_USAGE;

	a = analysis__new();
	if (!a) {
		fprintf(stderr, "memtrace: failed to read %s: %s; free some memory\n", args.path,
			strerror(errno));
		return 1;
	}
	err = args.format->prepare ? args.format->prepare(&args, a) : 0;
	if (!err)
		err = trace_load(args.path, a);
	if (err)
		goto out_analysis;
	err = args.format->render(&args, a, &content);
	args.chrome_f = NULL; /* closed by the render */
	if (content.data != args.chrome_data)
		free(args.chrome_data);
	args.chrome_data = NULL;
	if (err)
		goto out_analysis;
	err = export_output_path(&args, &output);
	if (err) {
		fprintf(stderr, "memtrace: failed to name the output: out of memory; free some memory\n");
		goto out_content;
	}
	err = export_save(output, &content);
	if (!err && output)
		fprintf(stderr, "memtrace: wrote %s\n", output);

out_content:
	free(output);
	free(content.data);
out_analysis:
	live_sites__free(args.live);
	export_chrome__free(args.chrome);
	if (args.chrome_f)
		fclose(args.chrome_f);
	free(args.chrome_data);
	analysis__free(a);
	return err ? 1 : 0;
}
