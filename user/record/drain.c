// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "drain.h"
#include <linux/types.h>
#include "memtrace_abi.h"
#include "python.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(struct mt_event_header) == 16, "ABI: header");
_Static_assert(sizeof(struct mt_fork_event) == 24, "ABI: fork");
_Static_assert(sizeof(struct mt_alloc_event) == 48, "ABI: alloc event");
_Static_assert(sizeof(struct mt_free_event) == 24, "ABI: free event");
_Static_assert(sizeof(struct mt_stack_event) == 32 + 8 * MT_MAX_STACK_DEPTH, "ABI: stack event");

/* A stack's frames, by its trace id - 1. */
struct stack_frames {
	uint32_t nr;     /* frames known; 0 until the STACK record arrives */
	uint64_t *frames;
};

/* An event or a mark waiting for its turn in time order. */
#define MERGE_RUNS 16 /* runs merged as they are handed on; more (many CPUs): sorted first */

enum { PENDING_EVENT, PENDING_MARK, PENDING_RSS, PENDING_MAP, PENDING_RESIDENT };

/* 48 bytes: a record is written, merged and moved about three times while it
 * waits (80 bytes as the writer's own structs, 16% of the recorder's CPU in
 * memmove under malloc_bench); put() makes the writer's struct. Rare kinds
 * with more to say are held out of line. */
struct pending {
	uint64_t ts; /* the event's, mark's or sample's: the sort key, kept in front */
	uint32_t tid;  /* event, mark */
	uint16_t kind; /* PENDING_* */
	uint16_t type; /* event: MT_EVENT_* */
	union {
		struct {
			uint64_t ptr, old_ptr, size;
			uint32_t stack_id;
		} ev;
		struct {
			uint64_t ptr, size;
			uint32_t kind, name;
		} mark;
		struct {
			uint64_t anon, file, shmem;
		} rss;
		struct trace_map *map;           /* owned */
		struct trace_resident *resident; /* owned: one allocation with its arrays */
	};
};
_Static_assert(sizeof(struct pending) == 48, "a pending record's size");


/* Code whose return addresses belong to the allocator (see drain.h). */
struct code_span {
	uint64_t start, end;
};

struct drain {
	struct trace_writer *w;
	struct code_span *allocator_code;
	size_t nr_allocator_code, allocator_code_cap;
	struct u64map stack_ids;      /* the probe's stack hash -> trace id */
	struct stack_frames *stacks;  /* by id - 1 */
	size_t nr_stacks, stacks_cap;
	struct u64map name_ids;       /* address of a name in the target -> string id */
	size_t nr_names;
	char **name_texts;            /* by id - 1: each name again in a rotated trace's next file */
	size_t name_texts_cap;
	const struct trace_reader_ops *tap; /* sees what the writer gets; NULL: none */
	void *tap_ctx;
	drain_read_string_fn read_string;
	void *read_string_ctx;
	drain_fork_fn on_fork;
	void *fork_ctx;
	struct pending *pending;
	size_t nr_pending;
	size_t pending_cap;
	struct pending *sorted;   /* the merge sort's other buffer, pending_cap long */
	size_t run[MERGE_RUNS];   /* where the runs in time order of pending begin, */
	size_t run_end[MERGE_RUNS]; /* ... and end (what a flush handed on leaves a gap before each), */
	size_t nr_runs;           /* ... how many (MERGE_RUNS + 1: too many, sort) */
	size_t scanned;           /* ... known up to here: later ones are new since the last flush */
	uint64_t written;
	uint32_t *tap_stacks;    /* new stacks the tap gets at the next flush */
	size_t nr_tap_stacks, tap_stacks_cap;
	size_t max_stacks;       /* 0: every stack kept; else past it, new ones fold into other_id */
	struct python *py;       /* the target's interpreter: PYSTACK records name its frames */
	struct u64map py_told;   /* Python frames' addresses the tap has a symbol for */
	uint32_t other_id;
	uint64_t folded;         /* stack sightings folded so */
};

/* The trace id of the stack HASH (non-zero). Ids are handed out on first
 * sight, of the stack or of an event using it: the two come through
 * different CPUs' rings in either order. 0 when out of memory. */
static int queue_tap_stack(struct drain *d, uint32_t id);

