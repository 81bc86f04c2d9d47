// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/record/drain.c, the hottest user-space code: the records of several CPUs'
 * rings come back in time order, a flush writes only what is older than its
 * watermark, stacks are interned once and events refer to them, a stack's
 * frames stop at the first implausible address but keep the walk's cut
 * marker, and malformed records are ignored rather than trusted.
 */
#include "drain.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define MAX_SEEN 256

struct seen {
	struct trace_event events[MAX_SEEN];
	size_t nevents;
	struct trace_stack stacks[8];
	uint64_t frames[8][MT_MAX_STACK_DEPTH];
	size_t nstacks;
	uint64_t total, last_ts, out_of_order; /* every event read, in time order or not */
	uint64_t last_ptr, ties_reversed;        /* equal times whose pointers fell */
	uint64_t order_hash;                     /* of every event's pointer, in the order read */
};

static uint64_t hash_step(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ULL;
}

static int on_event(void *ctx, const struct trace_event *e)
{
	struct seen *s = ctx;

	if (s->nevents < MAX_SEEN)
		s->events[s->nevents++] = *e;
	s->out_of_order += e->ts < s->last_ts;
	s->ties_reversed += s->total && e->ts == s->last_ts && e->ptr < s->last_ptr;
	s->order_hash = hash_step(s->order_hash, e->ptr);
	s->last_ts = e->ts;
	s->last_ptr = e->ptr;
	s->total++;
	return 0;
}

static int on_stack(void *ctx, const struct trace_stack *st)
{
	struct seen *s = ctx;

	if (s->nstacks < 8 && st->nr <= MT_MAX_STACK_DEPTH) {
		memcpy(s->frames[s->nstacks], st->frames, st->nr * sizeof(uint64_t));
		s->stacks[s->nstacks] = *st;
		s->stacks[s->nstacks].frames = s->frames[s->nstacks];
		s->nstacks++;
	}
	return 0;
}

struct fixture {
	char path[64];
	struct trace_writer *w;
	struct drain *d;
	struct seen seen;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct trace_meta m = { .command_line = "test", .comm = "test", .pid = 1 };
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/memtrace-drain.XXXXXX");
	fd = mkstemp(f->path);
	assert_true(fd >= 0);
	close(fd);
	unlink(f->path); /* the writer creates it, O_EXCL */
	f->w = trace_writer__open(f->path, &m);
	assert_non_null(f->w);
	f->d = drain__new(f->w);
	assert_non_null(f->d);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	drain__free(f->d);
	unlink(f->path);
	free(f);
	return 0;
}

/* Close the trace and read back its events and stacks. */
static void read_back(struct fixture *f)
{
	static const struct trace_reader_ops ops = { .event = on_event, .stack = on_stack };
	struct trace_end end = { .exit_status = -1 };
	struct trace_reader *r;

	assert_int_equal(trace_writer__close(f->w, &end), 0);
	f->w = NULL;
	r = trace_reader__open(f->path);
	assert_non_null(r);
	assert_int_equal(trace_reader__read(r, &ops, &f->seen), 0);
	assert_false(trace_reader__partial(r));
	trace_reader__close(r);
}

static void alloc(struct drain *d, uint32_t tid, uint64_t ts, uint64_t ptr, uint64_t stack_id)
{
	struct mt_alloc_event ev = {
		.hdr = { .type = MT_EVENT_ALLOC, .size = sizeof(ev), .tid = tid, .ts = ts },
		.ptr = ptr,
		.size = 16,
		.stack_id = stack_id,
	};

	assert_int_equal(drain__record(d, &ev, sizeof(ev)), 0);
}

static void stack(struct drain *d, uint64_t id, const uint64_t *frames, uint32_t nr)
{
	struct mt_stack_event ev = {
		.hdr = { .type = MT_EVENT_STACK, .tid = 1 },
		.stack_id = id,
		.nr = nr,
	};
	size_t size = sizeof(ev) - sizeof(ev.frames) + nr * sizeof(uint64_t);

	memcpy(ev.frames, frames, nr * sizeof(uint64_t));
	ev.hdr.size = (uint16_t)size;
	assert_int_equal(drain__record(d, &ev, size), 0);
}

