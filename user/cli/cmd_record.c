// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace record: the command line, and on a terminal a status line
 * riding on the session as a view; the session itself (record_run) is
 * user/record/session.c.
 */
#include "commands.h"
#include <linux/types.h>
#include "memtrace_abi.h"
#include "record.h"
#include "replay.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATUS_NS (500 * 1000 * 1000ULL)

static void usage(FILE *f)
{
	fprintf(f,
		"usage: memtrace [record] [-o FILE] [-d SEC] [--sample=SIZE | --budget PCT [--large SIZE]] [--rss[=only]] [--lib PATH] [--stack-depth N]\n"
		"                [--python-objects] [--unwind-rows N] [--buffer-size N] [--follow-children] [-v] (-p PID | [--preload] -- CMD [ARGS...])\n"
		"  -p, --pid PID        trace a running process (all its threads)\n"
		"  -o, --output FILE    trace file (default memtrace.COMM.PID.mtrace), never overwritten\n"
		"  -d, --duration SEC   stop after SEC seconds\n"
		"      --lib PATH       probe the allocator in PATH instead of the one the linker binds\n"
		"      --stack-depth N  frames per stack, 0 for none (default %d, max %d)\n"
		"      --unwind-rows N  room for the unwind tables of code without frame pointers,\n"
		"                       16 bytes a row (default 1M); 0: walk frame pointers only\n"
		"      --sample=SIZE    sample allocations, one per SIZE bytes on average (e.g. 512K);\n"
		"                       reported figures become unbiased estimates\n"
		"      --budget PCT     bound what tracing costs the target to PCT percent of its\n"
		"                       work: probes live in short windows, figures are estimates\n"
		"      --large SIZE     with --budget: blocks the allocator maps on their own (glibc:\n"
		"                       from its mmap threshold, 128K at first) of SIZE or more are\n"
		"                       recorded exactly, windows or not (default 128K; 0: not)\n"
		"      --rss[=only]     also sample the target's resident memory (anon, file, shmem)\n"
		"                       every 100 ms and trace the calls that map memory; =only:\n"
		"                       that alone, no allocator probes (the cheapest look)\n"
		"      --python-objects CPython's objects of at most 512 bytes too, which its\n"
		"                       allocator (pymalloc) keeps from malloc: the command runs\n"
		"                       with PYTHONMALLOC=malloc, so each object is one malloc;\n"
		"                       with -p the target must have been started so. A probe hit\n"
		"                       per object: pair it with --budget on a service\n"
		"      --preload        -- CMD only: capture the allocator calls inside the program\n"
		"                       (a library memtrace puts in its LD_PRELOAD) instead of with\n"
		"                       uprobes: the same trace and figures, no trap per call, for\n"
		"                       allocation-heavy programs you can restart; static and setuid\n"
		"                       programs are recorded with uprobes (it says so)\n"
		"      --buffer-size N  ring buffer bytes per CPU, power of two (default 8M;\n"
		"                       --preload: per thread, default 4M)\n"
		"      --follow-children\n"
		"                       also record every process the target forks and every\n"
		"                       program they exec, each into its own FILE.PID[.N].mtrace\n"
		"  -v, --verbose        list every probe\n"
		"  -h, --help           show this help\n",
		MT_DEFAULT_STACK_DEPTH, MT_MAX_STACK_DEPTH);
}

void record_opts__defaults(struct record_opts *o)
{
	o->stack_depth = MT_DEFAULT_STACK_DEPTH;
	o->unwind_rows = 1 << 20;
	o->ring_bytes = 8 << 20;
	o->large = 128 << 10; /* glibc's mmap threshold as it starts */
}

/* --budget PCT: a number above 0 and at most 100. */
static int parse_budget(const char *s, double *pct)
{
	char *end;

	errno = 0;
	*pct = strtod(s, &end);
	if (errno || end == s || *end || !(*pct > 0 && *pct <= 100))
		return fail("invalid --budget '%s'; give the share of the target's time the probes may take, "
			    "in percent, above 0 and at most 100 (e.g. --budget 5)", s);
	return 0;
}

/* What record and top refuse to combine with --budget. */
int record_check_budget(const struct record_opts *o)
{
	if (o->rss_only && (o->budget || o->sample || o->empty_probes))
		return fail("--rss=only attaches no allocator probes: --budget, --sample and --empty-probes have nothing to act on; drop one of them");
	if (!o->budget)
		return 0;
	if (o->sample)
		return fail("--budget and --sample do not combine: --budget already records a share of the time; give one of them");
	if (o->empty_probes)
		return fail("--budget and --empty-probes do not combine");
	return 0;
}

int record_option(int c, const char *arg, struct record_opts *o)
{
	switch (c) {
	case 'p':
		return parse_pid(arg, &o->pid) ? -EINVAL : 1;
	case 'o':
		o->output = arg;
		return 1;
	case 'd':
		return parse_seconds(arg, &o->duration) ? -EINVAL : 1;
	case 'P':
		return parse_budget(arg, &o->budget) ? -EINVAL : 1;
	case 'R':
		if (arg && strcmp(arg, "only"))
			return fail("invalid --rss=%s; give --rss (beside the heap) or --rss=only (no allocator probes)", arg), -EINVAL;
		o->rss = true;
		o->rss_only = arg != NULL;
		return 1;
	default:
		return 0;
	}
}

/* What --preload does not combine with. */
static int check_preload(const struct record_opts *o)
{
	if (!o->preload)
		return 0;
	if (o->pid)
		return fail("--preload starts the program with memtrace's library in it; a running process (-p) is recorded with uprobes: drop --preload");
	if (o->sample || o->budget || o->empty_probes || o->rss_only)
		return fail("--preload records every allocator call exactly; --sample, --budget, --rss=only and --empty-probes are the uprobe path's: drop one of them");
	if (o->lib)
		return fail("--lib names the allocator to probe; --preload catches what the program calls, whatever allocator that is: drop --lib");
	return 0;
}

