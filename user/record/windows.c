// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --budget's windows in a recording (windows.h). */
#include "windows.h"
#include "drain.h"
#include "loader.h"
#include "runclock.h"
#include "trace.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CALIBRATION_CALLS 1000
#define CALIBRATION_ROUNDS 3

/* What the calibration probes: a call that starts as allocators do where
 * memtrace probes them, on an instruction the kernel emulates (a push; see
 * placement.h), so the hit costs what theirs do, not a single-step's. */
void windows_calibration_site(volatile uint64_t *x);
__asm__(".text\n"
	".globl windows_calibration_site\n"
	".type windows_calibration_site, @function\n"
	"windows_calibration_site:\n"
	"	push %rbx\n"
	"	addq $1, (%rdi)\n"
	"	pop %rbx\n"
	"	ret\n"
	".size windows_calibration_site, . - windows_calibration_site\n");

/* Where this process's code for FN is in its executable: a file offset. */
static int own_offset(const void *fn, uint64_t *offset)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx", &start, &end, perms, &off) != 4)
			continue;
		if ((uintptr_t)fn >= start && (uintptr_t)fn < end && perms[2] == 'x') {
			*offset = (uintptr_t)fn - start + off;
			err = 0;
		}
	}
	fclose(f);
	return err;
}

/* ns per call of the calibration site, the fastest of the rounds. */
static double time_calls(void)
{
	volatile uint64_t sink = 0;
	double best = 0;

	for (int r = 0; r < CALIBRATION_ROUNDS; r++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);
		double per;

		for (int i = 0; i < CALIBRATION_CALLS; i++)
			windows_calibration_site(&sink);
		per = (double)(now_ns(CLOCK_MONOTONIC) - t0) / CALIBRATION_CALLS;
		if (!r || per < best)
			best = per;
	}
	return best;
}

static int probed_time(struct loader *l, uint64_t offset, bool with_return, double *ns)
{
	int fds[2], err = loader__calibration_attach(l, "/proc/self/exe", offset, with_return, fds);

	if (err)
		return err;
	*ns = time_calls();
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return 0;
}

int windows__calibrate(struct loader *l, struct budget_cost *out)
{
	double bare, entry, both;
	uint64_t offset;
	int err = own_offset((const void *)windows_calibration_site, &offset);

	if (err)
		return err;
	bare = time_calls();
	err = probed_time(l, offset, false, &entry);
	if (!err)
		err = probed_time(l, offset, true, &both);
	if (err)
		return err;
	out->entry_ns = entry > bare ? entry - bare : 1;
	out->return_ns = both > entry ? both - entry : 1;
	return 0;
}

/* The target's CPU time so far (all its threads), in ns; 0 if unknown. */
static uint64_t target_cpu_ns(int pid, uint64_t start)
{
	static long hz;
	char buf[1024];
	uint64_t f[12]; /* fields 4 to 15: utime and stime are the last two */
	ssize_t n;
	int dir = proc_dir_open(pid, start);

	if (dir < 0)
		return 0;
	n = read_file_at(dir, "stat", buf, sizeof(buf));
	close(dir);
	if (n <= 0 || proc_stat_parse(buf, NULL, f, 12))
		return 0;
	if (!hz)
		hz = sysconf(_SC_CLK_TCK) > 0 ? sysconf(_SC_CLK_TCK) : 100;
	return (f[10] + f[11]) * (1000000000ULL / (uint64_t)hz);
}

/* The host's CPU time, all and idle (with iowait), in clock ticks, from
 * /proc/stat's first line; 0 if unreadable. */
static void host_ticks(uint64_t *all, uint64_t *idle)
{
	unsigned long long v[10] = { 0 };
	char buf[256];
	int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	*all = *idle = 0;
	if (n <= 0)
		return;
	buf[n] = 0;
	if (sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]) != 8)
		return;
	for (int i = 0; i < 8; i++)
		*all += v[i];
	*idle = v[3] + v[4];
}

/* The target's run time now, to the microsecond; 0 if unknown. */
static uint64_t run_now(struct windows *w)
{
	return w->rc ? runclock__read(w->rc) : 0;
}

/* What a sample reads. */
enum sample_what {
	SAMPLE_PAUSE,    /* between windows: nothing is attached, so the hits and the
			  * programs' statistics are what the last full sample read; the
			  * run times (and the recorder's own) only */
	SAMPLE_HITS,     /* the probe hits and the programs' statistics only (a live
			  * window's check for a burst, every millisecond) */
	SAMPLE_COUNTERS, /* and the run times */
	SAMPLE_CYCLE,    /* and the host's CPU time: where a cycle's recorder cost is
			  * charged (budget__own_cost), at the start and at each tail's end */
};

