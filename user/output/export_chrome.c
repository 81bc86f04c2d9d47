// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Chrome trace event JSON (export_chrome.h). Zones become complete slices
 * when they close, so the slices come out in closing order; both viewers
 * sort events by time on import, and "X" events need no B/E pairing.
 */
#include "export_chrome.h"
#include "heap_series.h"
#include "json_out.h"
#include "marks.h"
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct export_chrome {
	struct json_out j;
	struct replay *r;
	struct heap_series *series;
};

/* NS as microseconds with three decimals: json_out writes integers only,
 * and a value right after its key needs no separator, so the number goes
 * straight to the stream and the writer learns the key has its value. */
static void chrome_us(struct json_out *j, const char *key, uint64_t ns)
{
	json_out__key(j, key);
	fprintf(j->f, "%" PRIu64 ".%03u", ns / 1000, (unsigned int)(ns % 1000));
	j->after_key = false;
}

/* The fields every event starts with. */
static void chrome_begin_event(struct export_chrome *c, const char *name, const char *cat,
			       const char *ph, uint32_t tid)
{
	json_out__begin_object(&c->j, true);
	json_out__key_string(&c->j, "name", name);
	if (cat)
		json_out__key_string(&c->j, "cat", cat);
	json_out__key_string(&c->j, "ph", ph);
	json_out__key(&c->j, "pid");
	json_out__i64(&c->j, replay__trace(c->r)->pid);
	json_out__key_u64(&c->j, "tid", tid);
}

static void chrome_name_meta(struct export_chrome *c, const char *what, uint32_t tid,
			     const char *name)
{
	chrome_begin_event(c, what, NULL, "M", tid);
	chrome_us(&c->j, "ts", 0); /* optional for metadata, but some readers want every event timed */
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	json_out__key_string(&c->j, "name", name);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
}

static void chrome_write_meta(struct export_chrome *c, const struct analysis *a)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct marks_thread *threads;
	size_t n;

	chrome_name_meta(c, "process_name", (uint32_t)t->pid, t->comm ? t->comm : "target");
	threads = marks__threads(analysis__marks(a), &n);
	for (size_t i = 0; i < n; i++)
		chrome_name_meta(c, "thread_name", threads[i].tid, threads[i].name);
}

/* Time after the trace's start; a clock a little before it reads 0. */
static uint64_t chrome_time(const struct export_chrome *c, uint64_t ts)
{
	uint64_t start = replay__start_ns(c->r);

	return ts > start ? ts - start : 0;
}

/* A zone entry closed (the engine nests them, marks.h's rules): one
 * complete slice with the allocations made while it was innermost. */
static int chrome_zone_end(void *ctx, const struct replay *r, uint32_t thread,
			   const struct replay_zone *z, uint64_t ts, bool at_end)
{
	struct export_chrome *c = ctx;
	uint64_t begin = chrome_time(c, z->begin_ts), end = chrome_time(c, ts);

	chrome_begin_event(c, replay__name(r, z->name), "zone", "X", replay__thread_tid(r, thread));
	chrome_us(&c->j, "ts", begin);
	chrome_us(&c->j, "dur", end > begin ? end - begin : 0);
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	json_out__key_u64(&c->j, "allocations", z->allocations);
	json_out__key_u64(&c->j, "allocated_bytes", z->allocated_bytes);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
	return 0;
}

static int chrome_frame(void *ctx, const struct replay *r, uint64_t index, uint32_t name,
			const struct trace_mark *m)
{
	struct export_chrome *c = ctx;

	chrome_begin_event(c, name != REPLAY_NONE ? replay__name(r, name) : "frame", "frame", "i",
			   m->tid);
	chrome_us(&c->j, "ts", chrome_time(c, m->ts));
	json_out__key_string(&c->j, "s", "p");
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	json_out__key_u64(&c->j, "frame", index);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
	return 0;
}

static const struct replay_ops chrome_ops = {
	.zone_end = chrome_zone_end,
	.frame = chrome_frame,
};

struct export_chrome *export_chrome__new(FILE *f, struct replay *r)
{
	struct export_chrome *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->r = r;
	c->series = heap_series__new(r, EXPORT_CHROME_POINTS);
	if (!c->series || replay__observe(r, &chrome_ops, c)) {
		heap_series__free(c->series);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	json_out__init(&c->j, f);
	json_out__begin_object(&c->j, false);
	json_out__key(&c->j, "traceEvents");
	json_out__begin_array(&c->j, false);
	return c;
}

void export_chrome__free(struct export_chrome *c)
{
	if (!c)
		return;
	heap_series__free(c->series);
	free(c);
}

static void chrome_write_counter(struct export_chrome *c)
{
	const struct heap_point *p;
	size_t n;

	p = heap_series__points(c->series, &n);
	for (size_t i = 0; i < n; i++) {
		chrome_begin_event(c, "heap", "memory", "C", (uint32_t)replay__trace(c->r)->pid);
		chrome_us(&c->j, "ts", p[i].t_ns);
		json_out__key(&c->j, "args");
		json_out__begin_object(&c->j, true);
		json_out__key_u64(&c->j, "bytes", p[i].bytes);
		json_out__end_object(&c->j);
		json_out__end_object(&c->j);
	}
}

int export_chrome__finish(struct export_chrome *c, const struct analysis *a)
{
	int err;

	err = heap_series__finish(c->series, analysis__trace(a)->duration_ns);
	if (err)
		return err;
	chrome_write_meta(c, a);
	chrome_write_counter(c);
	json_out__end_array(&c->j);
	json_out__key_string(&c->j, "displayTimeUnit", "ms");
	json_out__end_object(&c->j);
	return json_out__finish(&c->j);
}
