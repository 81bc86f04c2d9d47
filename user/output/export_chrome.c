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
#include "trace_reader.h"
#include "u64map.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct open_zone {
	uint32_t name;        /* string id */
	uint64_t begin_ns;    /* after the start */
	uint64_t allocations; /* while it was the thread's innermost zone */
	uint64_t allocated_bytes;
};

struct zone_stack {
	uint32_t tid;
	struct open_zone *zones; /* innermost last */
	size_t n, cap;
};

struct export_chrome {
	struct json_out j;
	int32_t pid;
	uint64_t start_ns;
	uint64_t end_ns;      /* the END record's time, after the start; 0: none */
	uint64_t last_ns;     /* latest time seen, after the start */
	uint64_t frames;      /* frame marks so far */
	struct heap_series *series;

	struct u64map string_ids; /* string id -> index into strings */
	char **strings;
	size_t nstrings, strings_cap;

	struct u64map tids;       /* tid -> index into stacks */
	struct zone_stack *stacks;
	size_t nstacks, stacks_cap;
};

static void chrome_u64(struct json_out *j, const char *key, uint64_t v)
{
	json_out__key(j, key);
	json_out__u64(j, v);
}

static void chrome_str(struct json_out *j, const char *key, const char *s)
{
	json_out__key(j, key);
	json_out__string(j, s);
}

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
	chrome_str(&c->j, "name", name);
	if (cat)
		chrome_str(&c->j, "cat", cat);
	chrome_str(&c->j, "ph", ph);
	json_out__key(&c->j, "pid");
	json_out__i64(&c->j, c->pid);
	chrome_u64(&c->j, "tid", tid);
}

static void chrome_name_meta(struct export_chrome *c, const char *what, uint32_t tid,
			     const char *name)
{
	chrome_begin_event(c, what, NULL, "M", tid);
	chrome_us(&c->j, "ts", 0); /* optional for metadata, but some readers want every event timed */
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	chrome_str(&c->j, "name", name);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
}

static void chrome_write_meta(struct export_chrome *c, const struct analysis *a)
{
	const struct analysis_trace *t = analysis__trace(a);
	const struct marks_thread *threads;
	size_t n;

	chrome_name_meta(c, "process_name", (uint32_t)c->pid, t->comm ? t->comm : "target");
	threads = marks__threads(analysis__marks(a), &n);
	for (size_t i = 0; i < n; i++)
		chrome_name_meta(c, "thread_name", threads[i].tid, threads[i].name);
}

struct export_chrome *export_chrome__new(FILE *f, const struct analysis *a)
{
	struct export_chrome *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->series = heap_series__new(analysis__trace(a)->duration_ns, EXPORT_CHROME_POINTS);
	if (!c->series) {
		free(c);
		return NULL;
	}
	c->pid = analysis__trace(a)->pid;
	json_out__init(&c->j, f);
	json_out__begin_object(&c->j, false);
	json_out__key(&c->j, "traceEvents");
	json_out__begin_array(&c->j, false);
	chrome_write_meta(c, a);
	return c;
}

void export_chrome__free(struct export_chrome *c)
{
	if (!c)
		return;
	heap_series__free(c->series);
	for (size_t i = 0; i < c->nstrings; i++)
		free(c->strings[i]);
	free(c->strings);
	u64map__free(&c->string_ids);
	for (size_t i = 0; i < c->nstacks; i++)
		free(c->stacks[i].zones);
	free(c->stacks);
	u64map__free(&c->tids);
	free(c);
}

/* ID's text as marks.h names it; BUF holds the made-up ones. */
static const char *chrome_string(const struct export_chrome *c, uint32_t id, char *buf, size_t cap)
{
	const struct u64map_entry *e;

	if (!id)
		return "[unnamed]";
	e = u64map__get(&c->string_ids, id);
	if (e && c->strings[e->val])
		return c->strings[e->val];
	snprintf(buf, cap, "[string %" PRIu32 "]", id);
	return buf;
}