/* Two CPUs' rings, each in order, interleaved as poll hands them over. */
static void test_merge_order(void **state)
{
	struct fixture *f = *state;
	static const uint64_t want[] = { 10, 20, 30, 40, 50, 60 };

	alloc(f->d, 1, 10, 0x1000, 0); /* CPU 0 */
	alloc(f->d, 1, 30, 0x3000, 0);
	alloc(f->d, 1, 50, 0x5000, 0);
	alloc(f->d, 2, 20, 0x2000, 0); /* CPU 1 */
	alloc(f->d, 2, 40, 0x4000, 0);
	alloc(f->d, 2, 60, 0x6000, 0);
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	assert_int_equal(drain__events(f->d), 6);
	read_back(f);
	assert_int_equal(f->seen.nevents, 6);
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(f->seen.events[i].ts, want[i]);
		assert_int_equal(f->seen.events[i].ptr, (i + 1) * 0x1000);
	}
	print_message("6 events of 2 rings: written in time order\n");
}

/* A flush writes what is older than its watermark; a late CPU's older
 * event still goes before the newer ones held back. */
static void test_watermark(void **state)
{
	struct fixture *f = *state;

	alloc(f->d, 1, 100, 0xa000, 0);
	alloc(f->d, 1, 300, 0xc000, 0);
	assert_int_equal(drain__flush(f->d, 200), 0);
	assert_int_equal(drain__events(f->d), 1);
	alloc(f->d, 2, 250, 0xb000, 0); /* another CPU, late but after the watermark */
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	assert_int_equal(drain__events(f->d), 3);
	read_back(f);
	assert_int_equal(f->seen.nevents, 3);
	assert_int_equal(f->seen.events[0].ts, 100);
	assert_int_equal(f->seen.events[1].ts, 250);
	assert_int_equal(f->seen.events[2].ts, 300);
	print_message("watermark 200: 1 written, then 250 before 300\n");
}

/* Bursts past the arrays' first size grow them, flushes give the room
 * back, and nothing is lost or reordered on the way: three bursts of two
 * interleaved rings, each flushed in two halves by watermark. */
static void test_bursts(void **state)
{
	struct fixture *f = *state;
	const uint64_t sizes[] = { 100000, 300, 40000 };
	uint64_t ts = 1000, written = 0;

	for (size_t b = 0; b < 3; b++) {
		uint64_t first = ts;

		for (uint64_t i = 0; i < sizes[b]; i += 2, ts += 2) {
			alloc(f->d, 1, ts, 0x10000 + ts * 16, 0);     /* CPU 0: even times */
			alloc(f->d, 2, ts + 1, 0x10010 + ts * 16, 0); /* CPU 1: odd times */
		}
		assert_int_equal(drain__flush(f->d, first + sizes[b] / 2), 0);
		assert_int_equal(drain__events(f->d), written + sizes[b] / 2);
		assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
		written += sizes[b];
		assert_int_equal(drain__events(f->d), written);
	}
	read_back(f);
	assert_int_equal(f->seen.total, 140300);
	assert_int_equal(f->seen.out_of_order, 0);
	print_message("bursts of 100000, 300 and 40000 events: all 140300 written, in time order\n");
}

/* Runs merged as they are handed on: equal times keep their arrival order
 * (the earlier ring's first), what is not due stays for the next flush as
 * runs of its own, and more runs than are merged at once (many CPUs) are
 * sorted first, with the same result. */
static void test_runs_held_and_ties(void **state)
{
	struct fixture *f = *state;
	const size_t runs[] = { 3, 20 }; /* a few CPUs; more than MERGE_RUNS */
	uint64_t ptr = 0x100000, base = 1000;
	size_t total = 0;

	for (size_t r = 0; r < 2; r++) {
		/* each ring: times base, base + 10, ... (every ring the same times:
		 * ties across rings), pointers in arrival order */
		for (size_t c = 0; c < runs[r]; c++) {
			for (uint64_t i = 0; i < 5; i++)
				alloc(f->d, (uint32_t)c + 1, base + i * 10, ptr++ * 16, 0);
		}
		assert_int_equal(drain__flush(f->d, base + 25), 0); /* times +0, +10, +20 of every ring */
		assert_int_equal(drain__events(f->d), total + 3 * runs[r]);
		for (size_t c = 0; c < runs[r]; c++) /* a late ring, after what was held */
			alloc(f->d, 100, base + 30, ptr++ * 16, 0);
		assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
		total += 6 * runs[r];
		assert_int_equal(drain__events(f->d), total);
		base += 1000;
	}
	read_back(f);
	assert_int_equal(f->seen.nevents, total);
	assert_int_equal(f->seen.out_of_order, 0);
	/* among equal times, pointers rise: arrival order kept */
	for (size_t i = 1; i < f->seen.nevents; i++) {
		if (f->seen.events[i].ts == f->seen.events[i - 1].ts)
			assert_true(f->seen.events[i].ptr > f->seen.events[i - 1].ptr);
	}
	print_message("3 and 20 rings with equal times, held across flushes: %zu events in order, ties in arrival order\n",
		      total);
}

