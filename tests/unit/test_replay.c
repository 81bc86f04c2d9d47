// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * replay.h: the engine's own rules as observers see them (what the alloc,
 * free, zone and frame callbacks are told), and one stream of events given
 * to every observer at once (sites and totals, zones and frames, the heap
 * series, a counting observer) giving the same figures through each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "heap_series.h"
#include "marks.h"
#include "replay.h"

#define START 1000

/* What a counting observer saw. */
struct seen {
	uint64_t allocs, alloc_bytes;
	uint64_t frees, freed_bytes, temporary, replaced;
	uint64_t zone_begins, zone_ends, zone_ends_at_end, unmatched_ends;
	uint64_t zone_excl_allocs, zone_excl_bytes; /* summed over closed entries */
	uint64_t frames, pools, events, finished;
	uint64_t last_live;                         /* replay__live_bytes after the last event */
	uint32_t last_zone;                         /* block.zone of the latest allocation */
};

static int seen_alloc(void *ctx, const struct replay *r, const struct replay_block *b)
{
	struct seen *s = ctx;

	s->allocs += b->count;
	s->alloc_bytes += b->bytes;
	s->last_zone = b->zone;
	return 0;
}

static int seen_free(void *ctx, const struct replay *r, const struct replay_block *b, bool temporary,
		     bool replaced)
{
	struct seen *s = ctx;

	if (replaced) {
		s->replaced += b->count;
	} else {
		s->frees += b->count;
		s->temporary += temporary ? b->count : 0;
	}
	s->freed_bytes += b->bytes;
	return 0;
}

static int seen_event(void *ctx, const struct replay *r, const struct trace_event *e)
{
	struct seen *s = ctx;

	s->events++;
	s->last_live = replay__live_bytes(r);
	return 0;
}

static int seen_zone_begin(void *ctx, const struct replay *r, uint32_t th, const struct replay_zone *z)
{
	((struct seen *)ctx)->zone_begins++;
	return 0;
}

static int seen_zone_end(void *ctx, const struct replay *r, uint32_t th, const struct replay_zone *z,
			 uint64_t ts, bool at_end)
{
	struct seen *s = ctx;

	s->zone_ends++;
	s->zone_ends_at_end += at_end;
	s->zone_excl_allocs += z->allocations;
	s->zone_excl_bytes += z->allocated_bytes;
	return 0;
}

static int seen_unmatched(void *ctx, const struct replay *r, uint32_t th, uint32_t name)
{
	((struct seen *)ctx)->unmatched_ends++;
	return 0;
}

static int seen_frame(void *ctx, const struct replay *r, uint64_t index, uint32_t name,
		      const struct trace_mark *m)
{
	struct seen *s = ctx;

	assert_int_equal(index, s->frames); /* numbered 0, 1, ... */
	s->frames++;
	return 0;
}

static int seen_pool(void *ctx, const struct replay *r, const struct trace_mark *m, uint32_t name)
{
	((struct seen *)ctx)->pools++;
	return 0;
}

static int seen_finish(void *ctx, const struct replay *r)
{
	((struct seen *)ctx)->finished++;
	return 0;
}

static const struct replay_ops seen_ops = {
	.alloc = seen_alloc,
	.free = seen_free,
	.event_done = seen_event,
	.zone_begin = seen_zone_begin,
	.zone_end = seen_zone_end,
	.zone_unmatched_end = seen_unmatched,
	.frame = seen_frame,
	.pool = seen_pool,
	.finish = seen_finish,
};

static void ev(struct analysis *a, uint32_t type, uint32_t tid, uint64_t ts, uint64_t old_ptr,
	       uint64_t ptr, uint64_t size, uint32_t stack)
{
	struct trace_event e = { .type = type, .tid = tid, .ts = START + ts, .ptr = ptr,
				 .old_ptr = old_ptr, .size = size, .stack_id = stack };

	assert_int_equal(analysis__add_event(a, &e), 0);
}

static void mark(struct analysis *a, uint32_t kind, uint32_t tid, uint64_t ts, uint32_t name,
		 uint64_t ptr, uint64_t size)
{
	struct trace_mark m = { .kind = kind, .tid = tid, .ts = START + ts, .name = name,
				.ptr = ptr, .size = size };

	assert_int_equal(analysis__add_mark(a, &m), 0);
}

static void string(struct analysis *a, uint32_t id, const char *text)
{
	struct trace_string s = { .id = id, .str = text };

	assert_int_equal(analysis__add_string(a, &s), 0);
}

/* --budget windows: weights (dithered counts averaging the weight, rounded
 * bytes), the tail's end retiring what is still live as long-lived, and
 * what a forgotten pointer's later free and allocation are. */
static void test_budget_windows(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START, .budget_ppm = 50000,
				   .hit_entry_ns = 5000, .hit_return_ns = 1000 };
	struct analysis *a = analysis__new();
	const struct analysis_budget *b;
	const struct analysis_totals *t;
	struct seen s = { 0 };

	assert_non_null(a);
	assert_int_equal(replay__observe(analysis__replay(a), &seen_ops, &s), 0);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	/* window 1: each allocation stands for 2.5 */
	mark(a, MT_MARK_WINDOW_BEGIN, 42, 0, 0, 0, 2500000);
	for (uint64_t i = 0; i < 1000; i++)
		ev(a, MT_EVENT_ALLOC, 7, 10 + i, 0, 0x10000 + i * 16, 40, 1);
	for (uint64_t i = 0; i < 500; i++) /* half freed in the window */
		ev(a, MT_EVENT_FREE, 7, 2000 + i, 0, 0x10000 + i * 16, 0, 0);
	mark(a, MT_MARK_WINDOW_END, 42, 3000, 0, 0, 0);
	for (uint64_t i = 500; i < 600; i++) /* a hundred more in the tail */
		ev(a, MT_EVENT_FREE, 7, 3100 + i, 0, 0x10000 + i * 16, 0, 0);
	mark(a, MT_MARK_TAIL_END, 42, 5000, 0, 0, 0);
	/* 400 outlived the tail; one of them is freed later, one reallocated */
	ev(a, MT_EVENT_FREE, 7, 9000, 0, 0x10000 + 700 * 16, 0, 0);
	mark(a, MT_MARK_WINDOW_BEGIN, 42, 10000, 0, 0, 1000000); /* weight 1 */
	ev(a, MT_EVENT_ALLOC, 7, 10010, 0, 0x10000 + 800 * 16, 8, 1);
	mark(a, MT_MARK_WINDOW_END, 42, 10100, 0, 0, 0);
	mark(a, MT_MARK_TAIL_END, 42, 10300, 0, 0, 0);
	assert_int_equal(analysis__finish(a), 0);
	t = analysis__totals(a);
	b = &analysis__trace(a)->budget;
	/* 1000 x 2.5, dithered per allocation: within a few of 2500 */
	assert_true(t->allocations >= 2480 + 1 && t->allocations <= 2520 + 1);
	assert_int_equal(t->allocated_bytes, 1000 * 100 + 8);
	assert_int_equal(s.replaced, 0);   /* 0x10000 + 800 * 16 was forgotten: a new block */
	assert_int_equal(t->internal_frees, 1); /* the later free of a forgotten one */
	assert_true(b->long_lived_allocations >= 990 - 5 + 1 && b->long_lived_allocations <= 1010 + 1);
	assert_int_equal(b->long_lived_bytes, 400 * 100 + 8);
	assert_int_equal(t->leaked_bytes, b->long_lived_bytes); /* "leaked" means long-lived */
	assert_true(t->peak_unknown);
	assert_int_equal(b->windows, 2);
	assert_int_equal(b->live_ns, 3000 + 100);
	assert_int_equal(b->tail_ns, 2000 + 200);
	assert_int_equal(b->min_tail_ns, 200);
	assert_int_equal(b->lifetimes_seen, 600);
	assert_true(b->min_weight == 1.0 && b->max_weight == 2.5);
	print_message("--budget: %llu allocations from 1000 at 2.5 and 1 at 1; %llu long-lived; "
		      "a retired pointer's free is internal, its reuse a new block\n",
		      (unsigned long long)t->allocations, (unsigned long long)b->long_lived_allocations);
	analysis__free(a);
}

