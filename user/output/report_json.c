// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `memtrace report --json`: the shape scripts rely on (docs/contract.md,
 * "report --json"). Keys keep their names and order; new keys may be added.
 */
#include "json_out.h"
#include "marks.h"
#include "report.h"
#include "strtab.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void report_json__trace(struct json_out *j, const struct analysis_trace *t)
{
	json_out__key(j, "trace");
	json_out__begin_object(j, false);
	json_out__key_string(j, "command", t->command);
	json_out__key_i64(j, "pid", t->pid);
	json_out__key_string(j, "comm", t->comm);
	json_out__key_u64(j, "duration_ns", t->duration_ns);
	json_out__key_u64(j, "sample_bytes", t->sample_bytes);
	json_out__key_bool(j, "no_heap", t->no_heap);
	json_out__key_bool(j, "ended", t->ended);
	json_out__key_bool(j, "target_exited", t->target_exited);
	json_out__key_bool(j, "partial", t->partial);
	json_out__key_string(j, "problem", t->problem);
	json_out__key_string(j, "stop_reason", t->stop_reason);
	json_out__key(j, "budget");
	if (!t->budget.budget_ppm) {
		json_out__null(j);
	} else {
		const struct analysis_budget *b = &t->budget;

		json_out__begin_object(j, false);
		json_out__key_u64(j, "budget_ppm", b->budget_ppm);
		json_out__key_u64(j, "hit_entry_ns", b->hit_entry_ns);
		json_out__key_u64(j, "hit_return_ns", b->hit_return_ns);
		json_out__key_u64(j, "windows", b->windows);
		json_out__key_u64(j, "live_ns", b->live_ns);
		json_out__key_u64(j, "tail_ns", b->tail_ns);
		json_out__key_u64(j, "min_weight_ppm", (uint64_t)(b->min_weight * 1e6 + 0.5));
		json_out__key_u64(j, "max_weight_ppm", (uint64_t)(b->max_weight * 1e6 + 0.5));
		json_out__key_u64(j, "long_lived_age_ns", b->min_tail_ns);
		json_out__key_u64(j, "long_lived_allocations", b->long_lived_allocations);
		json_out__key_u64(j, "long_lived_bytes", b->long_lived_bytes);
		json_out__key_u64(j, "lifetimes_seen", b->lifetimes_seen);
		json_out__key_u64(j, "lifetime_p50_ns", b->lifetime_ns[0]);
		json_out__key_u64(j, "lifetime_p90_ns", b->lifetime_ns[1]);
		json_out__key_u64(j, "lifetime_p99_ns", b->lifetime_ns[2]);
		/* the large blocks, exact (0: not traced), and the error of the rest */
		json_out__key_u64(j, "large_bytes", b->large_bytes);
		json_out__key_u64(j, "large_allocations", b->large_allocations);
		json_out__key_u64(j, "large_allocated_bytes", b->large_allocated_bytes);
		json_out__key_u64(j, "large_frees", b->large_frees);
		json_out__key_u64(j, "allocations_se", (uint64_t)(sqrt(b->var_allocations) + 0.5));
		json_out__key_u64(j, "allocated_bytes_se", (uint64_t)(sqrt(b->var_bytes) + 0.5));
		json_out__end_object(j);
	}
	/* how the allocator calls were caught: "probes" (uprobes), "preload" (record --preload) */
	json_out__key_string(j, "capture", t->preload ? "preload" : "probes");
	json_out__end_object(j);
}

void report_json__rss_point(struct json_out *j, const char *key, const struct analysis_rss_point *p)
{
	json_out__key(j, key);
	json_out__begin_object(j, true);
	json_out__key_u64(j, "time_ns", p->time_ns);
	json_out__key_u64(j, "resident_bytes", p->anon + p->file + p->shmem);
	json_out__key_u64(j, "anon_bytes", p->anon);
	json_out__key_u64(j, "file_bytes", p->file);
	json_out__key_u64(j, "shmem_bytes", p->shmem);
	json_out__key_u64(j, "heap_bytes", p->heap_bytes);
	json_out__end_object(j);
}

static void rss_rollup(struct json_out *j, const char *key, const struct analysis_rollup *ro)
{
	json_out__key(j, key);
	if (!ro->seen) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_out__key_u64(j, "time_ns", ro->time_ns);
	json_out__key(j, "lines");
	json_out__begin_object(j, true);
	for (uint32_t i = 0; i < ro->n; i++)
		json_out__key_u64(j, ro->name[i], ro->bytes[i]);
	json_out__end_object(j);
	json_out__end_object(j);
}

