// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `memtrace report`: what a person reads. Anything that makes the figures
 * less than exact (drops, a cut-short trace, sampling) comes first, so it
 * cannot be missed; then the summary and the ranked site lists.
 */
#include "marks.h"
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STACK_LINES_MAX 16 /* frames printed per stack; the JSON has them all */

/* One ranked list of sites: one line per site, and the stacks of the first
 * few, so a screen shows the answer and where it comes from. */
struct ranking {
	const char *title;
	uint64_t (*value)(const struct analysis_figures *f);
	void (*describe)(FILE *f, const struct analysis_figures *fig);
	/* The two short columns of a site's line (the first holds the value ranked by). */
	void (*columns)(const struct analysis_figures *fig, char *first, char *second, size_t cap);
	unsigned int stack_sites; /* leading sites whose stacks are shown */
	unsigned int stacks;      /* stacks shown per such site */
};

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static void fmt_bytes(char *buf, size_t size, uint64_t b)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, size, "%" PRIu64 " B", b);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void fmt_duration(char *buf, size_t size, uint64_t ns)
{
	if (ns >= 1000000000ULL)
		snprintf(buf, size, "%.3f s", ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, size, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f us", ns / 1e3);
}

/* "1.2 MiB (1258291 bytes)": the human unit and the exact number. */
static void print_bytes(FILE *f, uint64_t b)
{
	char h[32];

	fmt_bytes(h, sizeof(h), b);
	if (b < 1024)
		fprintf(f, "%s", h);
	else
		fprintf(f, "%s (%" PRIu64 " bytes)", h, b);
}

static void report_text__warnings(FILE *f, const struct analysis *a)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct analysis_totals *tot = analysis__totals(a);
	char h[32];

	if (tot->dropped_events)
		fprintf(f, "WARNING: %" PRIu64 " events dropped: figures are lower bounds\n",
			tot->dropped_events);
	if (t->partial)
		fprintf(f, "WARNING: trace is partial: %s\n", t->problem);
	if (t->sample_bytes) {
		fmt_bytes(h, sizeof(h), t->sample_bytes);
		fprintf(f, "NOTE: sampled (one sample per %s allocated on average): "
			   "figures are estimates\n", h);
	}
	if (t->budget.budget_ppm)
		fprintf(f, "NOTE: recorded with --budget %g%%: the probes lived in windows, "
			   "so every figure is an estimate (see \"Budget\" below)\n",
			(double)t->budget.budget_ppm / 1e4);
	if (t->no_heap)
		fprintf(f, "NOTE: recorded with --rss=only: no allocator probes, so no heap figures; see\n"
			   "\"Resident memory\" below\n");
	if (tot->dropped_events || t->partial || t->sample_bytes || t->budget.budget_ppm || t->no_heap)
		fputc('\n', f);
}

#define BUDGET_ERROR_SITES 10 /* sites listed with their estimate's error */

/* One estimate: its value, its 95% interval (1.96 standard errors of the
 * estimated part) and its exact part. */
static void budget_estimate(FILE *f, uint64_t value, double var, uint64_t exact)
{
	double half = 1.96 * sqrt(var);

	print_bytes(f, value);
	fprintf(f, " +- ");
	print_bytes(f, (uint64_t)(half + 0.5));
	if (value > exact)
		fprintf(f, " (%.0f%%)", 100.0 * half / (double)(value - exact));
	if (exact) {
		fprintf(f, ", of it exact ");
		print_bytes(f, exact);
	}
}

/* The totals' and the largest sites' estimates with their error. */
static void report_text__budget_error(FILE *f, const struct analysis *a)
{
	const struct analysis_budget *b = &analysis__trace(a)->budget;
	const struct analysis_site *sites;
	size_t n;

	fprintf(f, "  error:            95%% intervals: luck, as if each window were a slice of time taken\n"
		   "                    with 1/weight odds (a steady site's is smaller), and the weights'\n"
		   "                    model (how the fitted price of a hit moves them)\n");
	fprintf(f, "    %-30s ", "all allocated");
	budget_estimate(f, analysis__totals(a)->allocated_bytes, b->var_bytes, b->large_allocated_bytes);
	fprintf(f, "\n");
	sites = analysis__sites(a, &n);
	for (size_t i = 0; i < n && i < BUDGET_ERROR_SITES; i++) {
		fprintf(f, "    %-30.30s ", sites[i].name);
		budget_estimate(f, sites[i].figures.allocated_bytes, sites[i].figures.var_bytes,
				sites[i].figures.exact_bytes);
		fprintf(f, "\n");
	}
}

/* What a --budget trace saw, how its figures were scaled, and what it
 * cannot know. */
static void report_text__budget(FILE *f, const struct analysis *a)
{
	const struct analysis_budget *b = &analysis__trace(a)->budget;
	double wall = analysis__trace(a)->duration_ns ? (double)analysis__trace(a)->duration_ns : 1;
	char t[32], p[3][32];

	fprintf(f, "\nBudget (--budget %g%%: probe hits priced at %.1f us, %.1f us more with a return)\n",
		(double)b->budget_ppm / 1e4, (double)b->hit_entry_ns / 1e3, (double)b->hit_return_ns / 1e3);
	fprintf(f, "  windows:          %" PRIu64 "; allocations traced %.2f%% of the time, frees %.2f%% more\n",
		b->windows, 100.0 * (double)b->live_ns / wall, 100.0 * (double)b->tail_ns / wall);
	fprintf(f, "  scaling:          each allocation recorded stands for %.1f to %.1f (the target's work each\n"
		   "                    window stands for over the work done in it)\n",
		b->min_weight, b->max_weight);
	fmt_duration(t, sizeof(t), b->min_tail_ns);
	fprintf(f, "  long-lived:       %" PRIu64 " allocations, ", b->long_lived_allocations);
	print_bytes(f, b->long_lived_bytes);
	fprintf(f, " outlived their window's tail (> %s)\n", t);
	if (b->lifetimes_seen) {
		for (int i = 0; i < 3; i++)
			fmt_duration(p[i], sizeof(p[i]), b->lifetime_ns[i]);
		fprintf(f, "  lifetimes seen:   p50 < %s, p90 < %s, p99 < %s (%" PRIu64 " frees seen in windows and tails)\n",
			p[0], p[1], p[2], b->lifetimes_seen);
	}
	if (b->large_bytes) {
		fprintf(f, "  large blocks:     %" PRIu64 " allocations, ", b->large_allocations);
		print_bytes(f, b->large_allocated_bytes);
		fprintf(f, ", %" PRIu64 " freed: EXACT, windows or not\n"
			   "                    (the allocator's own mappings, from ", b->large_frees);
		print_bytes(f, b->large_bytes);
		fprintf(f, " up, at mmap and munmap)\n");
		if (b->large_until_ns)
			fprintf(f, "                    until %.1f s: their probes cost more than the budget, and were\n"
				   "                    detached; later large blocks are estimated with the rest\n",
				(double)b->large_until_ns / 1e9);
	}
	report_text__budget_error(f, a);
	fprintf(f, "  cannot know:      the live heap and its peak, leaks (a block older than its tail may\n"
		   "                    still be freed), and sites that allocate only between windows;\n"
		   "                    shares between sites are the firm part, totals the estimate\n");
}