/* --budget's large blocks and error (replay.h): malloc's own mmap (an
 * allocator call open, or the C library's code calling it) is one block of
 * weight 1 at its site past the C library's frames, in a window or not; a
 * window's ALLOC and FREE of a pointer in it are that block's; munmap frees
 * it, mremap moves it; the program's own mmap, a thread's stack and a
 * PROT_NONE reservation are no block. A window of weight W adds
 * W (W - 1) Y^2 per stack and to the totals, and ((W - U) / 2 Y)^2 where
 * the weight by the unscaled price is U, a large block nothing. */
static void test_budget_large_and_error(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START, .budget_ppm = 50000,
				   .large_bytes = 128 << 10 };
	struct trace_module libc = { .start = 0x7f0000000000, .end = 0x7f0000200000, .path = "/usr/lib/libc.so.6" };
	struct trace_module prog = { .start = 0x400000, .end = 0x500000, .path = "/usr/bin/prog" };
	static const uint64_t by_libc[] = { 0x7f0000001234, 0x7f0000005678, 0x401111, 0x402222 };
	static const uint64_t by_prog[] = { 0x403333, 0x402222 };
	struct trace_stack s1 = { .id = 5, .nr = 4, .frames = by_libc }, s2 = { .id = 6, .nr = 2, .frames = by_prog };
	struct analysis *a = analysis__new();
	const struct analysis_budget *b;
	const struct analysis_totals *t;
	const struct replay_stack *rs;
	struct seen s = { 0 };
	struct replay *r;
	struct trace_map m;
	size_t n;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(replay__observe(r, &seen_ops, &s), 0);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_module(a, &libc), 0);
	assert_int_equal(analysis__add_module(a, &prog), 0);
	assert_int_equal(analysis__add_stack(a, &s1), 0);
	assert_int_equal(analysis__add_stack(a, &s2), 0);
#define MAP(ts_, call_, flags_, stack_, ret_, a0_, a1_, a2_, a3_)                                           \
	m = (struct trace_map){ START + ts_, 7, call_, flags_, stack_, ret_, a0_, a1_, a2_, a3_ };          \
	assert_int_equal(replay__add_map(r, &m), 0)
	/* between windows: malloc's 64 MiB, and the program's own, a stack, a reservation */
	MAP(10, MT_MAP_MMAP, 0, 5, 0x10000000, 0, (64 << 20) + 4096, 3, 0x22);
	MAP(11, MT_MAP_MMAP, 0, 6, 0x20000000, 0, 1 << 20, 3, 0x22);
	MAP(12, MT_MAP_MMAP, 0, 5, 0x30000000, 0, 1 << 20, 3, 0x20022);
	MAP(13, MT_MAP_MMAP, 0, 5, 0x40000000, 0, 1 << 26, 0, 0x4022);
	assert_int_equal(s.allocs, 1);
	assert_int_equal(s.alloc_bytes, (64 << 20) + 4096 - 16);
	/* a window of weight 3: two blocks of 100 at stack 6, malloc's 1 MiB
	 * (its stack the call's, open) and its ALLOC, then its FREE and munmap */
	mark(a, MT_MARK_WINDOW_BEGIN, 42, 100, 0, 0, 3000000);
	ev(a, MT_EVENT_ALLOC, 7, 110, 0, 0x5000, 100, 6);
	ev(a, MT_EVENT_ALLOC, 7, 111, 0, 0x5100, 100, 6);
	MAP(112, MT_MAP_MMAP, MT_MAP_IN_ALLOC, 6, 0x50000000, 0, (1 << 20) + 4096, 3, 0x22);
	ev(a, MT_EVENT_ALLOC, 7, 113, 0, 0x50000010, 1 << 20, 6);
	ev(a, MT_EVENT_FREE, 7, 114, 0, 0x50000010, 0, 0);
	MAP(115, MT_MAP_MUNMAP, 0, 0, 0, 0x50000000, (1 << 20) + 4096, 0, 0);
	mark(a, MT_MARK_WINDOW_END, 42, 200, 0, 0, 1000000); /* unscaled, it would weigh 1 */
	mark(a, MT_MARK_TAIL_END, 42, 300, 0, 0, 0);
	/* realloc of the 64 MiB block: mremap moves it; then the free of the
	 * old pointer a window would see is the moved block's, not counted */
	MAP(400, MT_MAP_MREMAP, 0, 5, 0x60000000, 0x10000000, (64 << 20) + 4096, (128 << 20) + 4096, 1);
	/* blocks below, between and above it (kept in order: found by a
	 * binary search), a window's ALLOC in each skipped, then all unmapped */
	MAP(401, MT_MAP_MMAP, 0, 5, 0x08000000, 0, 1 << 20, 3, 0x22);
	MAP(402, MT_MAP_MMAP, 0, 5, 0x70000000, 0, 1 << 20, 3, 0x22);
	MAP(403, MT_MAP_MMAP, 0, 5, 0x5f000000, 0, 1 << 20, 3, 0x22);
	mark(a, MT_MARK_WINDOW_BEGIN, 42, 500, 0, 0, 1000000);
	ev(a, MT_EVENT_ALLOC, 7, 501, 0, 0x08000010, 1 << 20, 6);
	ev(a, MT_EVENT_ALLOC, 7, 502, 0, 0x70000010, 1 << 20, 6);
	ev(a, MT_EVENT_ALLOC, 7, 503, 0, 0x5f000010, 1 << 20, 6);
	MAP(504, MT_MAP_MUNMAP, 0, 0, 0, 0x5f000000, 1 << 20, 0, 0);
	MAP(505, MT_MAP_MUNMAP, 0, 0, 0, 0x08000000, 1 << 20, 0, 0);
	MAP(506, MT_MAP_MUNMAP, 0, 0, 0, 0x70000000, 1 << 20, 0, 0);
	ev(a, MT_EVENT_FREE, 7, 510, 0, 0x10000010, 0, 0);
	mark(a, MT_MARK_WINDOW_END, 42, 600, 0, 0, 0);
	mark(a, MT_MARK_TAIL_END, 42, 700, 0, 0, 0);