/* Key KEY: the N sites of SITES (the site's keys, bytes, and their count
 * under COUNT: "mappings", "samples", "arenas"). */
static void map_sites(struct json_out *j, const char *key, const struct analysis_map_site *sites, size_t n,
		      const char *count)
{
	json_out__key(j, key);
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n; i++) {
		const struct analysis_frame *f = sites[i].site;

		json_out__begin_object(j, true);
		report_json__site_keys(j, f && f->function ? f->function : "[no stack]", f ? f->function : NULL,
				       f ? f->file : NULL, f ? f->line : 0, f ? f->module : NULL);
		json_out__key_u64(j, "bytes", sites[i].bytes);
		json_out__key_u64(j, count, sites[i].mappings);
		json_out__end_object(j);
	}
	json_out__end_array(j);
}

/* glibc's mallopt parameters by number (malloc.h's M_*). */
const char *report_mallopt_name(int64_t param)
{
	static const char *const neg[] = { NULL, "M_TRIM_THRESHOLD", "M_TOP_PAD", "M_MMAP_THRESHOLD", "M_MMAP_MAX",
					   "M_CHECK_ACTION", "M_PERTURB", "M_ARENA_TEST", "M_ARENA_MAX" };

	if (param == 1)
		return "M_MXFAST";
	return param < 0 && -param < (int64_t)(sizeof(neg) / sizeof(neg[0])) ? neg[-param] : NULL;
}

/* Key "glibc": what glibc's own probes of its allocator said, or null
 * where they were not attached (a C library built without them). */
static void rss_glibc(struct json_out *j, const struct analysis_maps *mp)
{
	const struct analysis_glibc *g = &mp->glibc;

	json_out__key(j, "glibc");
	if (!mp->glibc_probed) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_out__key_u64(j, "arenas_new", g->arenas_new);
	json_out__key_u64(j, "arena_new_bytes", g->arena_new_bytes);
	json_out__key_u64(j, "arenas_reused", g->arenas_reused);
	json_out__key_u64(j, "heaps_new", g->heaps_new);
	json_out__key_u64(j, "heap_new_bytes", g->heap_new_bytes);
	json_out__key_u64(j, "heaps_grown", g->heaps_grown);
	json_out__key_u64(j, "heap_grown_bytes", g->heap_grown_bytes);
	json_out__key_u64(j, "heaps_shrunk", g->heaps_shrunk);
	json_out__key_u64(j, "heap_shrunk_bytes", g->heap_shrunk_bytes);
	json_out__key_u64(j, "heaps_freed", g->heaps_freed);
	json_out__key_u64(j, "heap_freed_bytes", g->heap_freed_bytes);
	json_out__key_u64(j, "sbrk_more", g->sbrk_more);
	json_out__key_u64(j, "sbrk_more_bytes", g->sbrk_more_bytes);
	json_out__key_u64(j, "sbrk_less", g->sbrk_less);
	json_out__key_u64(j, "sbrk_less_bytes", g->sbrk_less_bytes);
	json_out__key_u64(j, "retries", g->retries);
	json_out__key_u64(j, "mallopt_calls", g->nmallopt);
	json_out__key(j, "mallopt");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < g->nmallopt && i < ANALYSIS_MALLOPT_MAX; i++) {
		const char *name = report_mallopt_name(g->mallopt[i].param);

		json_out__begin_object(j, true);
		json_out__key_i64(j, "param", g->mallopt[i].param);
		json_out__key(j, "name");
		if (name)
			json_out__string(j, name);
		else
			json_out__null(j);
		json_out__key_i64(j, "value", g->mallopt[i].value);
		json_out__end_object(j);
	}
	json_out__end_array(j);
	map_sites(j, "arena_sites", g->arena_sites, g->narena_sites, "arenas");
	json_out__end_object(j);
}

