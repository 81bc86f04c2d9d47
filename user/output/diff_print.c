// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The JSON scripts read and the table people read, of one struct diff. */
#include "diff_print.h"
#include "json_out.h"
#include "report.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

/* KEY: {"a": A, "b": B, "delta": B - A}, on one line. */
static void json_metric(struct json_out *j, const char *key, uint64_t a, uint64_t b)
{
	json_out__key(j, key);
	json_out__begin_object(j, true);
	json_out__key(j, "a");
	json_out__u64(j, a);
	json_out__key(j, "b");
	json_out__u64(j, b);
	json_out__key(j, "delta");
	json_out__i64(j, diff_delta(a, b));
	json_out__end_object(j);
}

static void diff_print__json_totals(struct json_out *j, const struct analysis_totals *a,
				    const struct analysis_totals *b)
{
	json_out__key(j, "totals");
	json_out__begin_object(j, false);
	json_metric(j, "allocations", a->allocations, b->allocations);
	json_metric(j, "frees", a->frees, b->frees);
	json_metric(j, "allocated_bytes", a->allocated_bytes, b->allocated_bytes);
	json_metric(j, "peak_bytes", a->peak_bytes, b->peak_bytes);
	json_metric(j, "peak_time_ns", a->peak_time_ns, b->peak_time_ns);
	json_metric(j, "leaked_allocations", a->leaked_allocations, b->leaked_allocations);
	json_metric(j, "leaked_bytes", a->leaked_bytes, b->leaked_bytes);
	json_metric(j, "temporary_allocations", a->temporary_allocations, b->temporary_allocations);
	json_metric(j, "unmatched_frees", a->unmatched_frees, b->unmatched_frees);
	json_metric(j, "internal_frees", a->internal_frees, b->internal_frees);
	json_metric(j, "dropped_events", a->dropped_events, b->dropped_events);
	json_out__end_object(j);
}

/* Key "rss": both sides' --rss figures, or null unless both were recorded with it. */
static void diff_print__json_rss(struct json_out *j, const struct diff_rss *a, const struct diff_rss *b)
{
	json_out__key(j, "rss");
	if (!a->has || !b->has) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_metric(j, "peak_resident_bytes", a->peak_resident, b->peak_resident);
	json_metric(j, "last_resident_bytes", a->last_resident, b->last_resident);
	json_metric(j, "peak_anon_bytes", a->peak_anon, b->peak_anon);
	json_metric(j, "last_anon_bytes", a->last_anon, b->last_anon);
	/* resident anonymous memory added up at each side's last snapshot */
	json_out__key(j, "reconciled_last");
	if (!a->reconciled || !b->reconciled) {
		json_out__null(j);
	} else {
		json_out__begin_object(j, false);
		json_metric(j, "allocator_resident_bytes", a->allocator_resident, b->allocator_resident);
		json_metric(j, "outside_resident_bytes", a->outside_resident, b->outside_resident);
		json_metric(j, "thread_stacks_bytes", a->thread_stacks, b->thread_stacks);
		if (a->heap_known && b->heap_known) {
			json_metric(j, "allocator_free_resident_bytes", a->allocator_free_resident, b->allocator_free_resident);
			json_metric(j, "heap_live_not_resident_bytes", a->heap_live_not_resident, b->heap_live_not_resident);
		} else {
			json_out__key(j, "allocator_free_resident_bytes");
			json_out__null(j);
			json_out__key(j, "heap_live_not_resident_bytes");
			json_out__null(j);
		}
		json_out__end_object(j);
	}
	/* what glibc's own allocator probes said, where both sides had them */
	json_out__key(j, "glibc");
	if (!a->glibc || !b->glibc) {
		json_out__null(j);
	} else {
		json_out__begin_object(j, false);
		json_metric(j, "arenas_new", a->arenas_new, b->arenas_new);
		json_metric(j, "heap_grown_bytes", a->heap_grown_bytes, b->heap_grown_bytes);
		json_metric(j, "sbrk_more_bytes", a->sbrk_more_bytes, b->sbrk_more_bytes);
		json_metric(j, "sbrk_less_bytes", a->sbrk_less_bytes, b->sbrk_less_bytes);
		json_metric(j, "retries", a->retries, b->retries);
		json_out__end_object(j);
	}
	json_out__end_object(j);
}