#undef MAP
	assert_int_equal(analysis__finish(a), 0);
	t = analysis__totals(a);
	b = &analysis__trace(a)->budget;
	assert_int_equal(b->large_allocations, 6);
	assert_int_equal(b->large_frees, 5);
	assert_int_equal(b->large_allocated_bytes,
			 (64 << 20) + 4096 - 16 + (1 << 20) + 4096 - 16 + (128 << 20) + 4096 - 16 + 3 * ((1 << 20) - 16));
	assert_int_equal(t->allocations, 6 + 2 * 3);
	assert_int_equal(t->allocated_bytes, b->large_allocated_bytes + 2 * 300);
	assert_int_equal(t->unmatched_frees, 0);
	assert_int_equal(t->leaked_bytes, (128 << 20) + 4096 - 16 + 2 * 300); /* and the long-lived two */
	/* the error: 3 x 2 x 200^2 for the window's bytes, 3 x 2 x 2^2 for its
	 * calls, and the model's ((3 - 2) x 200)^2 and ((3 - 2) x 2)^2 */
	assert_true(b->var_bytes == 3.0 * 2 * 200 * 200 + 200 * 200 && b->var_allocations == 3.0 * 2 * 2 * 2 + 2 * 2);
	/* the 64 MiB block's stack: s1 past the C library's two frames */
	for (n = 0; n < replay__nstacks(r); n++) {
		rs = replay__stack(r, (uint32_t)n);
		if (rs->nr == 2 && rs->addrs && rs->addrs[0] == 0x401111)
			break;
	}
	assert_true(n < replay__nstacks(r));
	/* ... and stack 6's error is its window's; the large blocks' stacks have none */
	for (n = 0; n < replay__nstacks(r); n++) {
		rs = replay__stack(r, (uint32_t)n);
		assert_true(rs->var_bytes ==
			    (rs->id == 6 && rs->nr == 2 && rs->addrs[0] == 0x403333 ? 3.0 * 2 * 200 * 200 + 200 * 200 : 0));
	}
	print_message("--budget large blocks: 6 exact (one moved), 5 freed, the program's own mmap, a stack and a "
		      "reservation none; error 3 x 2 x 200^2 + (1 x 200)^2\n");
	analysis__free(a);
}

/* The large blocks' probes detached (MT_MARK_LARGE_END, windows.c): a
 * block mapped before stays exact; its munmap is no longer seen, so a
 * window's FREE of it ends it there, an ALLOC at a block's address (its
 * mapping gone, the address given again) ends it and is the window's own
 * allocation, and the replay says from when. */
static void test_budget_large_end(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START, .budget_ppm = 10000,
				   .large_bytes = 128 << 10 };
	struct trace_module libc = { .start = 0x7f0000000000, .end = 0x7f0000200000, .path = "/usr/lib/libc.so.6" };
	static const uint64_t by_libc[] = { 0x7f0000001234, 0x401111 };
	struct trace_stack s1 = { .id = 5, .nr = 2, .frames = by_libc };
	struct analysis *a = analysis__new();
	const struct analysis_budget *b;
	const struct analysis_totals *t;
	struct replay *r;
	struct trace_map m;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_module(a, &libc), 0);
	assert_int_equal(analysis__add_stack(a, &s1), 0);
	m = (struct trace_map){ START + 10, 7, MT_MAP_MMAP, 0, 5, 0x10000000, 0, (1 << 20) + 4096, 3, 0x22 };
	assert_int_equal(replay__add_map(r, &m), 0);
	m = (struct trace_map){ START + 11, 7, MT_MAP_MMAP, 0, 5, 0x20000000, 0, (1 << 20) + 4096, 3, 0x22 };
	assert_int_equal(replay__add_map(r, &m), 0);
	m = (struct trace_map){ START + 12, 7, MT_MAP_MMAP, 0, 5, 0x30000000, 0, (1 << 20) + 4096, 3, 0x22 };
	assert_int_equal(replay__add_map(r, &m), 0);
	mark(a, MT_MARK_LARGE_END, 42, 2000, 0, 0, 0);
	mark(a, MT_MARK_WINDOW_BEGIN, 42, 3000, 0, 0, 1000000);
	ev(a, MT_EVENT_FREE, 7, 3001, 0, 0x10000010, 0, 0);              /* the first's free */
	ev(a, MT_EVENT_ALLOC, 7, 3002, 0, 0x20000010, 1 << 20, 5);      /* the second's address again */
	mark(a, MT_MARK_WINDOW_END, 42, 3100, 0, 0, 0);
	mark(a, MT_MARK_TAIL_END, 42, 3200, 0, 0, 0);
	assert_int_equal(analysis__finish(a), 0);
	t = analysis__totals(a);
	b = &analysis__trace(a)->budget;
	assert_int_equal(b->large_until_ns, 2000);
	assert_int_equal(b->large_allocations, 3);
	assert_int_equal(b->large_frees, 2); /* the first by its free, the second by the new block */
	assert_int_equal(t->allocations, 3 + 1);
	assert_int_equal(t->unmatched_frees, 0);
	/* live at the end: the third (its end unseen) and the window's new block */
	assert_int_equal(t->leaked_bytes, (1 << 20) + 4096 - 16 + (1 << 20));
	print_message("--budget large blocks after their probes went: 3 exact, 2 ended by what the window saw\n");
	analysis__free(a);
}

/* --rss: each sample takes the live heap of its moment in the stream, times
 * are from the start, the peak is the sample of most resident memory, and
 * the first rollup is the start's, the next the end's. */
