// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace top [-i SEC] [-o FILE] [--batch [--json]] [--top N] [--alloc-fn GLOB]...
 *              [-d SEC] (-p PID | -- CMD [ARGS...])
 *
 * A live view riding on a recording: the same probes, drain and trace as
 * `record` (record_run), with every record also fed to a replay engine
 * (replay.h) whose live figures (live_sites.h) are shown every interval.
 */
#include "commands.h"
#include "debuginfod.h"
#include "live_feed.h"
#include "live_sites.h"
#include "record.h"
#include "replay.h"
#include "strtab.h"
#include "symbolizer.h"
#include "top.h"
#include "trace_load.h"
#include "trace_reader.h"
#include "u64map.h"
#include "util.h"
#include "memtrace_abi.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOP_HISTORY 512      /* snapshots kept for the sparkline */
#define TOP_MAX_THREADS 256
#define TOP_MAX_ZONES 64
#define TOP_BATCH_ROWS 20    /* --top default in batch mode */

struct top {
	/* options */
	uint64_t interval_ns;
	bool batch, json;
	size_t top;
	char tmp_output[PATH_MAX];

	/* the engine and what feeds it */
	struct live_feed feed;
	struct replay *r;          /* feed.r */
	struct live_sites *live;   /* feed.live */
	char comm[64];

	/* what was shown last */
	uint64_t next_ns;
	uint64_t last_ns;
	uint64_t last_allocations, last_bytes, last_live;
	bool have_last;
	uint64_t history[TOP_HISTORY];
	size_t nhistory;
	struct strtab keys;        /* site identities, for rates */
	struct prev_figures { uint64_t bytes, allocs; } *prev; /* by key: at the last snapshot */
	size_t prev_cap;
	struct top_row *all;       /* every site of the last snapshot */
	size_t nall, all_cap;
	struct top_row *rows;      /* those shown: searched and sorted */
	size_t rows_cap;
	struct top_thread threads[TOP_MAX_THREADS];
	const char *zones[TOP_MAX_ZONES];
	struct top_snapshot snap;

	/* the terminal */
	struct top_screen *screen;
	struct top_ui ui;
	int err;                   /* why the view stopped, -errno */
};

static void top_usage(FILE *f)
{
	fprintf(f, "usage: memtrace top [-i SEC] [-o FILE] [--batch [--json]] [--top N] [--alloc-fn GLOB]...\n"
		   "                    [-d SEC] [--budget PCT] [--rss[=only]] (-p PID | -- CMD [ARGS...])\n"
		   "  -i, --interval SEC  refresh every SEC seconds (default 1)\n"
		   "  -o, --output FILE   also write the trace, as record would\n"
		   "  -d, --duration SEC  stop after SEC seconds\n"
		   "      --budget PCT    bound what tracing costs the target to PCT percent of its\n"
		   "                      work (figures become estimates, a cycle late)\n"
		   "      --rss[=only]    also show the target's resident memory (anon, file, shmem);\n"
		   "                      =only: that alone, no allocator probes\n"
		   "      --batch         no screen: one text snapshot per interval on stdout\n"
		   "      --json          with --batch: one JSON object per line instead\n"
		   "      --top N         sites per batch snapshot (default %d)\n"
		   "      --alloc-fn GLOB frames of matching functions count as the allocator's\n"
		   "  keys: 1-5 or s sort (live bytes, live blocks, allocated, calls, rate), t thread,\n"
		   "        z zone, / search, Enter stacks of the selected site, p pause, q quit\n",
		TOP_BATCH_ROWS);
}