/* The value of the rollup line NAME, or -1. */
static int64_t rollup_get(const struct analysis_rollup *ro, const char *name)
{
	for (uint32_t i = 0; i < ro->n; i++)
		if (!strcmp(ro->name[i], name))
			return (int64_t)ro->bytes[i];
	return -1;
}

static void rss_row(FILE *f, const char *label, const struct analysis_rss_point *p, bool heap)
{
	char c[5][32], t[32];

	fmt_bytes(c[0], sizeof(c[0]), p->anon);
	fmt_bytes(c[1], sizeof(c[1]), p->file);
	fmt_bytes(c[2], sizeof(c[2]), p->shmem);
	fmt_bytes(c[3], sizeof(c[3]), p->anon + p->file + p->shmem);
	fmt_bytes(c[4], sizeof(c[4]), p->heap_bytes);
	fmt_duration(t, sizeof(t), p->time_ns);
	fprintf(f, "  %-6s %12s %11s %11s %11s %11s  %s\n", label, c[3], c[0], c[1], c[2], heap ? c[4] : "-", t);
}

static void rss_rollup(FILE *f, const char *when, const struct analysis_rollup *ro)
{
	static const char *const lines[] = { "Rss", "Pss", "Anonymous", "Private_Dirty", "Swap" };
	char b[32];
	bool first = true;

	if (!ro->seen)
		return;
	fprintf(f, "  smaps_rollup at the %s:", when);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		int64_t v = rollup_get(ro, lines[i]);

		if (v < 0)
			continue;
		fmt_bytes(b, sizeof(b), (uint64_t)v);
		fprintf(f, "%s %s %s", first ? "" : ",", lines[i], b);
		first = false;
	}
	fprintf(f, "\n");
}

/* Where a --rss site is: its function (an unnamed one by address when
 * HEX, else "[no stack]"), file:line and, with MODULE, its module's name. */
static void print_where(FILE *f, const struct analysis_frame *fr, bool hex, bool module)
{
	if (fr && fr->function)
		fputs(fr->function, f);
	else if (fr && hex)
		fprintf(f, "0x%" PRIx64, fr->address);
	else
		fputs("[no stack]", f);
	if (fr && fr->file)
		fprintf(f, "  %s:%u", fr->file, fr->line);
	if (module && fr && fr->module)
		fprintf(f, "  [%s]", strrchr(fr->module, '/') ? strrchr(fr->module, '/') + 1 : fr->module);
	fputc('\n', f);
}

/* --rss: what glibc's own probes of its allocator said, where it has them. */
static void rss_glibc(FILE *f, const struct analysis_maps *mp)
{
	const struct analysis_glibc *g = &mp->glibc;
	char b[6][32];

	if (!mp->glibc_probed) {
		fprintf(f, "  glibc's allocator probes (arenas, heaps, trims): not in the target's C library "
			   "(built without them, as Debian's is)\n");
		return;
	}
	fmt_bytes(b[0], sizeof(b[0]), g->heap_new_bytes);
	fmt_bytes(b[1], sizeof(b[1]), g->heap_grown_bytes);
	fmt_bytes(b[2], sizeof(b[2]), g->heap_shrunk_bytes);
	fmt_bytes(b[3], sizeof(b[3]), g->heap_freed_bytes);
	fmt_bytes(b[4], sizeof(b[4]), g->sbrk_more_bytes);
	fmt_bytes(b[5], sizeof(b[5]), g->sbrk_less_bytes);
	fprintf(f, "  glibc's allocator (its own probes): %" PRIu64 " arena%s made, %" PRIu64 " taken by another thread;\n"
		   "    the main heap grown %" PRIu64 " time%s by brk (%s), trimmed %" PRIu64 " time%s (%s given back);\n"
		   "    other arenas' heaps: %" PRIu64 " mapped (%s), grown %" PRIu64 " time%s (%s), shrunk %" PRIu64
		   " time%s (%s), %" PRIu64 " unmapped (%s);\n"
		   "    allocations retried in another arena: %" PRIu64 "\n",
		g->arenas_new, plural(g->arenas_new), g->arenas_reused, g->sbrk_more, plural(g->sbrk_more), b[4],
		g->sbrk_less, plural(g->sbrk_less), b[5], g->heaps_new, b[0], g->heaps_grown, plural(g->heaps_grown), b[1],
		g->heaps_shrunk, plural(g->heaps_shrunk), b[2], g->heaps_freed, b[3], g->retries);
	for (size_t i = 0; i < g->nmallopt && i < ANALYSIS_MALLOPT_MAX; i++) {
		const char *name = report_mallopt_name(g->mallopt[i].param);

		if (name)
			fprintf(f, "    mallopt(%s, %" PRId64 ")\n", name, g->mallopt[i].value);
		else
			fprintf(f, "    mallopt(%" PRId64 ", %" PRId64 ")\n", g->mallopt[i].param, g->mallopt[i].value);
	}
	if (g->nmallopt > ANALYSIS_MALLOPT_MAX)
		fprintf(f, "    ... and %zu more mallopt calls\n", g->nmallopt - ANALYSIS_MALLOPT_MAX);
	if (g->narena_sites)
		fprintf(f, "    arenas made by:\n");
	for (size_t i = 0; i < g->narena_sites && i < 10; i++) {
		fprintf(f, "    %10" PRIu64 " arena%s  ", g->arena_sites[i].mappings, plural(g->arena_sites[i].mappings));
		print_where(f, g->arena_sites[i].site, true, true);
	}
}