struct arrival {
	uint64_t ts, ptr; /* ptr rises with arrival */
};

static int by_time_then_arrival(const void *a, const void *b)
{
	const struct arrival *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* Polls as the recorder makes them, RINGS rings each handing over a chunk of
 * its records (0 to 60, times rising by 0 to 3, so ties within and across
 * rings), each poll flushed up to the earliest of the rings' latest times;
 * every 50th poll one ring stalls for 20 polls and the rest pile up. What is
 * written: every record, by time, equal times in arrival order, the same
 * sequence as a stable sort of them all. Records wait across flushes, in
 * runs the flushes leave where they are (moved when the gaps hold as much as
 * they do, when the array is full, and before the sort many runs take). */
static void random_flushes(struct fixture *f, uint32_t rings, uint32_t polls)
{
	uint64_t ring_ts[32], ptr = 0x100000, lcg = 0x2545f4914f6cdd1dULL * rings, want = 0; /* the hash seen starts at 0 too */
	size_t n = 0, cap = 1 << 16;
	struct arrival *all = malloc(cap * sizeof(*all));
	uint32_t stalled = UINT32_MAX, stall_left = 0;

	assert_non_null(all);
	assert_true(rings <= 32);
	for (uint32_t r = 0; r < rings; r++)
		ring_ts[r] = 1000;
	for (uint32_t p = 0; p < polls; p++) {
		uint64_t wm = UINT64_MAX;

		if (p % 50 == 25) {
			stalled = p / 50 % rings;
			stall_left = 20;
		}
		for (uint32_t r = 0; r < rings; r++) {
			uint32_t chunk;

			lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
			chunk = (uint32_t)(lcg >> 33) % 61;
			if (r == stalled && stall_left)
				chunk = 0;
			for (uint32_t i = 0; i < chunk; i++) {
				lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
				ring_ts[r] += (lcg >> 40) % 4;
				if (n == cap) {
					cap *= 2;
					all = realloc(all, cap * sizeof(*all));
					assert_non_null(all);
				}
				all[n++] = (struct arrival){ .ts = ring_ts[r], .ptr = ptr * 16 };
				alloc(f->d, r + 1, ring_ts[r], ptr++ * 16, 0);
			}
			if (ring_ts[r] < wm)
				wm = ring_ts[r];
		}
		if (stall_left)
			stall_left--;
		assert_int_equal(drain__flush(f->d, wm), 0);
	}
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	assert_int_equal(drain__events(f->d), n);
	qsort(all, n, sizeof(*all), by_time_then_arrival);
	for (size_t i = 0; i < n; i++)
		want = hash_step(want, all[i].ptr);
	free(all);
	read_back(f);
	assert_int_equal(f->seen.total, n);
	assert_int_equal(f->seen.out_of_order, 0);
	assert_int_equal(f->seen.ties_reversed, 0);
	assert_true(f->seen.order_hash == want);
	print_message("%u rings, %u polls: %zu events written in the order of a stable sort by time\n", rings, polls, n);
}

static void test_random_flushes_few_rings(void **state)
{
	random_flushes(*state, 4, 600);
}

static void test_random_flushes_many_rings(void **state)
{
	random_flushes(*state, 24, 300);
}

/* A stack sent once (and again after the kernel's cache forgot it) is one
 * trace stack; events refer to it by a small id. */
static void test_stacks_interned(void **state)
{
	struct fixture *f = *state;
	const uint64_t frames[] = { 0x401000, 0x402000, 0x403000 };

	stack(f->d, 0xfeedULL, frames, 3);
	alloc(f->d, 1, 10, 0x1000, 0xfeedULL);
	stack(f->d, 0xfeedULL, frames, 3);
	alloc(f->d, 1, 20, 0x2000, 0xfeedULL);
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(f->seen.nstacks, 1);
	assert_int_equal(f->seen.stacks[0].nr, 3);
	assert_memory_equal(f->seen.stacks[0].frames, frames, sizeof(frames));
	assert_int_equal(f->seen.nevents, 2);
	assert_int_equal(f->seen.events[0].stack_id, f->seen.stacks[0].id);
	assert_int_equal(f->seen.events[1].stack_id, f->seen.stacks[0].id);
	print_message("one stack sent twice: interned once, id %u\n", f->seen.stacks[0].id);
}

/* Frames stop at the first address no user return address can be; the
 * walk's cut marker, last, is kept so reports can say so. */
static void test_frames_plausible(void **state)
{
	struct fixture *f = *state;
	const uint64_t garbage[] = { 0x401000, 0x402000, 0x10, 0x403000 };
	const uint64_t cut[] = { 0x401000, 0x402000, MT_STACK_TRUNCATED };
	const uint64_t depth[] = { 0x401000, MT_STACK_DEPTH_CUT };

	stack(f->d, 0x11, garbage, 4);
	stack(f->d, 0x22, cut, 3);
	stack(f->d, 0x33, depth, 2);
	alloc(f->d, 1, 10, 0x1000, 0x11);
	alloc(f->d, 1, 20, 0x2000, 0x22);
	alloc(f->d, 1, 30, 0x3000, 0x33);
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(f->seen.nstacks, 3);
	assert_int_equal(f->seen.stacks[0].nr, 2);
	assert_int_equal(f->seen.stacks[1].nr, 3);
	assert_int_equal(f->seen.stacks[1].frames[2], MT_STACK_TRUNCATED);
	assert_int_equal(f->seen.stacks[2].nr, 2);
	assert_int_equal(f->seen.stacks[2].frames[1], MT_STACK_DEPTH_CUT);
	print_message("garbage cut at frame 2; both cut markers kept\n");
}

/* Frames returning into unprobed allocator code (operator new forwarding
 * to malloc) are dropped from the front, so the first frame is the caller
 * of operator new; a return address lies just past its call, so one equal to
 * the code's start belongs to the code before it, and one equal to its end
 * to it. Frames past the first outside are kept as they are. */
static void test_allocator_frames(void **state)
{
	struct fixture *f = *state;
	const uint64_t via_new[] = { 0x7000001c, 0x401234, 0x70000010, 0x402000 };
	const uint64_t at_start[] = { 0x70000000, 0x401234 };
	const uint64_t at_end[] = { 0x70000040, 0x401234 };
	const uint64_t all_alloc[] = { 0x7000001c, 0x70000010 };

	assert_int_equal(drain__add_allocator_code(f->d, 0x70000000, 0x70000040), 0);
	stack(f->d, 0x11, via_new, 4);
	stack(f->d, 0x22, at_start, 2);
	stack(f->d, 0x33, at_end, 2);
	stack(f->d, 0x44, all_alloc, 2);
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(f->seen.nstacks, 4);
	assert_int_equal(f->seen.stacks[0].nr, 3);
	assert_int_equal(f->seen.stacks[0].frames[0], 0x401234);
	assert_int_equal(f->seen.stacks[0].frames[1], 0x70000010);
	assert_int_equal(f->seen.stacks[1].nr, 2);
	assert_int_equal(f->seen.stacks[2].nr, 1);
	assert_int_equal(f->seen.stacks[2].frames[0], 0x401234);
	assert_int_equal(f->seen.stacks[3].nr, 1);
	assert_int_equal(f->seen.stacks[3].frames[0], 0x70000010);
	print_message("leading allocator frames dropped (3 of 4 stacks); an all-allocator stack keeps its last\n");
}

/* Records too short for their kind, or claiming more frames than fit, are
 * dropped: the rings are shared memory, not trusted input. */
/* The tap (memtrace top) sees what the writer gets, in the same order, with
 * the same stack ids. */
static void test_tap_sees_what_is_written(void **state)
{
	static const struct trace_reader_ops tap = { .event = on_event, .stack = on_stack };
	static const uint64_t frames[] = { 0x401000, 0x402000 };
	struct fixture *f = *state;
	struct seen tapped = { 0 };

	drain__set_tap(f->d, &tap, &tapped);
	alloc(f->d, 1, 30, 0x3000, 0xabc);
	stack(f->d, 0xabc, frames, 2);
	alloc(f->d, 2, 10, 0x1000, 0);
	alloc(f->d, 1, 20, 0x2000, 0xabc);
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(tapped.nevents, 3);
	assert_int_equal(tapped.nevents, f->seen.nevents);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(tapped.events[i].ts, f->seen.events[i].ts);
		assert_int_equal(tapped.events[i].ptr, f->seen.events[i].ptr);
		assert_int_equal(tapped.events[i].stack_id, f->seen.events[i].stack_id);
	}
	assert_int_equal(tapped.events[0].ts, 10);
	assert_int_equal(tapped.nstacks, 1);
	assert_int_equal(tapped.stacks[0].id, f->seen.stacks[0].id);
	assert_int_equal(tapped.stacks[0].nr, 2);
	assert_int_equal(tapped.frames[0][1], 0x402000);
	print_message("tap: 3 events and 1 stack, as written\n");
}