static int parse_opts(struct record_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "output", required_argument, NULL, 'o' },
		{ "duration", required_argument, NULL, 'd' },
		{ "lib", required_argument, NULL, 'L' },
		{ "stack-depth", required_argument, NULL, 'S' },
		{ "unwind-rows", required_argument, NULL, 'W' },
		{ "buffer-size", required_argument, NULL, 'B' },
		{ "sample", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "follow-children", no_argument, NULL, 'F' },
		{ "empty-probes", required_argument, NULL, 'E' },
		{ "budget", required_argument, NULL, 'P' },
		{ "large", required_argument, NULL, 'G' },
		{ "rss", optional_argument, NULL, 'R' },
		{ "python-objects", no_argument, NULL, 'Y' },
		{ "preload", no_argument, NULL, 'Q' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	uint64_t v;
	int c;

	record_opts__defaults(o);
	while ((c = getopt_long(argc, argv, "+p:o:d:vh", longopts, NULL)) != -1) {
		int taken = record_option(c, optarg, o);

		if (taken < 0)
			return -EINVAL;
		if (taken)
			continue;
		switch (c) {
		case 'L': o->lib = optarg; break;
		case 'S':
			if (parse_u64(optarg, &v) || v > MT_MAX_STACK_DEPTH)
				return fail("invalid stack depth '%s'; give 0 to %d", optarg, MT_MAX_STACK_DEPTH);
			o->stack_depth = v;
			break;
		case 'W':
			if (parse_size(optarg, &v) || v > (1u << 27))
				return fail("invalid --unwind-rows '%s'; give 0 (frame pointers only) to 128M", optarg);
			o->unwind_rows = v;
			break;
		case 'B':
			if (parse_size(optarg, &v) || v < 4096 || (v & (v - 1)) || v > (1ULL << 30))
				return fail("invalid buffer size '%s'; give a power of two from 4K to 1G", optarg);
			o->ring_bytes = v;
			o->ring_bytes_given = true;
			break;
		case 's':
			if (parse_size(optarg, &v) || v == 0 || v > (1ULL << 40))
				return fail("invalid sample size '%s'; give mean bytes between samples, e.g. --sample=512K", optarg);
			o->sample = v;
			break;
		case 'G':
			if (parse_size(optarg, &v) || (v && v < 4096) || v > (1ULL << 40))
				return fail("invalid --large '%s'; give the least length of a block the allocator maps "
					    "to record exactly, 4K or more (e.g. --large 1M), or 0 for none", optarg);
			o->large = v;
			break;
		case 'v': o->verbose = true; break;
		case 'F': o->follow = true; break;
		case 'Y': o->python_objects = true; break;
		case 'Q': o->preload = true; break;
		case 'E': /* undocumented: the floor make bench measures */
			o->empty_probes = !strcmp(optarg, "entry") ? 1 : !strcmp(optarg, "entry+return") ? 2
					: !strcmp(optarg, "session") ? 3 : !strcmp(optarg, "record") ? 4 : -1;
			if (o->empty_probes < 0)
				return fail("--empty-probes takes entry, entry+return, session or record");
			break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (!o->cmd == !o->pid)
		return fail("give either -p PID or -- CMD [ARGS...]; see memtrace record --help");
	if (record_check_budget(o) || check_preload(o))
		return -EINVAL;
	if (o->output && record_output_is_stdout(o->output) && o->cmd)
		return fail("-o - writes the trace to stdout, where the command's output goes too; give -o FILE, or record it with -p");
	if (o->output && record_output_is_stdout(o->output) && o->follow)
		return fail("-o - is one stream and --follow-children writes a trace per process; give -o FILE");
	return 0;
}

/* The status line on a terminal: elapsed time, events, rate, the live heap
 * (a replay engine fed as the trace gets its records), bytes written, drops. */
struct status_line {
	struct replay *replay;
	uint64_t next_ns;
	uint64_t last_events;
};

static int status_tick(void *ctx, const struct record_live *live, uint64_t now)
{
	struct status_line *st = ctx;
	char written[32], heap[32];

	if (!st->next_ns)
		st->next_ns = live->start_ns + STATUS_NS;
	if (now < st->next_ns)
		return 0;
	format_bytes(live->bytes_written, written, sizeof(written));
	format_bytes(replay__live_bytes(st->replay), heap, sizeof(heap));
	fprintf(stderr, "\rmemtrace: %.1f s, %llu events (%llu/s), live %s, %s written, %llu dropped  ",
		(now - live->start_ns) / 1e9, (unsigned long long)live->events,
		(unsigned long long)((live->events - st->last_events) * 1000000000ULL / STATUS_NS), heap, written,
		(unsigned long long)live->dropped);
	st->last_events = live->events;
	st->next_ns = now + STATUS_NS;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct status_line st = { 0 };
	struct record_view view = { .tap = &replay_reader_ops, .tick = status_tick, .line_on_stderr = true };
	int status;

	if (parse_opts(&o, argc, argv))
		return MEMTRACE_EXIT_USAGE;
	o.teardown_detached = true;
	o.watch_exit = true;
	if (!isatty(STDERR_FILENO) || o.follow || record_output_is_stdout(o.output ? o.output : "") ||
	    !(st.replay = replay__new()))
		return record_run(&o, NULL);
	view.ctx = &st;
	view.tap_ctx = st.replay;
	status = record_run(&o, &view);
	replay__free(st.replay);
	return status;
}