/* --rss: what the program mapped itself, by site, and what the allocator did. */
static void rss_maps(FILE *f, const struct analysis_maps *mp)
{
	char b[4][32];

	fmt_bytes(b[0], sizeof(b[0]), mp->outside_bytes);
	fmt_bytes(b[1], sizeof(b[1]), mp->outside_peak_bytes);
	fprintf(f, "  mapped by the program outside malloc (anonymous mmap, still mapped): %s (at most %s)\n", b[0], b[1]);
	for (size_t i = 0; i < mp->nsites && i < 10; i++) {
		const struct analysis_map_site *ms = &mp->sites[i];
		const struct analysis_frame *fr = ms->site;

		fmt_bytes(b[0], sizeof(b[0]), ms->bytes);
		fprintf(f, "    %10s  %" PRIu64 " mapping%s  ", b[0], ms->mappings, plural(ms->mappings));
		print_where(f, fr, false, true);
	}
	fmt_bytes(b[0], sizeof(b[0]), mp->allocator_bytes);
	fmt_bytes(b[1], sizeof(b[1]), mp->brk_bytes);
	fmt_bytes(b[2], sizeof(b[2]), mp->madvised_bytes);
	fprintf(f, "  the allocator's: %s mmap'd and still mapped, the heap's break %s above where it was first seen;\n"
		   "  madvise gave back %s (calls: mmap %" PRIu64 ", munmap %" PRIu64 ", brk %" PRIu64 ", mremap %" PRIu64
		   ", madvise %" PRIu64 ")\n",
		b[0], b[1], b[2], mp->calls[MT_MAP_MMAP], mp->calls[MT_MAP_MUNMAP], mp->calls[MT_MAP_BRK],
		mp->calls[MT_MAP_MREMAP], mp->calls[MT_MAP_MADVISE]);
	rss_glibc(f, mp);
	if (!mp->calls[MT_MAP_FAULT])
		return;
	fmt_bytes(b[0], sizeof(b[0]), mp->fault_bytes);
	fprintf(f, "  pages first written (write faults, one in %d sampled, each standing for %d): about %s\n",
		MT_FAULT_EVERY, MT_FAULT_EVERY, b[0]);
	for (size_t i = 0; i < mp->nfault_sites && i < 10; i++) {
		const struct analysis_map_site *ms = &mp->fault_sites[i];
		const struct analysis_frame *fr = ms->site;

		fmt_bytes(b[0], sizeof(b[0]), ms->bytes);
		fprintf(f, "    %10s  %" PRIu64 " sample%s  ", b[0], ms->mappings, plural(ms->mappings));
		print_where(f, fr, true, true);
	}
}

/* One line of the reconciliation: LABEL, then each snapshot's value. */
static void reconcile_row(FILE *f, const char *label, const struct analysis_reconcile *const *c, size_t n,
			  size_t field, bool known_only)
{
	char b[32];

	fprintf(f, "    %-50s", label);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = *(const uint64_t *)((const char *)c[i] + field);

		if (known_only && !c[i]->heap_known)
			snprintf(b, sizeof(b), "-");
		else
			fmt_bytes(b, sizeof(b), v);
		fprintf(f, " %14s", b);
	}
	fputc('\n', f);
}

/* --rss: resident anonymous memory added up at the end and at its peak,
 * each part from its own measurement (analysis_reconcile). */
static void rss_reconcile(FILE *f, const struct analysis_trace *t)
{
	const struct analysis_rss *rs = &t->rss;
	const struct analysis_reconcile *c[2] = { &rs->at_end, &rs->at_peak };
	size_t n = rs->at_peak.seen && rs->at_peak.time_ns != rs->at_end.time_ns ? 2 : 1;
	const struct analysis_reconcile *e = &rs->at_end;
	char d[32], h[2][48];

	fprintf(f, "  resident anonymous memory, added up (pagemap, live blocks, the calls that map memory):\n");
	fmt_duration(d, sizeof(d), e->time_ns);
	snprintf(h[0], sizeof(h[0]), "last %s", d);
	fmt_duration(d, sizeof(d), rs->at_peak.time_ns);
	snprintf(h[1], sizeof(h[1]), "peak %s", d);
	fprintf(f, "    %-50s %14s", "", h[0]);
	if (n == 2)
		fprintf(f, " %14s", h[1]);
	fputc('\n', f);
	if (e->heap_known) {
		reconcile_row(f, "live heap on resident pages", c, n, offsetof(struct analysis_reconcile, heap_live_resident), true);
		reconcile_row(f, "held by the allocator, not live (free, headers)", c, n,
			      offsetof(struct analysis_reconcile, allocator_free_resident), true);
	} else {
		reconcile_row(f, "the allocator's, live and free together", c, n,
			      offsetof(struct analysis_reconcile, allocator_resident), false);
	}
	reconcile_row(f, "mapped by the program outside the allocator", c, n,
		      offsetof(struct analysis_reconcile, outside_resident), false);
	reconcile_row(f, "thread stacks", c, n, offsetof(struct analysis_reconcile, thread_stacks), false);
	reconcile_row(f, "files' private pages (.data, .bss, relro)", c, n,
		      offsetof(struct analysis_reconcile, file_private), false);
	reconcile_row(f, "the rest (mapped before tracing: exec, -p)", c, n, offsetof(struct analysis_reconcile, other), false);
	reconcile_row(f, "= resident anonymous pages (pagemap)", c, n, offsetof(struct analysis_reconcile, resident_anon), false);
	reconcile_row(f, "  the kernel's RssAnon then", c, n, offsetof(struct analysis_reconcile, rss_anon), false);
	if (e->rss_file || e->rss_shmem) {
		reconcile_row(f, "beside it: files' pages (RssFile)", c, n, offsetof(struct analysis_reconcile, rss_file), false);
		reconcile_row(f, "          shared memory (RssShmem)", c, n, offsetof(struct analysis_reconcile, rss_shmem), false);
	}
	if (e->heap_known) {
		reconcile_row(f, "live heap then", c, n, offsetof(struct analysis_reconcile, heap_live), true);
		reconcile_row(f, "  of it not resident (never touched, swapped)", c, n,
			      offsetof(struct analysis_reconcile, heap_live_not_resident), true);
	}
	for (size_t i = 0; i < e->nsites && i < 5; i++) {
		const struct analysis_frame *fr = e->sites[i].site;

		fmt_bytes(h[0], sizeof(h[0]), e->sites[i].bytes);
		fprintf(f, "    %10s resident at the last, mapped at ", h[0]);
		print_where(f, fr, false, false);
	}
	if (!e->heap_known)
		fprintf(f, "  (the live heap does not split the allocator's part: %s)\n",
			analysis_heap_known(t) ? "blocks allocated before the recording began are not in the trace"
					       : "not every allocation was recorded");
	if (e->advice)
		fprintf(f, "  advice: %s\n", e->advice);
}