static void sample_as(struct windows *w, struct budget_sample *s, enum sample_what what)
{
	memset(s, 0, sizeof(*s));
	if (what == SAMPLE_PAUSE) {
		s->entries = w->last.entries;
		s->returns = w->last.returns;
		s->prog_ns = w->last.prog_ns;
		s->prog_runs = w->last.prog_runs;
	} else {
		uint64_t maps[2];

		loader__hits(w->l, &s->entries, &s->returns, maps);
	}
	/* The statistics too: a window a burst cuts starts its tail from this
	 * sample, and a tail priced from statistics of 0 was charged every
	 * ns the programs ever ran (up to six times its length: the next
	 * window came seconds later, and stood for thousands of times its
	 * calls, in tests/progs/budget_truth). */
	if (w->stats && what != SAMPLE_PAUSE)
		loader__prog_ns(w->l, &s->prog_ns, &s->prog_runs);
	if (what == SAMPLE_HITS)
		return;
	/* the recorder's work for this target: the thread that steps its
	 * windows (in the agent, one of several) and its closers */
	s->own_cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) + loader__closer_cpu_ns(w->l);
	if (what == SAMPLE_CYCLE)
		host_ticks(&s->host_ticks, &s->host_idle_ticks);
	s->target_cpu_ns = run_now(w);
	if (!s->target_cpu_ns)
		s->target_cpu_ns = target_cpu_ns(w->pid, w->start);
	if (what != SAMPLE_PAUSE)
		w->last = *s;
}

static void sample(struct windows *w, struct budget_sample *s)
{
	sample_as(w, s, SAMPLE_COUNTERS);
}

int windows__start(struct windows *w, double pct, const struct budget_cost *cost, struct loader *l,
		   struct drain *d, int pid, int pidfd, bool sleeps, uint64_t now_ns)
{
	struct budget_sample s;

	memset(w, 0, sizeof(*w));
	w->l = l;
	w->d = d;
	w->pid = pid;
	w->start = proc_start_time(pid, pidfd);
	w->clock_sleeps = sleeps;
	w->rc = runclock__open(pid, pidfd);
	/* Without the kernel's statistics (no CAP_SYS_ADMIN) the programs'
	 * time is guessed from the trap's. */
	w->stats = loader__enable_stats(l) == 0;
	sample_as(w, &s, SAMPLE_CYCLE);
	w->started_ns = now_ns;
	w->started_cpu_ns = s.target_cpu_ns;
	budget__init(&w->ctl, pct, cost, (int)sysconf(_SC_NPROCESSORS_ONLN), now_ns, &s);
	if (w->rc && w->clock_sleeps)
		runclock__sleep(w->rc);
	return 0;
}

/* The marks of window S, which stands for the time from its start to NEXT. */
static int write_window(struct windows *w, const struct window_span *s, uint64_t next, uint64_t run_next)
{
	double weight = budget__window_weight(&w->ctl, s, next, run_next);
	double unscaled = budget__window_weight_unscaled(s, next, run_next);
	struct trace_mark m = { .kind = MT_MARK_WINDOW_BEGIN, .tid = (uint32_t)w->pid, .ts = s->begin };
	int err;

	if (getenv("MEMTRACE_DEBUG_BUDGET")) /* the estimator's inputs, to study it */
		fprintf(stderr, "weight %.1f (time %.1f): live %.2f ms run %.2f priced %.2f frees %.0f | tail %.2f ms run %.2f "
				"priced %.2f frees %.0f | then run %.2f ms | scale %.3f\n",
			weight, (double)(next - s->begin) / (double)(s->end - s->begin + 1), (s->end - s->begin) / 1e6,
			(s->run_end - s->run_begin) / 1e6, s->cost_live / 1e6, s->frees_live, (s->tail_end - s->end) / 1e6,
			(s->run_tail - s->run_end) / 1e6, s->cost_tail / 1e6, s->frees_tail,
			((double)run_next - (double)s->run_tail) / 1e6, w->ctl.scale);

	m.size = (uint64_t)(weight < 1 ? 1e6 : weight * 1e6 + 0.5);
	err = drain__add_mark(w->d, &m);
	/* the weight by the calibration's price as it is: the model's part of the error */
	m = (struct trace_mark){ .kind = MT_MARK_WINDOW_END, .tid = (uint32_t)w->pid, .ts = s->end,
				 .size = (uint64_t)(unscaled < 1 ? 1e6 : unscaled * 1e6 + 0.5) };
	if (!err)
		err = drain__add_mark(w->d, &m);
	m = (struct trace_mark){ .kind = MT_MARK_TAIL_END, .tid = (uint32_t)w->pid, .ts = s->tail_end };
	return err ? err : drain__add_mark(w->d, &m);
}

