/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The aggregation behind `memtrace report`: totals, allocation sites with
 * their stacks, and (marks.h) zones, frames and pools. It owns a replay
 * engine (replay.h, where every rule about the heap lives) and observes it;
 * other observers (the heap series, the Chrome export) subscribe to the
 * same engine through analysis__replay, so one pass feeds them all. Pure:
 * it reads no file and prints nothing.
 *
 * Feed it in file order, then call analysis__finish once; the results are
 * valid until analysis__free.
 *
 * Rules of its own (tests/unit/test_analysis.c pins each one):
 * - Site: the first frame of the stack after the --alloc-fn rule that is
 *   not Rust's allocation plumbing (replay_site_frame; those frames stay in
 *   the stack), grouped by it (module, function, file, line); an
 *   address with no function name groups by module + offset; stack id 0 or
 *   an empty stack is the site "[no stack]".
 * - A site's peak_bytes are its live bytes at the moment of the global
 *   peak, so the sites' peak_bytes add up to the total peak_bytes (exactly,
 *   in one pass).
 * - Sites are ranked by allocated bytes (ties: more calls, then name); a
 *   site's stacks the same way (ties: stack id).
 * - What grew in the last minute (recent_bytes): a block allocated in the
 *   window adds its bytes at the time of its allocation, a live block freed
 *   in it (or replaced) takes them away at the time of the free, whenever
 *   it was allocated; frees of blocks the trace never saw take nothing.
 */
#ifndef MEMTRACE_ANALYSIS_H
#define MEMTRACE_ANALYSIS_H

#include "replay.h"
#include "trace.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct marks;

/* The figures kept per stack, per site and (in analysis_totals) overall. */
struct analysis_figures {
	uint64_t allocations;           /* allocation calls (realloc's allocation half included) */
	uint64_t allocated_bytes;       /* bytes those calls asked for */
	uint64_t peak_bytes;            /* bytes live at the moment of the global peak */
	uint64_t leaked_allocations;    /* allocations still live at the end */
	uint64_t leaked_bytes;          /* their bytes */
	uint64_t temporary_allocations; /* freed before their thread allocated again */
	uint64_t resident_bytes;        /* --rss: live bytes on resident pages at the last snapshot */
	/* --budget: of allocations and allocated_bytes, the large blocks'
	 * (exact); and the variance of the rest's estimate (replay.h) */
	uint64_t exact_allocations, exact_bytes;
	double var_allocations, var_bytes;
	/* the live heap's change over the trace's last minute (recent.h's
	 * window, trace.recent_from_ns on): allocated there less freed there,
	 * as the engine counts them (estimates where the trace's are) */
	int64_t recent_bytes, recent_allocations;
};

/* SUM += F, field by field. */
void analysis_figures__add(struct analysis_figures *sum, const struct analysis_figures *f);

struct analysis_stack {
	struct analysis_figures figures;
	uint32_t id;                         /* trace stack id; 0: no stack */
	size_t nframes;
	const struct analysis_frame *frames; /* innermost first */
	size_t site;                         /* the frame that is its site (replay_site_frame) */
};

struct analysis_site {
	const char *name;     /* function, "module+0xOFF" or "[no stack]" */
	const char *function; /* NULL if unknown */
	const char *file;     /* NULL if unknown */
	uint32_t line;        /* 0 if unknown */
	const char *module;   /* path; NULL if unknown */
	struct analysis_figures figures;
	size_t nstacks;
	const struct analysis_stack *const *stacks; /* by allocated_bytes, largest first */
};

struct analysis;

/* A new empty analysis; NULL with errno set. */
struct analysis *analysis__new(void);

/* After analysis__finish: the function that looks like an allocation
 * wrapper (the first named frame of one of the 3 top sites by bytes,
 * called from at least 5 distinct places and not yet an --alloc-fn), or
 * NULL. */
const char *analysis__wrapper_candidate(const struct analysis *a);

/* Count frames of functions matching GLOB (fnmatch) as the allocator's;
 * before analysis__finish. 0, -E2BIG past 32 globs, -ENOMEM. */
int analysis__add_alloc_fn(struct analysis *a, const char *glob);
void analysis__free(struct analysis *a);

/* The engine it observes: add observers before the first record, feed it
 * (replay_reader_ops), and use its state (modules, threads, names). */
struct replay *analysis__replay(struct analysis *a);

/* Feeding, one call per record; each returns 0 or -ENOMEM. Strings and
 * arrays are copied. */
int analysis__set_meta(struct analysis *a, const struct trace_meta *m);
int analysis__add_module(struct analysis *a, const struct trace_module *m);
int analysis__add_stack(struct analysis *a, const struct trace_stack *s);
int analysis__add_symbol(struct analysis *a, const struct trace_symbol *s);
int analysis__add_event(struct analysis *a, const struct trace_event *e);
int analysis__add_drops(struct analysis *a, const struct trace_drops *d);
int analysis__set_end(struct analysis *a, const struct trace_end *e);
/* In-process marks and thread names, handed to marks.h's analysis (in file
 * order with the events: marks and events are one time-ordered stream). */
int analysis__add_string(struct analysis *a, const struct trace_string *s);
int analysis__add_mark(struct analysis *a, const struct trace_mark *m);
int analysis__add_thread(struct analysis *a, const struct trace_thread *t);

/* The reader found the trace cut short or damaged at its end. */
int analysis__set_partial(struct analysis *a, const char *problem);

/* Group stacks into sites and settle the figures. Call once, after the last
 * record; 0 or -ENOMEM. */
int analysis__finish(struct analysis *a);

/* Results, valid after analysis__finish. Sites are sorted by allocated
 * bytes, largest first (ties: more calls first, then by name). */
const struct analysis_trace *analysis__trace(const struct analysis *a);
const struct analysis_totals *analysis__totals(const struct analysis *a);
const struct analysis_site *analysis__sites(const struct analysis *a, size_t *nsites);
/* Zones, frames, pools and thread names (marks.h), settled by
 * analysis__finish too. */
const struct marks *analysis__marks(const struct analysis *a);

#endif /* MEMTRACE_ANALYSIS_H */