/* Key "maps": what the calls that map memory did, or null if not traced. */
static void rss_maps(struct json_out *j, const struct analysis_rss *rs)
{
	static const char *const calls[] = { NULL, "mmap", "munmap", "brk", "mremap", "madvise" };
	const struct analysis_maps *mp = &rs->maps;

	json_out__key(j, "maps");
	if (!rs->traced_maps) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_out__key(j, "calls");
	json_out__begin_object(j, true);
	for (size_t i = 1; i < sizeof(calls) / sizeof(calls[0]); i++)
		json_out__key_u64(j, calls[i], mp->calls[i]);
	json_out__end_object(j);
	json_out__key_u64(j, "outside_bytes", mp->outside_bytes);
	json_out__key_u64(j, "outside_peak_bytes", mp->outside_peak_bytes);
	json_out__key_u64(j, "allocator_bytes", mp->allocator_bytes);
	json_out__key_u64(j, "brk_bytes", mp->brk_bytes);
	json_out__key_u64(j, "madvised_bytes", mp->madvised_bytes);
	rss_glibc(j, mp);
	json_out__key(j, "faults");
	json_out__begin_object(j, false);
	json_out__key_u64(j, "sample_every", MT_FAULT_EVERY);
	json_out__key_u64(j, "samples", mp->calls[MT_MAP_FAULT]);
	json_out__key_u64(j, "bytes", mp->fault_bytes);
	map_sites(j, "sites", mp->fault_sites, mp->nfault_sites, "samples");
	json_out__end_object(j);
	map_sites(j, "sites", mp->sites, mp->nsites, "mappings");
	json_out__end_object(j);
}

/* A null when the heap is not known, else V. */
static void key_heap_u64(struct json_out *j, const char *key, bool known, uint64_t v)
{
	json_out__key(j, key);
	if (known)
		json_out__u64(j, v);
	else
		json_out__null(j);
}

/* Key KEY: a resident snapshot added up (analysis_reconcile), or null. */
static void rss_reconcile(struct json_out *j, const char *key, const struct analysis_reconcile *c)
{
	json_out__key(j, key);
	if (!c->seen) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_out__key_u64(j, "time_ns", c->time_ns);
	json_out__key_u64(j, "resident_anon_bytes", c->resident_anon);
	json_out__key_u64(j, "rss_anon_bytes", c->rss_anon);
	json_out__key_u64(j, "rss_file_bytes", c->rss_file);
	json_out__key_u64(j, "rss_shmem_bytes", c->rss_shmem);
	key_heap_u64(j, "heap_live_resident_bytes", c->heap_known, c->heap_live_resident);
	key_heap_u64(j, "allocator_free_resident_bytes", c->heap_known, c->allocator_free_resident);
	json_out__key_u64(j, "allocator_resident_bytes", c->allocator_resident);
	json_out__key_u64(j, "outside_resident_bytes", c->outside_resident);
	json_out__key_u64(j, "thread_stacks_bytes", c->thread_stacks);
	json_out__key_u64(j, "file_private_bytes", c->file_private);
	json_out__key_u64(j, "other_bytes", c->other);
	key_heap_u64(j, "heap_live_bytes", c->heap_known, c->heap_live);
	key_heap_u64(j, "heap_live_not_resident_bytes", c->heap_known, c->heap_live_not_resident);
	json_out__key(j, "outside_sites");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < c->nsites; i++) {
		const struct analysis_frame *f = c->sites[i].site;

		json_out__begin_object(j, true);
		report_json__site_keys(j, f && f->function ? f->function : "[no stack]", f ? f->function : NULL,
				       f ? f->file : NULL, f ? f->line : 0, f ? f->module : NULL);
		json_out__key_u64(j, "resident_bytes", c->sites[i].bytes);
		json_out__end_object(j);
	}
	json_out__end_array(j);
	json_out__key(j, "advice");
	if (c->advice)
		json_out__string(j, c->advice);
	else
		json_out__null(j);
	json_out__end_object(j);
}

/* Key "reconciled_series": every snapshot kept, added up, as [time_ns,
 * resident_anon, heap_live_resident, allocator_free_resident,
 * allocator_resident, outside_resident, thread_stacks, file_private, other,
 * rss_anon] in bytes (the two of the heap null where it is not known). */
/* One RSS sample as the JSON's series row: [time_ns, anon, file, shmem, heap_bytes]. */
static void rss_point(struct json_out *j, const struct analysis_rss_point *p)
{
	json_out__begin_array(j, true);
	json_out__u64(j, p->time_ns);
	json_out__u64(j, p->anon);
	json_out__u64(j, p->file);
	json_out__u64(j, p->shmem);
	json_out__u64(j, p->heap_bytes);
	json_out__end_array(j);
}