static void test_rss_samples(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	struct trace_rollup ro = { .ts = START + 5, .n = 2, .name = { "Rss", "Anonymous" }, .bytes = { 8192, 4096 } };
	struct analysis *a = analysis__new();
	struct replay *r;
	const struct analysis_rss *rs;
	struct trace_rss smp;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(replay__add_rollup(r, &ro), 0);
	smp = (struct trace_rss){ START + 10, 4096, 100, 0 };
	assert_int_equal(replay__add_rss(r, &smp), 0);
	ev(a, MT_EVENT_ALLOC, 7, 20, 0, 0x1000, 1000, 1);
	ev(a, MT_EVENT_ALLOC, 7, 30, 0, 0x2000, 24, 1);
	smp = (struct trace_rss){ START + 40, 1 << 20, 200, 8 };
	assert_int_equal(replay__add_rss(r, &smp), 0);
	ev(a, MT_EVENT_FREE, 7, 50, 0, 0x1000, 0, 0);
	smp = (struct trace_rss){ START + 60, 8192, 300, 0 };
	assert_int_equal(replay__add_rss(r, &smp), 0);
	ro.ts = START + 70;
	ro.bytes[0] = 12288;
	assert_int_equal(replay__add_rollup(r, &ro), 0);
	assert_int_equal(analysis__finish(a), 0);
	rs = &analysis__trace(a)->rss;
	assert_int_equal(rs->npoints, 3);
	assert_int_equal(rs->points[0].time_ns, 10);
	assert_int_equal(rs->points[0].heap_bytes, 0);
	assert_int_equal(rs->points[1].heap_bytes, 1024);
	assert_int_equal(rs->points[2].heap_bytes, 24);
	assert_int_equal(rs->peak, 1);
	assert_int_equal(rs->points[1].anon + rs->points[1].file + rs->points[1].shmem, (1 << 20) + 208);
	assert_true(rs->start.seen && rs->end.seen);
	assert_int_equal(rs->start.time_ns, 5);
	assert_int_equal(rs->start.bytes[0], 8192);
	assert_int_equal(rs->end.bytes[0], 12288);
	assert_string_equal(rs->end.name[1], "Anonymous");
	analysis__free(a);
}

/* --rss: the calls that map memory. A program's anonymous mmap is its own
 * (by stack) unless an allocator call was open; munmap takes whole or part
 * of a mapping, mremap moves one with its stack, brk counts from the first
 * break seen, a file's mmap is not counted. */
static void test_rss_maps(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t frames[] = { 0x401000 };
	struct trace_stack st = { .id = 3, .nr = 1, .frames = frames };
	struct analysis *a = analysis__new();
	const struct analysis_maps *mp;
	struct replay *r;
	struct trace_map m;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_stack(a, &st), 0);
#define MAP(call_, flags_, stack_, ret_, a0_, a1_, a2_, a3_)                                               \
	m = (struct trace_map){ START + 10, 7, call_, flags_, stack_, ret_, a0_, a1_, a2_, a3_ };          \
	assert_int_equal(replay__add_map(r, &m), 0)
	MAP(MT_MAP_MMAP, 0, 3, 0x10000000, 0, 5 * 4096 - 100, 3, 0x22);        /* 5 pages, the program's */
	MAP(MT_MAP_MMAP, MT_MAP_IN_ALLOC, 0, 0x20000000, 0, 1 << 20, 3, 0x22); /* malloc's */
	MAP(MT_MAP_MMAP, 0, 3, 0x30000000, 0, 1 << 20, 1, 0x02);               /* a file: not counted */
	MAP(MT_MAP_MUNMAP, 0, 0, 0, 0x10001000, 4096, 0, 0);                   /* a hole in the middle */
	MAP(MT_MAP_MREMAP, 0, 3, 0x40000000, 0x10000000, 4096, 8 * 4096, 1);   /* the head moves and grows */
	MAP(MT_MAP_BRK, MT_MAP_IN_ALLOC, 3, 0x5000, 0, 0, 0, 0);
	MAP(MT_MAP_BRK, MT_MAP_IN_ALLOC, 3, 0x25000, 0x25000, 0, 0, 0);
	MAP(MT_MAP_MADVISE, MT_MAP_IN_ALLOC, 0, 0, 0x20000000, 4096 * 3, 4, 0);
	MAP(MT_MAP_MUNMAP, 0, 0, 0, 0x20000000, 1 << 20, 0, 0);                /* malloc's, gone */
#undef MAP
	assert_int_equal(analysis__finish(a), 0);
	mp = &analysis__trace(a)->rss.maps;
	assert_true(analysis__trace(a)->rss.traced_maps);
	assert_int_equal(mp->calls[MT_MAP_MMAP], 3);
	assert_int_equal(mp->calls[MT_MAP_MUNMAP], 2);
	assert_int_equal(mp->outside_peak_bytes, 11 * 4096);
	/* 5 pages - 1 (hole) - 1 (the head moved) + 8 (moved, grown) = 11 */
	assert_int_equal(mp->outside_bytes, 11 * 4096);
	assert_int_equal(mp->nmappings, 2);
	assert_int_equal(mp->allocator_bytes, 0);
	assert_int_equal(mp->brk_bytes, 0x20000);
	assert_int_equal(mp->madvised_bytes, 3 * 4096);
	assert_int_equal(mp->nsites, 1); /* both are stack 3's */
	assert_int_equal(mp->sites[0].bytes, 11 * 4096);
	assert_int_equal(mp->sites[0].mappings, 2);
	analysis__free(a);
}

/* A resident snapshot laid over the live blocks and the traced mappings:
 * each part from its own measurement, summing to the pagemap total. */