static int open_window(struct windows *w)
{
	const struct probe *bad = NULL;
	int err = loader__window_attach(w->l, LOADER_FREES, &bad);

	if (!err)
		err = loader__window_attach(w->l, LOADER_ALLOCS, &bad);
	if (err) {
		loader__window_detach(w->l, LOADER_ALL);
		return err;
	}
	if (w->rc)
		runclock__wake(w->rc);
	sample(w, &w->at_begin);
	w->cur.run_begin = w->at_begin.target_cpu_ns;
	w->cur.begin = now_ns(CLOCK_MONOTONIC);
	budget__attached(&w->ctl, w->cur.begin, &w->at_begin);
	loader__window_allocs(w->l, true);
	if (w->have_prev) {
		w->have_prev = false;
		return write_window(w, &w->prev, w->cur.begin, w->cur.run_begin);
	}
	return 0;
}

/* S: the counters the controller just decided on, if read in full (a
 * burst's cut reads the hits only): read again, they cost the recorder as
 * much again (a perf event read per thread, BPF statistics, /proc). */
static void close_window(struct windows *w, const struct budget_sample *s)
{
	loader__window_allocs(w->l, false);
	w->cur.end = now_ns(CLOCK_MONOTONIC);
	if (s)
		w->at_end = *s;
	else
		sample(w, &w->at_end);
	w->cur.run_end = w->at_end.target_cpu_ns;
	w->cur.cost_live = budget__raw_price(&w->ctl, &w->at_begin, &w->at_end);
	w->cur.frees_live = budget__frees(&w->at_begin, &w->at_end);
	w->cur.allocs_live = (double)(w->at_end.returns - w->at_begin.returns);
	loader__window_detach(w->l, LOADER_ALLOCS);
}

/* S: the counters at the tail's end, read in full. */
static void end_tail(struct windows *w, const struct budget_sample *s)
{
	loader__window_detach(w->l, LOADER_FREES);
	w->cur.tail_end = now_ns(CLOCK_MONOTONIC);
	w->cur.run_tail = s->target_cpu_ns;
	w->cur.cost_tail = budget__raw_price(&w->ctl, &w->at_end, s);
	w->cur.frees_tail = budget__frees(&w->at_end, s);
	budget__fit(&w->ctl, &w->cur);
	w->prev = w->cur;
	w->have_prev = true;
	if (w->rc && w->clock_sleeps)
		runclock__sleep(w->rc);
}

/* The large blocks' probes (the C library's mmap, munmap and mremap where
 * the kernel has no kprobes) are attached throughout, windows or not: what
 * their hits since the last look cost is charged as it comes (owed by the
 * next window), never in a window's price. Counted in a window's, a
 * pause's hits made the window that followed look dear (a server starting
 * a thread a request maps and unmaps two to four times a request: 17 133
 * hits "in" a 1 ms window, cut as a burst) and counted as its frees. */
static void charge_large(struct windows *w)
{
	uint64_t e, r, maps[2];

	if (loader__hits(w->l, &e, &r, maps) || (maps[0] == w->map_hits[0] && maps[1] == w->map_hits[1]))
		return;
	budget__charge_always(&w->ctl, (double)(maps[0] - w->map_hits[0]), (double)(maps[1] - w->map_hits[1]));
	w->map_hits[0] = maps[0];
	w->map_hits[1] = maps[1];
}

/* Past LARGE_LOOK_NS of recording, large blocks' probes that alone cost
 * more than the budget aims at (a server starting a thread a request: a
 * Python thread maps 16 KiB for its frames, glibc a thread's stack) are
 * detached: the windows could never make up for them. The trace says from
 * when (MT_MARK_LARGE_END); the large blocks after are estimated with the
 * rest. AT_NS, CPU_NS: the time and the target's run time now. */