static int chrome_add_string(void *ctx, const struct trace_string *s)
{
	struct export_chrome *c = ctx;
	struct u64map_entry *e;
	char **grown, *copy = NULL;
	bool existed;

	if (!s->id)
		return 0;
	if (s->str && !(copy = strdup(s->str)))
		return -ENOMEM;
	e = u64map__insert(&c->string_ids, s->id, &existed);
	if (!e)
		goto out_nomem;
	if (existed) { /* defined once per trace; should it come again, it wins */
		free(c->strings[e->val]);
		c->strings[e->val] = copy;
		return 0;
	}
	if (c->nstrings == c->strings_cap) {
		c->strings_cap = c->strings_cap ? c->strings_cap * 2 : 64;
		grown = realloc(c->strings, c->strings_cap * sizeof(*grown));
		if (!grown) {
			u64map__remove(&c->string_ids, e);
			goto out_nomem;
		}
		c->strings = grown;
	}
	e->val = c->nstrings;
	c->strings[c->nstrings++] = copy;
	return 0;

out_nomem:
	free(copy);
	return -ENOMEM;
}

/* TID's zone stack, created empty if it has none; NULL if out of memory. */
static struct zone_stack *chrome_stack(struct export_chrome *c, uint32_t tid, bool create)
{
	struct u64map_entry *e;
	struct zone_stack *grown;
	bool existed;

	/* u64map keys must be non-zero; a tid never is, but stay safe. */
	if (!create) {
		e = u64map__get(&c->tids, (uint64_t)tid + 1);
		return e ? &c->stacks[e->val] : NULL;
	}
	e = u64map__insert(&c->tids, (uint64_t)tid + 1, &existed);
	if (!e)
		return NULL;
	if (existed)
		return &c->stacks[e->val];
	if (c->nstacks == c->stacks_cap) {
		c->stacks_cap = c->stacks_cap ? c->stacks_cap * 2 : 16;
		grown = realloc(c->stacks, c->stacks_cap * sizeof(*grown));
		if (!grown) {
			u64map__remove(&c->tids, e);
			return NULL;
		}
		c->stacks = grown;
	}
	e->val = c->nstacks;
	c->stacks[c->nstacks] = (struct zone_stack){ .tid = tid };
	return &c->stacks[c->nstacks++];
}

static uint64_t chrome_time(struct export_chrome *c, uint64_t ts)
{
	uint64_t t = ts > c->start_ns ? ts - c->start_ns : 0;

	if (t > c->last_ns)
		c->last_ns = t;
	return t;
}

static int chrome_zone_begin(struct export_chrome *c, const struct trace_mark *m, uint64_t t)
{
	struct zone_stack *s = chrome_stack(c, m->tid, true);
	struct open_zone *grown;

	if (!s)
		return -ENOMEM;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		grown = realloc(s->zones, s->cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->zones = grown;
	}
	s->zones[s->n++] = (struct open_zone){ .name = m->name, .begin_ns = t };
	return 0;
}

/* Close the innermost open zone of S at END_NS: one complete slice. */
static void chrome_zone_close(struct export_chrome *c, struct zone_stack *s, uint64_t end_ns)
{
	const struct open_zone *z = &s->zones[--s->n];
	char buf[32];

	chrome_begin_event(c, chrome_string(c, z->name, buf, sizeof(buf)), "zone", "X", s->tid);
	chrome_us(&c->j, "ts", z->begin_ns);
	chrome_us(&c->j, "dur", end_ns > z->begin_ns ? end_ns - z->begin_ns : 0);
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	chrome_u64(&c->j, "allocations", z->allocations);
	chrome_u64(&c->j, "allocated_bytes", z->allocated_bytes);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
}

/* marks.h: an end closes the innermost open zone of its name and, first,
 * every zone opened inside it; an end whose name is not open is ignored.
 * Names compare by text, as marks.h groups them. */
static void chrome_zone_end(struct export_chrome *c, const struct trace_mark *m, uint64_t t)
{
	struct zone_stack *s = chrome_stack(c, m->tid, false);
	char want_buf[32], buf[32];
	const char *want;
	size_t i;

	if (!s)
		return;
	want = chrome_string(c, m->name, want_buf, sizeof(want_buf));
	for (i = s->n; i-- > 0;) {
		if (!strcmp(chrome_string(c, s->zones[i].name, buf, sizeof(buf)), want))
			break;
	}
	if (i == (size_t)-1)
		return;
	while (s->n > i)
		chrome_zone_close(c, s, t);
}