/* --rss: resident memory beside the live heap, at the start, the peak of
 * resident memory and the end. */
static void report_text__rss(FILE *f, const struct analysis *a)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct analysis_rss *rs = &t->rss;
	bool heap = analysis_heap_known(t);
	const struct analysis_rss_point *end = rs->npoints ? &rs->points[rs->npoints - 1] : NULL;
	char d[32];

	fprintf(f, "\nResident memory (--rss: %zu sample%s, every 100 ms, from /proc/PID/status)\n", rs->npoints,
		plural(rs->npoints));
	if (!rs->npoints) {
		fprintf(f, "  no sample: the process ended before its first\n");
		if (rs->traced_maps)
			rss_maps(f, &rs->maps);
		return;
	}
	fprintf(f, "  %-6s %12s %11s %11s %11s %11s  %s\n", "", "resident", "anon", "file", "shmem", "live heap", "at");
	rss_row(f, "first", &rs->points[0], heap);
	rss_row(f, "peak", &rs->points[rs->peak], heap);
	rss_row(f, "last", end, heap);
	if (rs->at_end.seen) {
		rss_reconcile(f, t);
	} else if (heap && end->anon > end->heap_bytes) {
		fmt_bytes(d, sizeof(d), end->anon - end->heap_bytes);
		fprintf(f, "  at the last sample, resident anonymous memory exceeds the live heap by %s: the\n"
			   "  allocator's free memory and overhead, thread stacks, memory mapped outside malloc\n", d);
	} else if (heap && end->heap_bytes > end->anon) {
		fmt_bytes(d, sizeof(d), end->heap_bytes - end->anon);
		fprintf(f, "  at the last sample, the live heap exceeds resident anonymous memory by %s: blocks\n"
			   "  allocated but never touched (or swapped out) are not resident\n", d);
	}
	rss_rollup(f, "start", &rs->start);
	rss_rollup(f, "end", &rs->end);
	if (rs->traced_maps)
		rss_maps(f, &rs->maps);
}

static void report_text__summary(FILE *f, const struct analysis *a)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct analysis_totals *tot = analysis__totals(a);
	char d[32];

	fprintf(f, "Summary\n");
	fprintf(f, "  %-17s %s\n", "command:", t->command ? t->command : "(unknown)");
	fprintf(f, "  %-17s %" PRId32 " (%s)\n", "pid:", t->pid, t->comm ? t->comm : "?");
	fmt_duration(d, sizeof(d), t->duration_ns);
	fprintf(f, "  %-17s %s%s\n", "duration:", d,
		t->target_exited ? " (until the target exited)" : "");
	if (t->stop_reason && !(t->end_flags & (TRACE_END_OOM_KILLED | TRACE_END_CRASHED))) /* else said first */
		fprintf(f, "  %s\n", t->stop_reason);
	if (t->preload)
		fprintf(f, "  %-17s in the process (record --preload)\n", "captured:");
	fprintf(f, "  %-17s %" PRIu64 " calls, ", "allocations:", tot->allocations);
	print_bytes(f, tot->allocated_bytes);
	fprintf(f, "\n  %-17s %" PRIu64 " calls\n", "frees:", tot->frees);
	if (t->budget.budget_ppm) {
		fprintf(f, "  %-17s %" PRIu64 " allocations", "temporary:", tot->temporary_allocations);
		if (tot->allocations)
			fprintf(f, " (%.1f%% of calls)", 100.0 * tot->temporary_allocations / tot->allocations);
		fprintf(f, "\n  %-17s not known with --budget\n", "peak:");
		fprintf(f, "  %-17s %" PRIu64 "\n", "dropped events:", tot->dropped_events);
		return;
	}
	fprintf(f, "  %-17s ", "peak:");
	print_bytes(f, tot->peak_bytes);
	fmt_duration(d, sizeof(d), tot->peak_time_ns);
	fprintf(f, " at %s\n", d);
	fprintf(f, "  %-17s %" PRIu64 " allocations, ", "leaked:", tot->leaked_allocations);
	print_bytes(f, tot->leaked_bytes);
	fprintf(f, "\n  %-17s %" PRIu64 " allocations", "temporary:", tot->temporary_allocations);
	if (tot->allocations)
		fprintf(f, " (%.1f%% of calls)",
			100.0 * tot->temporary_allocations / tot->allocations);
	fprintf(f, "\n  %-17s %" PRIu64 " (memory allocated before tracing began)\n",
		"unmatched frees:", tot->unmatched_frees);
	if (tot->internal_frees)
		fprintf(f, "  %-17s %" PRIu64 " (the allocator releasing memory it had cached, "
			   "e.g. at thread exit)\n", "internal frees:", tot->internal_frees);
	fprintf(f, "  %-17s %" PRIu64 "\n", "dropped events:", tot->dropped_events);
}