/* Past the cap (drain__set_max_stacks): the one stack every new stack is
 * folded into, made (and sent) the first time. Its id, or 0. */
static uint32_t other_stack(struct drain *d)
{
	static const uint64_t other = TRACE_FRAME_OTHER;
	struct trace_stack ts = { .nr = 1, .frames = &other };

	d->folded++;
	if (d->other_id)
		return d->other_id;
	if (array_reserve((void **)&d->stacks, &d->stacks_cap, d->nr_stacks + 1, sizeof(*d->stacks)))
		return 0;
	d->stacks[d->nr_stacks] = (struct stack_frames){ .frames = malloc(sizeof(uint64_t)), .nr = 1 };
	if (!d->stacks[d->nr_stacks].frames)
		return 0;
	d->stacks[d->nr_stacks].frames[0] = other;
	ts.id = d->other_id = (uint32_t)++d->nr_stacks;
	if ((d->tap && d->tap->stack && queue_tap_stack(d, ts.id)) || trace_writer__add_stack(d->w, &ts))
		return 0;
	return d->other_id;
}

static uint32_t intern(struct drain *d, uint64_t hash)
{
	struct u64map_entry *e;
	bool existed;

	if (d->max_stacks && d->nr_stacks >= d->max_stacks) {
		e = u64map__get(&d->stack_ids, hash);
		return e ? (uint32_t)e->val : other_stack(d);
	}
	e = u64map__insert(&d->stack_ids, hash, &existed);
	if (!e)
		return 0;
	if (!existed) {
		if (array_reserve((void **)&d->stacks, &d->stacks_cap, d->nr_stacks + 1,
				  sizeof(*d->stacks))) {
			u64map__remove(&d->stack_ids, e);
			return 0;
		}
		d->stacks[d->nr_stacks] = (struct stack_frames){ 0 };
		e->val = ++d->nr_stacks;
	}
	return (uint32_t)e->val;
}

/* A frame-pointer walk through code built without frame pointers reads
 * whatever the stack holds; a user return address is never 0 or above the
 * canonical user half, so the stack is cut at the first such value. */
static uint32_t plausible_frames(const uint64_t *frames, uint32_t nr)
{
	uint32_t n = 0;

	while (n < nr && frames[n] >= 4096 && frames[n] < 0x800000000000ULL)
		n++;
	if (n < nr && (frames[n] == MT_STACK_TRUNCATED || frames[n] == MT_STACK_DEPTH_CUT))
		n++; /* the walk says it was cut here: keep that */
	return n;
}

/* A return address points just past its call, so it lies in (start, end]. */
static bool in_allocator_code(const struct drain *d, uint64_t ret_addr)
{
	for (size_t i = 0; i < d->nr_allocator_code; i++) {
		if (ret_addr > d->allocator_code[i].start && ret_addr <= d->allocator_code[i].end)
			return true;
	}
	return false;
}

/* Leading frames in unprobed allocator code; a stack that is allocator all
 * the way keeps its outermost frame. */
static uint32_t allocator_frames(const struct drain *d, const uint64_t *frames, uint32_t nr)
{
	uint32_t n = 0;

	while (n + 1 < nr && in_allocator_code(d, frames[n]))
		n++;
	return n;
}

int drain__add_allocator_code(struct drain *d, uint64_t start, uint64_t end)
{
	if (array_reserve((void **)&d->allocator_code, &d->allocator_code_cap, d->nr_allocator_code + 1,
			  sizeof(*d->allocator_code)))
		return -ENOMEM;
	d->allocator_code[d->nr_allocator_code++] = (struct code_span){ start, end };
	return 0;
}

/* Stack ID's frames, now filled in, to the trace and (with the next flush,
 * before its events) to the tap. */
static int publish_stack(struct drain *d, uint32_t id)
{
	const struct stack_frames *s = &d->stacks[id - 1];
	struct trace_stack ts = { .id = id, .nr = s->nr, .frames = s->frames };

	if (d->tap && d->tap->stack && queue_tap_stack(d, id))
		return -ENOMEM;
	return trace_writer__add_stack(d->w, &ts);
}

