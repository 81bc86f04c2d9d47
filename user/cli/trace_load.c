// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Reading a trace for a command, with the advice `memtrace report` gives. */
#include "trace_load.h"
#include "analysis.h"
#include "replay.h"
#include "debuginfod.h"
#include "symbolizer.h"
#include "trace_reader.h"
#include "util.h"

#include <limits.h>

#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What to do about a trace that cannot be read, after "<why>; ". */
static const char *load_advice(int err)
{
	switch (err) {
	case ENOENT:
		return "check the path";
	case ENOTTY:
		return "- reads the trace from stdin: pipe or redirect one in (memtrace report - < FILE)";
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
	case ENOTTY:
		return "stdin is a terminal";
	default:
		return strerror(err);
	}
}

static bool strict;
static const char *alloc_fns[32];
static size_t nr_alloc_fns;
/* --symfs DIR: the recorded machine's files under DIR (as perf's --symfs) */
static const char *symfs;

int trace_load_add_alloc_fn(const char *glob)
{
	if (nr_alloc_fns == sizeof(alloc_fns) / sizeof(alloc_fns[0]))
		return -E2BIG;
	alloc_fns[nr_alloc_fns++] = glob;
	return 0;
}

int trace_load_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	static char **started;
	int c;

	if (started != argv) {
		started = argv;
		optind = 0; /* glibc: start afresh even if main parsed options already */
		opterr = 0; /* our one-line message instead of getopt's */
	}
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int taken = trace_load_option(c, optarg);

		if (taken < 0)
			return TRACE_LOAD_BAD_OPTION;
		if (!taken)
			return c;
	}
	return -1;
}

int trace_load_unknown_option(const char *command, char **argv)
{
	fprintf(stderr, "memtrace: failed to parse %s options: '%s' is unknown or lacks its value; see memtrace %s --help\n",
		command, argv[optind - 1], command);
	return -EINVAL;
}

int trace_load_option(int c, const char *arg)
{
	switch (c) {
	case 'S':
		trace_load_set_strict(true);
		return 1;
	case 'Y':
		symfs = arg;
		return 1;
	case 'A':
		if (trace_load_add_alloc_fn(arg)) {
			fprintf(stderr, "memtrace: too many --alloc-fn globs; at most 32\n");
			return -EINVAL;
		}
		return 1;
	default:
		return 0;
	}
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

/* The trace "-" is stdin, copied once into an unlinked temporary file in
 * $TMPDIR (else /tmp): the reader seeks, and report --html and export read a
 * trace in more than one pass. What to open for PATH; NULL with errno set
 * (ENOTTY: stdin is a terminal, with no trace to read). */
static const char *source_path(const char *path)
{
	static char spooled[32];
	static int fd = -1;
	const char *dir = getenv("TMPDIR");
	char buf[65536];
	ssize_t n;

	if (strcmp(path, "-"))
		return path;
	if (fd >= 0)
		return spooled;
	if (isatty(STDIN_FILENO)) {
		errno = ENOTTY;
		return NULL;
	}
	fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(fd, buf, (size_t)n) != n) {
			int err = n < 0 ? errno : errno ? errno : EIO;

			close(fd);
			fd = -1;
			errno = err;
			return NULL;
		}
	}
	snprintf(spooled, sizeof(spooled), "/proc/self/fd/%d", fd);
	return spooled;
}

/* One pass of OPS over PATH; PARTIAL (if not NULL) learns whether the trace
 * was cut short and why. 0, or -errno after printing why. */