static uint64_t value_bytes(const struct analysis_figures *f)
{
	return f->allocated_bytes;
}

static uint64_t value_calls(const struct analysis_figures *f)
{
	return f->allocations;
}

static uint64_t value_peak(const struct analysis_figures *f)
{
	return f->peak_bytes;
}

static uint64_t value_leaked(const struct analysis_figures *f)
{
	return f->leaked_bytes;
}

static uint64_t value_temporary(const struct analysis_figures *f)
{
	return f->temporary_allocations;
}

static void describe_bytes(FILE *f, const struct analysis_figures *fig)
{
	print_bytes(f, fig->allocated_bytes);
	fprintf(f, " in %" PRIu64 " call%s\n", fig->allocations, plural(fig->allocations));
}

static void describe_calls(FILE *f, const struct analysis_figures *fig)
{
	fprintf(f, "%" PRIu64 " call%s, ", fig->allocations, plural(fig->allocations));
	print_bytes(f, fig->allocated_bytes);
	fputc('\n', f);
}

static void describe_peak(FILE *f, const struct analysis_figures *fig)
{
	print_bytes(f, fig->peak_bytes);
	fprintf(f, " live at the peak\n");
}

static void describe_leaked(FILE *f, const struct analysis_figures *fig)
{
	print_bytes(f, fig->leaked_bytes);
	fprintf(f, " leaked in %" PRIu64 " allocation%s\n", fig->leaked_allocations,
		plural(fig->leaked_allocations));
}

static void describe_temporary(FILE *f, const struct analysis_figures *fig)
{
	fprintf(f, "%" PRIu64 " of %" PRIu64 " allocations temporary\n",
		fig->temporary_allocations, fig->allocations);
}

static void columns_bytes(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	fmt_bytes(a, 32, fig->allocated_bytes);
	snprintf(b, cap, "%" PRIu64 " call%s", fig->allocations, plural(fig->allocations));
}

static void columns_calls(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	snprintf(a, 32, "%" PRIu64, fig->allocations);
	fmt_bytes(b, cap, fig->allocated_bytes);
}

static void columns_peak(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	fmt_bytes(a, 32, fig->peak_bytes);
	snprintf(b, cap, "live at the peak");
}

static void columns_leaked(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	fmt_bytes(a, 32, fig->leaked_bytes);
	snprintf(b, cap, "%" PRIu64 " block%s", fig->leaked_allocations, plural(fig->leaked_allocations));
}

static void columns_temporary(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	snprintf(a, 32, "%" PRIu64, fig->temporary_allocations);
	snprintf(b, cap, "of %" PRIu64 " calls", fig->allocations);
}

static uint64_t value_resident(const struct analysis_figures *f)
{
	return f->resident_bytes;
}

static void describe_resident(FILE *f, const struct analysis_figures *fig)
{
	print_bytes(f, fig->resident_bytes);
	fprintf(f, " resident at the last snapshot\n");
}

static void columns_resident(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	fmt_bytes(a, 32, fig->resident_bytes);
	snprintf(b, cap, "resident");
}

/* --rss: the live heap on resident pages at the last snapshot, by site. */
static const struct ranking resident = { "Top sites by resident bytes (live blocks on resident pages, --rss's last snapshot)",
					 value_resident, describe_resident, columns_resident, 0, 0 };

static const struct ranking rankings[] = {
	{ "Top sites by allocated bytes", value_bytes, describe_bytes, columns_bytes, 3, 1 },
	{ "Top sites by allocation calls", value_calls, describe_calls, columns_calls, 0, 0 },
	{ "Top sites by contribution to the peak", value_peak, describe_peak, columns_peak, 0, 0 },
	{ "Leaks (bytes still live at the end)", value_leaked, describe_leaked, columns_leaked, 3, 2 },
	{ "Temporary allocations (freed before their thread allocated again)", value_temporary,
	  describe_temporary, columns_temporary, 0, 0 },
};

/* --budget's leaks: what outlived its window's tail. */
static void describe_long_lived(FILE *f, const struct analysis_figures *fig)
{
	print_bytes(f, fig->leaked_bytes);
	fprintf(f, " long-lived in %" PRIu64 " allocation%s\n", fig->leaked_allocations,
		plural(fig->leaked_allocations));
}

static const struct ranking long_lived = { "Long-lived (outlived their window's tail: estimates, not leaks)",
					   value_leaked, describe_long_lived, columns_leaked, 3, 2 };

/* A death's last minute: the live heap's growth by site. */
static uint64_t value_grown(const struct analysis_figures *f)
{
	return f->recent_bytes > 0 ? (uint64_t)f->recent_bytes : 0;
}

static void describe_grown(FILE *f, const struct analysis_figures *fig)
{
	fprintf(f, "+");
	print_bytes(f, value_grown(fig));
	fprintf(f, " live in %+" PRId64 " block%s\n", fig->recent_allocations, plural((uint64_t)llabs(fig->recent_allocations)));
}

static void columns_grown(const struct analysis_figures *fig, char *a, char *b, size_t cap)
{
	a[0] = '+';
	fmt_bytes(a + 1, 31, value_grown(fig));
	snprintf(b, cap, "%+" PRId64 " block%s", fig->recent_allocations, plural((uint64_t)llabs(fig->recent_allocations)));
}

static const struct ranking grown = { NULL, value_grown, describe_grown, columns_grown, 1, 1 };