static int take_stack(struct drain *d, const struct mt_stack_event *ev, size_t size)
{
	const uint64_t *frames = (const uint64_t *)ev->frames;
	struct stack_frames *s;
	uint32_t nr = ev->nr, skip, id;

	if (nr > MT_MAX_STACK_DEPTH || size < sizeof(*ev) - sizeof(ev->frames) + nr * 8 ||
	    !ev->stack_id)
		return 0; /* malformed: ignore rather than trust */
	nr = plausible_frames(frames, nr);
	skip = allocator_frames(d, frames, nr);
	frames += skip;
	nr -= skip;
	id = intern(d, ev->stack_id);
	if (!id)
		return -ENOMEM;
	s = &d->stacks[id - 1];
	if (s->frames)
		return 0; /* sent again after the kernel's LRU forgot it */
	s->frames = malloc((nr ? nr : 1) * sizeof(uint64_t));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, frames, nr * sizeof(uint64_t));
	s->nr = nr;
	return publish_stack(d, id);
}

/* A stack with Python frames: its native stack's frames (a STACK before
 * it) with the evaluation loop's frames replaced by the Python ones. */
static int take_pystack(struct drain *d, const struct mt_pystack_event *ev, size_t size)
{
	const struct u64map_entry *e;
	const uint64_t *native = NULL;
	struct stack_frames *s;
	uint32_t id, cap, nnative = 0;

	if (!d->py || ev->nr > MT_PY_MAX_FRAMES || size < sizeof(*ev) - sizeof(ev->frames) + ev->nr * sizeof(ev->frames[0]) ||
	    !ev->stack_id)
		return 0; /* malformed, or no interpreter known: ignore rather than trust */
	e = u64map__get(&d->stack_ids, ev->native_id);
	/* its frames, not the entry: interning may move d->stacks */
	if (e && e->val && d->stacks[e->val - 1].frames) {
		native = d->stacks[e->val - 1].frames;
		nnative = d->stacks[e->val - 1].nr;
	}
	id = intern(d, ev->stack_id);
	if (!id)
		return -ENOMEM;
	s = &d->stacks[id - 1];
	if (s->frames)
		return 0; /* sent again */
	cap = nnative + ev->nr + 1;
	s->frames = malloc(cap * sizeof(uint64_t));
	if (!s->frames)
		return -ENOMEM;
	/* a native stack lost to a full ring: the Python frames alone */
	s->nr = python__compose(d->py, native, nnative, ev, s->frames, cap);
	if (d->tap && d->tap->symbol) {
		/* a live view names native frames from the files; these only the
		 * recorder can, so their names go with the stack */
		for (uint32_t i = 0; i < s->nr; i++) {
			struct trace_symbol sym;
			struct u64map_entry *t;
			bool existed;
			int err;

			if (!python_is_addr(s->frames[i]) || python__resolve(d->py, s->frames[i], &sym))
				continue;
			t = u64map__insert(&d->py_told, s->frames[i], &existed);
			if (!t)
				return -ENOMEM;
			if (!existed && (err = d->tap->symbol(d->tap_ctx, &sym)))
				return err;
		}
	}
	return publish_stack(d, id);
}

void drain__set_python(struct drain *d, struct python *py)
{
	d->py = py;
}