static void test_rss_reconcile(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t frames[] = { 0x401000 };
	struct trace_stack st = { .id = 3, .nr = 1, .frames = frames };
	struct trace_vma vm[] = {
		{ 0x5000, 0x25000, TRACE_VMA_HEAP, 1 },                 /* the break's heap: 2 pages resident */
		{ 0x10000000, 0x10005000, TRACE_VMA_ANON, 1 },          /* the program's mmap: 2 of 5 pages */
		{ 0x20000000, 0x20100000, TRACE_VMA_ANON, 1 },          /* malloc's mmap: its first page */
		{ 0x30000000, 0x30002000, TRACE_VMA_ANON, 1 },          /* made before tracing: 1 page */
		{ 0x40000000, 0x40800000, TRACE_VMA_THREAD_STACK, 1 },  /* 3 pages */
		{ 0x50000000, 0x50004000, TRACE_VMA_FILE, 1 },          /* .data written: 1 page */
	};
	struct trace_page_run rn[] = { { 0x5000, 0x7000 },           { 0x10000000, 0x10002000 },
				       { 0x20000000, 0x20001000 },   { 0x30000000, 0x30001000 },
				       { 0x407fd000, 0x40800000 },   { 0x50000000, 0x50001000 } };
	struct trace_resident res = { .ts = START + 50, .page_size = 4096, .nvmas = 6, .nruns = 6, .vmas = vm, .runs = rn };
	struct trace_rss rss = { .ts = START + 50, .anon = 10 * 4096 };
	const struct analysis_reconcile *c;
	struct analysis *a = analysis__new();
	struct replay *r;
	struct trace_map m;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	m = (struct trace_map){ START + 10, 7, MT_MAP_MMAP, 0, 3, 0x10000000, 0, 5 * 4096, 3, 0x22 };
	assert_int_equal(replay__add_map(r, &m), 0);
	m = (struct trace_map){ START + 11, 7, MT_MAP_MMAP, MT_MAP_IN_ALLOC, 0, 0x20000000, 0, 1 << 20, 3, 0x22 };
	assert_int_equal(replay__add_map(r, &m), 0);
	ev(a, MT_EVENT_ALLOC, 7, 12, 0, 0x20000010, 8192, 0); /* on malloc's first page and two not resident */
	ev(a, MT_EVENT_ALLOC, 7, 13, 0, 0x5010, 100, 0);      /* in the heap */
	ev(a, MT_EVENT_ALLOC, 7, 14, 0, 0x5100, 50, 0);
	ev(a, MT_EVENT_FREE, 7, 15, 0, 0x5100, 0, 0);         /* freed: not live */
	assert_int_equal(replay__add_rss(r, &rss), 0);
	assert_int_equal(replay__add_resident(r, &res), 0);
	/* later mappings are not the snapshot's */
	m = (struct trace_map){ START + 60, 7, MT_MAP_MUNMAP, 0, 0, 0, 0x10000000, 5 * 4096, 0, 0 };
	assert_int_equal(replay__add_map(r, &m), 0);
	assert_int_equal(analysis__finish(a), 0);
	c = &analysis__trace(a)->rss.at_end;
	assert_true(c->seen);
	assert_true(c->heap_known);
	assert_int_equal(analysis__trace(a)->rss.nresident, 1);
	assert_int_equal(c->time_ns, 50);
	assert_int_equal(c->resident_anon, 10 * 4096);
	assert_int_equal(c->rss_anon, 10 * 4096);
	assert_int_equal(c->heap_live, 8192 + 100);
	assert_int_equal(c->heap_live_resident, (4096 - 16) + 100);
	assert_int_equal(c->heap_live_not_resident, 8192 - (4096 - 16));
	assert_int_equal(c->allocator_free_resident, 16 + (2 * 4096 - 100));
	assert_int_equal(c->allocator_resident, 3 * 4096);
	assert_int_equal(c->outside_resident, 2 * 4096);
	assert_int_equal(c->other, 4096);
	assert_int_equal(c->thread_stacks, 3 * 4096);
	assert_int_equal(c->file_private, 4096);
	assert_int_equal(c->allocator_resident + c->outside_resident + c->other + c->thread_stacks + c->file_private,
			 c->resident_anon);
	assert_int_equal(c->nsites, 1);
	assert_int_equal(c->sites[0].bytes, 2 * 4096);
	assert_null(c->advice); /* far under 16 MiB */
	/* one snapshot: it is the peak's too */
	assert_int_equal(analysis__trace(a)->rss.at_peak.resident_anon, c->resident_anon);
	analysis__free(a);

	/* joined a running process: the blocks do not split the allocator's part */
	a = analysis__new();
	assert_non_null(a);
	r = analysis__replay(a);
	meta.flags = TRACE_META_ATTACHED;
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	ev(a, MT_EVENT_ALLOC, 7, 13, 0, 0x5010, 100, 0);
	assert_int_equal(replay__add_resident(r, &res), 0);
	assert_int_equal(analysis__finish(a), 0);
	c = &analysis__trace(a)->rss.at_end;
	assert_false(c->heap_known);
	assert_int_equal(c->heap_live_resident, 0);
	assert_int_equal(c->allocator_free_resident, 0);
	assert_int_equal(c->allocator_resident, 2 * 4096); /* the heap; the mmaps were not seen */
	assert_int_equal(c->other, 4 * 4096);
	analysis__free(a);
}

/* The kernel merges adjacent anonymous mappings into one; the
 * reconciliation goes by the ranges the calls mapped. One mapping of the
 * kernel's holds the program's mmap (with a munmap hole in it) and
 * malloc's; another a range made before the trace, holding a live block,
 * and the program's mmap; a third a range made before the trace and a
 * MAP_STACK mmap. */
static void test_rss_reconcile_merged(void **state)
{
	enum { P = 4096 };
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t frames[] = { 0x401000 };
	struct trace_stack st = { .id = 3, .nr = 1, .frames = frames };
	struct trace_vma vm[] = {
		{ .start = 0x10000000, .end = 0x10000000 + P, .kind = TRACE_VMA_ANON, .nruns = 1 },
		{ .start = 0x10000000 + 2 * P, .end = 0x10000000 + 8 * P, .kind = TRACE_VMA_ANON, .nruns = 1 },
		{ .start = 0x20000000, .end = 0x20000000 + 4 * P, .kind = TRACE_VMA_ANON, .nruns = 1 },
		{ .start = 0x30000000, .end = 0x30000000 + 4 * P, .kind = TRACE_VMA_ANON, .nruns = 1 },
	};
	struct trace_page_run rn[] = {
		{ .start = 0x10000000, .end = 0x10000000 + P },
		{ .start = 0x10000000 + 2 * P, .end = 0x10000000 + 8 * P },
		{ .start = 0x20000000, .end = 0x20000000 + 4 * P },
		{ .start = 0x30000000, .end = 0x30000000 + 4 * P },
	};
	struct trace_resident res = { .ts = START + 50, .page_size = P, .nvmas = 4, .nruns = 4, .vmas = vm, .runs = rn };
	const struct trace_map maps[] = {
		/* the program's 4 pages, then malloc's 4 right above them */
		{ .ts = START + 10, .tid = 7, .call = MT_MAP_MMAP, .stack_id = 3, .ret = 0x10000000, .a1 = 4 * P, .a2 = 3, .a3 = 0x22 },
		{ .ts = START + 11, .tid = 7, .call = MT_MAP_MMAP, .flags = MT_MAP_IN_ALLOC, .ret = 0x10000000 + 4 * P,
		  .a1 = 4 * P, .a2 = 3, .a3 = 0x22 },
		{ .ts = START + 12, .tid = 7, .call = MT_MAP_MUNMAP, .a0 = 0x10000000 + P, .a1 = P },
		/* the program's, above a range made before the trace */
		{ .ts = START + 13, .tid = 7, .call = MT_MAP_MMAP, .stack_id = 3, .ret = 0x20000000 + 2 * P, .a1 = 2 * P,
		  .a2 = 3, .a3 = 0x22 },
		/* a thread's stack: MAP_STACK */
		{ .ts = START + 14, .tid = 7, .call = MT_MAP_MMAP, .stack_id = 3, .ret = 0x30000000 + P, .a1 = 3 * P,
		  .a2 = 3, .a3 = 0x20022 },
	};
	const struct analysis_reconcile *c;
	struct analysis *a = analysis__new();
	struct replay *r;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		assert_int_equal(replay__add_map(r, &maps[i]), 0);
	ev(a, MT_EVENT_ALLOC, 7, 20, 0, 0x10000000 + 4 * P + 16, 2 * P, 0); /* in malloc's mapping */
	ev(a, MT_EVENT_ALLOC, 7, 21, 0, 0x20000010, 100, 0);               /* in the range made before */
	assert_int_equal(replay__add_resident(r, &res), 0);
	assert_int_equal(analysis__finish(a), 0);
	c = &analysis__trace(a)->rss.at_end;
	assert_true(c->heap_known);
	assert_int_equal(c->resident_anon, 15 * P);
	assert_int_equal(c->outside_resident, 3 * P + 2 * P); /* the hole's page is gone */
	assert_int_equal(c->heap_live_resident, 2 * P + 100);
	assert_int_equal(c->allocator_free_resident, 4 * P + 2 * P - (2 * P + 100));
	assert_int_equal(c->allocator_resident, 6 * P);
	assert_int_equal(c->thread_stacks, 3 * P);
	assert_int_equal(c->other, P);
	assert_int_equal(c->file_private, 0);
	assert_int_equal(c->nsites, 1);
	assert_int_equal(c->sites[0].bytes, 5 * P);
	assert_int_equal(analysis__trace(a)->rss.maps.outside_bytes, 3 * P + 2 * P + 3 * P);
	analysis__free(a);
}