static void print_frame(FILE *f, size_t i, const struct analysis_frame *fr)
{
	const char *base;

	fprintf(f, "        #%-2zu ", i);
	if (!fr->function) {
		base = fr->module ? strrchr(fr->module, '/') : NULL;
		base = base ? base + 1 : fr->module;
		if (base)
			fprintf(f, "%s+0x%" PRIx64 "\n", base, fr->module_offset);
		else
			fprintf(f, "0x%" PRIx64 "\n", fr->address);
		return;
	}
	fprintf(f, "%s%s", fr->function, fr->inlined ? " (inlined)" : "");
	if (fr->file)
		fprintf(f, "  %s:%" PRIu32, fr->file, fr->line);
	fputc('\n', f);
}

static void print_stack(FILE *f, const struct analysis_stack *s, const struct ranking *r,
			bool several)
{
	size_t i, n = s->nframes < STACK_LINES_MAX ? s->nframes : STACK_LINES_MAX;

	if (several) {
		fprintf(f, "      stack: ");
		r->describe(f, &s->figures);
	}
	for (i = 0; i < n; i++)
		print_frame(f, i, &s->frames[i]);
	if (n < s->nframes)
		fprintf(f, "        ... %zu more frames (see --json)\n", s->nframes - n);
}

/* The site's stacks that count for R, largest first, up to R->stacks. */
static void print_site_stacks(FILE *f, const struct analysis_site *site, const struct ranking *r)
{
	const struct analysis_stack *best[4] = { NULL };
	unsigned int max = r->stacks < 4 ? r->stacks : 4, n = 0, k;
	size_t i, more = 0;

	/* Insertion into a tiny top-N array: sites rarely have many stacks
	 * that matter, and this needs no allocation. */
	for (i = 0; i < site->nstacks; i++) {
		const struct analysis_stack *s = site->stacks[i];

		if (!r->value(&s->figures))
			continue;
		if (n == max && r->value(&s->figures) <= r->value(&best[n - 1]->figures)) {
			more++;
			continue;
		}
		if (n == max)
			more++;
		k = n < max ? n++ : n - 1;
		for (; k > 0 && r->value(&best[k - 1]->figures) < r->value(&s->figures); k--)
			best[k] = best[k - 1];
		best[k] = s;
	}
	for (k = 0; k < n; k++)
		print_stack(f, best[k], r, n > 1 || more);
	if (more)
		fprintf(f, "      ... and %zu more stacks\n", more);
}

static void print_site(FILE *f, unsigned int rank, const struct analysis_site *s,
		       const struct ranking *r)
{
	const char *module = s->module ? strrchr(s->module, '/') : NULL;
	char first[32], second[48];

	r->columns(&s->figures, first, second, sizeof(second));
	fprintf(f, "  %3u. %10s  %-14s %s", rank, first, second, s->name);
	if (s->file)
		fprintf(f, "  %s:%" PRIu32, s->file, s->line);
	if (module)
		fprintf(f, "  [%s]", module + 1);
	fputc('\n', f);
	if (rank <= r->stack_sites)
		print_site_stacks(f, s, r);
}