/* Past the cap, new stacks fold into one whose frame is TRACE_FRAME_OTHER:
 * for the tap and in the trace alike; the stacks kept stay themselves. */
static void test_max_stacks(void **state)
{
	static const struct trace_reader_ops tap = { .event = on_event, .stack = on_stack };
	static const uint64_t a[] = { 0x401000 }, b[] = { 0x402000 }, c[] = { 0x403000 };
	struct fixture *f = *state;
	struct seen tapped = { 0 };

	drain__set_tap(f->d, &tap, &tapped);
	drain__set_max_stacks(f->d, 2);
	stack(f->d, 0xa, a, 1);
	alloc(f->d, 1, 10, 0x1000, 0xa);
	stack(f->d, 0xb, b, 1);
	alloc(f->d, 1, 20, 0x2000, 0xb);
	stack(f->d, 0xc, c, 1); /* the third: folded */
	alloc(f->d, 1, 30, 0x3000, 0xc);
	alloc(f->d, 1, 40, 0x4000, 0xd); /* never seen: folded too */
	alloc(f->d, 1, 50, 0x5000, 0xa); /* kept before the cap: itself */
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(f->seen.nstacks, 3);
	assert_int_equal(tapped.nstacks, 3);
	assert_int_equal(f->seen.stacks[2].nr, 1);
	assert_int_equal(f->seen.frames[2][0], TRACE_FRAME_OTHER);
	assert_int_equal(tapped.frames[2][0], TRACE_FRAME_OTHER);
	assert_int_equal(f->seen.nevents, 5);
	assert_int_equal(f->seen.events[2].stack_id, f->seen.stacks[2].id);
	assert_int_equal(f->seen.events[3].stack_id, f->seen.stacks[2].id);
	assert_int_equal(f->seen.events[4].stack_id, f->seen.stacks[0].id);
	assert_int_equal(drain__folded(f->d), 3); /* c's stack, c's event, d's event */
	print_message("cap 2: a third stack and an unknown one fold into the other stack\n");
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	struct mt_stack_event st = { .hdr = { .type = MT_EVENT_STACK }, .stack_id = 5, .nr = 500 };
	struct mt_alloc_event ev = { .hdr = { .type = MT_EVENT_ALLOC, .ts = 1 }, .ptr = 0x10 };
	char tiny[4] = { 0 };

	assert_int_equal(drain__record(f->d, tiny, sizeof(tiny)), 0);
	assert_int_equal(drain__record(f->d, &st, sizeof(st)), 0);
	assert_int_equal(drain__record(f->d, &ev, 8), 0); /* header cut short */
	assert_int_equal(drain__flush(f->d, UINT64_MAX), 0);
	read_back(f);
	assert_int_equal(f->seen.nstacks, 0);
	assert_int_equal(f->seen.nevents, 0);
	print_message("3 malformed records: nothing written\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merge_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_watermark, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runs_held_and_ties, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_flushes_few_rings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_flushes_many_rings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bursts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stacks_interned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frames_plausible, setup, teardown),
		cmocka_unit_test_setup_teardown(test_allocator_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tap_sees_what_is_written, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