static void diff_print__json_site(struct json_out *j, const struct diff_site *s)
{
	const struct analysis_figures *a = &s->a, *b = &s->b;

	json_out__begin_object(j, false);
	report_json__site_keys(j, s->name, s->function, s->file, s->line, s->module);
	json_metric(j, "allocations", a->allocations, b->allocations);
	json_metric(j, "allocated_bytes", a->allocated_bytes, b->allocated_bytes);
	json_metric(j, "peak_bytes", a->peak_bytes, b->peak_bytes);
	json_metric(j, "leaked_allocations", a->leaked_allocations, b->leaked_allocations);
	json_metric(j, "leaked_bytes", a->leaked_bytes, b->leaked_bytes);
	json_metric(j, "temporary_allocations", a->temporary_allocations, b->temporary_allocations);
	json_metric(j, "resident_bytes", a->resident_bytes, b->resident_bytes);
	json_out__end_object(j);
}

int diff_print__json(FILE *f, const struct diff *d)
{
	struct json_out j;

	json_out__init(&j, f);
	json_out__begin_object(&j, false);
	json_out__key_u64(&j, "format", MEMTRACE_JSON_FORMAT);
	diff_print__json_totals(&j, &d->a, &d->b);
	diff_print__json_rss(&j, &d->rss_a, &d->rss_b);
	json_out__key(&j, "sites");
	json_out__begin_array(&j, false);
	for (size_t i = 0; i < d->nsites; i++)
		diff_print__json_site(&j, &d->sites[i]);
	json_out__end_array(&j);
	json_out__end_object(&j);
	return json_out__finish(&j);
}

/* "+3.9 KiB", "-100 B", "0 B" */
static void format_delta_bytes(int64_t d, char *buf, size_t cap)
{
	char abs[24]; /* "18446744073709551615 B" fits */

	format_bytes(d < 0 ? -(uint64_t)d : (uint64_t)d, abs, sizeof(abs));
	snprintf(buf, cap, "%s%s", d > 0 ? "+" : d < 0 ? "-" : "", abs);
}

/* "+4", "-2", "0" */
static void format_delta_count(int64_t d, char *buf, size_t cap)
{
	snprintf(buf, cap, d ? "%+" PRId64 : "0", d);
}

/* The change relative to A: "+12.5%", "new" (from 0), "-" (0 to 0). */
static void format_percent(uint64_t a, uint64_t b, char *buf, size_t cap)
{
	if (!a)
		snprintf(buf, cap, "%s", b ? "new" : "-");
	else
		snprintf(buf, cap, "%+.1f%%", ((double)b - (double)a) * 100.0 / (double)a);
}

static void text_total(FILE *f, const char *label, uint64_t a, uint64_t b, bool bytes)
{
	char sa[32], sb[32], sd[32], pct[32];

	if (bytes) {
		format_bytes(a, sa, sizeof(sa));
		format_bytes(b, sb, sizeof(sb));
		format_delta_bytes(diff_delta(a, b), sd, sizeof(sd));
	} else {
		snprintf(sa, sizeof(sa), "%" PRIu64, a);
		snprintf(sb, sizeof(sb), "%" PRIu64, b);
		format_delta_count(diff_delta(a, b), sd, sizeof(sd));
	}
	format_percent(a, b, pct, sizeof(pct));
	fprintf(f, "  %-22s %12s %12s %12s %9s\n", label, sa, sb, sd, pct);
}