static int rank_cmp(const void *px, const void *py, void *arg)
{
	const struct analysis_site *x = *(const struct analysis_site *const *)px;
	const struct analysis_site *y = *(const struct analysis_site *const *)py;
	const struct ranking *r = arg;
	uint64_t vx = r->value(&x->figures), vy = r->value(&y->figures);

	if (vx != vy)
		return vx > vy ? -1 : 1;
	if (x->figures.allocated_bytes != y->figures.allocated_bytes)
		return x->figures.allocated_bytes > y->figures.allocated_bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* BY has room for every site. */
static void report_text__ranking(FILE *f, const struct analysis *a, const struct ranking *r,
				 unsigned int top, const struct analysis_site **by)
{
	const struct analysis_site *sites;
	size_t nsites, n = 0, i;

	sites = analysis__sites(a, &nsites);
	for (i = 0; i < nsites; i++)
		if (r->value(&sites[i].figures))
			by[n++] = &sites[i];
	qsort_r(by, n, sizeof(*by), rank_cmp, (void *)r);

	if (r->title)
		fprintf(f, "\n%s\n", r->title);
	if (!n)
		fprintf(f, "  (none)\n");
	for (i = 0; i < n && i < top; i++)
		print_site(f, (unsigned int)i + 1, by[i], r);
	if (n > top)
		fprintf(f, "  ... %zu more sites (--top N shows more)\n", n - top);
}

/* ---- in-process marks: shown only when the trace has them ---- */

#define SPARK_COLUMNS 64

static void report_text__zones(FILE *f, const struct marks *m, unsigned int top)
{
	const struct marks_zone *z;
	char t[32], b[32], ib[32], pk[32], lk[32];
	uint64_t unmatched = 0, open = 0;
	size_t n, i;

	z = marks__zones(m, &n);
	if (!n)
		return;
	fprintf(f, "\nZones (exclusive: made while the zone was its thread's innermost; "
		   "inclusive: nested zones too)\n");
	fprintf(f, "  %-24s %8s %12s %8s %10s %8s %10s %10s %10s\n", "zone", "entered", "time",
		"allocs", "bytes", "incl", "incl bytes", "peak", "leaked");
	for (i = 0; i < n && i < top; i++) {
		fmt_duration(t, sizeof(t), z[i].time_ns);
		fmt_bytes(b, sizeof(b), z[i].allocated_bytes);
		fmt_bytes(ib, sizeof(ib), z[i].inclusive_allocated_bytes);
		fmt_bytes(pk, sizeof(pk), z[i].peak_bytes);
		fmt_bytes(lk, sizeof(lk), z[i].leaked_bytes);
		fprintf(f, "  %-24s %8" PRIu64 " %12s %8" PRIu64 " %10s %8" PRIu64 " %10s %10s %10s\n",
			z[i].name, z[i].count, t, z[i].allocations, b, z[i].inclusive_allocations, ib,
			pk, lk);
	}
	if (n > top)
		fprintf(f, "  ... %zu more zones (--top N shows more)\n", n - top);
	for (i = 0; i < n; i++) {
		unmatched += z[i].unmatched_ends;
		open += z[i].open_at_end;
	}
	if (open)
		fprintf(f, "  %" PRIu64 " zone%s still open at the end: timed until then\n", open,
			plural(open));
	if (unmatched)
		fprintf(f, "  %" PRIu64 " zone end%s without an open zone of that name: ignored\n",
			unmatched, plural(unmatched));
}

/* Allocated bytes per frame in one line: each column is the largest frame
 * of its share of the frames. */
static void print_sparkline(FILE *f, const struct marks_frame *fr, size_t n)
{
	static const char *const levels[] = { " ", "\u2581", "\u2582", "\u2583", "\u2584",
					       "\u2585", "\u2586", "\u2587", "\u2588" };
	size_t cols = n < SPARK_COLUMNS ? n : SPARK_COLUMNS, c, i;
	uint64_t max = 0, col;

	for (i = 0; i < n; i++)
		if (fr[i].allocated_bytes > max)
			max = fr[i].allocated_bytes;
	fprintf(f, "  bytes per frame%s: |", n > cols ? " (each column: the largest of its frames)" : "");
	for (c = 0; c < cols; c++) {
		col = 0;
		for (i = c * n / cols; i < (c + 1) * n / cols; i++)
			if (fr[i].allocated_bytes > col)
				col = fr[i].allocated_bytes;
		/* Any allocation shows: only an empty frame is blank. */
		fputs(levels[col ? 1 + (int)((double)col * 7 / (double)max) : 0], f);
	}
	fprintf(f, "|\n");
}

static void print_top_frame(FILE *f, unsigned int rank, const struct marks_top_frame *t)
{
	char b[32], d[32], e[32];
	size_t i;

	fmt_bytes(b, sizeof(b), t->frame->allocated_bytes);
	fmt_duration(d, sizeof(d), t->frame->duration_ns);
	fmt_duration(e, sizeof(e), t->frame->end_ns);
	fprintf(f, "  %3u. frame %-6zu %10s  %" PRIu64 " call%s  %s long, ended at %s%s%s\n", rank,
		t->index, b, t->frame->allocations, plural(t->frame->allocations), d, e,
		t->frame->name ? ", " : "", t->frame->name ? t->frame->name : "");
	for (i = 0; i < t->nsites; i++) {
		const struct marks_frame_site *s = &t->sites[i];

		fmt_bytes(b, sizeof(b), s->allocated_bytes);
		snprintf(d, sizeof(d), "%" PRIu64 " call%s", s->allocations, plural(s->allocations));
		fprintf(f, "        %10s  %-14s %s", b, d, s->site->name);
		if (s->site->file)
			fprintf(f, "  %s:%" PRIu32, s->site->file, s->site->line);
		fputc('\n', f);
	}
}

static void report_text__frames(FILE *f, const struct marks *m, unsigned int top)
{
	const struct marks_totals *tot = marks__totals(m);
	const struct marks_top_frame *tf;
	const struct marks_frame *fr;
	uint64_t bytes = 0, allocs = 0;
	size_t n, ntop, i;
	char b[32];

	fr = marks__frames(m, &n);
	if (!n)
		return;
	for (i = 0; i < n; i++) {
		bytes += fr[i].allocated_bytes;
		allocs += fr[i].allocations;
	}
	fmt_bytes(b, sizeof(b), bytes / n);
	fprintf(f, "\nFrames: %zu (frame i ends at frame mark i), on average %" PRIu64
		   " allocations and %s per frame\n", n, allocs / n, b);
	print_sparkline(f, fr, n);
	if (tot->tail_allocations) {
		fmt_bytes(b, sizeof(b), tot->tail_allocated_bytes);
		fprintf(f, "  after the last mark (in no frame): %" PRIu64 " allocations, %s\n",
			tot->tail_allocations, b);
	}
	tf = marks__top_frames(m, &ntop);
	fprintf(f, "\nFrames that allocated most, with their top sites\n");
	if (!ntop)
		fprintf(f, "  (none)\n");
	for (i = 0; i < ntop && i < top; i++)
		print_top_frame(f, (unsigned int)i + 1, &tf[i]);
}

static void report_text__pools(FILE *f, const struct marks *m, unsigned int top)
{
	const struct marks_pool *p;
	char b[32], pk[32], lk[32];
	size_t n, i;

	p = marks__pools(m, &n);
	if (!n)
		return;
	fprintf(f, "\nPools (MEMTRACE_ALLOC/FREE/POOL_RESET; not counted as heap allocations)\n");
	fprintf(f, "  %-24s %8s %10s %10s %10s %8s %6s %9s\n", "pool", "allocs", "bytes", "peak",
		"leaked", "blocks", "resets", "unmatched");
	for (i = 0; i < n && i < top; i++) {
		fmt_bytes(b, sizeof(b), p[i].allocated_bytes);
		fmt_bytes(pk, sizeof(pk), p[i].peak_bytes);
		fmt_bytes(lk, sizeof(lk), p[i].leaked_bytes);
		fprintf(f, "  %-24s %8" PRIu64 " %10s %10s %10s %8" PRIu64 " %6" PRIu64 " %9" PRIu64 "\n",
			p[i].name, p[i].allocations, b, pk, lk, p[i].leaked_allocations, p[i].resets,
			p[i].unmatched_frees);
	}
	if (n > top)
		fprintf(f, "  ... %zu more pools (--top N shows more)\n", n - top);
}

static void report_text__threads(FILE *f, const struct marks *m)
{
	const struct marks_thread *t;
	size_t n, i;

	t = marks__threads(m, &n);
	if (!n)
		return;
	fprintf(f, "\nThreads named:");
	for (i = 0; i < n; i++)
		fprintf(f, "%s %" PRIu32 " %s", i ? "," : "", t[i].tid, t[i].name);
	fputc('\n', f);
}

static void report_text__marks(FILE *f, const struct analysis *a, unsigned int top)
{
	const struct marks *m = analysis__marks(a);

	report_text__zones(f, m, top);
	report_text__frames(f, m, top);
	report_text__pools(f, m, top);
	report_text__threads(f, m);
}

#define DEATH_RSS_ROWS 12 /* the RSS series up to a death, thinned to this many rows */

/* --rss: resident memory over the last minute up to the death, at most
 * DEATH_RSS_ROWS rows evenly spread, the last always among them. */
static void death_rss(FILE *f, const struct analysis_trace *t, bool heap)
{
	const struct analysis_rss *rs = &t->rss;
	size_t first = 0, n;
	char c[4][32], when[32];

	while (first < rs->npoints && rs->points[first].time_ns < t->recent_from_ns)
		first++;
	n = rs->npoints - first;
	if (!n)
		return;
	fprintf(f, "  resident memory up to the end (--rss: %zu samples in the last minute%s):\n", n,
		n > DEATH_RSS_ROWS ? ", some shown" : "");
	fprintf(f, "    %10s %11s %11s %11s\n", "before end", "resident", "anon", heap ? "live heap" : "");
	for (size_t k = 0; k < n; k++) {
		const struct analysis_rss_point *p = &rs->points[first + k];

		/* row k is shown when it starts a new share of the N, or is the last */
		if (k + 1 < n && k * DEATH_RSS_ROWS / n == (k + 1) * DEATH_RSS_ROWS / n)
			continue;
		fmt_duration(when, sizeof(when), t->duration_ns > p->time_ns ? t->duration_ns - p->time_ns : 0);
		fmt_bytes(c[0], sizeof(c[0]), p->anon + p->file + p->shmem);
		fmt_bytes(c[1], sizeof(c[1]), p->anon);
		fmt_bytes(c[2], sizeof(c[2]), p->heap_bytes);
		fprintf(f, "    %10s %11s %11s %11s\n", when, c[0], c[1], heap ? c[2] : "");
	}
}

/* A trace that ended in an OOM kill or a crash leads with what grew in its
 * last minute: the limit hit, the live heap's growth by site, what was
 * first written (--rss), resident memory up to the end. */
static void report_text__death(FILE *f, const struct analysis *a, unsigned int top, const struct analysis_site **by)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct analysis_maps *mp = &t->rss.maps;
	bool estimated = !analysis_heap_known(t);
	char from[32], to[32];

	fmt_duration(from, sizeof(from), t->recent_from_ns);
	fmt_duration(to, sizeof(to), t->duration_ns);
	fprintf(f, "%s: what grew in its last minute (", t->end_flags & TRACE_END_OOM_KILLED ? "OOM-killed" : "Crashed");
	if (t->recent_from_ns)
		fprintf(f, "the trace's %s to %s)\n", from, to);
	else
		fprintf(f, "the whole trace, %s)\n", to);
	if (t->stop_reason)
		fprintf(f, "  %s\n", t->stop_reason);
	if (t->end_flags & TRACE_END_OOM_KILLED) {
		fprintf(f, "  limit hit:        ");
		if (t->memory_limit) {
			bool host = t->memory_limit_of && !strcmp(t->memory_limit_of, "host");

			print_bytes(f, t->memory_limit);
			fprintf(f, ", %s%s\n", host ? "the host's memory (MemTotal)" : "memory cgroup ",
				host ? "" : t->memory_limit_of ? t->memory_limit_of : "?");
		} else {
			fprintf(f, "not known\n");
		}
	}
	if (!t->no_heap) {
		fprintf(f, "  live heap grown in the last minute, by site%s:\n",
			estimated ? " (estimates: allocated less freed, as the trace's figures are)" : " (allocated less freed)");
		report_text__ranking(f, a, &grown, top, by);
	}
	if (mp->nrecent_fault_sites) {
		fprintf(f, "  first written in the last minute (--rss: write faults, 1 in %d sampled): ~", MT_FAULT_EVERY);
		print_bytes(f, mp->recent_fault_bytes);
		fprintf(f, ", by the site of the writing code:\n");
		for (size_t i = 0; i < mp->nrecent_fault_sites && i < top; i++) {
			char b[32];

			fmt_bytes(b, sizeof(b), mp->recent_fault_sites[i].bytes);
			fprintf(f, "  %3zu. %10s  ", i + 1, b);
			print_where(f, mp->recent_fault_sites[i].site, true, true);
		}
		if (mp->nrecent_fault_sites > top)
			fprintf(f, "  ... %zu more sites (--top N shows more)\n", mp->nrecent_fault_sites - top);
	}
	death_rss(f, t, analysis_heap_known(t));
	fputc('\n', f);
}