static void rss_reconciled_series(struct json_out *j, const struct analysis_rss *rs)
{
	json_out__key(j, "reconciled_series");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < rs->nreconciled; i++) {
		const struct analysis_reconcile *c = &rs->reconciled[i];

		json_out__begin_array(j, true);
		json_out__u64(j, c->time_ns);
		json_out__u64(j, c->resident_anon);
		if (c->heap_known) {
			json_out__u64(j, c->heap_live_resident);
			json_out__u64(j, c->allocator_free_resident);
		} else {
			json_out__null(j);
			json_out__null(j);
		}
		json_out__u64(j, c->allocator_resident);
		json_out__u64(j, c->outside_resident);
		json_out__u64(j, c->thread_stacks);
		json_out__u64(j, c->file_private);
		json_out__u64(j, c->other);
		json_out__u64(j, c->rss_anon);
		json_out__end_array(j);
	}
	json_out__end_array(j);
}

void report_json__rss(struct json_out *j, const struct analysis_trace *t)
{
	const struct analysis_rss *rs = &t->rss;

	json_out__key(j, "rss");
	if (!rs->npoints && !rs->traced_maps) {
		json_out__null(j);
		return;
	}
	json_out__begin_object(j, false);
	json_out__key_u64(j, "samples", rs->npoints);
	json_out__key_u64(j, "period_ns", 100000000);
	/* the live heap is known only when every allocation was recorded */
	json_out__key_bool(j, "heap_known", analysis_heap_known(t));
	if (rs->npoints) {
		report_json__rss_point(j, "first", &rs->points[0]);
		report_json__rss_point(j, "peak", &rs->points[rs->peak]);
		report_json__rss_point(j, "last", &rs->points[rs->npoints - 1]);
	} else { /* a process gone before its first sample */
		json_out__key(j, "first");
		json_out__null(j);
		json_out__key(j, "peak");
		json_out__null(j);
		json_out__key(j, "last");
		json_out__null(j);
	}
	json_out__key(j, "series");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < rs->npoints; i++) {
		const struct analysis_rss_point *p = &rs->points[i];

		rss_point(j, p);
	}
	json_out__end_array(j);
	rss_rollup(j, "rollup_start", &rs->start);
	rss_rollup(j, "rollup_end", &rs->end);
	rss_maps(j, rs);
	json_out__key_u64(j, "resident_snapshots", rs->nresident);
	rss_reconcile(j, "reconciled_last", &rs->at_end);
	rss_reconcile(j, "reconciled_peak", &rs->at_peak);
	rss_reconciled_series(j, rs);
	json_out__end_object(j);
}

void report_json__totals(struct json_out *j, const struct analysis_totals *t)
{
	json_out__key(j, "totals");
	json_out__begin_object(j, false);
	json_out__key_u64(j, "allocations", t->allocations);
	json_out__key_u64(j, "frees", t->frees);
	json_out__key_u64(j, "allocated_bytes", t->allocated_bytes);
	if (t->peak_unknown) {
		json_out__key(j, "peak_bytes");
		json_out__null(j);
		json_out__key(j, "peak_time_ns");
		json_out__null(j);
	} else {
		json_out__key_u64(j, "peak_bytes", t->peak_bytes);
		json_out__key_u64(j, "peak_time_ns", t->peak_time_ns);
	}
	json_out__key_u64(j, "leaked_allocations", t->leaked_allocations);
	json_out__key_u64(j, "leaked_bytes", t->leaked_bytes);
	json_out__key_u64(j, "temporary_allocations", t->temporary_allocations);
	json_out__key_u64(j, "unmatched_frees", t->unmatched_frees);
	json_out__key_u64(j, "internal_frees", t->internal_frees);
	json_out__key_u64(j, "dropped_events", t->dropped_events);
	json_out__end_object(j);
}

void report_json__figures(struct json_out *j, const struct analysis_figures *f)
{
	json_out__key_u64(j, "allocations", f->allocations);
	json_out__key_u64(j, "allocated_bytes", f->allocated_bytes);
	json_out__key_u64(j, "peak_bytes", f->peak_bytes);
	json_out__key_u64(j, "leaked_allocations", f->leaked_allocations);
	json_out__key_u64(j, "leaked_bytes", f->leaked_bytes);
	json_out__key_u64(j, "temporary_allocations", f->temporary_allocations);
	/* --rss: at the last snapshot; 0 without one (rss.reconciled_last.heap_live_resident_bytes null) */
	json_out__key_u64(j, "resident_bytes", f->resident_bytes);
}