static void chrome_frame(struct export_chrome *c, const struct trace_mark *m, uint64_t t)
{
	char buf[32];

	chrome_begin_event(c, m->name ? chrome_string(c, m->name, buf, sizeof(buf)) : "frame", "frame",
			   "i", m->tid);
	chrome_us(&c->j, "ts", t);
	chrome_str(&c->j, "s", "p");
	json_out__key(&c->j, "args");
	json_out__begin_object(&c->j, true);
	chrome_u64(&c->j, "frame", c->frames++);
	json_out__end_object(&c->j);
	json_out__end_object(&c->j);
}

static int chrome_add_mark(void *ctx, const struct trace_mark *m)
{
	struct export_chrome *c = ctx;
	uint64_t t = chrome_time(c, m->ts);

	switch (m->kind) {
	case TRACE_MARK_ZONE_BEGIN:
		return chrome_zone_begin(c, m, t);
	case TRACE_MARK_ZONE_END:
		chrome_zone_end(c, m, t);
		return 0;
	case TRACE_MARK_FRAME:
		chrome_frame(c, m, t);
		return 0;
	default:
		return 0; /* pools and thread names: not drawn; unknown kinds: skipped */
	}
}

static int chrome_add_event(void *ctx, const struct trace_event *e)
{
	struct export_chrome *c = ctx;
	struct zone_stack *s;
	struct open_zone *z;
	uint64_t count, bytes;

	chrome_time(c, e->ts);
	/* The allocation half, with the analysis's rules for what counts. */
	if ((e->type == TRACE_EVENT_ALLOC || e->type == TRACE_EVENT_REALLOC) && e->ptr) {
		s = chrome_stack(c, e->tid, false);
		if (s && s->n) {
			z = &s->zones[s->n - 1];
			bytes = heap_series__weigh(c->series, e->size, &count);
			z->allocations += count;
			z->allocated_bytes += bytes;
		}
	}
	return heap_series__add_event(c->series, e);
}

static int chrome_set_meta(void *ctx, const struct trace_meta *m)
{
	struct export_chrome *c = ctx;

	c->start_ns = m->start_mono_ns;
	return heap_series__set_meta(c->series, m);
}

static int chrome_set_end(void *ctx, const struct trace_end *e)
{
	struct export_chrome *c = ctx;

	c->end_ns = chrome_time(c, e->end_mono_ns);
	return 0;
}

const struct trace_reader_ops export_chrome_reader_ops = {
	.meta = chrome_set_meta,
	.string = chrome_add_string,
	.mark = chrome_add_mark,
	.event = chrome_add_event,
	.end = chrome_set_end,
};

static void chrome_write_counter(struct export_chrome *c)
{
	const struct heap_point *p;
	size_t n;

	p = heap_series__points(c->series, &n);
	for (size_t i = 0; i < n; i++) {
		chrome_begin_event(c, "heap", "memory", "C", (uint32_t)c->pid);
		chrome_us(&c->j, "ts", p[i].t_ns);
		json_out__key(&c->j, "args");
		json_out__begin_object(&c->j, true);
		chrome_u64(&c->j, "bytes", p[i].bytes);
		json_out__end_object(&c->j);
		json_out__end_object(&c->j);
	}
}

int export_chrome__finish(struct export_chrome *c)
{
	uint64_t end = c->end_ns ? c->end_ns : c->last_ns;
	int err;

	/* marks.h: zones still open when the trace ends close at its end. */
	for (size_t i = 0; i < c->nstacks; i++) {
		while (c->stacks[i].n)
			chrome_zone_close(c, &c->stacks[i], end);
	}
	err = heap_series__finish(c->series);
	if (err)
		return err;
	chrome_write_counter(c);
	json_out__end_array(&c->j);
	chrome_str(&c->j, "displayTimeUnit", "ms");
	json_out__end_object(&c->j);
	return json_out__finish(&c->j);
}
