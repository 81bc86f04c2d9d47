/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The aggregation behind `memtrace report`: fed the records of one trace,
 * it works out the totals and the allocation sites as docs/contract.md's
 * "Semantics" defines them. Pure: it reads no file and prints nothing.
 *
 * Feed it in file order (meta, modules, stacks, events in timestamp order,
 * symbols, drops, end, in whatever order the reader hands them over), then
 * call analysis__finish once; the results are valid until analysis__free.
 *
 * Exact rules (the unit tests pin each one):
 * - ALLOC is an allocation of SIZE at PTR. ALLOC with PTR 0 failed: ignored.
 * - REALLOC is a free of OLD_PTR (matched or unmatched; none if OLD_PTR is 0)
 *   followed by an allocation of SIZE at PTR. With PTR 0 it is a free of
 *   OLD_PTR if SIZE is 0 (glibc's realloc(p, 0)), else a failed call: ignored.
 * - A free (FREE, or REALLOC's free half) of a live pointer is a free. Of a
 *   pointer whose last event was a matched free (not allocated since) it is
 *   an internal free: the allocator releasing a chunk it had cached, e.g.
 *   glibc flushing a thread's tcache at thread exit; counted, otherwise
 *   ignored. Of a pointer never seen (allocated before the trace) it is an
 *   unmatched free, counted and subtracting from nothing. A freed pointer
 *   is remembered until it is allocated again, except that when more than
 *   131072 freed pointers (and more than are live) wait for reuse, those
 *   freed 65536 or more frees ago are forgotten: freed again, unmatched.
 * - An allocation at a pointer that is still live (its free was dropped)
 *   replaces the old allocation, which stops counting as live.
 * - Temporary: freed before the thread that made it made another
 *   allocation. The free half of a realloc comes before its allocation
 *   half, so malloc(p) then realloc(p) makes p temporary.
 * - Peak: the first moment the live bytes reach their maximum, checked
 *   after each event. A site's peak_bytes are its live bytes then, so the
 *   sites' peak_bytes add up to the total peak_bytes (exactly, in one pass).
 * - Site: frames[0] of the stack, grouped by its innermost symbolized frame
 *   (module, function, file, line); an address with no function name groups
 *   by module + offset; stack id 0 or an empty stack is the site
 *   "[no stack]".
 * - --alloc-fn GLOB: innermost frames of functions matching a glob (and
 *   unnamed frames among or inside them) belong to the allocator, as in
 *   Valgrind massif: a stack starts after them, so its site is the caller
 *   of the wrapper. A stack that is wrapper all the way keeps its last frame.
 */
#ifndef MEMTRACE_ANALYSIS_H
#define MEMTRACE_ANALYSIS_H

#include "trace.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_reader_ops;
struct marks;

/* The figures kept per stack, per site and (in analysis_totals) overall. */
struct analysis_figures {
	uint64_t allocations;           /* allocation calls (realloc's allocation half included) */
	uint64_t allocated_bytes;       /* bytes those calls asked for */
	uint64_t peak_bytes;            /* bytes live at the moment of the global peak */
	uint64_t leaked_allocations;    /* allocations still live at the end */
	uint64_t leaked_bytes;          /* their bytes */
	uint64_t temporary_allocations; /* freed before their thread allocated again */
};

struct analysis_totals {
	uint64_t allocations;
	uint64_t frees;                 /* matched frees (realloc's free half included) */
	uint64_t allocated_bytes;
	uint64_t peak_bytes;
	uint64_t peak_time_ns;          /* peak's time after the trace's start_mono_ns */
	uint64_t leaked_allocations;
	uint64_t leaked_bytes;
	uint64_t temporary_allocations;
	uint64_t unmatched_frees;       /* frees of pointers never seen allocated */
	uint64_t internal_frees;        /* frees of pointers already freed, not reallocated */
	uint64_t dropped_events;
};

/* One source-level frame: an address expands to one per inlined call. */
struct analysis_frame {
	uint64_t address;       /* the return address as recorded */
	const char *function;   /* NULL if unknown */
	const char *file;       /* NULL if unknown */
	uint32_t line;          /* 0 if unknown */
	bool inlined;           /* inlined into the frame that follows */
	const char *module;     /* path of the module; NULL if no module holds it */
	uint64_t module_offset; /* address within the module */
};

struct analysis_stack {
	struct analysis_figures figures;
	uint32_t id;                         /* trace stack id; 0: no stack */
	size_t nframes;
	const struct analysis_frame *frames; /* innermost first */
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

/* What the report says about the trace itself. */
struct analysis_trace {
	const char *command;   /* NULL if the trace had no metadata */
	const char *comm;
	int32_t pid;
	uint64_t sample_bytes; /* 0: every allocation traced */
	uint64_t duration_ns;  /* start to end, or to the last event if partial */
	bool ended;            /* an END record was seen */
	bool target_exited;
	bool partial;
	const char *problem;   /* why it is partial; NULL if not */
	const char *stop_reason; /* why recording stopped early; NULL if it did not */
};

struct analysis;

/* A new empty analysis; NULL with errno set. */
struct analysis *analysis__new(void);

/* After analysis__finish: the function that looks like an allocation
 * wrapper (the first named frame of one of the 3 top sites by bytes,
 * called from at least 5 distinct places and not yet an --alloc-fn), or
 * NULL. */
const char *analysis__wrapper_candidate(const struct analysis *a);

/* Before analysis__finish: call FN once for each stack address that has no
 * function name and lies in a module with a build-id (M: that mapping,
 * MODULE: its index among the trace's modules), so a later symbolizer (a
 * debuginfod client) can name it with analysis__add_symbol. 0, -errno, or
 * what FN returned. */
typedef int (*analysis_unresolved_fn)(void *ctx, uint64_t addr, const struct trace_module *m, int32_t module);
int analysis__for_each_unresolved(struct analysis *a, analysis_unresolved_fn fn, void *ctx);

/* The trace's module I (in the order written), strings owned by A. 0 or
 * -ENOENT past the last. */
int analysis__module(const struct analysis *a, size_t i, struct trace_module *out);

/* Count frames of functions matching GLOB (fnmatch) as the allocator's;
 * before analysis__finish. 0, -E2BIG past 32 globs, -ENOMEM. */
int analysis__add_alloc_fn(struct analysis *a, const char *glob);
void analysis__free(struct analysis *a);

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

/* Reader callbacks that feed the analysis given as ctx (for
 * trace_reader__read); declared in trace_reader.h's terms. */
extern const struct trace_reader_ops analysis_reader_ops;

#endif /* MEMTRACE_ANALYSIS_H */