/*
 * Stacks and their frames are written once each, in tables after the
 * sites: a site lists its stacks by index into "stacks", a stack its frames
 * (innermost first) by index into "stack_frames". A trace with hundreds of
 * thousands of deep stacks repeats the same frames over and over; written
 * in place, they made the JSON hundreds of megabytes.
 */
struct frame_table {
	struct strtab keys;                  /* a frame's identity -> its index */
	const struct analysis_frame **frames; /* by index */
	size_t cap;
};

/* F's index in T, added if new. -ENOMEM. */
static int64_t frame_table__index(struct frame_table *t, const struct analysis_frame *f)
{
	char key[128];
	int64_t i;

	/* the same address can stand for several inlined frames, told apart
	 * by what they name (the strings of one symbol are shared) */
	snprintf(key, sizeof(key), "%llx|%p|%p|%u|%d", (unsigned long long)f->address,
		 (const void *)f->function, (const void *)f->file, f->line, f->inlined);
	i = strtab__intern(&t->keys, key);
	if (i < 0)
		return i;
	if ((size_t)i >= t->cap && array_reserve((void **)&t->frames, &t->cap, (size_t)i + 1, sizeof(*t->frames)))
		return -ENOMEM;
	t->frames[i] = f;
	return i;
}

static void report_json__frame(struct json_out *j, const struct analysis_frame *f)
{
	char addr[32];

	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)f->address);
	json_out__begin_object(j, true);
	json_out__key_string(j, "address", addr);
	json_out__key_string(j, "function", f->function);
	json_out__key_string(j, "file", f->file);
	json_out__key_u64(j, "line", f->line);
	json_out__key_string(j, "module", f->module);
	json_out__key_bool(j, "inlined", f->inlined);
	json_out__key_string(j, "language", f->language == TRACE_LANG_PYTHON ? "python" : "native");
	json_out__end_object(j);
}

static int report_json__stack(struct json_out *j, struct frame_table *t, const struct analysis_stack *s)
{
	json_out__begin_object(j, true);
	report_json__figures(j, &s->figures);
	json_out__key(j, "frames");
	json_out__begin_array(j, true);
	for (size_t i = 0; i < s->nframes; i++) {
		int64_t k = frame_table__index(t, &s->frames[i]);

		if (k < 0)
			return (int)k;
		json_out__u64(j, (uint64_t)k);
	}
	json_out__end_array(j);
	json_out__end_object(j);
	return 0;
}

/* Identity of a site: the keys diff --json writes for its sites too. */
void report_json__site_keys(struct json_out *j, const char *name, const char *function,
			    const char *file, uint32_t line, const char *module)
{
	json_out__key_string(j, "name", name);
	json_out__key_string(j, "function", function);
	json_out__key_string(j, "file", file);
	json_out__key_u64(j, "line", line);
	json_out__key_string(j, "module", module);
}

/* The site, its stacks numbered from *NEXT on. */
static void report_json__site(struct json_out *j, const struct analysis_site *s, uint64_t *next, bool budget)
{
	json_out__begin_object(j, false);
	report_json__site_keys(j, s->name, s->function, s->file, s->line, s->module);
	report_json__figures(j, &s->figures);
	if (budget) {
		/* of its figures, the large blocks' (exact), and the standard
		 * error of the estimate of the rest */
		json_out__key_u64(j, "exact_allocations", s->figures.exact_allocations);
		json_out__key_u64(j, "exact_bytes", s->figures.exact_bytes);
		json_out__key_u64(j, "allocations_se", (uint64_t)(sqrt(s->figures.var_allocations) + 0.5));
		json_out__key_u64(j, "allocated_bytes_se", (uint64_t)(sqrt(s->figures.var_bytes) + 0.5));
	}
	json_out__key(j, "stacks");
	json_out__begin_array(j, true);
	for (size_t i = 0; i < s->nstacks; i++)
		json_out__u64(j, (*next)++);
	json_out__end_array(j);
	json_out__end_object(j);
}

