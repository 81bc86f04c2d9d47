// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "fuzz_consume.h"

#include "analysis.h"
#include "export_chrome.h"
#include "live_sites.h"
#include "replay.h"
#include "diff.h"
#include "diff_print.h"
#include "export.h"
#include "protobuf.h"
#include "report.h"
#include "trace_load.h"
#include "trace_reader.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t cap)
{
	int fd = memfd_create("fuzz.mtrace", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	return fd;
}

static FILE *devnull(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

static void write_outputs(const char *path, const struct analysis *a, struct live_sites *live)
{
	static const enum export_metric metrics[] = {
		EXPORT_METRIC_ALLOCATED, EXPORT_METRIC_LEAKED, EXPORT_METRIC_PEAK,
		EXPORT_METRIC_ALLOCATIONS, EXPORT_METRIC_LEAKED_ALLOCATIONS,
	};
	struct report_options opts = { .top = REPORT_DEFAULT_TOP };
	struct replay *r = analysis__replay((struct analysis *)a);
	struct trace_module mods[64];
	size_t nmods = 0;
	struct pb_buf pb;
	struct diff d;
	FILE *out = devnull();

	if (!out)
		return;
	report_text__write(out, a, &opts);
	report_json__write(out, a, 0);
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++)
		export_folded__write(out, a, metrics[i]);
	while (nmods < 64 && !replay__module(r, nmods, &mods[nmods]))
		nmods++;
	{
		struct export_pprof_input in = {
			.a = a, .live = live, .modules = mods, .nmodules = nmods, .time_ns = replay__start_real_ns(r),
		};

		pb_buf__init(&pb);
		export_pprof__encode(&in, &pb);
		pb_buf__free(&pb);
	}
	memset(&d, 0, sizeof(d));
	if (diff__analyses(&d, a, a) == 0) {
		diff_print__json(out, &d);
		diff_print__text(out, &d, path, path, DIFF_DEFAULT_TOP);
	}
	diff__free(&d);
	fflush(out);
}

void fuzz_consume_trace(const char *path)
{
	struct trace_reader *r = trace_reader__open(path);
	struct export_chrome *chrome = NULL;
	struct live_sites *live;
	struct analysis *a;
	int err;

	if (!r)
		return;
	a = analysis__new();
	if (!a)
		goto out_reader;
	/* the Chrome export (and its heap series) observe the same pass */
	if (devnull())
		chrome = export_chrome__new(devnull(), analysis__replay(a));
	live = live_sites__new(analysis__replay(a)); /* pprof's labelled samples */
	err = trace_reader__read(r, &replay_reader_ops, analysis__replay(a));
	if (!err && trace_reader__partial(r))
		err = analysis__set_partial(a, trace_reader__problem(r));
	if (!err && analysis__finish(a) == 0) {
		write_outputs(path, a, live);
		if (chrome)
			export_chrome__finish(chrome, a);
	}
	export_chrome__free(chrome);
	live_sites__free(live);
	analysis__free(a);
out_reader:
	trace_reader__close(r);
}