#define LARGE_LOOK_NS (2000 * 1000 * 1000ULL)
static int large_verdict(struct windows *w, uint64_t at_ns, uint64_t cpu_ns)
{
	struct trace_mark m;
	double work;

	if (w->large_end_ns || at_ns < w->started_ns + LARGE_LOOK_NS || !cpu_ns || cpu_ns <= w->started_cpu_ns)
		return 0;
	work = (double)(cpu_ns - w->started_cpu_ns) - w->ctl.large_cost_ns;
	if (w->ctl.large_cost_ns <= BUDGET_AIM * w->ctl.fraction * (work > 0 ? work : 0))
		return 0;
	if (loader__detach_map_wrappers(w->l))
		return 0; /* perf-event links stay: said at the end, as before */
	w->large_end_ns = now_ns(CLOCK_MONOTONIC);
	m = (struct trace_mark){ .kind = MT_MARK_LARGE_END, .tid = (uint32_t)w->pid, .ts = w->large_end_ns };
	return drain__add_mark(w->d, &m);
}

int windows__step(struct windows *w, uint64_t now_ns)
{
	bool due = now_ns >= budget__next_ns(&w->ctl);
	struct budget_sample s;

	if (!due && w->ctl.state != BUDGET_LIVE)
		return 0; /* nothing to look at: the recorder stays idle between windows */
	if (due)
		charge_large(w);
	sample_as(w, &s,
		  !due			       ? SAMPLE_HITS :
		  w->ctl.state == BUDGET_TAIL ? SAMPLE_CYCLE :
		  w->ctl.state == BUDGET_OFF  ? SAMPLE_PAUSE :
						SAMPLE_COUNTERS);
	if (due && s.target_cpu_ns) {
		int err = large_verdict(w, now_ns, s.target_cpu_ns);

		if (err)
			return err;
	}
	switch (budget__tick(&w->ctl, now_ns, &s)) {
	case BUDGET_OPEN:
		return open_window(w);
	case BUDGET_CLOSE:
		close_window(w, due ? &s : NULL);
		return 0;
	case BUDGET_TAIL_END:
		end_tail(w, &s);
		if (getenv("MEMTRACE_DEBUG_BUDGET"))
			fprintf(stderr, "budget: window %.2f ms tail %.2f ms, phi live %.3f tail %.3f, prog %.0f ns/hit, "
					"cpu %.2f, debt %.2f ms, next in %.1f ms; hits %llu/%llu own %.2f ms\n",
				(w->cur.end - w->cur.begin) / 1e6, (w->cur.tail_end - w->cur.end) / 1e6, w->ctl.phi_live,
				w->ctl.phi_tail, w->ctl.prog_ns_per_hit, w->ctl.cpu, w->ctl.debt_ns / 1e6,
				((double)w->ctl.next_ns - (double)now_ns) / 1e6, (unsigned long long)s.entries,
				(unsigned long long)s.returns, w->ctl.own_cost_ns / 1e6);
		return 0;
	default:
		return 0;
	}
}

uint64_t windows__wake_ns(const struct windows *w, uint64_t now_ns, uint64_t max_ns)
{
	uint64_t next = budget__next_ns(&w->ctl);
	uint64_t latest = now_ns + (w->ctl.state == BUDGET_LIVE ? 1000000 : max_ns); /* a burst: within a ms */

	return next < latest ? next : latest;
}

bool windows__attached(const struct windows *w)
{
	return w->ctl.state != BUDGET_OFF;
}

uint64_t windows__hold_ns(const struct windows *w)
{
	if (w->have_prev)
		return w->prev.begin;
	if (w->ctl.state != BUDGET_OFF)
		return w->cur.begin;
	return UINT64_MAX;
}

int windows__finish(struct windows *w, uint64_t end_ns)
{
	struct budget_sample s;
	int err = 0;

	charge_large(w);
	if (w->ctl.state == BUDGET_OFF) {
		if (w->have_prev)
			err = write_window(w, &w->prev, end_ns, run_now(w));
		w->have_prev = false;
		return err;
	}
	sample(w, &s);
	if (w->ctl.state == BUDGET_LIVE)
		close_window(w, &s);
	end_tail(w, &s);
	budget__stop(&w->ctl, end_ns, &s);
	w->have_prev = false;
	return write_window(w, &w->cur, end_ns, s.target_cpu_ns); /* read just now */
}

void windows__free(struct windows *w)
{
	runclock__free(w->rc);
	w->rc = NULL;
}