/* Which code is the allocator's own, by name (--rss=only). */
static void test_allocator_frames(void **state)
{
	struct analysis_frame f = { 0 };

	assert_false(replay_is_allocator_frame(NULL));
	f.function = "sysmalloc_mmap.constprop.0";
	assert_true(replay_is_allocator_frame(&f));
	f.function = "_int_realloc";
	assert_true(replay_is_allocator_frame(&f));
	f.function = "je_extent_alloc_mmap";
	assert_true(replay_is_allocator_frame(&f));
	f.function = "main";
	assert_false(replay_is_allocator_frame(&f));
	f.file = "./malloc/arena.c";
	assert_true(replay_is_allocator_frame(&f)); /* an inlined helper of glibc's */
	f.file = "/src/app/arena.c";
	assert_false(replay_is_allocator_frame(&f));
	f.function = NULL;
	f.file = NULL;
	assert_false(replay_is_allocator_frame(&f));
}

/* The engine's rules as the callbacks tell them. */
static void test_callbacks_follow_the_rules(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	struct analysis *a = analysis__new();
	struct seen s = { 0 };

	assert_non_null(a);
	assert_int_equal(replay__observe(analysis__replay(a), &seen_ops, &s), 0);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	string(a, 1, "outer");
	string(a, 2, "inner");
	ev(a, MT_EVENT_ALLOC, 7, 10, 0, 0x100, 100, 1);      /* no zone */
	assert_int_equal(s.last_zone, REPLAY_NONE);
	mark(a, MT_MARK_ZONE_BEGIN, 7, 20, 1, 0, 0);
	mark(a, MT_MARK_ZONE_BEGIN, 7, 30, 2, 0, 0);
	ev(a, MT_EVENT_ALLOC, 7, 40, 0, 0x200, 50, 1);       /* innermost: inner */
	assert_string_equal(replay__name(analysis__replay(a), s.last_zone), "inner");
	ev(a, MT_EVENT_ALLOC, 7, 45, 0, 0x100, 30, 1);       /* 0x100 still live: replaced */
	assert_int_equal(s.replaced, 1);
	assert_int_equal(s.frees, 0);
	mark(a, MT_MARK_ZONE_END, 7, 50, 1, 0, 0);           /* closes inner, then outer */
	assert_int_equal(s.zone_ends, 2);
	mark(a, MT_MARK_ZONE_END, 7, 55, 1, 0, 0);           /* not open: unmatched */
	assert_int_equal(s.unmatched_ends, 1);
	ev(a, MT_EVENT_FREE, 8, 60, 0, 0x200, 0, 0);         /* another thread frees: not temporary */
	ev(a, MT_EVENT_FREE, 7, 61, 0, 0x200, 0, 0);         /* freed already: internal */
	ev(a, MT_EVENT_FREE, 7, 62, 0, 0x999, 0, 0);         /* never seen: unmatched */
	ev(a, MT_EVENT_REALLOC, 7, 70, 0x100, 0, 10, 1);     /* failed realloc: nothing */
	ev(a, MT_EVENT_REALLOC, 7, 80, 0x100, 0x300, 60, 1); /* free + alloc: temporary free */
	mark(a, MT_MARK_FRAME, 9, 90, 0, 0, 0);
	mark(a, MT_MARK_POOL_ALLOC, 9, 91, 1, 0x5000, 8);
	mark(a, MT_MARK_ZONE_BEGIN, 7, 95, 2, 0, 0);         /* still open at the end */
	assert_int_equal(analysis__finish(a), 0);

	assert_int_equal(s.allocs, 4);
	assert_int_equal(s.alloc_bytes, 100 + 50 + 30 + 60);
	assert_int_equal(s.frees, 2);
	assert_int_equal(s.temporary, 1);
	assert_int_equal(s.replaced, 1);
	assert_int_equal(s.freed_bytes, 100 + 50 + 30);
	assert_int_equal(s.events, 8);                      /* every event of a known kind */
	assert_int_equal(s.last_live, 60);
	assert_int_equal(s.zone_begins, 3);
	assert_int_equal(s.zone_ends, 3);
	assert_int_equal(s.zone_ends_at_end, 1);
	assert_int_equal(s.zone_excl_allocs, 2);            /* 0x200 and the new 0x100 in inner */
	assert_int_equal(s.zone_excl_bytes, 50 + 30);
	assert_int_equal(s.frames, 1);
	assert_int_equal(s.pools, 1);
	assert_int_equal(s.finished, 1);
	assert_int_equal(analysis__totals(a)->internal_frees, 1);
	assert_int_equal(analysis__totals(a)->unmatched_frees, 1);
	analysis__free(a);
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
	return *x >> 33;
}

/* One random stream with zones, frames and three threads, exact or
 * sampled: every observer's figures agree with the others'. */