int report_text__write(FILE *f, const struct analysis *a, const struct report_options *opts)
{
	const struct analysis_site **by;
	unsigned int top = opts && opts->top ? opts->top : REPORT_DEFAULT_TOP;
	size_t nsites, i;

	analysis__sites(a, &nsites);
	by = malloc((nsites ? nsites : 1) * sizeof(*by));
	if (!by)
		return -ENOMEM;
	report_text__warnings(f, a);
	if (analysis__trace(a)->end_flags & (TRACE_END_OOM_KILLED | TRACE_END_CRASHED))
		report_text__death(f, a, top, by);
	report_text__summary(f, a);
	if (analysis__wrapper_candidate(a))
		fprintf(f, "\n%s looks like an allocation wrapper: try --alloc-fn '%s*'\n",
			analysis__wrapper_candidate(a), analysis__wrapper_candidate(a));
	if (analysis__trace(a)->budget.budget_ppm)
		report_text__budget(f, a);
	if (analysis__trace(a)->rss.npoints || analysis__trace(a)->rss.traced_maps)
		report_text__rss(f, a);
	for (i = 0; i < sizeof(rankings) / sizeof(rankings[0]); i++) {
		const struct ranking *r = &rankings[i];

		if (analysis__trace(a)->budget.budget_ppm && r->value == value_peak)
			continue; /* not known */
		if (analysis__trace(a)->budget.budget_ppm && r->value == value_leaked)
			r = &long_lived;
		report_text__ranking(f, a, r, top, by);
		if (r->value == value_peak && analysis__trace(a)->rss.at_end.heap_known)
			report_text__ranking(f, a, &resident, top, by);
	}
	report_text__marks(f, a, top);
	free(by);
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}