static int load_read(const char *path, const struct trace_reader_ops *ops, void *ctx,
		     char **partial)
{
	struct trace_reader *r;
	int err;

	const char *source = source_path(path);

	r = source ? trace_reader__open(source) : NULL;
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

struct unresolved {
	uint64_t addr;
	int32_t module;
};

struct debuginfod_pass {
	struct debuginfod_tries tries;
	struct unresolved *addrs;
	size_t nr_addrs, cap_addrs;
};

int debuginfod_try(struct debuginfod_tries *t, const struct trace_module *m)
{
	struct debuginfod_try *f;
	char debug[PATH_MAX];

	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].len == m->build_id_len && !memcmp(t->v[i].id, m->build_id, m->build_id_len))
			return 0;
	}
	if (array_reserve((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	f = &t->v[t->n++];
	memset(f, 0, sizeof(*f));
	memcpy(f->id, m->build_id, sizeof(f->id));
	f->len = m->build_id_len;
	f->path = m->path;
	f->err = debuginfod_fetch(m->build_id, m->build_id_len, debug, sizeof(debug));
	if (f->err)
		return 0;
	return symbolizer_add_debug_file(m->build_id, m->build_id_len, debug) ? -ENOMEM : 1;
}

void debuginfod_tries__say(const struct debuginfod_tries *t, const char *what)
{
	char missing[512] = "";
	size_t nmissing = 0;
	bool no_client = false;

	for (size_t i = 0; i < t->n; i++) {
		const char *base = strrchr(t->v[i].path, '/');
		size_t at = strlen(missing);

		if (!t->v[i].err)
			continue;
		no_client |= t->v[i].err == -ENOEXEC;
		if (nmissing++ < 4 && at < sizeof(missing) - 1)
			snprintf(missing + at, sizeof(missing) - at, "%s%s", at ? ", " : "", base ? base + 1 : t->v[i].path);
	}
	if (no_client)
		fprintf(stderr, "memtrace: DEBUGINFOD_URLS is set but debuginfod-find is not installed (Debian package debuginfod); frames of %s keep module+offset\n",
			what);
	else if (nmissing)
		fprintf(stderr, "memtrace: debuginfod had no debug info for %zu module%s (%s%s); their frames keep module+offset\n",
			nmissing, nmissing == 1 ? "" : "s", missing, nmissing > 4 ? ", ..." : "");
}

void debuginfod_tries__free(struct debuginfod_tries *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static int note_unresolved(void *ctx, uint64_t addr, const struct trace_module *m, int32_t module)
{
	struct debuginfod_pass *p = ctx;
	int err = debuginfod_enabled() ? debuginfod_try(&p->tries, m) : 0;

	if (err > 0)
		err = 0;
	if (!err && array_reserve((void **)&p->addrs, &p->cap_addrs, p->nr_addrs + 1, sizeof(*p->addrs)))
		return -ENOMEM;
	if (!err)
		p->addrs[p->nr_addrs++] = (struct unresolved){ addr, module };
	return err;
}

/* Name what the trace's own files name now: one symbolizer over every
 * module of the trace, in its order, so module indexes agree; each file
 * found by its recorded path (under --symfs DIR first), a debug file by
 * build-id (/usr/lib/debug/.build-id, one debuginfod fetched), and never a
 * file whose build-id differs from the recorded one. */
static int name_addresses(struct analysis *a, const struct debuginfod_pass *p)
{
	struct symbolizer *s = symbolizer__new(symfs);
	struct trace_module m;
	int err = s ? 0 : -ENOMEM;

	for (size_t i = 0; !err && !replay__module(analysis__replay(a), i, &m); i++)
		err = symbolizer__add_module(s, &m);
	for (size_t i = 0; !err && i < p->nr_addrs; i++) {
		struct trace_symbol sym;

		if (symbolizer__resolve(s, p->addrs[i].addr, &sym) || !sym.nframes || !sym.frames[0].function)
			continue;
		err = analysis__add_symbol(a, &sym);
	}
	symbolizer__free(s);
	return err;
}

/* Frames the trace does not name (a recorder killed before it wrote its
 * symbols, a module without them then) in modules with a build-id: named
 * from the files found now, through debuginfod too when DEBUGINFOD_URLS is
 * set; one line says what debuginfod could not fetch. */
static int name_unresolved(const char *trace, struct analysis *a)
{
	struct debuginfod_pass p = { 0 };
	int err;

	err = replay__for_each_unresolved(analysis__replay(a), note_unresolved, &p);
	if (!err && p.nr_addrs)
		err = name_addresses(a, &p);
	if (debuginfod_enabled())
		debuginfod_tries__say(&p.tries, trace);
	debuginfod_tries__free(&p.tries);
	free(p.addrs);
	return err;
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
	err = load_read(path, &replay_reader_ops, analysis__replay(a), &partial);
	if (!err && partial)
		err = analysis__set_partial(a, partial);
	if (!err)
		err = name_unresolved(path, a);
	if (!err)
		err = analysis__finish(a);
	if (err == -ENOMEM)
		load_error(path, ENOMEM, NULL);
	free(partial);
	return err;
}

