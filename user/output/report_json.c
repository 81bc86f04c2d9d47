// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `memtrace report --json`: the shape scripts rely on (docs/contract.md,
 * "report --json"). Keys keep their names and order; new keys may be added.
 */
#include "json_out.h"
#include "marks.h"
#include "report.h"

static void json_u64(struct json_out *j, const char *key, uint64_t v)
{
	json_out__key(j, key);
	json_out__u64(j, v);
}

static void json_str(struct json_out *j, const char *key, const char *s)
{
	json_out__key(j, key);
	json_out__string(j, s);
}

void report_json__trace(struct json_out *j, const struct analysis_trace *t)
{
	json_out__key(j, "trace");
	json_out__begin_object(j, false);
	json_str(j, "command", t->command);
	json_out__key(j, "pid");
	json_out__i64(j, t->pid);
	json_str(j, "comm", t->comm);
	json_u64(j, "duration_ns", t->duration_ns);
	json_u64(j, "sample_bytes", t->sample_bytes);
	json_out__key(j, "ended");
	json_out__bool(j, t->ended);
	json_out__key(j, "target_exited");
	json_out__bool(j, t->target_exited);
	json_out__key(j, "partial");
	json_out__bool(j, t->partial);
	json_str(j, "problem", t->problem);
	json_str(j, "stop_reason", t->stop_reason);
	json_out__end_object(j);
}

void report_json__totals(struct json_out *j, const struct analysis_totals *t)
{
	json_out__key(j, "totals");
	json_out__begin_object(j, false);
	json_u64(j, "allocations", t->allocations);
	json_u64(j, "frees", t->frees);
	json_u64(j, "allocated_bytes", t->allocated_bytes);
	json_u64(j, "peak_bytes", t->peak_bytes);
	json_u64(j, "peak_time_ns", t->peak_time_ns);
	json_u64(j, "leaked_allocations", t->leaked_allocations);
	json_u64(j, "leaked_bytes", t->leaked_bytes);
	json_u64(j, "temporary_allocations", t->temporary_allocations);
	json_u64(j, "unmatched_frees", t->unmatched_frees);
	json_u64(j, "internal_frees", t->internal_frees);
	json_u64(j, "dropped_events", t->dropped_events);
	json_out__end_object(j);
}

static void report_json__figures(struct json_out *j, const struct analysis_figures *f)
{
	json_u64(j, "allocations", f->allocations);
	json_u64(j, "allocated_bytes", f->allocated_bytes);
	json_u64(j, "peak_bytes", f->peak_bytes);
	json_u64(j, "leaked_allocations", f->leaked_allocations);
	json_u64(j, "leaked_bytes", f->leaked_bytes);
	json_u64(j, "temporary_allocations", f->temporary_allocations);
}

/* One frame per line keeps deep stacks readable and diffable. */
static void report_json__frame(struct json_out *j, const struct analysis_frame *f)
{
	char addr[24];

	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)f->address);
	json_out__begin_object(j, true);
	json_str(j, "address", addr);
	json_str(j, "function", f->function);
	json_str(j, "file", f->file);
	json_u64(j, "line", f->line);
	json_str(j, "module", f->module);
	json_out__key(j, "inlined");
	json_out__bool(j, f->inlined);
	json_out__end_object(j);
}

static void report_json__stack(struct json_out *j, const struct analysis_stack *s)
{
	size_t i;

	json_out__begin_object(j, false);
	report_json__figures(j, &s->figures);
	json_out__key(j, "frames");
	json_out__begin_array(j, false);
	for (i = 0; i < s->nframes; i++)
		report_json__frame(j, &s->frames[i]);
	json_out__end_array(j);
	json_out__end_object(j);
}

static void report_json__site(struct json_out *j, const struct analysis_site *s)
{
	size_t i;

	json_out__begin_object(j, false);
	json_str(j, "name", s->name);
	json_str(j, "function", s->function);
	json_str(j, "file", s->file);
	json_u64(j, "line", s->line);
	json_str(j, "module", s->module);
	report_json__figures(j, &s->figures);
	json_out__key(j, "stacks");
	json_out__begin_array(j, false);
	for (i = 0; i < s->nstacks; i++)
		report_json__stack(j, s->stacks[i]);
	json_out__end_array(j);
	json_out__end_object(j);
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
		json_str(j, "name", z[i].name);
		json_u64(j, "count", z[i].count);
		json_u64(j, "allocations", z[i].allocations);
		json_u64(j, "allocated_bytes", z[i].allocated_bytes);
		json_u64(j, "inclusive_allocations", z[i].inclusive_allocations);
		json_u64(j, "inclusive_allocated_bytes", z[i].inclusive_allocated_bytes);
		json_u64(j, "leaked_bytes", z[i].leaked_bytes);
		json_u64(j, "peak_bytes", z[i].peak_bytes);
		json_u64(j, "time_ns", z[i].time_ns);
		json_u64(j, "open_at_end", z[i].open_at_end);
		json_u64(j, "unmatched_ends", z[i].unmatched_ends);
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
	json_u64(j, "count", n);
	json_out__key(j, "frames");
	json_out__begin_array(j, false);
	for (i = 0; i < n; i++) {
		json_out__begin_object(j, true);
		json_u64(j, "allocations", f[i].allocations);
		json_u64(j, "allocated_bytes", f[i].allocated_bytes);
		json_u64(j, "duration_ns", f[i].duration_ns);
		json_u64(j, "end_ns", f[i].end_ns);
		json_str(j, "name", f[i].name);
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
		json_str(j, "name", p[i].name);
		json_u64(j, "allocations", p[i].allocations);
		json_u64(j, "allocated_bytes", p[i].allocated_bytes);
		json_u64(j, "leaked_allocations", p[i].leaked_allocations);
		json_u64(j, "leaked_bytes", p[i].leaked_bytes);
		json_u64(j, "peak_bytes", p[i].peak_bytes);
		json_u64(j, "frees", p[i].frees);
		json_u64(j, "resets", p[i].resets);
		json_u64(j, "unmatched_frees", p[i].unmatched_frees);
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
		json_u64(j, "tid", t[i].tid);
		json_str(j, "name", t[i].name);
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

int report_json__write(FILE *f, const struct analysis *a)
{
	const struct analysis_site *sites;
	struct json_out j;
	size_t n, i;

	json_out__init(&j, f);
	json_out__begin_object(&j, false);
	report_json__trace(&j, analysis__trace(a));
	report_json__totals(&j, analysis__totals(a));
	sites = analysis__sites(a, &n);
	json_out__key(&j, "sites");
	json_out__begin_array(&j, false);
	for (i = 0; i < n; i++)
		report_json__site(&j, &sites[i]);
	json_out__end_array(&j);
	report_json__inproc(&j, analysis__marks(a));
	json_out__end_object(&j);
	return json_out__finish(&j);
}
