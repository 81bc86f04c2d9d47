/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_BUDGET_H
#define MEMTRACE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/*
 * --budget PCT: the controller that keeps what the probes cost the target
 * within PCT percent of the target's own work (docs/budget.md).
 *
 * The probes live only in windows. A cycle is: a window with every
 * allocator probe (allocations are taken), a tail as long as the window with
 * only the free probes (the frees of the window's blocks are seen), then
 * nothing until the next window. What a window costs is priced from what
 * the probes counted (bpf/memtrace.bpf.c's hits) times this host's cost of
 * one hit (calibrated on memtrace's own process at start) plus the BPF
 * programs' measured run time; the next window starts when the budget has
 * paid for this one, so the fraction of time live adapts to the target's
 * allocation rate. A burst is caught inside the window in progress: the
 * recorder looks at the counters every millisecond while it is open and
 * ends it once it has spent what a whole cycle may.
 *
 * Pure: the caller attaches, detaches and counts; this only decides when.
 */

#define BUDGET_WINDOW_NS (5 * 1000 * 1000ULL)      /* a window's length when the budget allows */
#define BUDGET_FIRST_WINDOW_NS (2 * 1000 * 1000ULL) /* the first: nothing is known yet */
#define BUDGET_MIN_WINDOW_NS (1000 * 1000ULL)
#define BUDGET_MAX_WINDOW_NS (20 * 1000 * 1000ULL)  /* a cheap window's: its tail as long, in the shortest period */
#define BUDGET_START_NS (50 * 1000 * 1000ULL)        /* the first window opens within this */
#define BUDGET_MIN_PERIOD_NS (50 * 1000 * 1000ULL)   /* windows at most 20 a second: each attach costs */
#define BUDGET_DEAR_PERIOD_NS (100 * 1000 * 1000ULL) /* what dear windows shrink towards */
#define BUDGET_LOOK_NS (250 * 1000 * 1000ULL)        /* between windows, the work paid is looked at this often */
#define BUDGET_AIM 0.8 /* of the budget, priced; the rest is for what is not (the kernel's attach and detach) */

/* A ring per CPU (the agent's: one for all of a target's CPUs,
 * loader_opts.one_ring) for what PCT percent lets through, not for every call:
 * the probes may take PCT% of a CPU's time, an event costs at least half
 * a microsecond of it (the cheapest hit seen), so at most PCT x 20000
 * events a second, 56 bytes each (an allocation's record), and a new
 * stack's 1 KiB now and then: 512 KiB per percent, a power of two, from
 * 256 KiB up to the 8 MiB of exact tracing. */
#define BUDGET_RING_PER_PCT (512u << 10)
#define BUDGET_RING_MIN (256u << 10)
#define BUDGET_RING_MAX (8u << 20)
static inline uint64_t budget_ring_bytes(double pct)
{
	uint64_t want = (uint64_t)(pct * BUDGET_RING_PER_PCT), b = BUDGET_RING_MIN;

	while (b < want && b < BUDGET_RING_MAX)
		b <<= 1;
	return b;
}

/* The ring size a load's lanes are sized for (a lane is a quarter of it,
 * loader_opts.lane_ring_bytes) where a target's ring is one for all its
 * CPUs (the agent's --budget): a target's lanes together hold at most half
 * its ring RING_BYTES, the ring taking what a full lane cannot (--budget 1:
 * a lane of 128 KiB on 2 CPUs, 4 KiB on 64, where 128 KiB each was 8 MiB a
 * target). Until a lane is the least the loader makes, 4 KiB
 * (lane_size_for): past that (--budget 1 beyond 64 CPUs) 4 KiB a CPU. */
static inline uint64_t budget_lane_ring_bytes(uint64_t ring_bytes, int nr_cpus)
{
	return nr_cpus > 2 ? ring_bytes * 2 / (uint64_t)nr_cpus : ring_bytes;
}

#define BUDGET_MIN_FREES 20  /* frees in a window and in its tail to count its work by */
#define BUDGET_FIT_MIN 3      /* windows pooled before the fitted scale is used */
/* A tail's work is taken to be at least this share of its run time: below
 * it, the figure is what the price says, not what the target did. */
#define BUDGET_TAIL_WORK_MIN 0.1
/* A window's work is its run time less its price where that leaves at
 * least this share of it; below, the price's error would decide, and its
 * frees at its tail's work per free count it (budget__window_weight). */
#define BUDGET_PRICED_WORK_MIN 0.25
#define BUDGET_SCALE_MIN 0.5
#define BUDGET_SCALE_MAX 4.0

struct window_span {
	uint64_t begin, end, tail_end;      /* CLOCK_MONOTONIC ns */
	uint64_t run_begin, run_end, run_tail; /* the target's run time then (0: unknown) */
	double cost_live, cost_tail;        /* what the probes cost it, priced at calibration */
	double frees_live, frees_tail;      /* free calls counted */
	double allocs_live;                 /* allocation calls counted in the window (their returns) */
};

/* What one probe hit costs the target on this host, calibrated. */
struct budget_cost {
	double entry_ns;  /* an entry probe: the trap and an empty program */
	double return_ns; /* a return probe's extra */
};

/* Cumulative counters the caller reads at each tick. */
struct budget_sample {
	uint64_t entries, returns; /* probe hits (loader__hits) */
	uint64_t prog_ns, prog_runs; /* the BPF programs' run time and runs; 0 runs: not measured */
	uint64_t target_cpu_ns;    /* the target's CPU time (utime + stime) */
	/* the recorder's own work for this target (its recording thread and
	 * the threads that detach probes), and the host's CPU time, all and
	 * idle (/proc/stat): on a busy host the recorder's CPU is the
	 * target's loss, on an idle one it is not. 0: not read. */
	uint64_t own_cpu_ns;
	uint64_t host_ticks, host_idle_ticks;
};

enum budget_action {
	BUDGET_WAIT,     /* nothing to do before budget__next_ns */
	BUDGET_OPEN,     /* attach every probe and take allocations */
	BUDGET_CLOSE,    /* stop taking allocations, detach their probes; the frees' stay */
	BUDGET_TAIL_END, /* detach the frees' probes */
};

struct budget {
	double fraction;         /* PCT / 100 */
	struct budget_cost trap;
	double scale;            /* what one ns priced at calibration costs the target (1 until fitted) */
	double fit_num, fit_den; /* the scale's fit, pooled over windows (budget__fit) */
	int fit_windows;
	double prog_ns_per_hit;  /* measured while live; an estimate until then */
	double phi_live;         /* cost per ns of a window with every probe */
	double phi_tail;         /* ... with the free probes only */
	double cpu;              /* cores the target's own work used (it sets the budget) */
	double max_cpu;
	double debt_ns;          /* cost spent beyond what the budget paid, carried to the next cycle */
	double owed_ns;          /* between windows: what the target's work must pay before the next */
	uint64_t min_next_ns;    /* ... and not before this */
	enum { BUDGET_OFF, BUDGET_LIVE, BUDGET_TAIL } state;
	uint64_t since_ns;       /* the state's start */
	uint64_t next_ns;        /* when the next action is due */
	uint64_t cycle_start_ns; /* the window's start */
	uint64_t rng;            /* the pauses' random draws */
	double offset;           /* the window in progress's place in its period, [0, 1) (jitter_draw) */
	uint64_t window_ns;      /* the window in progress: its planned length; after, its length */
	struct budget_sample at; /* counters at the state's start */
	struct budget_sample cycle_at; /* ... at the cycle's start */
	double window_cost_ns;   /* the last window's, priced */
	double attach_cost_ns;   /* the window in progress: what its attaching cost, priced */
	struct budget_sample own_at; /* counters at the last cycle's end: the recorder's work since */
	double own_cost_ns;      /* of cost_ns: the recorder's own CPU time, as the host's load charges it */
	double follow_cost_ns;   /* of cost_ns: what following this process cost (budget__charge_follow) */
	double large_cost_ns;    /* of cost_ns: the large blocks' probes (budget__charge_always) */
	/* totals, for the trace and the report */
	uint64_t windows;
	uint64_t live_ns;        /* allocations taken, summed */
	uint64_t tail_ns;        /* frees only, summed */
	uint64_t cut_windows;    /* ended early by a burst */
	double cost_ns;          /* priced, summed (the recorder's own share too) */
};

/* PCT in (0, 100]; MAX_CPU: cores the target may use (the host's). */
void budget__init(struct budget *b, double pct, const struct budget_cost *trap, int max_cpu, uint64_t now_ns,
		  const struct budget_sample *s);
/* What to do at NOW_NS given counters S; the caller does it at once. */
enum budget_action budget__tick(struct budget *b, uint64_t now_ns, const struct budget_sample *s);
/* The window just opened has every probe live from NOW_NS: attaching took
 * from its opening until then (0.4 to 2.3 ms for redis-server's allocator
 * here), the free probes live already. Its planned length counts from now,
 * so it takes allocations as long as planned and its tail is as long as
 * that. S: the counters now; what the hits of the attaching cost is priced
 * with the window's cost, apart from its rate (a slow attach is no burst). */
void budget__attached(struct budget *b, uint64_t now_ns, const struct budget_sample *s);
/* --follow-children: NS of CPU time spent to follow the process (its
 * supervisor's for it, its recorder's before the budget began) is charged
 * as the probes' cost is: counted in cost_ns, and owed before a later
 * window opens (the first opens when it would: a process that lives less
 * than its following costs is still seen). */
void budget__charge_follow(struct budget *b, double ns);
/* The large blocks' probes, attached throughout: ENTRIES and RETURNS hits
 * since the last charge, priced at the calibration's hit (scaled), charged
 * as following is. */
void budget__charge_always(struct budget *b, double entries, double returns);
/* Recording stops at NOW_NS: the window or tail in progress ends there
 * and counts in the totals. What to detach is the caller's. */
void budget__stop(struct budget *b, uint64_t now_ns, const struct budget_sample *s);
/* When to tick next, at the latest. */
uint64_t budget__next_ns(const struct budget *b);
/* What a span's hits cost the target, in ns: the raw price, scaled. */
double budget__price(const struct budget *b, const struct budget_sample *from, const struct budget_sample *to);
/* ... priced at the calibration's cost per hit and the programs' run time. */
double budget__raw_price(const struct budget *b, const struct budget_sample *from, const struct budget_sample *to);
/* The recorder's own CPU time between FROM and TO, charged by the share of
 * the host's CPU time that was busy (all of it if the host's is unknown). */
double budget__own_cost(const struct budget_sample *from, const struct budget_sample *to);

/*
 * What a window stands for: its weight is the target's work in the time it
 * stands for (from its start to the next window's start, or the trace's
 * end) over its work while it was live. Work is run time (runclock.h) less
 * what the probes cost. While every probe is live that cost is nearly all
 * of the run time of a target that allocates often (redis-server under
 * load: 90 to 97%), so the work left is a small difference of two large
 * figures, and a price a few percent off makes it several times off. So the
 * window's work is counted by its free calls instead, at the work per free
 * of its tail: the tail follows it at once, with the free probes only, so a
 * smaller share of its run time goes to the probes and the same error in
 * the price moves its work less. With too few frees (BUDGET_MIN_FREES) the
 * priced difference, bounded; without run times, time alone (off by the
 * slowdown: 8 x for a loaded redis-server).
 *
 * What one ns priced at calibration costs the target (the scale) is fitted
 * from the windows: in a window and in its tail, run = work + scale x price
 * and work per free is the same, so each window gives an equation in the
 * scale alone; the equations are summed over the windows. Redis-server
 * here: 1.07 to 1.12.
 */
/* Free calls counted from A to B: entry hits less return hits (every
 * allocator probe has a return probe, free has none). */
double budget__frees(const struct budget_sample *a, const struct budget_sample *b);
/* Pool window S (ended with its tail) into the fit of what one ns priced at
 * calibration costs the target; budget__price uses it from then on. */
void budget__fit(struct budget *b, const struct window_span *s);
/* What window S stands for, from its start to NEXT (RUN_NEXT: the target's
 * run time then): the target's work in that time over its work while S was
 * live; at least 1. */
double budget__window_weight(const struct budget *b, const struct window_span *s, uint64_t next, uint64_t run_next);
/* ... the same with the calibration's price as it is (scale 1): how far
 * the weight moves with the fitted scale, the model's part of the
 * estimates' error (user/analysis/replay.h). The fitted scale ran from 0.99
 * to 1.45 between recordings of one program here, and the totals with it. */
double budget__window_weight_unscaled(const struct window_span *s, uint64_t next, uint64_t run_next);

#endif /* MEMTRACE_BUDGET_H */