static void diff_print__text_totals(FILE *f, const struct analysis_totals *a,
				    const struct analysis_totals *b)
{
	fprintf(f, "Totals                           base          new       change\n");
	text_total(f, "allocations", a->allocations, b->allocations, false);
	text_total(f, "frees", a->frees, b->frees, false);
	text_total(f, "allocated bytes", a->allocated_bytes, b->allocated_bytes, true);
	text_total(f, "peak bytes", a->peak_bytes, b->peak_bytes, true);
	text_total(f, "leaked allocations", a->leaked_allocations, b->leaked_allocations, false);
	text_total(f, "leaked bytes", a->leaked_bytes, b->leaked_bytes, true);
	text_total(f, "temporary allocations", a->temporary_allocations, b->temporary_allocations,
		   false);
	text_total(f, "unmatched frees", a->unmatched_frees, b->unmatched_frees, false);
	text_total(f, "dropped events", a->dropped_events, b->dropped_events, false);
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void diff_print__text_site(FILE *f, const struct diff_site *s)
{
	char alloc[32], pct[32], leaked[32], peak[32], calls[32];

	format_delta_bytes(diff_delta(s->a.allocated_bytes, s->b.allocated_bytes), alloc,
			   sizeof(alloc));
	format_percent(s->a.allocated_bytes, s->b.allocated_bytes, pct, sizeof(pct));
	format_delta_bytes(diff_delta(s->a.leaked_bytes, s->b.leaked_bytes), leaked, sizeof(leaked));
	format_delta_bytes(diff_delta(s->a.peak_bytes, s->b.peak_bytes), peak, sizeof(peak));
	format_delta_count(diff_delta(s->a.allocations, s->b.allocations), calls, sizeof(calls));
	fprintf(f, "  %11s %8s  %11s  %11s  %7s  %s", alloc, pct, leaked, peak, calls, s->name);
	if (s->file)
		fprintf(f, "  %s:%u", s->file, s->line);
	if (s->function && s->module)
		fprintf(f, "  [%s]", basename_of(s->module));
	fputc('\n', f);
}

static const char site_header[] =
	"    allocated   change       leaked         peak    calls  site\n";

int diff_print__text(FILE *f, const struct diff *d, const char *base, const char *new_,
		     unsigned int top)
{
	size_t grew = 0, shrank = 0, i;

	fprintf(f, "base: %s\nnew:  %s\n\n", base, new_);
	diff_print__text_totals(f, &d->a, &d->b);
	if (d->rss_a.has && d->rss_b.has) {
		text_total(f, "resident at its peak", d->rss_a.peak_resident, d->rss_b.peak_resident, true);
		text_total(f, "resident at the end", d->rss_a.last_resident, d->rss_b.last_resident, true);
		text_total(f, "anon at its peak", d->rss_a.peak_anon, d->rss_b.peak_anon, true);
		text_total(f, "anon at the end", d->rss_a.last_anon, d->rss_b.last_anon, true);
		if (d->rss_a.reconciled && d->rss_b.reconciled) {
			text_total(f, "allocator resident", d->rss_a.allocator_resident, d->rss_b.allocator_resident, true);
			if (d->rss_a.heap_known && d->rss_b.heap_known)
				text_total(f, "  of it free", d->rss_a.allocator_free_resident,
					   d->rss_b.allocator_free_resident, true);
			text_total(f, "outside allocator", d->rss_a.outside_resident, d->rss_b.outside_resident,
				   true);
		}
		if (d->rss_a.glibc && d->rss_b.glibc) {
			text_total(f, "glibc arenas made", d->rss_a.arenas_new, d->rss_b.arenas_new, false);
			text_total(f, "glibc heap grown by brk", d->rss_a.sbrk_more_bytes, d->rss_b.sbrk_more_bytes, true);
			text_total(f, "glibc heap trimmed", d->rss_a.sbrk_less_bytes, d->rss_b.sbrk_less_bytes, true);
		}
	} else if (d->rss_a.has || d->rss_b.has) {
		fprintf(f, "  (only the %s trace was recorded with --rss: resident memory is not compared)\n",
			d->rss_a.has ? "base" : "new");
	}
	while (grew < d->nsites && diff_site__growth(&d->sites[grew]) > 0)
		grew++;
	while (shrank < d->nsites - grew && diff_site__growth(&d->sites[d->nsites - 1 - shrank]) < 0)
		shrank++;
	fprintf(f, "\nSites that grew: %zu of %zu", grew, d->nsites);
	if (grew > top)
		fprintf(f, " (top %u; --top N shows more)", top);
	fprintf(f, "\n%s", grew ? site_header : "");
	for (i = 0; i < grew && i < top; i++)
		diff_print__text_site(f, &d->sites[i]);
	fprintf(f, "\nSites that shrank: %zu of %zu", shrank, d->nsites);
	if (shrank > top)
		fprintf(f, " (top %u; --top N shows more)", top);
	fprintf(f, "\n%s", shrank ? site_header : "");
	for (i = 0; i < shrank && i < top; i++)
		diff_print__text_site(f, &d->sites[d->nsites - 1 - i]);
	return fflush(f) || ferror(f) ? -EIO : 0;
}