static void check_observers_agree(uint64_t sample)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START,
				   .sample_bytes = sample };
	struct trace_end end = { .end_mono_ns = START + 5000000 };
	uint64_t live[256] = { 0 }, x = 7, ts = 0, site_allocs = 0, site_bytes = 0, site_leaked = 0;
	uint64_t zone_excl = 0, zone_excl_bytes = 0, frame_allocs = 0, max = 0;
	const struct analysis_totals *t;
	const struct analysis_site *sites;
	const struct marks_zone *zones;
	const struct marks_frame *frames;
	const struct heap_point *p;
	struct heap_series *series;
	struct analysis *a = analysis__new();
	struct seen s = { 0 };
	size_t n;

	assert_non_null(a);
	series = heap_series__new(analysis__replay(a), 64);
	assert_non_null(series);
	assert_int_equal(replay__observe(analysis__replay(a), &seen_ops, &s), 0);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	string(a, 1, "update");
	string(a, 2, "render");
	for (int i = 0; i < 50000; i++) {
		uint64_t r = lcg(&x), slot = r % 256, ptr = 0x10000 + slot * 0x40;
		uint32_t tid = 100 + (uint32_t)(r >> 40) % 3;

		ts += 1 + r % 17;
		if ((r >> 8) % 97 == 0)
			mark(a, MT_MARK_ZONE_BEGIN, tid, ts, 1 + (uint32_t)(r >> 20) % 2, 0, 0);
		else if ((r >> 8) % 97 == 1)
			mark(a, MT_MARK_ZONE_END, tid, ts, 1 + (uint32_t)(r >> 20) % 2, 0, 0);
		else if ((r >> 8) % 211 == 2)
			mark(a, MT_MARK_FRAME, tid, ts, 0, 0, 0);
		else if (live[slot] && (r >> 16) % 100 < 45)
			ev(a, MT_EVENT_FREE, tid, ts, 0, ptr, 0, 0), live[slot] = 0;
		else if (live[slot] && (r >> 16) % 100 < 60)
			ev(a, MT_EVENT_REALLOC, tid, ts, ptr, ptr, live[slot] = 1 + (r >> 24) % 3000,
			   1 + (uint32_t)(r >> 50) % 5);
		else
			ev(a, MT_EVENT_ALLOC, tid, ts, 0, ptr, live[slot] = 1 + (r >> 24) % 3000,
			   1 + (uint32_t)(r >> 50) % 5);
	}
	assert_int_equal(analysis__set_end(a, &end), 0);
	assert_int_equal(analysis__finish(a), 0);
	assert_int_equal(heap_series__finish(series, analysis__trace(a)->duration_ns), 0);
	t = analysis__totals(a);

	/* sites sum to the totals */
	sites = analysis__sites(a, &n);
	for (size_t i = 0; i < n; i++) {
		site_allocs += sites[i].figures.allocations;
		site_bytes += sites[i].figures.allocated_bytes;
		site_leaked += sites[i].figures.leaked_bytes;
	}
	assert_int_equal(site_allocs, t->allocations);
	assert_int_equal(site_bytes, t->allocated_bytes);
	assert_int_equal(site_leaked, t->leaked_bytes);
	/* the counting observer saw the same blocks */
	assert_int_equal(s.allocs, t->allocations);
	assert_int_equal(s.alloc_bytes, t->allocated_bytes);
	assert_int_equal(s.frees, t->frees);
	assert_int_equal(s.temporary, t->temporary_allocations);
	assert_int_equal(s.alloc_bytes - s.freed_bytes, t->leaked_bytes);
	assert_int_equal(s.last_live, t->leaked_bytes);
	/* zones: the marks' exclusive figures are the closed entries' */
	zones = marks__zones(analysis__marks(a), &n);
	assert_true(n > 0);
	for (size_t i = 0; i < n; i++) {
		zone_excl += zones[i].allocations;
		zone_excl_bytes += zones[i].allocated_bytes;
	}
	assert_int_equal(zone_excl, s.zone_excl_allocs);
	assert_int_equal(zone_excl_bytes, s.zone_excl_bytes);
	assert_int_equal(s.zone_begins, s.zone_ends);
	/* frames: marks and the callbacks count the same marks; allocations in
	 * frames and after the last one are all the allocations */
	frames = marks__frames(analysis__marks(a), &n);
	assert_true(n > 0);
	assert_int_equal(n, s.frames);
	for (size_t i = 0; i < n; i++)
		frame_allocs += frames[i].allocations;
	assert_int_equal(frame_allocs + marks__totals(analysis__marks(a))->tail_allocations,
			 t->allocations);
	/* the heap series: its maximum is the peak, its end the leak */
	p = heap_series__points(series, &n);
	for (size_t i = 0; i < n; i++)
		max = p[i].bytes > max ? p[i].bytes : max;
	assert_int_equal(max, t->peak_bytes);
	assert_int_equal(p[n - 1].bytes, t->leaked_bytes);
	heap_series__free(series);
	analysis__free(a);
}

/* --rss: sampled write faults, each the bytes it stands for, by the stack
 * of the code that wrote: per stack (the flame graph's first-written bytes)
 * they add up to the total the sites share. */
static void test_rss_fault_stacks(void **state)
{
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t f3[] = { 0x401000 }, f5[] = { 0x402000 };
	struct trace_stack s3 = { .id = 3, .nr = 1, .frames = f3 }, s5 = { .id = 5, .nr = 1, .frames = f5 };
	const uint32_t stacks[] = { 3, 5, 3, 0 };
	const struct analysis_maps *mp;
	struct analysis *a = analysis__new();
	uint64_t by_id[6] = { 0 }, sum = 0;
	struct replay *r;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_stack(a, &s3), 0);
	assert_int_equal(analysis__add_stack(a, &s5), 0);
	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		struct trace_map m = { .ts = START + 10 + i, .tid = 7, .call = MT_MAP_FAULT, .stack_id = stacks[i],
				       .a0 = 0x10000000 + 4096 * i, .a1 = 16 * 4096 * (i + 1), .a2 = 6 };

		assert_int_equal(replay__add_map(r, &m), 0);
	}
	assert_int_equal(replay__fault_bytes(r, 1), 0); /* accounted at the end, named */
	assert_int_equal(analysis__finish(a), 0);
	mp = &analysis__trace(a)->rss.maps;
	assert_int_equal(mp->calls[MT_MAP_FAULT], 4);
	assert_int_equal(mp->fault_bytes, 16 * 4096 * (1 + 2 + 3 + 4));
	for (uint32_t s = 0; s < replay__nstacks(r); s++) {
		by_id[replay__stack(r, s)->id] += replay__fault_bytes(r, s);
		sum += replay__fault_bytes(r, s);
	}
	assert_int_equal(by_id[3], 16 * 4096 * (1 + 3));
	assert_int_equal(by_id[5], 16 * 4096 * 2);
	assert_int_equal(by_id[0], 16 * 4096 * 4);
	assert_int_equal(sum, mp->fault_bytes);
	assert_int_equal(replay__fault_bytes(r, (uint32_t)replay__nstacks(r)), 0);
	analysis__free(a);
}

/* The parts of C as the series has them (no sites, no advice). */
static void assert_same_parts(const struct analysis_reconcile *c, const struct analysis_reconcile *s)
{
	assert_int_equal(s->time_ns, c->time_ns);
	assert_int_equal(s->resident_anon, c->resident_anon);
	assert_int_equal(s->rss_anon, c->rss_anon);
	assert_int_equal(s->heap_known, c->heap_known);
	assert_int_equal(s->heap_live_resident, c->heap_live_resident);
	assert_int_equal(s->allocator_free_resident, c->allocator_free_resident);
	assert_int_equal(s->allocator_resident, c->allocator_resident);
	assert_int_equal(s->outside_resident, c->outside_resident);
	assert_int_equal(s->thread_stacks, c->thread_stacks);
	assert_int_equal(s->file_private, c->file_private);
	assert_int_equal(s->other, c->other);
	assert_int_equal(s->heap_live, c->heap_live);
	assert_int_equal(s->heap_live_not_resident, c->heap_live_not_resident);
}