/* The "stacks" and "stack_frames" tables of the first N sites. */
static int report_json__stack_tables(struct json_out *j, const struct analysis_site *sites, size_t n)
{
	struct frame_table t = { 0 };
	int err = 0;

	strtab__init(&t.keys);
	json_out__key(j, "stacks");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n && !err; i++) {
		for (size_t k = 0; k < sites[i].nstacks && !err; k++)
			err = report_json__stack(j, &t, sites[i].stacks[k]);
	}
	json_out__end_array(j);
	json_out__key(j, "stack_frames");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < t.keys.nr && !err; i++)
		report_json__frame(j, t.frames[i]);
	json_out__end_array(j);
	strtab__free(&t.keys);
	free(t.frames);
	return err;
}

void report_json__zones(struct json_out *j, const struct marks *m)
{
	const struct marks_zone *z;
	size_t n, i;

	z = marks__zones(m, &n);
	json_out__key(j, "zones");
	json_out__begin_array(j, false);
	for (i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_out__key_string(j, "name", z[i].name);
		json_out__key_u64(j, "count", z[i].count);
		json_out__key_u64(j, "allocations", z[i].allocations);
		json_out__key_u64(j, "allocated_bytes", z[i].allocated_bytes);
		json_out__key_u64(j, "inclusive_allocations", z[i].inclusive_allocations);
		json_out__key_u64(j, "inclusive_allocated_bytes", z[i].inclusive_allocated_bytes);
		json_out__key_u64(j, "leaked_bytes", z[i].leaked_bytes);
		json_out__key_u64(j, "peak_bytes", z[i].peak_bytes);
		json_out__key_u64(j, "time_ns", z[i].time_ns);
		json_out__key_u64(j, "open_at_end", z[i].open_at_end);
		json_out__key_u64(j, "unmatched_ends", z[i].unmatched_ends);
		json_out__end_object(j);
	}
	json_out__end_array(j);
}

/* One line per frame: a game records thousands. */
static void report_json__frames(struct json_out *j, const struct marks *m)
{
	const struct marks_frame *f;
	size_t n, i;

	f = marks__frames(m, &n);
	json_out__key(j, "frames");
	json_out__begin_object(j, false);
	json_out__key_u64(j, "count", n);
	json_out__key(j, "frames");
	json_out__begin_array(j, false);
	for (i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_out__key_u64(j, "allocations", f[i].allocations);
		json_out__key_u64(j, "allocated_bytes", f[i].allocated_bytes);
		json_out__key_u64(j, "duration_ns", f[i].duration_ns);
		json_out__key_u64(j, "end_ns", f[i].end_ns);
		json_out__key_string(j, "name", f[i].name);
		json_out__end_object(j);
	}
	json_out__end_array(j);
	json_out__end_object(j);
}

void report_json__pools(struct json_out *j, const struct marks *m)
{
	const struct marks_pool *p;
	size_t n, i;

	p = marks__pools(m, &n);
	json_out__key(j, "pools");
	json_out__begin_array(j, false);
	for (i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_out__key_string(j, "name", p[i].name);
		json_out__key_u64(j, "allocations", p[i].allocations);
		json_out__key_u64(j, "allocated_bytes", p[i].allocated_bytes);
		json_out__key_u64(j, "leaked_allocations", p[i].leaked_allocations);
		json_out__key_u64(j, "leaked_bytes", p[i].leaked_bytes);
		json_out__key_u64(j, "peak_bytes", p[i].peak_bytes);
		json_out__key_u64(j, "frees", p[i].frees);
		json_out__key_u64(j, "resets", p[i].resets);
		json_out__key_u64(j, "unmatched_frees", p[i].unmatched_frees);
		json_out__end_object(j);
	}
	json_out__end_array(j);
}

void report_json__threads(struct json_out *j, const struct marks *m)
{
	const struct marks_thread *t;
	size_t n, i;

	t = marks__threads(m, &n);
	json_out__key(j, "threads");
	json_out__begin_array(j, false);
	for (i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_out__key_u64(j, "tid", t[i].tid);
		json_out__key_string(j, "name", t[i].name);
		json_out__end_object(j);
	}
	json_out__end_array(j);
}

/* Zones, frames and pools come from the in-process header's marks; the keys
 * are there, empty, in a trace without any, so scripts can rely on them. */
static void report_json__inproc(struct json_out *j, const struct marks *m)
{
	report_json__zones(j, m);
	report_json__frames(j, m);
	report_json__pools(j, m);
	report_json__threads(j, m);
}