static int queue_tap_stack(struct drain *d, uint32_t id)
{
	if (d->nr_tap_stacks == d->tap_stacks_cap) {
		size_t cap = d->tap_stacks_cap ? 2 * d->tap_stacks_cap : 256;
		uint32_t *v = realloc(d->tap_stacks, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->tap_stacks = v;
		d->tap_stacks_cap = cap;
	}
	d->tap_stacks[d->nr_tap_stacks++] = id;
	return 0;
}

void drain__set_max_stacks(struct drain *d, size_t max)
{
	d->max_stacks = max;
}

uint64_t drain__folded(const struct drain *d)
{
	return d->folded;
}

/* Events held for ordering: a start small enough for the agent's many
 * targets (65536 cost each 10 MB with the sort's second array); a burst
 * doubles it, and drain__flush gives back what a burst left. */
#define PENDING_MIN 4096

/* Both arrays at CAP entries, the pending ones kept. A failed realloc
 * leaves its array as it was: the capacity is the smaller of the two. */
static int pending_resize(struct drain *d, size_t cap)
{
	size_t old = d->pending_cap, pcap = old, scap = old;
	struct pending *p = realloc(d->pending, cap * sizeof(*p));
	struct pending *q;

	if (p) {
		d->pending = p;
		pcap = cap;
	}
	q = p ? realloc(d->sorted, cap * sizeof(*q)) : NULL;
	if (q) {
		d->sorted = q;
		scap = cap;
	}
	d->pending_cap = pcap < scap ? pcap : scap;
	return p && q ? 0 : -ENOMEM;
}

/* What waits, moved to the front: the runs, then what came since the last
 * flush. A flush leaves its runs where they are (moving them at every flush
 * copied each record two or three times: a record waits two or three
 * flushes); this runs when the gaps hold as much as the records do, or the
 * array is full, or before a sort, so a record moves about once. */
static void pending_compact(struct drain *d)
{
	size_t out = 0, n = d->nr_runs < MERGE_RUNS ? d->nr_runs : MERGE_RUNS;

	for (size_t j = 0; j < n; j++) {
		size_t len = d->run_end[j] - d->run[j];

		if (d->run[j] != out)
			memmove(d->pending + out, d->pending + d->run[j], len * sizeof(*d->pending));
		d->run[j] = out;
		out += len;
		d->run_end[j] = out;
	}
	if (d->scanned != out)
		memmove(d->pending + out, d->pending + d->scanned, (d->nr_pending - d->scanned) * sizeof(*d->pending));
	d->nr_pending = out + (d->nr_pending - d->scanned);
	d->scanned = out;
}

/* Records that wait: in the runs, and those not yet scanned. */
static size_t pending_live(const struct drain *d)
{
	size_t live = d->nr_pending - d->scanned;

	for (size_t j = 0; j < d->nr_runs && j < MERGE_RUNS; j++)
		live += d->run_end[j] - d->run[j];
	return live;
}

static struct pending *pending_slot(struct drain *d)
{
	if (d->nr_pending == d->pending_cap && pending_live(d) < d->nr_pending)
		pending_compact(d);
	if (d->nr_pending == d->pending_cap && pending_resize(d, d->pending_cap ? d->pending_cap * 2 : PENDING_MIN))
		return NULL;
	return &d->pending[d->nr_pending++];
}

static int take_event(struct drain *d, const struct mt_event_header *h, size_t size)
{
	const struct mt_alloc_event *a = (const void *)h;
	const struct mt_free_event *f = (const void *)h;
	struct pending *p;

	if (size < (h->type == MT_EVENT_FREE ? sizeof(*f) : sizeof(*a)))
		return 0;
	p = pending_slot(d);
	if (!p)
		return -ENOMEM;
	p->ts = h->ts;
	p->tid = h->tid;
	p->kind = PENDING_EVENT;
	p->type = h->type;
	if (h->type == MT_EVENT_FREE) {
		p->ev.ptr = f->ptr;
		p->ev.old_ptr = p->ev.size = 0;
		p->ev.stack_id = 0;
		return 0;
	}
	p->ev.ptr = a->ptr;
	p->ev.old_ptr = a->old_ptr;
	p->ev.size = a->size;
	p->ev.stack_id = 0;
	if (a->stack_id) {
		p->ev.stack_id = intern(d, a->stack_id);
		if (!p->ev.stack_id) {
			d->nr_pending--;
			return -ENOMEM;
		}
	}
	return 0;
}

/* The id of the name at ADDR, writing its STRING record the first time. The
 * probe sends the text before the first mark that uses it, through the same
 * ring; if that was dropped, the name is written as unknown. */
static int name_id(struct drain *d, uint64_t addr, const char *text, uint32_t *id)
{
	struct trace_string str;
	struct u64map_entry *n;
	bool existed;

	*id = 0;
	if (!addr)
		return 0;
	n = u64map__insert(&d->name_ids, addr, &existed);
	if (!n)
		return -ENOMEM;
	if (existed) {
		*id = (uint32_t)n->val;
		return 0;
	}
	if (array_reserve((void **)&d->name_texts, &d->name_texts_cap, d->nr_names + 1, sizeof(*d->name_texts)))
		return -ENOMEM;
	d->name_texts[d->nr_names] = strdup(text ? text : "[unknown]");
	if (!d->name_texts[d->nr_names])
		return -ENOMEM;
	n->val = ++d->nr_names;
	*id = (uint32_t)n->val;
	str.id = *id;
	str.str = d->name_texts[*id - 1];
	if (d->tap && d->tap->string) {
		int err = d->tap->string(d->tap_ctx, &str);

		if (err)
			return err;
	}
	return trace_writer__add_string(d->w, &str);
}

static int take_string(struct drain *d, const struct mt_string_event *ev, size_t size)
{
	char text[MT_STRING_MAX];
	uint32_t id;

	if (size < sizeof(*ev))
		return 0;
	memcpy(text, ev->text, sizeof(text));
	text[sizeof(text) - 1] = 0;
	if (ev->unread && (!d->read_string || d->read_string(d->read_string_ctx, ev->addr, text, sizeof(text))))
		snprintf(text, sizeof(text), "[unreadable at 0x%llx]", (unsigned long long)ev->addr);
	return name_id(d, ev->addr, text, &id);
}

void drain__set_writer(struct drain *d, struct trace_writer *w)
{
	d->w = w;
}

void drain__set_tap(struct drain *d, const struct trace_reader_ops *tap, void *ctx)
{
	d->tap = tap;
	d->tap_ctx = ctx;
}

/* One pending record to the tap, then to the writer. */
static int put(struct drain *d, const struct pending *p)
{
	int err = 0;

	switch (p->kind) {
	case PENDING_MARK: {
		struct trace_mark m = { .kind = p->mark.kind, .tid = p->tid, .ts = p->ts, .name = p->mark.name,
					.ptr = p->mark.ptr, .size = p->mark.size };

		if (d->tap && d->tap->mark)
			err = d->tap->mark(d->tap_ctx, &m);
		return err ? err : trace_writer__add_mark(d->w, &m);
	}
	case PENDING_RSS: {
		struct trace_rss r = { .ts = p->ts, .anon = p->rss.anon, .file = p->rss.file, .shmem = p->rss.shmem };

		if (d->tap && d->tap->rss)
			err = d->tap->rss(d->tap_ctx, &r);
		return err ? err : trace_writer__add_rss(d->w, &r);
	}
	case PENDING_MAP:
		if (d->tap && d->tap->map)
			err = d->tap->map(d->tap_ctx, p->map);
		if (!err)
			err = trace_writer__add_map(d->w, p->map);
		free(p->map);
		return err;
	case PENDING_RESIDENT:
		if (d->tap && d->tap->resident)
			err = d->tap->resident(d->tap_ctx, p->resident);
		if (!err)
			err = trace_writer__add_resident(d->w, p->resident);
		free(p->resident);
		return err;
	default: {
		struct trace_event e = { .type = p->type, .tid = p->tid, .ts = p->ts, .ptr = p->ev.ptr,
					 .old_ptr = p->ev.old_ptr, .size = p->ev.size, .stack_id = p->ev.stack_id };

		if (d->tap && d->tap->event)
			err = d->tap->event(d->tap_ctx, &e);
		return err ? err : trace_writer__add_event(d->w, &e);
	}
	}
}

void drain__set_string_reader(struct drain *d, drain_read_string_fn fn, void *ctx)
{
	d->read_string = fn;
	d->read_string_ctx = ctx;
}

void drain__set_fork(struct drain *d, drain_fork_fn fn, void *ctx)
{
	d->on_fork = fn;
	d->fork_ctx = ctx;
}

/* A new pending record of KIND at TS, zeroed otherwise; NULL: out of memory. */
static struct pending *pending_new(struct drain *d, int kind, uint64_t ts)
{
	struct pending *p = pending_slot(d);

	if (p) {
		memset(p, 0, sizeof(*p));
		p->kind = kind;
		p->ts = ts;
	}
	return p;
}

static int take_mark(struct drain *d, const struct mt_mark_event *ev, size_t size)
{
	struct pending *p;
	int err;

	if (size < sizeof(*ev))
		return 0;
	p = pending_new(d, PENDING_MARK, ev->hdr.ts);
	if (!p)
		return -ENOMEM;
	p->mark.kind = ev->kind;
	p->tid = ev->hdr.tid;
	p->mark.ptr = ev->ptr;
	p->mark.size = ev->size;
	err = name_id(d, ev->name, NULL, &p->mark.name);
	if (err)
		d->nr_pending--;
	return err;
}

int drain__add_mark(struct drain *d, const struct trace_mark *m)
{
	struct pending *p = pending_new(d, PENDING_MARK, m->ts);

	if (!p)
		return -ENOMEM;
	p->tid = m->tid;
	p->mark.kind = m->kind;
	p->mark.name = m->name;
	p->mark.ptr = m->ptr;
	p->mark.size = m->size;
	return 0;
}

int drain__add_rss(struct drain *d, const struct trace_rss *s)
{
	struct pending *p = pending_new(d, PENDING_RSS, s->ts);

	if (!p)
		return -ENOMEM;
	p->rss.anon = s->anon;
	p->rss.file = s->file;
	p->rss.shmem = s->shmem;
	return 0;
}

int drain__add_resident(struct drain *d, const struct trace_resident *r)
{
	size_t vb = (size_t)r->nvmas * sizeof(*r->vmas), rb = (size_t)r->nruns * sizeof(*r->runs);
	struct trace_resident *copy = malloc(sizeof(*copy) + vb + rb);
	struct pending *p;

	if (!copy)
		return -ENOMEM;
	*copy = *r;
	copy->vmas = memcpy((char *)(copy + 1), r->vmas, vb);
	copy->runs = memcpy((char *)(copy + 1) + vb, r->runs, rb);
	p = pending_new(d, PENDING_RESIDENT, r->ts);
	if (!p) {
		free(copy);
		return -ENOMEM;
	}
	p->resident = copy;
	return 0;
}

static int take_map(struct drain *d, const struct mt_map_event *ev, size_t size)
{
	struct trace_map *m;
	struct pending *p;

	if (size < sizeof(*ev))
		return 0;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	*m = (struct trace_map){ .ts = ev->hdr.ts, .tid = ev->hdr.tid, .call = ev->call, .flags = ev->flags,
				 .ret = ev->ret, .a0 = ev->a0, .a1 = ev->a1, .a2 = ev->a2, .a3 = ev->a3 };
	if (ev->stack_id) {
		m->stack_id = intern(d, ev->stack_id);
		if (!m->stack_id) {
			free(m);
			return -ENOMEM;
		}
	}
	p = pending_new(d, PENDING_MAP, ev->hdr.ts);
	if (!p) {
		free(m);
		return -ENOMEM;
	}
	p->map = m;
	return 0;
}

int drain__record(struct drain *d, const void *data, size_t size)
{
	const struct mt_event_header *h = data;

	if (size < sizeof(*h))
		return 0;
	switch (h->type) {
	case MT_EVENT_STACK:
		return take_stack(d, data, size);
	case MT_EVENT_PYSTACK:
		return take_pystack(d, data, size);
	case MT_EVENT_PYCODE:
		return d->py && size >= sizeof(struct mt_pycode_event) ? python__learn(d->py, data) : 0;
	case MT_EVENT_ALLOC:
	case MT_EVENT_FREE:
	case MT_EVENT_REALLOC:
		return take_event(d, h, size);
	case MT_EVENT_MARK:
		return take_mark(d, data, size);
	case MT_EVENT_STRING:
		return take_string(d, data, size);
	case MT_EVENT_MAP:
		return take_map(d, data, size);
	case MT_EVENT_FORK:
		if (d->on_fork && size >= sizeof(struct mt_fork_event))
			d->on_fork(d->fork_ctx, ((const struct mt_fork_event *)data)->child);
		return 0;
	default:
		return 0;
	}
}

static size_t run_end(const struct pending *v, size_t i, size_t n)
{
	while (++i < n && v[i].ts >= v[i - 1].ts)
		;
	return i;
}

/* Stable: on equal times the left run (the earlier arrival) goes first. */
static void merge(const struct pending *a, size_t na, const struct pending *b, size_t nb,
		  struct pending *out)
{
	while (na && nb) {
		if (b->ts < a->ts) {
			*out++ = *b++;
			nb--;
		} else {
			*out++ = *a++;
			na--;
		}
	}
	memcpy(out, a, na * sizeof(*a));
	memcpy(out + na, b, nb * sizeof(*b));
}

/*
 * Natural merge sort: what waits is a few runs already in time order (what
 * the last flush left, then each CPU's ring), so merging runs costs about
 * n * log2(runs) rather than a general sort's n * log2(n).
 */
static void sort_pending(struct drain *d)
{
	size_t n = d->nr_pending;

	while (n > 1 && run_end(d->pending, 0, n) < n) {
		struct pending *swap;
		size_t i = 0;

		while (i < n) {
			size_t mid = run_end(d->pending, i, n);
			size_t end = mid < n ? run_end(d->pending, mid, n) : n;

			merge(d->pending + i, mid - i, d->pending + mid, end - mid, d->sorted + i);
			i = end;
		}
		swap = d->pending;
		d->pending = d->sorted;
		d->sorted = swap;
	}
}

/* Run A's head goes before run B's: earlier, or as early and the earlier
 * run (the earlier arrival), so equal times keep their order. */
static bool head_before(const struct pending *v, const size_t *start, size_t a, size_t b)
{
	uint64_t ta = v[start[a]].ts, tb = v[start[b]].ts;

	return ta < tb || (ta == tb && a < b);
}

/* Sift HEAP[0] down to its place among the NH runs of the heap. */
static void heap_down(const struct pending *v, const size_t *start, size_t *heap, size_t nh)
{
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < nh && head_before(v, start, heap[l], heap[m]))
			m = l;
		if (l + 1 < nh && head_before(v, start, heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = heap[i];

		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
}

/* Run J into the heap. */
static void heap_push(const struct pending *v, const size_t *start, size_t *heap, size_t *nh, size_t j)
{
	size_t i = (*nh)++;

	heap[i] = j;
	while (i && head_before(v, start, heap[i], heap[(i - 1) / 2])) {
		size_t p = (i - 1) / 2, t = heap[p];

		heap[p] = heap[i];
		heap[i] = t;
		i = p;
	}
}

int drain__flush(struct drain *d, uint64_t watermark_ns)
{
	size_t n = 0;
	int err = 0;

	/* the tap's new stacks first: the events that name them may follow */
	for (size_t i = 0; i < d->nr_tap_stacks && !err; i++) {
		const struct stack_frames *s = &d->stacks[d->tap_stacks[i] - 1];
		struct trace_stack ts = { .id = d->tap_stacks[i], .nr = s->nr, .frames = s->frames };

		err = d->tap->stack(d->tap_ctx, &ts);
	}
	d->nr_tap_stacks = 0;
	if (err)
		return err;
	/* What waits is a few runs in time order (what the last flush left,
	 * then each CPU's ring): merged as they are handed on, the earliest
	 * head first (the left run's on equal times: the earlier arrival), and
	 * what is not due yet stays as runs. Sorting it all first copied each
	 * 80-byte record twice a flush, and a record waits two or three
	 * flushes (REORDER_NS): 27% of the recorder's CPU under malloc_bench. */
	size_t k, out = 0;

	/* the runs of what came since the last flush (each record looked at
	 * once here, not at every flush while it waits): a record in time
	 * order right after the last run's end goes on with it */
	for (size_t i = d->scanned; i < d->nr_pending && d->nr_runs <= MERGE_RUNS; i++) {
		size_t last = d->nr_runs - 1;

		if (d->nr_runs && d->run_end[last] == i && d->pending[i].ts >= d->pending[i - 1].ts) {
			d->run_end[last] = i + 1;
			continue;
		}
		if (d->nr_runs < MERGE_RUNS) {
			d->run[d->nr_runs] = i;
			d->run_end[d->nr_runs] = i + 1;
		}
		d->nr_runs++;
	}
	if (d->nr_runs > MERGE_RUNS) { /* many CPUs: one sort, then one run */
		size_t scanned = d->scanned;

		/* the runs known before this flush to the front (the last one's
		 * records from this flush on left to what came since), then what came since */
		d->nr_runs = 0;
		for (size_t j = 0; j < MERGE_RUNS && d->run[j] < scanned; j++) {
			if (d->run_end[j] > scanned)
				d->run_end[j] = scanned;
			d->nr_runs++;
		}
		pending_compact(d);
		sort_pending(d);
		d->run[0] = 0;
		d->run_end[0] = d->nr_pending;
		d->nr_runs = d->nr_pending ? 1 : 0;
	}
	d->scanned = d->nr_pending;
	k = d->nr_runs;
	/* The runs' heads in a binary heap, earliest on top: a record costs a
	 * sift of log2(runs) steps, not a look at every run (the lanes and the
	 * rings of each CPU, and what waits from the last flushes: 6 to 10).
	 * A run's start moves past what is handed on. */
	size_t heap[MERGE_RUNS], nh = 0, *start = d->run, *end = d->run_end;

	for (size_t j = 0; j < k; j++)
		if (start[j] < end[j])
			heap_push(d->pending, start, heap, &nh, j);
	while (!err && nh && d->pending[start[heap[0]]].ts < watermark_ns) {
		size_t j = heap[0];

		err = put(d, &d->pending[start[j]++]);
		n++;
		if (start[j] == end[j])
			heap[0] = heap[--nh];
		heap_down(d->pending, start, heap, nh);
	}
	/* what waits stays a run of its own, where it is */
	d->nr_runs = 0;
	for (size_t j = 0; j < k; j++) {
		if (start[j] == end[j])
			continue;
		out += end[j] - start[j];
		start[d->nr_runs] = start[j];
		end[d->nr_runs++] = end[j];
	}
	d->written += n;
	if (!out) {
		d->nr_pending = d->scanned = 0;
	} else if (d->nr_pending - out >= out) {
		pending_compact(d);
	}
	/* Past a burst: halve what a quarter would hold (no failure: the
	 * larger arrays are still whole if realloc says no). */
	if (d->pending_cap > PENDING_MIN && d->nr_pending < d->pending_cap / 4)
		(void)pending_resize(d, d->pending_cap / 2);
	return err;
}

uint64_t drain__events(const struct drain *d)
{
	return d->written;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int drain__for_each_address(struct drain *d, int (*fn)(void *ctx, uint64_t addr), void *ctx)
{
	uint64_t *all;
	size_t n = 0, total = 0;
	int err = 0;

	for (size_t i = 0; i < d->nr_stacks; i++)
		total += d->stacks[i].nr;
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return -ENOMEM;
	for (size_t i = 0; i < d->nr_stacks; i++) {
		if (!d->stacks[i].nr)
			continue;
		memcpy(all + n, d->stacks[i].frames, d->stacks[i].nr * sizeof(*all));
		n += d->stacks[i].nr;
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 0; i < n && !err; i++) {
		if (i == 0 || all[i] != all[i - 1])
			err = fn(ctx, all[i]);
	}
	free(all);
	return err;
}

struct drain *drain__new(struct trace_writer *w)
{
	struct drain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->w = w;
	return d;
}

int drain__rewrite(struct drain *d, struct trace_writer *w)
{
	int err = 0;

	d->w = w;
	for (size_t i = 0; i < d->nr_stacks && !err; i++) {
		const struct stack_frames *s = &d->stacks[i];
		struct trace_stack ts = { .id = (uint32_t)i + 1, .nr = s->nr, .frames = s->frames };

		if (s->frames) /* an id an event took before its stack came: it comes later */
			err = trace_writer__add_stack(w, &ts);
	}
	for (size_t i = 0; i < d->nr_names && !err; i++) {
		struct trace_string str = { .id = (uint32_t)i + 1, .str = d->name_texts[i] };

		err = trace_writer__add_string(w, &str);
	}
	return err;
}

void drain__free(struct drain *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_stacks; i++)
		free(d->stacks[i].frames);
	free(d->stacks);
	u64map__free(&d->stack_ids);
	u64map__free(&d->py_told);
	u64map__free(&d->name_ids);
	for (size_t i = 0; i < d->nr_names; i++)
		free(d->name_texts[i]);
	free(d->name_texts);
	free(d->allocator_code);
	free(d->tap_stacks);
	pending_compact(d); /* the gaps hold what was handed on, freed then */
	for (size_t i = 0; i < d->nr_pending; i++)
		if (d->pending[i].kind == PENDING_RESIDENT)
			free(d->pending[i].resident);
		else if (d->pending[i].kind == PENDING_MAP)
			free(d->pending[i].map);
	free(d->pending);
	free(d->sorted);
	free(d);
}