/* Every resident snapshot is added up by the one rule, in time order: the
 * series' last is at_end's figures, the peak's at_peak's. The program maps
 * 4 pages (2 resident), then a live block of the allocator's fills its
 * first 3 pages of the heap, then the program unmaps its mapping. Past
 * REPLAY_RECONCILED_MAX snapshots every other one goes, never the peak's
 * nor the last. */
static void test_rss_reconciled_series(void **state)
{
	enum { P = 4096 };
	struct trace_meta meta = { .comm = "prog", .pid = 42, .start_mono_ns = START };
	static const uint64_t frames[] = { 0x401000 };
	struct trace_stack st = { .id = 3, .nr = 1, .frames = frames };
	struct trace_vma vm[] = {
		{ .start = 0x5000, .end = 0x5000 + 8 * P, .kind = TRACE_VMA_HEAP, .nruns = 1 },
		{ .start = 0x10000000, .end = 0x10000000 + 4 * P, .kind = TRACE_VMA_ANON, .nruns = 1 },
	};
	struct trace_page_run rn[] = {
		{ .start = 0x5000, .end = 0x5000 + 3 * P },
		{ .start = 0x10000000, .end = 0x10000000 + 2 * P },
	};
	struct trace_resident res = { .ts = START + 100, .page_size = P, .nvmas = 2, .nruns = 2, .vmas = vm, .runs = rn };
	struct trace_map m = { .ts = START + 10, .tid = 7, .call = MT_MAP_MMAP, .stack_id = 3, .ret = 0x10000000,
			       .a1 = 4 * P, .a2 = 3, .a3 = 0x22 };
	const struct analysis_rss *rs;
	struct analysis *a = analysis__new();
	struct replay *r;
	size_t n;

	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_stack(a, &st), 0);
	/* before the program's mmap: its range made before the trace, the heap free */
	assert_int_equal(replay__add_resident(r, &res), 0);
	assert_int_equal(replay__add_map(r, &m), 0);
	res.ts = START + 200;
	assert_int_equal(replay__add_resident(r, &res), 0);
	ev(a, MT_EVENT_ALLOC, 7, START + 250, 0, 0x5010, 3 * P - 16, 0);
	res.ts = START + 300;
	assert_int_equal(replay__add_resident(r, &res), 0);
	m = (struct trace_map){ .ts = START + 350, .tid = 7, .call = MT_MAP_MUNMAP, .a0 = 0x10000000, .a1 = 4 * P };
	assert_int_equal(replay__add_map(r, &m), 0);
	res.ts = START + 400;
	res.nvmas = res.nruns = 1;
	assert_int_equal(replay__add_resident(r, &res), 0);
	assert_int_equal(analysis__finish(a), 0);
	rs = &analysis__trace(a)->rss;
	assert_int_equal(rs->nresident, 4);
	assert_int_equal(rs->nreconciled, 4);
	assert_int_equal(rs->reconciled[0].time_ns, 100);
	assert_int_equal(rs->reconciled[0].other, 2 * P);
	assert_int_equal(rs->reconciled[0].outside_resident, 0);
	assert_int_equal(rs->reconciled[1].other, 0);
	assert_int_equal(rs->reconciled[1].outside_resident, 2 * P);
	assert_int_equal(rs->reconciled[1].allocator_free_resident, 3 * P);
	assert_int_equal(rs->reconciled[2].outside_resident, 2 * P);
	assert_int_equal(rs->reconciled[2].heap_live_resident, 3 * P - 16);
	assert_int_equal(rs->reconciled[2].allocator_free_resident, 16);
	assert_int_equal(rs->reconciled[3].time_ns, 400);
	assert_int_equal(rs->reconciled[3].outside_resident, 0);
	assert_int_equal(rs->reconciled[3].resident_anon, 3 * P);
	for (size_t i = 0; i < rs->nreconciled; i++)
		assert_null(rs->reconciled[i].advice);
	assert_same_parts(&rs->at_end, &rs->reconciled[3]);
	assert_same_parts(&rs->at_peak, &rs->reconciled[0]); /* the first of most resident (5 pages) */
	analysis__free(a);

	/* past the most kept: the peak (the second) and the last stay */
	a = analysis__new();
	assert_non_null(a);
	r = analysis__replay(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	res.nvmas = res.nruns = 1;
	for (size_t i = 0; i < REPLAY_RECONCILED_MAX + 10; i++) {
		res.nvmas = res.nruns = i == 1 ? 2 : 1;
		res.ts = START + 1000 * (i + 1);
		assert_int_equal(replay__add_resident(r, &res), 0);
	}
	assert_int_equal(analysis__finish(a), 0);
	rs = &analysis__trace(a)->rss;
	n = rs->nreconciled;
	assert_int_equal(rs->nresident, REPLAY_RECONCILED_MAX + 10);
	assert_in_range(n, REPLAY_RECONCILED_MAX / 2, REPLAY_RECONCILED_MAX);
	assert_int_equal(rs->reconciled[1].time_ns, 2000);
	assert_same_parts(&rs->at_peak, &rs->reconciled[1]);
	assert_int_equal(rs->reconciled[n - 1].time_ns, 1000 * (REPLAY_RECONCILED_MAX + 10));
	assert_same_parts(&rs->at_end, &rs->reconciled[n - 1]);
	for (size_t i = 1; i < n; i++)
		assert_true(rs->reconciled[i].time_ns > rs->reconciled[i - 1].time_ns);
	analysis__free(a);
}

static void test_observers_agree_exact(void **state)
{
	check_observers_agree(0);
}

static void test_observers_agree_sampled(void **state)
{
	check_observers_agree(2048);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callbacks_follow_the_rules),
		cmocka_unit_test(test_budget_windows),
		cmocka_unit_test(test_budget_large_and_error),
		cmocka_unit_test(test_budget_large_end),
		cmocka_unit_test(test_rss_samples),
		cmocka_unit_test(test_rss_maps),
		cmocka_unit_test(test_rss_reconcile),
		cmocka_unit_test(test_rss_reconcile_merged),
		cmocka_unit_test(test_rss_reconciled_series),
		cmocka_unit_test(test_rss_fault_stacks),
		cmocka_unit_test(test_allocator_frames),
		cmocka_unit_test(test_observers_agree_exact),
		cmocka_unit_test(test_observers_agree_sampled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
