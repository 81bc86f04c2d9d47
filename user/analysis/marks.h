/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The in-process marks of inproc/memtrace.h, analysed: zones, frames, pools
 * and thread names, with the heap allocations attributed to the zone and the
 * frame they were made in. An observer of the replay engine (replay.h),
 * which owns the names, the threads and the zone nesting; analysis.c makes
 * one on its engine. Pure like the analysis: it reads no file, prints
 * nothing.
 *
 * Exact rules (tests/unit/test_marks.c pins each one; the nesting and
 * naming rules are the engine's, repeated here for the figures they give):
 * - Names: zones, pools, frame labels and thread names are grouped by the
 *   text of their STRING. Id 0 (none) reads "[unnamed]"; an id with no
 *   STRING record reads "[string ID]".
 * - Zones nest per thread: each thread has a stack of open zones. A
 *   ZONE_BEGIN pushes; a ZONE_END closes the innermost open zone of that name
 *   on the thread and, first, every zone opened inside it and still open (a
 *   missing end, e.g. an early return past a ZONE_END); a ZONE_END whose name
 *   is not open on the thread is counted in unmatched_ends and otherwise
 *   ignored. A zone still open when the trace ends is closed at its end
 *   (the END record's time, else the latest time seen) and counted in
 *   open_at_end.
 * - count: ZONE_BEGINs. time_ns: thread-time during which the zone was open
 *   on a thread, summed over threads; a zone open twice on one thread
 *   (recursion) counts that time once.
 * - A heap allocation (ALLOC, and REALLOC's allocation half; the same rules
 *   as analysis.h) counts exclusively (allocations, allocated_bytes) in the
 *   innermost open zone of its thread, and inclusively (inclusive_*) once in
 *   every distinct zone open on its thread, the innermost included. Its free,
 *   by any thread at any time, takes it out of the exclusive zone's live
 *   bytes. leaked_bytes: exclusive allocations' bytes still live at the end. peak_bytes:
 *   the most bytes of the zone's exclusive allocations live at one moment
 *   (whether or not the zone was still open then); leaked <= peak.
 * - Frames: FRAME marks from any thread delimit frames for all threads.
 *   Frame i is the interval that ends at mark i: frame 0 starts at the
 *   trace's start_mono_ns, frame i > 0 at mark i - 1. Its heap allocations
 *   are those (of any thread) after the previous mark and up to this one in
 *   file order; duration_ns is its length. Allocations after the last mark
 *   are in no frame (tail_*). A named mark labels the frame it ends.
 * - Frames ranked by allocated bytes (ties: the earlier first), the first
 *   MARKS_TOP_FRAMES keep their allocation sites: the report's per-frame
 *   TopN view.
 * - Pools: POOL_ALLOC adds SIZE bytes at PTR to its pool (an allocation at a
 *   PTR still live in that pool replaces it); POOL_FREE of a live PTR takes
 *   it out, of any other PTR counts in unmatched_frees; POOL_RESET frees
 *   everything live in the pool. leaked_*: live at the end; peak_bytes: the
 *   most bytes live in the pool at one moment. Pool marks never count as
 *   heap allocations, in zones, frames or anywhere else.
 * - Thread names: the last THREAD_NAME mark or THREAD record of a tid wins.
 * - In a sampled trace, heap figures (zones, frames) are the analysis's
 *   unbiased estimates, summed per event; pool figures are exact (pool
 *   marks are not sampled).
 */
#ifndef MEMTRACE_MARKS_H
#define MEMTRACE_MARKS_H

#include "analysis.h"
#include "trace.h"
#include <stddef.h>
#include <stdint.h>

#define MARKS_TOP_FRAMES 10 /* frames that keep their sites */
#define MARKS_FRAME_SITES 5 /* sites kept per such frame */

struct marks_zone {
	const char *name;
	uint64_t count;                     /* times entered */
	uint64_t time_ns;                   /* thread-time inside */
	uint64_t allocations;               /* while it was its thread's innermost zone */
	uint64_t allocated_bytes;
	uint64_t inclusive_allocations;     /* while it was open on the thread at all */
	uint64_t inclusive_allocated_bytes;
	uint64_t leaked_bytes;              /* of exclusive allocations live at the end */
	uint64_t peak_bytes;                /* most exclusive bytes live at once */
	uint64_t open_at_end;               /* entries still open when the trace ended */
	uint64_t unmatched_ends;            /* ZONE_ENDs while it was not open on the thread */
};

struct marks_frame {
	const char *name;         /* the closing mark's label; NULL if unnamed */
	uint64_t end_ns;          /* the closing mark, after the trace's start */
	uint64_t duration_ns;
	uint64_t allocations;     /* heap allocations in the frame, all threads */
	uint64_t allocated_bytes;
};

struct marks_frame_site {
	const struct analysis_site *site;
	uint64_t allocations;     /* in the frame */
	uint64_t allocated_bytes;
};

struct marks_top_frame {
	size_t index;                          /* into marks__frames */
	const struct marks_frame *frame;
	size_t nsites;                         /* at most MARKS_FRAME_SITES */
	const struct marks_frame_site *sites;  /* by allocated bytes, largest first */
};

struct marks_pool {
	const char *name;
	uint64_t allocations;
	uint64_t allocated_bytes;
	uint64_t frees;           /* matched POOL_FREEs */
	uint64_t resets;
	uint64_t unmatched_frees; /* POOL_FREEs of pointers not live in the pool */
	uint64_t leaked_allocations;
	uint64_t leaked_bytes;
	uint64_t peak_bytes;
};

struct marks_thread {
	uint32_t tid;
	const char *name;
};

struct marks_totals {
	uint64_t marks;               /* MARK records */
	uint64_t frame_marks;         /* = number of frames */
	uint64_t tail_allocations;    /* heap allocations after the last frame mark */
	uint64_t tail_allocated_bytes;
};

struct marks;
struct replay;

/* A new empty one observing R; NULL with errno set. */
struct marks *marks__new(struct replay *r);
void marks__free(struct marks *m);

/* Settle the figures after the engine finished: SITES are the analysis's
 * finished sites. Call once; 0 or -ENOMEM. */
int marks__finish(struct marks *m, const struct analysis_site *sites, size_t nsites);

/* Results, valid after marks__finish until marks__free. Zones by inclusive
 * allocated bytes, largest first (ties: exclusive bytes, then name); frames
 * in time order; top frames by allocated bytes; pools by allocated bytes
 * (ties: name); threads by tid. */
const struct marks_zone *marks__zones(const struct marks *m, size_t *n);
const struct marks_frame *marks__frames(const struct marks *m, size_t *n);
const struct marks_top_frame *marks__top_frames(const struct marks *m, size_t *n);
const struct marks_pool *marks__pools(const struct marks *m, size_t *n);
const struct marks_thread *marks__threads(const struct marks *m, size_t *n);
const struct marks_totals *marks__totals(const struct marks *m);

#endif /* MEMTRACE_MARKS_H */