/* The sites whose live heap grew in the last minute, into BY (room for
 * every site), most first (ties: more allocated bytes, then name); their
 * count. */
static int grown_cmp(const void *px, const void *py)
{
	const struct analysis_site *x = *(const struct analysis_site *const *)px;
	const struct analysis_site *y = *(const struct analysis_site *const *)py;

	if (x->figures.recent_bytes != y->figures.recent_bytes)
		return x->figures.recent_bytes > y->figures.recent_bytes ? -1 : 1;
	if (x->figures.allocated_bytes != y->figures.allocated_bytes)
		return x->figures.allocated_bytes > y->figures.allocated_bytes ? -1 : 1;
	return strcmp(x->name, y->name);
}

void report_json__last_minute(struct json_out *j, const struct analysis *a, unsigned int top)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct analysis_maps *mp = &t->rss.maps;
	const struct analysis_site *sites, **by;
	size_t n, ngrown = 0;

	json_out__key(j, "last_minute");
	if (!(t->end_flags & (TRACE_END_OOM_KILLED | TRACE_END_CRASHED))) {
		json_out__null(j);
		return;
	}
	sites = analysis__sites(a, &n);
	by = malloc((n ? n : 1) * sizeof(*by));
	for (size_t i = 0; by && i < n; i++)
		if (sites[i].figures.recent_bytes > 0)
			by[ngrown++] = &sites[i];
	if (ngrown)
		qsort(by, ngrown, sizeof(*by), grown_cmp);
	if (top && ngrown > top)
		ngrown = top;
	json_out__begin_object(j, false);
	json_out__key_string(j, "ended_by", t->end_flags & TRACE_END_OOM_KILLED ? "oom_kill" : "crash");
	json_out__key_u64(j, "start_mono_ns", t->start_mono_ns);
	json_out__key_u64(j, "from_ns", t->recent_from_ns);
	json_out__key_u64(j, "to_ns", t->duration_ns);
	json_out__key_u64(j, "memory_limit_bytes", t->memory_limit);
	json_out__key_string(j, "memory_limit_of", t->memory_limit_of);
	json_out__key_bool(j, "estimated", !analysis_heap_known(t));
	json_out__key(j, "grown");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < ngrown; i++) {
		json_out__begin_object(j, true);
		report_json__site_keys(j, by[i]->name, by[i]->function, by[i]->file, by[i]->line, by[i]->module);
		json_out__key_i64(j, "grown_bytes", by[i]->figures.recent_bytes);
		json_out__key_i64(j, "grown_allocations", by[i]->figures.recent_allocations);
		json_out__end_object(j);
	}
	json_out__end_array(j);
	free(by);
	json_out__key_u64(j, "first_written_bytes", mp->recent_fault_bytes);
	map_sites(j, "first_written", mp->recent_fault_sites,
		  top && mp->nrecent_fault_sites > top ? top : mp->nrecent_fault_sites, "samples");
	json_out__key(j, "rss_series");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < t->rss.npoints; i++) {
		const struct analysis_rss_point *p = &t->rss.points[i];

		if (p->time_ns < t->recent_from_ns)
			continue;
		rss_point(j, p);
	}
	json_out__end_array(j);
	json_out__end_object(j);
}

int report_json__write(FILE *f, const struct analysis *a, unsigned int top)
{
	const struct analysis_site *sites;
	struct json_out j;
	uint64_t next = 0;
	size_t n;
	int err;

	json_out__init(&j, f);
	json_out__begin_object(&j, false);
	json_out__key_u64(&j, "format", MEMTRACE_JSON_FORMAT);
	report_json__trace(&j, analysis__trace(a));
	report_json__last_minute(&j, a, top);
	report_json__totals(&j, analysis__totals(a));
	report_json__rss(&j, analysis__trace(a));
	sites = analysis__sites(a, &n);
	if (top && n > top)
		n = top;
	json_out__key(&j, "sites");
	json_out__begin_array(&j, false);
	for (size_t i = 0; i < n; i++)
		report_json__site(&j, &sites[i], &next, analysis__trace(a)->budget.budget_ppm != 0);
	json_out__end_array(&j);
	report_json__inproc(&j, analysis__marks(a));
	err = report_json__stack_tables(&j, sites, n);
	json_out__end_object(&j);
	return json_out__finish(&j) ?: err;
}
