// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Reading a trace for a command, with the advice `memtrace report` gives. */
#include "trace_load.h"
#include "analysis.h"
#include "trace_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What to do about a trace that cannot be read, after "<why>; ". */
static const char *load_advice(int err)
{
	switch (err) {
	case ENOENT:
		return "check the path";
	case EACCES:
	case EPERM:
		return "traces are created 0600: run as the user who recorded it, or root";
	case EINVAL:
		return "pass a file written by memtrace record";
	case ENOTSUP:
		return "read it with the memtrace version that recorded it, or newer";
	case EBADMSG:
		return "the file is damaged before its end; record the trace again";
	case ENOMEM:
		return "free some memory or use a machine with more";
	default:
		return "check the file and the disk";
	}
}

static const char *load_reason(int err)
{
	switch (err) {
	case EINVAL:
		return "not a memtrace trace file";
	case ENOTSUP:
		return "written by a newer memtrace (unknown trace format version)";
	default:
		return strerror(err);
	}
}

static bool strict;
static const char *alloc_fns[32];
static size_t nr_alloc_fns;

int trace_load_add_alloc_fn(const char *glob)
{
	if (nr_alloc_fns == sizeof(alloc_fns) / sizeof(alloc_fns[0]))
		return -E2BIG;
	alloc_fns[nr_alloc_fns++] = glob;
	return 0;
}

void trace_load_set_strict(bool on)
{
	strict = on;
}

/* Damage the read got past: a warning, once per file however many passes
 * a command makes, or with --strict an error. */
static int load_damage(const char *path, const char *damage)
{
	static char warned[4096];

	if (strict) {
		fprintf(stderr, "memtrace: failed to read %s: %s; --strict refuses any damage\n", path, damage);
		return -EBADMSG;
	}
	if (strcmp(warned, path)) {
		fprintf(stderr, "memtrace: warning: %s: %s, ignored; everything before is reported\n", path, damage);
		snprintf(warned, sizeof(warned), "%s", path);
	}
	return 0;
}

static void load_error(const char *path, int err, const char *problem)
{
	fprintf(stderr, "memtrace: failed to read %s: %s; %s\n", path,
		problem ? problem : load_reason(err), load_advice(err));
}

/* One pass of OPS over PATH; PARTIAL (if not NULL) learns whether the trace
 * was cut short and why. 0, or -errno after printing why. */
static int load_read(const char *path, const struct trace_reader_ops *ops, void *ctx,
		     char **partial)
{
	struct trace_reader *r;
	int err;

	r = trace_reader__open(path);
	if (!r) {
		err = errno ? errno : EINVAL;
		load_error(path, err, NULL);
		return -err;
	}
	err = trace_reader__read(r, ops, ctx);
	if (err == -EBADMSG)
		load_error(path, EBADMSG, trace_reader__problem(r));
	else if (err)
		load_error(path, err < 0 ? -err : EIO, NULL);
	else if (trace_reader__damage(r))
		err = load_damage(path, trace_reader__damage(r));
	else if (strict && trace_reader__partial(r)) {
		fprintf(stderr, "memtrace: failed to read %s: %s; --strict refuses a partial trace\n", path,
			trace_reader__problem(r) ?: "cut short");
		err = -EBADMSG;
	} else if (partial && trace_reader__partial(r)) {
		*partial = strdup(trace_reader__problem(r) ?: "cut short");
		if (!*partial) {
			err = -ENOMEM;
			load_error(path, ENOMEM, NULL);
		}
	}
	trace_reader__close(r);
	return err < 0 ? err : err ? -EIO : 0;
}

int trace_load(const char *path, struct analysis *a)
{
	char *partial = NULL;
	int err;

	for (size_t i = 0; i < nr_alloc_fns; i++) {
		err = analysis__add_alloc_fn(a, alloc_fns[i]);
		if (err) {
			load_error(path, -err, NULL);
			return err;
		}
	}
	err = load_read(path, &analysis_reader_ops, a, &partial);
	if (!err && partial)
		err = analysis__set_partial(a, partial);
	if (!err)
		err = analysis__finish(a);
	if (err == -ENOMEM)
		load_error(path, ENOMEM, NULL);
	free(partial);
	return err;
}

int trace_load_pass(const char *path, const struct trace_reader_ops *ops, void *ctx)
{
	return load_read(path, ops, ctx, NULL);
}

static int modules_meta(void *ctx, const struct trace_meta *m)
{
	struct trace_modules *tm = ctx;

	tm->start_real_ns = m->start_real_ns;
	return 0;
}

static int modules_add(void *ctx, const struct trace_module *m)
{
	struct trace_modules *tm = ctx;
	struct trace_module *mods;

	mods = realloc(tm->mods, (tm->nr + 1) * sizeof(*mods));
	if (!mods)
		return -ENOMEM;
	tm->mods = mods;
	mods[tm->nr] = *m;
	mods[tm->nr].path = strdup(m->path ? m->path : "");
	if (!mods[tm->nr].path)
		return -ENOMEM;
	tm->nr++;
	return 0;
}

int trace_load_modules(const char *path, struct trace_modules *tm)
{
	static const struct trace_reader_ops ops = { .meta = modules_meta, .module = modules_add };

	memset(tm, 0, sizeof(*tm));
	return trace_load_pass(path, &ops, tm);
}

void trace_modules__free(struct trace_modules *tm)
{
	for (size_t i = 0; i < tm->nr; i++)
		free((char *)tm->mods[i].path);
	free(tm->mods);
	memset(tm, 0, sizeof(*tm));
}
