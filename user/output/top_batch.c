// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* memtrace top --batch: a text block or a JSON line per interval (top.h). */
#include "top.h"
#include "json_out.h"
#include "report.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int rate_cmp(uint64_t x, uint64_t y)
{
	return x > y ? -1 : x < y;
}

static enum top_sort sort_by;

static int row_cmp(const void *px, const void *py)
{
	const struct top_row *x = px, *y = py;
	const struct analysis_figures *fx = &x->site->figures, *fy = &y->site->figures;
	int c = 0;

	switch (sort_by) {
	case TOP_SORT_LIVE_BYTES: c = rate_cmp(fx->leaked_bytes, fy->leaked_bytes); break;
	case TOP_SORT_LIVE_ALLOCS: c = rate_cmp(fx->leaked_allocations, fy->leaked_allocations); break;
	case TOP_SORT_ALLOCATED: c = rate_cmp(fx->allocated_bytes, fy->allocated_bytes); break;
	case TOP_SORT_ALLOCATIONS: c = rate_cmp(fx->allocations, fy->allocations); break;
	case TOP_SORT_RATE: c = rate_cmp(x->bytes_per_s, y->bytes_per_s); break;
	default: break;
	}
	if (!c)
		c = rate_cmp(fx->leaked_bytes, fy->leaked_bytes);
	if (!c)
		c = rate_cmp(fx->allocated_bytes, fy->allocated_bytes);
	return c ? c : strcmp(x->site->name, y->site->name);
}

void top_rows__sort(struct top_row *rows, size_t n, enum top_sort sort)
{
	sort_by = sort;
	qsort(rows, n, sizeof(*rows), row_cmp);
}

static bool contains(const char *hay, const char *needle)
{
	return hay && strcasestr(hay, needle);
}

bool top_row__matches(const struct top_row *row, const char *search)
{
	const struct analysis_site *s = row->site;

	return !search[0] || contains(s->name, search) || contains(s->file, search) ||
	       contains(s->module, search);
}

static const char *base_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

int top_batch__text(FILE *f, const struct top_snapshot *s, size_t top)
{
	char live[32], change[32], rate[32];

	format_bytes(s->live_bytes, live, sizeof(live));
	format_bytes((uint64_t)(s->live_change < 0 ? -s->live_change : s->live_change), change,
		     sizeof(change));
	format_bytes(s->bytes_per_s, rate, sizeof(rate));
	fprintf(f, "memtrace top: PID %d (%s), %.1f s: live %s (%s%s) in %" PRIu64
		   " blocks, %" PRIu64 " allocations/s, %s/s, %" PRIu64 " dropped%s\n",
		s->pid, s->comm ? s->comm : "?", s->elapsed_ns / 1e9, live, s->live_change < 0 ? "-" : "+",
		change, s->live_allocations, s->allocs_per_s, rate, s->dropped,
		s->target_exited ? ", target exited" : "");
	if (s->budget)
		fprintf(f, "  --budget %g%%: %" PRIu64 " windows, allocations traced %.2f%% of the time; estimates, "
			   "live = outlived its window's tail\n",
			(double)s->budget->budget_ppm / 1e4, s->budget->windows,
			s->elapsed_ns ? 100.0 * (double)s->budget->live_ns / (double)s->elapsed_ns : 0.0);
	if (s->rss) {
		char res[32], anon[32], file[32];

		format_bytes(s->rss->anon + s->rss->file + s->rss->shmem, res, sizeof(res));
		format_bytes(s->rss->anon, anon, sizeof(anon));
		format_bytes(s->rss->file, file, sizeof(file));
		fprintf(f, "  --rss: resident %s: anon %s, file %s\n", res, anon, file);
	}
	fprintf(f, "  %12s %11s %12s %12s  %s\n", "LIVE BYTES", "LIVE ALLOCS", "ALLOCATED", "BYTES/S",
		"SITE");
	for (size_t i = 0; i < s->nrows && i < top; i++) {
		const struct analysis_site *site = s->rows[i].site;

		fprintf(f, "  %12" PRIu64 " %11" PRIu64 " %12" PRIu64 " %12" PRIu64 "  %s", site->figures.leaked_bytes,
			site->figures.leaked_allocations, site->figures.allocated_bytes,
			s->rows[i].bytes_per_s, site->name);
		if (site->file)
			fprintf(f, "  %s:%u", site->file, site->line);
		if (site->module)
			fprintf(f, "  [%s]", base_of(site->module));
		fputc('\n', f);
	}
	fputc('\n', f);
	return fflush(f) || ferror(f) ? -EIO : 0;
}

int top_batch__json(FILE *f, const struct top_snapshot *s, size_t top)
{
	struct json_out j;

	json_out__init(&j, f);
	json_out__begin_object(&j, true);
	json_out__key_u64(&j, "format", MEMTRACE_JSON_FORMAT);
	json_out__key_u64(&j, "time_ns", s->elapsed_ns);
	json_out__key(&j, "pid");
	json_out__i64(&j, s->pid);
	json_out__key(&j, "target_exited");
	json_out__bool(&j, s->target_exited);
	json_out__key(&j, "budget");
	if (s->budget) {
		json_out__begin_object(&j, true);
		json_out__key_u64(&j, "budget_ppm", s->budget->budget_ppm);
		json_out__key_u64(&j, "windows", s->budget->windows);
		json_out__key_u64(&j, "live_ns", s->budget->live_ns);
		json_out__end_object(&j);
	} else {
		json_out__null(&j);
	}
	if (s->rss) {
		report_json__rss_point(&j, "rss", s->rss);
	} else {
		json_out__key(&j, "rss");
		json_out__null(&j);
	}
	json_out__key(&j, "totals");
	json_out__begin_object(&j, true);
	json_out__key_u64(&j, "live_bytes", s->live_bytes);
	json_out__key_u64(&j, "live_allocations", s->live_allocations);
	json_out__key_u64(&j, "allocations", s->allocations);
	json_out__key_u64(&j, "allocated_bytes", s->allocated_bytes);
	json_out__key_u64(&j, "allocations_per_second", s->allocs_per_s);
	json_out__key_u64(&j, "bytes_per_second", s->bytes_per_s);
	json_out__key_u64(&j, "dropped_events", s->dropped);
	json_out__end_object(&j);
	json_out__key(&j, "sites");
	json_out__begin_array(&j, true);
	for (size_t i = 0; i < s->nrows && i < top; i++) {
		const struct analysis_site *site = s->rows[i].site;

		json_out__begin_object(&j, true);
		json_out__key(&j, "function");
		json_out__string(&j, site->function ? site->function : site->name);
		json_out__key(&j, "file");
		json_out__string(&j, site->file);
		json_out__key_u64(&j, "line", site->line);
		json_out__key(&j, "module");
		json_out__string(&j, site->module);
		json_out__key_u64(&j, "live_bytes", site->figures.leaked_bytes);
		json_out__key_u64(&j, "live_allocations", site->figures.leaked_allocations);
		json_out__key_u64(&j, "allocations", site->figures.allocations);
		json_out__key_u64(&j, "allocated_bytes", site->figures.allocated_bytes);
		json_out__key_u64(&j, "bytes_per_second", s->rows[i].bytes_per_s);
		json_out__end_object(&j);
	}
	json_out__end_array(&j);
	json_out__end_object(&j);
	if (json_out__finish(&j))
		return -EIO;
	return fflush(f) ? -EIO : 0;
}