/* 0 to go on, 1 after --help, -EINVAL after printing why. */
static int top_parse(struct top *t, struct record_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "interval", required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "budget", required_argument, NULL, 'P' },
		{ "rss", optional_argument, NULL, 'R' },
		{ "batch", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "top", required_argument, NULL, 'n' },
		{ "alloc-fn", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	double interval = 1;
	uint64_t v;
	int c;

	record_opts__defaults(o);
	t->top = TOP_BATCH_ROWS;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:i:o:d:h", longopts, NULL)) != -1) {
		int taken = record_option(c, optarg, o);

		if (taken < 0)
			return -EINVAL;
		if (taken)
			continue;
		switch (c) {
		case 'i':
			interval = strtod(optarg, NULL);
			if (!(interval >= 0.05 && interval <= 3600))
				return fail("invalid interval '%s'; give seconds from 0.05 to 3600, e.g. -i 2", optarg);
			break;
		case 'b': t->batch = true; break;
		case 'j': t->json = true; break;
		case 'n':
			if (parse_u64(optarg, &v) || v == 0 || v > 100000)
				return fail("invalid --top '%s'; give a number of sites from 1", optarg);
			t->top = v;
			break;
		case 'A':
			if (replay__add_alloc_fn(t->r, optarg))
				return fail("too many --alloc-fn globs; at most 32");
			break;
		case 'h': top_usage(stdout); return 1;
		default:
			return fail("failed to parse top options: '%s' is unknown or lacks its value; see memtrace top --help",
				    argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (!o->cmd == !o->pid)
		return fail("give either -p PID or -- CMD [ARGS...]; see memtrace top --help");
	if (record_check_budget(o))
		return -EINVAL;
	if (t->json && !t->batch)
		return fail("--json needs --batch: the screen view is not JSON");
	t->interval_ns = (uint64_t)(interval * 1e9);
	return 0;
}

/* ---- snapshots ---- */

/* SITE's identity, interned: the index of its rate's last figures. */
static int64_t site_key(struct top *t, const struct analysis_site *site)
{
	char key[1024];

	snprintf(key, sizeof(key), "%s\n%s:%u\n%s", site->name, site->file ? site->file : "", site->line,
		 site->module ? site->module : "");
	return strtab__intern(&t->keys, key);
}

static void filter_of(const struct top *t, struct live_filter *f)
{
	f->tid = t->ui.thread >= 0 && (size_t)t->ui.thread < t->snap.nthreads ?
			 t->snap.threads[t->ui.thread].tid : 0;
	f->zone = t->ui.zone >= 0 && (size_t)t->ui.zone < t->snap.nzones ? t->snap.zones[t->ui.zone] : NULL;
}

static void take_threads(struct top *t)
{
	size_t n = replay__nthreads(t->r);

	t->snap.nthreads = 0;
	for (size_t i = 0; i < n && t->snap.nthreads < TOP_MAX_THREADS; i++) {
		uint32_t name = replay__thread_name(t->r, (uint32_t)i);

		t->threads[t->snap.nthreads++] = (struct top_thread){
			.tid = replay__thread_tid(t->r, (uint32_t)i),
			.name = name == REPLAY_NONE ? NULL : replay__name(t->r, name),
		};
	}
	t->snap.threads = t->threads;
	t->snap.nzones = live_sites__zones(t->live, t->zones, TOP_MAX_ZONES);
	if (t->snap.nzones > TOP_MAX_ZONES)
		t->snap.nzones = TOP_MAX_ZONES;
	t->snap.zones = t->zones;
}

/* The rows shown: the search applied, sorted as the person chose. */
static int show_rows(struct top *t)
{
	size_t n = 0;

	if (array_reserve((void **)&t->rows, &t->rows_cap, t->nall + 1, sizeof(*t->rows)))
		return -ENOMEM;
	for (size_t i = 0; i < t->nall; i++) {
		if (top_row__matches(&t->all[i], t->ui.search))
			t->rows[n++] = t->all[i];
	}
	top_rows__sort(t->rows, n, t->ui.sort);
	t->snap.rows = t->rows;
	t->snap.nrows = n;
	if (t->ui.selected >= n)
		t->ui.selected = n ? n - 1 : 0;
	return 0;
}

/* The sites now, with their rates over SECONDS; RESET: no rates (the
 * filter changed, the last figures are of other blocks). */
static int take_rows(struct top *t, double seconds, bool reset)
{
	const struct analysis_site *sites;
	struct live_filter f;
	size_t n;
	int err;

	filter_of(t, &f);
	err = live_sites__snapshot(t->live, &f, &sites, &n);
	if (!err)
		err = array_reserve((void **)&t->all, &t->all_cap, n + 1, sizeof(*t->all));
	t->nall = 0;
	for (size_t i = 0; i < n && !err; i++) {
		const struct analysis_figures *fig = &sites[i].figures;
		int64_t k = site_key(t, &sites[i]);
		size_t old = t->prev_cap;
		struct prev_figures *p;
		struct top_row row = { .site = &sites[i] };

		if (k < 0 || array_reserve((void **)&t->prev, &t->prev_cap, (size_t)k + 1, sizeof(*t->prev))) {
			err = -ENOMEM;
			break;
		}
		if (t->prev_cap > old)
			memset(t->prev + old, 0, (t->prev_cap - old) * sizeof(*t->prev));
		p = &t->prev[k];
		if (!reset && seconds > 0 && fig->allocated_bytes >= p->bytes) {
			row.bytes_per_s = (uint64_t)((fig->allocated_bytes - p->bytes) / seconds);
			row.allocs_per_s = (uint64_t)((fig->allocations - p->allocs) / seconds);
		}
		*p = (struct prev_figures){ fig->allocated_bytes, fig->allocations };
		t->all[t->nall++] = row;
	}
	return err ? err : show_rows(t);
}

static int take_snapshot(struct top *t, const struct record_live *live, uint64_t now, bool reset)
{
	const struct analysis_totals *tot = replay__totals(t->r);
	double seconds = t->have_last ? (now - t->last_ns) / 1e9 : (now - live->start_ns) / 1e9;
	uint64_t live_bytes = replay__live_bytes(t->r);

	take_threads(t);
	t->snap.pid = live->pid;
	t->snap.budget = replay__trace(t->r)->budget.budget_ppm ? &replay__trace(t->r)->budget : NULL;
	t->snap.rss = replay__trace(t->r)->rss.npoints ?
			      &replay__trace(t->r)->rss.points[replay__trace(t->r)->rss.npoints - 1] : NULL;
	snprintf(t->comm, sizeof(t->comm), "%s", live->comm ? live->comm : "?");
	t->snap.comm = t->comm;
	t->snap.cmdline = live->cmdline;
	t->snap.elapsed_ns = now > live->start_ns ? now - live->start_ns : 0;
	t->snap.live_bytes = live_bytes;
	t->snap.live_allocations = replay__live_allocations(t->r);
	t->snap.live_change = (int64_t)live_bytes - (int64_t)(t->have_last ? t->last_live : 0);
	t->snap.allocations = tot->allocations;
	t->snap.allocated_bytes = tot->allocated_bytes;
	t->snap.allocs_per_s = seconds > 0 ? (uint64_t)((tot->allocations - t->last_allocations) / seconds) : 0;
	t->snap.bytes_per_s = seconds > 0 ? (uint64_t)((tot->allocated_bytes - t->last_bytes) / seconds) : 0;
	t->snap.dropped = live->dropped;
	t->snap.probes = live->probes;
	t->snap.target_exited = live->target_exited;
	if (t->nhistory == TOP_HISTORY)
		memmove(t->history, t->history + 1, --t->nhistory * sizeof(*t->history));
	t->history[t->nhistory++] = live_bytes;
	t->snap.history = t->history;
	t->snap.nhistory = t->nhistory;
	t->last_ns = now;
	t->last_allocations = tot->allocations;
	t->last_bytes = tot->allocated_bytes;
	t->last_live = live_bytes;
	t->have_last = true;
	return take_rows(t, seconds, reset);
}

static int show(struct top *t)
{
	if (t->screen) {
		top_screen__draw(t->screen, &t->snap, &t->ui);
		return 0;
	}
	if (t->json)
		return top_batch__json(stdout, &t->snap, t->top);
	return top_batch__text(stdout, &t->snap, t->top);
}

static int top_tick(void *ctx, const struct record_live *live, uint64_t now)
{
	struct top *t = ctx;
	int keys = 0, err = 0;

	if (t->screen) {
		keys = top_screen__keys(t->screen, &t->ui, &t->snap);
		if (t->ui.quit)
			return 1;
	}
	if (!t->next_ns) /* the first snapshot after one interval */
		t->next_ns = live->start_ns + t->interval_ns;
	if (t->ui.paused) {
		if (keys)
			top_screen__draw(t->screen, &t->snap, &t->ui);
		return 0;
	}
	if (now >= t->next_ns) {
		t->next_ns = now + t->interval_ns;
		err = take_snapshot(t, live, now, keys & TOP_KEY_REFILTER);
	} else if (keys & TOP_KEY_REFILTER) {
		err = take_rows(t, 0, true);
	} else if (keys) {
		err = show_rows(t);
	} else {
		return 0;
	}
	if (!err)
		err = show(t);
	if (err)
		t->err = err;
	return err;
}

static void top_done(void *ctx, const struct record_live *live)
{
	struct top *t = ctx;

	if (!live) { /* recording never started: its error line is out */
		top_screen__close(t->screen);
		t->screen = NULL;
		return;
	}
	/* the final state: the last events came after the last tick */
	if (!t->ui.quit && !t->err && !take_snapshot(t, live, live->end_ns, false))
		show(t);
	if (t->screen && live->target_exited && !*live->stop && !t->ui.quit)
		top_screen__wait(t->screen, &t->snap, &t->ui, "the target exited: q quits", live->stop);
	top_screen__close(t->screen);
	t->screen = NULL;
}

static void top_free(struct top *t)
{
	top_screen__close(t->screen);
	live_feed__free(&t->feed);
	strtab__free(&t->keys);
	free(t->prev);
	free(t->all);
	free(t->rows);
}

/* Without -o there is no trace: the records go to the view alone, nothing
 * is written to disk. */
static void no_output(struct top *t, struct record_opts *o)
{
	snprintf(t->tmp_output, sizeof(t->tmp_output), "memtrace-top.%d", (int)getpid());
	o->output = t->tmp_output;
	o->discard_output = true;
}

int cmd_top(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct top t = { .ui = { .thread = -1, .zone = -1 } };
	struct record_view view = { .tap = &live_feed_tap, .ctx = &t, .tap_ctx = &t.feed, .tick = top_tick,
				    .done = top_done };
	int err, status;

	if (live_feed__init(&t.feed, NULL)) {
		fprintf(stderr, "memtrace: failed to start top: out of memory\n");
		top_free(&t);
		return 1;
	}
	t.r = t.feed.r;
	t.live = t.feed.live;
	strtab__init(&t.keys);
	err = top_parse(&t, &o, argc, argv);
	if (err) {
		top_free(&t);
		return err > 0 ? 0 : 2;
	}
	if (!o.output)
		no_output(&t, &o);
	if (!t.batch) {
		if (!isatty(STDOUT_FILENO)) {
			fprintf(stderr, "memtrace: failed to start top: stdout is not a terminal; use --batch (or --batch --json) for a script\n");
			top_free(&t);
			return 2;
		}
		t.screen = top_screen__open();
		if (!t.screen) {
			fprintf(stderr, "memtrace: failed to start top: cannot use the terminal (TERM=%s); use --batch\n",
				getenv("TERM") ? getenv("TERM") : "");
			top_free(&t);
			return 1;
		}
	}
	status = record_run(&o, &view);
	debuginfod_tries__say(&t.feed.tries, t.comm[0] ? t.comm : "the process");
	if (t.err) {
		fprintf(stderr, "memtrace: failed to show the live view: %s\n", strerror(-t.err));
		status = status ? status : 1;
	}
	top_free(&t);
	return status;
}
