/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The replay engine: the one place that turns a trace's records, in file
 * order, into what happened to the heap. Every analysis (report's sites and
 * totals, zones, frames and pools, heap over time, the Chrome export, the
 * coming live view) is an observer of it: it owns no rule of its own about
 * what is live, what a realloc does, what a sampled block stands for, how
 * zones nest or which frames are the allocator's. Pure: it reads no file
 * and prints nothing.
 *
 * Rules (tests/unit/test_analysis.c, test_marks.c and test_replay.c pin
 * each one; docs/contract.md states the semantics they implement):
 * - ALLOC is an allocation of SIZE at PTR. ALLOC with PTR 0 failed: ignored.
 * - REALLOC is a free of OLD_PTR (matched or unmatched; none if OLD_PTR is 0)
 *   followed by an allocation of SIZE at PTR. With PTR 0 it is a free of
 *   OLD_PTR if SIZE is 0 (glibc's realloc(p, 0)), else a failed call: ignored.
 *   FREE of PTR 0 does nothing.
 * - A free of a live pointer is a free. Of a pointer whose last event was a
 *   matched free (not allocated since) it is an internal free: the allocator
 *   releasing a chunk it had cached (glibc's tcache at thread exit); counted,
 *   otherwise ignored. Of a pointer never seen it is an unmatched free,
 *   counted and subtracting from nothing. A freed pointer is remembered until
 *   it is allocated again, except that when more than 131072 freed pointers
 *   (and more than are live) wait for reuse, those freed 65536 or more frees
 *   ago are forgotten: freed again, unmatched.
 * - An allocation at a pointer that is still live (its free was dropped)
 *   replaces the old block, which stops being live (observers see it go with
 *   replaced set) and is not counted as a free.
 * - Temporary: freed before the thread that made it made another
 *   allocation. REALLOC's free half comes before its allocation half.
 * - Sampled traces (meta.sample_bytes = mean): a block of SIZE bytes was
 *   recorded with probability p = 1 - exp(-SIZE / mean) and stands for
 *   round(1/p) blocks and round(SIZE/p) bytes; every figure sums those.
 * - --budget traces (meta.budget_ppm > 0): an allocation made in a window
 *   (WINDOW_BEGIN's weight W: the time the window stands for over its live
 *   time) stands for W blocks (floor(W) or floor(W) + 1, deterministically
 *   dithered so they average W) and round(SIZE * W) bytes. At TAIL_END the
 *   blocks still live are long-lived: they stay counted live (so "leaked"
 *   means "outlived its window's tail") but their pointers are forgotten, so
 *   a later allocation there is new and a later free of one is internal.
 * - --budget large blocks (meta.large_bytes > 0): an anonymous read-write
 *   mmap of large_bytes or more made by the allocator (an allocator call
 *   was open on the thread, or the C library's own code called mmap: its
 *   stack's first frame lies in libc.so) is one allocation of its usable
 *   size (the mapping less glibc's 16-byte chunk header), weight 1 at any
 *   time, windows or not, its stack past the C library's frames; a munmap
 *   over it is its free, an mremap its free and a new block (realloc). An
 *   ALLOC, FREE or REALLOC half whose pointer lies in a live large block (or
 *   where an mremap moved one from) is that block's, already counted: skipped.
 * - --budget error: a window's allocations at a stack (Y bytes, N calls)
 *   add W x (W - 1) x Y^2 (and N^2) to the stack's variance, as if each
 *   window were a slice of time taken with probability 1/W, independently
 *   (Horvitz-Thompson for Poisson sampling); the totals add the window's
 *   whole Y and N the same way. The weight's model adds D^2, D the sum over
 *   windows of (W - U) / 2 x Y, U the weight by the unscaled price
 *   (WINDOW_END's; none where it is 0): systematic, so summed before it is
 *   squared, per stack and for the totals. Large blocks add nothing.
 * - Peak: the first moment the live bytes reach their maximum, checked after
 *   each event; each new maximum starts a new peak epoch.
 * - Names (zones, pools, frame labels, thread names) are interned by text.
 *   STRING id 0 reads "[unnamed]"; an id with no STRING "[string ID]".
 * - Zones nest per thread: ZONE_BEGIN pushes; ZONE_END closes the innermost
 *   open zone of that name and, first, every zone opened inside it; an END
 *   whose name is not open on the thread is an unmatched end. Zones still
 *   open when the trace ends close at its end (END's time, else the latest
 *   time seen). An open zone entry is "outer" when no zone of the same name
 *   is open below it on the thread (recursion counts once).
 * - An allocation belongs exclusively to the innermost zone open on its
 *   thread when it was made (block.zone), and that entry counts it.
 * - FRAME marks from any thread number frames 0, 1, ... in file order.
 * - Thread names: the last THREAD_NAME mark or THREAD record of a tid wins.
 * - --rss: a resident anonymous page under a live block is the allocator's;
 *   any other is the holder's of the mmap the trace saw map its range (the
 *   allocator's when an allocator call was open or its code made it, a
 *   thread's stack for MAP_STACK or glibc's pthread, else the program's),
 *   whatever mappings the kernel merged it into; a range no seen mmap made
 *   goes by the kernel's mapping: the allocator's if the part of it between
 *   seen mappings holds a live block or it is [heap], else a stack, a
 *   file's, or the rest.
 * - --rss: every resident snapshot is added up by that rule (trace.rss's
 *   at_end, at_peak and the series reconciled: one function for all).
 * - Stack frames: an address resolves through the trace's symbols into one
 *   frame per inlined call; --alloc-fn GLOB makes the innermost frames of
 *   matching functions (and unnamed frames among or inside them) the
 *   allocator's, so a stack starts after them; a stack that is allocator all
 *   the way keeps its last frame.
 */
#ifndef MEMTRACE_REPLAY_H
#define MEMTRACE_REPLAY_H

#include "trace.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPLAY_NONE UINT32_MAX /* no zone, no name */
#define REPLAY_MAX_OBSERVERS 8
#define REPLAY_RECONCILED_MAX 2048            /* --rss: snapshots kept for trace.rss.reconciled */
#define REPLAY_RECONCILED_GROUPS_MAX (1 << 20) /* ... and their groups together */

/* What the report says about the trace itself. */
/* --rss: one sample of the target's resident memory. */
struct analysis_rss_point {
	uint64_t time_ns;    /* after the trace's start_mono_ns */
	uint64_t anon, file, shmem; /* RssAnon, RssFile, RssShmem, bytes */
	uint64_t heap_bytes; /* the live heap at that moment, as replayed */
};

/* --rss: /proc/PID/smaps_rollup once, its lines in bytes. */
struct analysis_rollup {
	bool seen;
	uint64_t time_ns;
	uint32_t n;
	const char *name[TRACE_ROLLUP_MAX];
	uint64_t bytes[TRACE_ROLLUP_MAX];
};

/* --rss: anonymous memory still mapped, one per mapping: the program's own
 * (mmap outside any allocator call) or the allocator's. */
struct analysis_mapping {
	uint64_t start, len;
	bool allocator;   /* made in an allocator call, or by the allocator's code */
	bool stack_call;  /* mmap'd with MAP_STACK: a thread's stack (glibc's pthread asks so) */
	uint32_t stack;   /* stack index (replay__stack) of the mmap; 0: none */
	uint64_t time_ns; /* when it was mapped, after the start */
	const struct analysis_frame *site; /* its stack's site (replay_site_frame), named at finish; NULL: none */
};

/* --rss: the outside mappings of one site (function, file, line, module). */
struct analysis_map_site {
	const struct analysis_frame *site; /* NULL: no stack */
	uint64_t bytes;
	uint64_t mappings;
};

/* --rss: what glibc's own probes of its allocator said (MAP records 7 to
 * 16), where the C library has them. */
#define ANALYSIS_MALLOPT_MAX 8
struct analysis_glibc {
	uint64_t arenas_new, arena_new_bytes; /* arenas made (a thread found none free) */
	uint64_t arenas_reused;               /* a thread took an existing arena */
	uint64_t heaps_new, heap_new_bytes;   /* non-main arenas' heaps mapped */
	uint64_t heaps_grown, heap_grown_bytes, heaps_shrunk, heap_shrunk_bytes;
	uint64_t heaps_freed, heap_freed_bytes;
	uint64_t sbrk_more, sbrk_more_bytes;  /* the main arena's heap grown by brk */
	uint64_t sbrk_less, sbrk_less_bytes;  /* ... and trimmed (given back) */
	uint64_t retries;                     /* an allocation that failed and was tried in another arena */
	size_t nmallopt;                      /* mallopt calls, the first ANALYSIS_MALLOPT_MAX kept */
	struct {
		int64_t param, value;
	} mallopt[ANALYSIS_MALLOPT_MAX];
	size_t narena_sites;                  /* arenas made, by the site that made them, most first */
	const struct analysis_map_site *arena_sites; /* bytes: the arenas' sizes; mappings: arenas */
};

/* --rss: what the calls that map memory did, from the MAP records. */
struct analysis_maps {
	uint64_t calls[MT_MAP_NR_CALLS]; /* by enum mt_map_call (index 0 unused; 6: fault samples) */
	bool glibc_probed;            /* glibc's probes were attached (the trace's meta says) */
	struct analysis_glibc glibc;  /* what they said */
	uint64_t outside_bytes;       /* anonymous bytes mapped outside the allocator, still mapped */
	uint64_t outside_peak_bytes;  /* their most at any time */
	uint64_t allocator_bytes;     /* anonymous bytes mmap'd inside allocator calls, still mapped */
	uint64_t brk_bytes;           /* the heap's break, above the first break seen */
	uint64_t madvised_bytes;      /* given back by madvise (DONTNEED, FREE, REMOVE), summed */
	size_t nmappings;             /* the anonymous mappings still mapped, in the order made */
	const struct analysis_mapping *mappings;
	size_t nsites;                /* the program's own of them by their site (after finish), most bytes first */
	const struct analysis_map_site *sites;
	/* write faults, one in MT_FAULT_EVERY per CPU sampled: pages first written (made resident) */
	uint64_t fault_bytes;         /* the samples' bytes summed: an estimate */
	size_t nfault_sites;          /* by the site of the faulting code (past libc's own), most first */
	const struct analysis_map_site *fault_sites; /* bytes: estimate; mappings: samples */
	/* ... of them, those in the trace's last minute (trace.recent_from_ns on) */
	uint64_t recent_fault_bytes;
	size_t nrecent_fault_sites;
	const struct analysis_map_site *recent_fault_sites;
};

/* --rss: the target's resident anonymous memory at one moment, added up
 * from what each part was measured by: pagemap's present anonymous pages
 * (resident_anon; the parts below sum to it exactly), the live blocks laid
 * over them, the ranges the MAP records mapped, and the kernel's own kind
 * of a mapping where no seen call mapped the range (the --rss rule above). */
struct analysis_reconcile {
	bool seen;
	uint64_t time_ns;                 /* after the start */
	uint64_t rss_anon;                /* the kernel's RssAnon sampled with it; 0: none */
	uint64_t rss_file, rss_shmem;     /* its RssFile and RssShmem: what is resident beside the anonymous */
	uint64_t resident_anon;           /* pagemap: anonymous pages present */
	bool heap_known;                  /* exact tracing: the live blocks split the allocator's part */
	uint64_t heap_live_resident;      /* live blocks' bytes on resident pages */
	uint64_t allocator_free_resident; /* the rest of the allocator's resident pages: free, cached, headers */
	uint64_t allocator_resident;      /* the two above together (all that is known without the heap) */
	uint64_t outside_resident;        /* the program's own mmaps (outside the allocator) */
	uint64_t thread_stacks;           /* [stack] and the mappings holding a thread's stack pointer */
	uint64_t file_private;            /* files' private mappings written to (.data, .bss, relro) */
	uint64_t other;                   /* anonymous mappings made before the recording, or not seen made */
	uint64_t heap_live;               /* the live heap then (heap_known) */
	uint64_t heap_live_not_resident;  /* live blocks' bytes on pages not present: never touched, or swapped */
	size_t nsites;                    /* outside_resident by the site of the mmap, most first */
	const struct analysis_map_site *sites; /* bytes: resident bytes; mappings: pieces */
	const char *advice;               /* one line for the allocator when it holds much free; NULL: none */
};

struct analysis_trace {
	const char *command;   /* NULL if the trace had no metadata */
	const char *comm;
	int32_t pid;
	uint64_t sample_bytes; /* 0: every allocation traced */
	bool no_heap;          /* --rss=only: no allocator probes, so no heap figures */
	bool attached;         /* began in a running process (TRACE_META_ATTACHED) */
	bool preload;          /* captured in-process by record --preload (TRACE_META_PRELOAD) */
	uint64_t duration_ns;  /* start to end, or to the last event if partial */
	bool ended;            /* an END record was seen */
	bool target_exited;
	bool partial;
	const char *problem;   /* why it is partial; NULL if not */
	const char *stop_reason; /* why recording stopped early; NULL if it did not */
	uint32_t end_flags;    /* END's TRACE_END_*; 0 without an END */
	uint64_t memory_limit; /* TRACE_END_OOM_KILLED: the limit the kill enforced, bytes; 0: not known */
	const char *memory_limit_of; /* whose: "v1 /PATH", "v2 /PATH" (a memory cgroup), "host"; NULL */
	uint64_t recent_from_ns; /* the last minute (recent.h's window): from here to duration_ns */
	uint64_t start_mono_ns;  /* META's: CLOCK_MONOTONIC at the start, what every *_ns above is after */
	/* --budget (budget_ppm > 0): the probes lived in windows */
	struct analysis_budget {
		uint64_t budget_ppm;    /* the budget, millionths of the target's work */
		uint64_t hit_entry_ns;  /* a probe hit's cost as calibrated */
		uint64_t hit_return_ns;
		uint64_t windows;
		uint64_t live_ns;       /* allocations taken, summed over windows */
		uint64_t tail_ns;       /* frees only, after them */
		uint64_t min_tail_ns;   /* the shortest window + tail: what "long-lived" means */
		double min_weight, max_weight; /* what one recorded allocation stood for */
		uint64_t lifetimes_seen; /* frees seen of blocks allocated in a window */
		uint64_t lifetime_ns[3]; /* their p50, p90, p99 (from log-scale buckets) */
		uint64_t long_lived_allocations; /* survived their window's tail: estimates */
		uint64_t long_lived_bytes;
		uint64_t large_bytes;   /* large blocks from this length are exact (meta); 0: none */
		uint64_t large_allocations, large_allocated_bytes; /* of the totals: exact */
		uint64_t large_frees;
		uint64_t large_until_ns; /* their probes were detached then (MT_MARK_LARGE_END); 0: never */
		double var_allocations, var_bytes; /* the totals' estimate's variance (less the exact part) */
	} budget;
	/* --rss (npoints > 0): resident memory over time, in time order */
	struct analysis_rss {
		size_t npoints;
		const struct analysis_rss_point *points;
		size_t peak;    /* the point of most resident memory (anon + file + shmem) */
		struct analysis_rollup start, end;
		bool traced_maps; /* MAP records were seen */
		struct analysis_maps maps;
		size_t nresident;  /* RESIDENT snapshots seen */
		struct analysis_reconcile at_end;  /* the last snapshot (the recording's end) */
		struct analysis_reconcile at_peak; /* the snapshot of most resident anonymous memory */
		/* the snapshots added up, in time order, without sites or advice: every one up to
		 * REPLAY_RECONCILED_MAX, past that every other one dropped (never the peak's nor the last) */
		size_t nreconciled;
		const struct analysis_reconcile *reconciled;
	} rss;
};

/* The live heap is known: every allocation was recorded (not sampled, not
 * in --budget windows, allocator probes attached). */
static inline bool analysis_heap_known(const struct analysis_trace *t)
{
	return !t->budget.budget_ppm && !t->sample_bytes && !t->no_heap;
}

/* The trace's totals, by the rules above. */
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
	bool peak_unknown;              /* --budget: the heap between windows is not seen */
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
	uint32_t language;      /* enum trace_language of its code */
};

/* A block: what an allocation made, live until its free. */
struct replay_block {
	uint64_t ptr;
	uint64_t size;     /* bytes asked for */
	uint64_t count;    /* allocations it stands for: 1, or the sampling estimate */
	uint64_t bytes;    /* bytes it stands for: SIZE, or the sampling estimate */
	uint64_t ts;       /* the event's time (CLOCK_MONOTONIC ns) */
	uint32_t stack;    /* stack index (replay__stack); 0: no stack */
	uint32_t stack_id; /* the trace's id of that stack */
	uint32_t thread;   /* thread index of the thread that made it */
	uint32_t zone;     /* name of the innermost zone open on it then; REPLAY_NONE */
	uint64_t peak_epoch; /* replay__peak_epoch at the event */
	bool exact;        /* --budget: a large block, counted once whatever the windows */
};

/* One open zone entry on a thread. */
struct replay_zone {
	uint32_t name;            /* name index */
	bool outer;               /* no entry of the same name below it */
	uint64_t begin_ts;        /* raw CLOCK_MONOTONIC ns */
	uint64_t allocations;     /* while it was the thread's innermost zone */
	uint64_t allocated_bytes;
};

/* A recorded stack, its addresses innermost first. */
struct replay_stack {
	uint32_t id;           /* the trace's stack id; 0: none */
	uint32_t nr;
	const uint64_t *addrs; /* NULL until its STACK record came (if ever) */
	/* --budget: the variance of its estimated bytes and calls (the rules
	 * above), and the window in progress's unweighted figures */
	double var_bytes, var_count;
	double model_bytes, model_count; /* its estimate less the one by the unscaled weights */
	uint64_t win_bytes, win_count;
	bool in_window;        /* has figures in the window in progress */
	uint64_t fault_bytes;  /* --rss: pages first written by its code (sampled write faults), after finish */
};

struct replay;

/*
 * An observer's callbacks; any may be NULL. Each returns 0 or -errno, which
 * stops the replay. They are called during the event that causes them,
 * with the engine's state (replay__*) as it is at that point: in alloc, the
 * block is live already; in free, it is no longer.
 */
struct replay_ops {
	int (*meta)(void *ctx, const struct replay *r, const struct trace_meta *m);
	int (*alloc)(void *ctx, const struct replay *r, const struct replay_block *b);
	/* A live block freed (TEMPORARY by the rule above) or, with REPLACED, a
	 * live block an allocation at its pointer replaced. */
	int (*free)(void *ctx, const struct replay *r, const struct replay_block *b, bool temporary,
		    bool replaced);
	/* After each event of a known kind (and the peak check). */
	int (*event_done)(void *ctx, const struct replay *r, const struct trace_event *e);
	int (*zone_begin)(void *ctx, const struct replay *r, uint32_t thread, const struct replay_zone *z);
	/* Z closes at TS; AT_END: it was still open when the trace ended. */
	int (*zone_end)(void *ctx, const struct replay *r, uint32_t thread, const struct replay_zone *z,
			uint64_t ts, bool at_end);
	int (*zone_unmatched_end)(void *ctx, const struct replay *r, uint32_t thread, uint32_t name);
	/* Frame mark INDEX (0, 1, ...) M, labelled NAME (REPLAY_NONE: none). */
	int (*frame)(void *ctx, const struct replay *r, uint64_t index, uint32_t name,
		     const struct trace_mark *m);
	/* POOL_ALLOC, POOL_FREE or POOL_RESET of the pool named NAME. */
	int (*pool)(void *ctx, const struct replay *r, const struct trace_mark *m, uint32_t name);
	/* After replay__finish settled the trace (zones closed, totals final). */
	int (*finish)(void *ctx, const struct replay *r);
};

/* A new empty replay; NULL with errno set. */
struct replay *replay__new(void);
void replay__free(struct replay *r);

/* Subscribe OPS with CTX; before the first record. 0 or -E2BIG. */
int replay__observe(struct replay *r, const struct replay_ops *ops, void *ctx);

/* Count frames of functions matching GLOB (fnmatch) as the allocator's;
 * before replay__finish. 0, -E2BIG past 32 globs, -ENOMEM. */
int replay__add_alloc_fn(struct replay *r, const char *glob);
bool replay__is_alloc_fn(const struct replay *r, const char *function);

/* Feeding, one call per record in file order; each 0 or -errno (-ENOMEM,
 * or what an observer returned). Strings and arrays are copied. */
int replay__set_meta(struct replay *r, const struct trace_meta *m);
int replay__add_module(struct replay *r, const struct trace_module *m);
int replay__add_stack(struct replay *r, const struct trace_stack *s);
int replay__add_symbol(struct replay *r, const struct trace_symbol *s);
int replay__add_event(struct replay *r, const struct trace_event *e);
int replay__add_string(struct replay *r, const struct trace_string *s);
int replay__add_mark(struct replay *r, const struct trace_mark *m);
int replay__add_thread(struct replay *r, const struct trace_thread *t);
int replay__add_drops(struct replay *r, const struct trace_drops *d);
/* --rss: a resident memory sample (with the live heap of this moment) and
 * a smaps_rollup (the first is the start's, the last the end's). */
int replay__add_rss(struct replay *r, const struct trace_rss *s);
int replay__add_rollup(struct replay *r, const struct trace_rollup *ro);
/* --rss: a call that mapped or unmapped memory. */
int replay__add_map(struct replay *r, const struct trace_map *m);
/* --rss: a resident snapshot, laid over the live heap of this moment. */
int replay__add_resident(struct replay *r, const struct trace_resident *res);
int replay__set_end(struct replay *r, const struct trace_end *e);
int replay__set_partial(struct replay *r, const char *problem);

/* Close the zones still open, settle the totals, tell the observers. Once,
 * after the last record; 0 or -errno. */
int replay__finish(struct replay *r);

/* State, valid from the record that makes it until replay__free. */
const struct analysis_trace *replay__trace(const struct replay *r);
const struct analysis_totals *replay__totals(const struct replay *r); /* final after finish */
/* --rss: the live blocks of stack S on resident pages at the last resident
 * snapshot (trace.rss.at_end with heap_known); else 0. */
uint64_t replay__resident_bytes(const struct replay *r, uint32_t stack);
/* --rss: the pages first written where stack S wrote them (its sampled
 * write faults' bytes, whose site is trace.rss.maps.fault_sites'), after
 * finish; else 0. */
uint64_t replay__fault_bytes(const struct replay *r, uint32_t stack);
uint64_t replay__start_ns(const struct replay *r);      /* META's start_mono_ns */
uint64_t replay__start_real_ns(const struct replay *r); /* META's start_real_ns */
uint64_t replay__end_ns(const struct replay *r);        /* when zones close: END's time, else the latest seen */
uint64_t replay__live_bytes(const struct replay *r);
uint64_t replay__live_allocations(const struct replay *r);
uint64_t replay__peak_epoch(const struct replay *r);    /* bumps with each new peak */
uint64_t replay__marks(const struct replay *r);         /* MARK records seen */

/* The weights of a block of SIZE bytes (the sampling rule): the bytes it
 * stands for, its count in *COUNT. */
uint64_t replay__weigh(const struct replay *r, uint64_t size, uint64_t *count);

/* Names, by name index (0 .. replay__nnames - 1). */
size_t replay__nnames(const struct replay *r);
const char *replay__name(const struct replay *r, uint32_t name);

/* Threads, by thread index (0 .. replay__nthreads - 1), in order of first
 * sighting; a thread's name is REPLAY_NONE if it has none. */
size_t replay__nthreads(const struct replay *r);
uint32_t replay__thread_tid(const struct replay *r, uint32_t thread);
uint32_t replay__thread_name(const struct replay *r, uint32_t thread);
/* The zones open on THREAD, outermost first. */
const struct replay_zone *replay__thread_zones(const struct replay *r, uint32_t thread, size_t *n);

/* Stacks, by stack index (0 .. replay__nstacks - 1); index 0 is "no stack". */
size_t replay__nstacks(const struct replay *r);
const struct replay_stack *replay__stack(const struct replay *r, uint32_t stack);

/* The source-level frames of stack S after the --alloc-fn rule, innermost
 * first, allocated from the replay's arena; *N gets their number (0 for no
 * stack). NULL with *N 0 when out of memory (errno ENOMEM) or empty. */
const struct analysis_frame *replay__stack_frames(struct replay *r, uint32_t s, size_t *n);

/* Which of the N frames F (innermost first) is the allocation's site: in a
 * stack with Python frames, the innermost of them (the line of Python
 * code that asked: the interpreter's and extensions' C code inside it is
 * its plumbing, and stays in the stack); else the first that is not Rust's
 * allocation plumbing, as operator new is never
 * the site in C++: the standard library's own code (alloc::alloc, RawVec,
 * Vec, Box, String, hashbrown's raw table: files under /rustc/ and
 * /rust/deps/, where rustc records them, or a distribution's
 * .../library/{alloc,std,core}/src/ and any hashbrown-VERSION/) and the
 * global allocator shims
 * (__rust_alloc and friends, __rdl_*, __rg_*). The plumbing stays in the
 * stack. 0 when every frame is plumbing (the library allocating for
 * itself) or none is; C and C++ frames never are. */
size_t replay_site_frame(const struct analysis_frame *f, size_t n);

/* --rss: F is the allocator's own code (malloc's internals in glibc,
 * jemalloc, mimalloc, tcmalloc), by name: a mapping made there is the
 * allocator's even when no allocator probe said so (--rss=only). */
bool replay_is_allocator_frame(const struct analysis_frame *f);
/* --rss: F maps a thread's stack (glibc's allocate_stack), by name. */
bool replay_is_thread_stack_frame(const struct analysis_frame *f);

/* Modules, in the order written. 0 or -ENOENT past the last. */
/* What the trace said ADDR resolves to (its SYMBOL), the first CAP of its
 * frames into FRAMES; the strings are R's. 0, or -ENOENT. */
int replay__symbol(const struct replay *r, uint64_t addr, struct trace_symbol *out, struct trace_frame *frames,
		   uint32_t cap);

size_t replay__nmodules(const struct replay *r);
int replay__module(const struct replay *r, size_t i, struct trace_module *out);

/* Call FN once for each stack address that has no function name and lies
 * in a module with a build-id (M: that mapping, MODULE: its index), so a
 * later symbolizer (a debuginfod client) can name it with
 * replay__add_symbol. Before replay__finish. 0, -errno, or what FN returned. */
typedef int (*replay_unresolved_fn)(void *ctx, uint64_t addr, const struct trace_module *m, int32_t module);
int replay__for_each_unresolved(struct replay *r, replay_unresolved_fn fn, void *ctx);

/* Reader callbacks that feed the replay given as ctx (trace_reader__read). */
extern const struct trace_reader_ops replay_reader_ops;

#endif /* MEMTRACE_REPLAY_H */
