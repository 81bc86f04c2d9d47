// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The --budget controller (budget.h). */
#include "budget.h"

#include <stdbool.h>
#include <string.h>

/* The cost of the first windows is a guess from the trap alone; measured
 * run times replace it. */
#define PROG_GUESS 0.3

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Half the old figure, half the new: a burst moves it at once, one odd
 * window does not decide alone. */
static double ewma(double old, double v)
{
	return old > 0 ? 0.5 * old + 0.5 * v : v;
}

/* A uniform draw in [0, 1): xorshift64*, seeded at init. */
static double uniform_draw(struct budget *b)
{
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return (double)((b->rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* The next pause's share of a period (jittered sampling): the rest of
 * the period the window just ended began in, after its offset U_k, and
 * the next one's random offset U_k+1: 1 - U_k + U_k+1, of mean 1, in
 * [0, 2). With a steady period each window starts at a uniformly random
 * moment of a period of its own. */
static double jitter_draw(struct budget *b)
{
	double next = uniform_draw(b), f = 1 - b->offset + next;

	b->offset = next;
	return f;
}

void budget__init(struct budget *b, double pct, const struct budget_cost *trap, int max_cpu, uint64_t now_ns,
		  const struct budget_sample *s)
{
	memset(b, 0, sizeof(*b));
	b->fraction = pct / 100.0;
	b->trap = *trap;
	b->scale = 1;
	b->prog_ns_per_hit = PROG_GUESS * trap->entry_ns;
	b->cpu = 1.0;
	b->max_cpu = max_cpu > 0 ? max_cpu : 1;
	b->state = BUDGET_OFF;
	b->since_ns = b->cycle_start_ns = now_ns;
	/* The first window at a random moment of the first 50 ms: a process
	 * forked under --follow-children that lives 25 ms (a PostgreSQL
	 * backend per connection) is seen half the time, and its start-up,
	 * dense in allocations, is not always what the first window sees. */
	b->next_ns = now_ns + (now_ns * 2654435761ULL >> 7) % BUDGET_START_NS;
	b->at = b->cycle_at = b->own_at = *s;
	b->rng = (now_ns ^ 0x9E3779B97F4A7C15ULL) | 1;
	b->offset = 0.5;
}

double budget__own_cost(const struct budget_sample *from, const struct budget_sample *to)
{
	double own = to->own_cpu_ns > from->own_cpu_ns ? (double)(to->own_cpu_ns - from->own_cpu_ns) : 0;
	double all = (double)(to->host_ticks - from->host_ticks), idle = (double)(to->host_idle_ticks - from->host_idle_ticks);

	if (!to->host_ticks || !from->host_ticks || all <= 0)
		return own; /* the host's load unknown: all of it */
	return own * clamp(1 - idle / all, 0, 1);
}

double budget__price(const struct budget *b, const struct budget_sample *from, const struct budget_sample *to)
{
	return b->scale * budget__raw_price(b, from, to);
}

double budget__raw_price(const struct budget *b, const struct budget_sample *from, const struct budget_sample *to)
{
	double de = (double)(to->entries - from->entries), dr = (double)(to->returns - from->returns);
	double cost = de * b->trap.entry_ns + dr * b->trap.return_ns;

	if (to->prog_runs > from->prog_runs)
		return cost + (double)(to->prog_ns - from->prog_ns);
	return cost + (de + dr) * b->prog_ns_per_hit;
}

/* Cost per ns of wall time the budget pays: a share of the target's own work. */
static double pay_rate(const struct budget *b)
{
	return BUDGET_AIM * b->fraction * b->cpu;
}

/* The target's own work since the cycle began, in cores: its CPU time less
 * what the probes took of it. */
static void measure_cpu(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	double wall = (double)(now_ns - b->cycle_start_ns);
	double work = (double)(s->target_cpu_ns - b->cycle_at.target_cpu_ns) - budget__price(b, &b->cycle_at, s);

	if (wall <= 0)
		return;
	/* Clock ticks are 10 ms: a cycle of 50 ms reads 0, 10 or 20 ms of work. */
	b->cpu = ewma(b->windows ? b->cpu : 0, clamp(work / wall, 0.01, b->max_cpu));
}

static enum budget_action open_window(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	double w = (double)BUDGET_WINDOW_NS;

	measure_cpu(b, now_ns, s);
	if (!b->windows) {
		w = (double)BUDGET_FIRST_WINDOW_NS;
	} else if (b->phi_live > 0) {
		/* Cheap windows grow, so a quiet target is seen a good share of
		 * the time without attaching more than 20 times a second; dear
		 * ones shrink, down to 1 ms, towards one window every 100 ms. */
		double phi = b->phi_live + b->phi_tail;
		double fit = pay_rate(b) * (double)BUDGET_MIN_PERIOD_NS / phi;

		if (fit < w) /* many short windows see more than a few long ones */
			fit = clamp(pay_rate(b) * (double)BUDGET_DEAR_PERIOD_NS / phi, (double)BUDGET_MIN_WINDOW_NS, w);
		w = clamp(fit, (double)BUDGET_MIN_WINDOW_NS, (double)BUDGET_MAX_WINDOW_NS);
	}
	b->state = BUDGET_LIVE;
	b->since_ns = b->cycle_start_ns = now_ns;
	b->at = b->cycle_at = *s;
	b->window_ns = (uint64_t)w;
	b->next_ns = now_ns + b->window_ns;
	return BUDGET_OPEN;
}

static enum budget_action close_window(struct budget *b, uint64_t now_ns, const struct budget_sample *s,
				       double cost, bool cut)
{
	uint64_t w = now_ns > b->since_ns ? now_ns - b->since_ns : 1;
	uint64_t runs = s->prog_runs - b->at.prog_runs;

	if (runs)
		b->prog_ns_per_hit = (double)(s->prog_ns - b->at.prog_ns) / (double)runs;
	b->phi_live = ewma(b->phi_live, cost / (double)w);
	if (!b->phi_tail)
		b->phi_tail = b->phi_live / 2; /* until a tail is measured */
	b->window_cost_ns = cost + b->attach_cost_ns;
	b->attach_cost_ns = 0;
	b->live_ns += w;
	b->windows++;
	b->cut_windows += cut;
	b->state = BUDGET_TAIL;
	b->since_ns = now_ns;
	b->at = *s;
	b->window_ns = w;
	b->next_ns = now_ns + w; /* the tail: as long as the window */
	return BUDGET_CLOSE;
}

static enum budget_action end_tail(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	uint64_t t = now_ns > b->since_ns ? now_ns - b->since_ns : 1;
	double tail_cost = budget__price(b, &b->at, s), cycle_cost, min_period, own, gap;

	b->phi_tail = ewma(b->phi_tail, tail_cost / (double)t);
	b->tail_ns += t;
	/* what the recorder did for the cycle (attach, counters, detach),
	 * since the last one ended: the target's loss where the host is busy */
	own = budget__own_cost(&b->own_at, s);
	b->own_at = *s;
	b->own_cost_ns += own;
	cycle_cost = b->window_cost_ns + tail_cost + own;
	b->cost_ns += cycle_cost;
	/* The next window opens once the target's work since this one began
	 * has paid for this cycle times a random draw of mean 1, and for what
	 * an earlier one overspent: the budget is the bound on average. Not
	 * sooner than BUDGET_MIN_PERIOD_NS from its start times that draw.
	 * The draw places each window at a uniformly random moment of a period
	 * of its own (jittered sampling, jitter_draw): independent of what the
	 * target does, each moment is as likely to be in a window as any other,
	 * so a site that allocates in bursts is estimated without bias by the
	 * windows' weights (a schedule could lock on to a periodic target, a
	 * frame loop, or keep missing bursts that follow it), and with less
	 * spread than pauses drawn independently (exponential ones let one
	 * window stand for up to six periods). */
	gap = jitter_draw(b);
	b->owed_ns = cycle_cost * gap + b->debt_ns;
	b->debt_ns = 0;
	min_period = (double)BUDGET_MIN_PERIOD_NS * gap;
	b->min_next_ns = b->cycle_start_ns + (uint64_t)min_period;
	b->state = BUDGET_OFF;
	b->since_ns = now_ns;
	b->at = *s;
	b->next_ns = now_ns;
	return BUDGET_TAIL_END;
}

/* Between windows: open when the work done since the last window began
 * has paid what is owed; else say when to look again, at the latest
 * BUDGET_LOOK_NS on (the target may get busier: it then pays sooner). */
static enum budget_action off_tick(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	double work = (double)(s->target_cpu_ns - b->cycle_at.target_cpu_ns) - budget__price(b, &b->cycle_at, s);
	double paid = BUDGET_AIM * b->fraction * (work > 0 ? work : 0), wait;

	if (now_ns < b->next_ns)
		return BUDGET_WAIT;
	if (b->windows && (now_ns < b->min_next_ns || paid < b->owed_ns)) {
		wait = paid < b->owed_ns ? (b->owed_ns - paid) / (BUDGET_AIM * b->fraction * b->cpu) : 0;
		if (now_ns + wait < b->min_next_ns)
			wait = (double)(b->min_next_ns - now_ns);
		b->next_ns = now_ns + (uint64_t)(wait < BUDGET_LOOK_NS ? wait : BUDGET_LOOK_NS);
		return BUDGET_WAIT;
	}
	/* Credit is not banked beyond one window's worth: a quiet minute must
	 * not pay for a burst's minute. */
	b->debt_ns = b->owed_ns - paid;
	if (b->debt_ns < -pay_rate(b) * (double)BUDGET_WINDOW_NS)
		b->debt_ns = -pay_rate(b) * (double)BUDGET_WINDOW_NS;
	b->owed_ns = 0;
	return open_window(b, now_ns, s);
}

enum budget_action budget__tick(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	double cost;
	bool cut;

	switch (b->state) {
	case BUDGET_OFF:
		return off_tick(b, now_ns, s);
	case BUDGET_LIVE:
		cost = budget__price(b, &b->at, s);
		/* A burst: the window has spent twice what it was planned to
		 * (at least what the budget pays for a whole window's time). */
		cut = cost > 2 * b->phi_live * (double)b->window_ns &&
		      cost > pay_rate(b) * (double)BUDGET_WINDOW_NS;
		if (now_ns < b->next_ns && !cut)
			return BUDGET_WAIT;
		return close_window(b, now_ns, s, cost, cut && now_ns < b->next_ns);
	case BUDGET_TAIL:
		return now_ns < b->next_ns ? BUDGET_WAIT : end_tail(b, now_ns, s);
	}
	return BUDGET_WAIT;
}

void budget__attached(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	if (b->state != BUDGET_LIVE || now_ns <= b->since_ns)
		return;
	b->attach_cost_ns = budget__price(b, &b->at, s);
	b->at = *s;
	b->next_ns += now_ns - b->since_ns;
	b->since_ns = now_ns;
}

/* NS of cost outside the windows' price: counted in cost_ns, and owed. */
static void charge(struct budget *b, double ns)
{
	b->cost_ns += ns;
	/* between windows what is owed is what the next waits for; in one,
	 * the debt is carried to what the cycle's end owes */
	if (b->state == BUDGET_OFF)
		b->owed_ns += ns;
	else
		b->debt_ns += ns;
}

void budget__charge_follow(struct budget *b, double ns)
{
	if (ns <= 0)
		return;
	b->follow_cost_ns += ns;
	charge(b, ns);
}

void budget__charge_always(struct budget *b, double entries, double returns)
{
	double ns = b->scale * (entries * b->trap.entry_ns + returns * b->trap.return_ns);

	if (ns <= 0)
		return;
	b->large_cost_ns += ns;
	charge(b, ns);
}

void budget__stop(struct budget *b, uint64_t now_ns, const struct budget_sample *s)
{
	uint64_t t = now_ns > b->since_ns ? now_ns - b->since_ns : 0;

	if (b->state == BUDGET_LIVE) {
		b->live_ns += t;
		b->windows++;
	} else if (b->state == BUDGET_TAIL) {
		b->tail_ns += t;
	}
	if (b->state != BUDGET_OFF)
		b->cost_ns += budget__price(b, &b->at, s) + b->attach_cost_ns; /* 0 but in a window */
	b->attach_cost_ns = 0;
	b->state = BUDGET_OFF;
}

uint64_t budget__next_ns(const struct budget *b)
{
	return b->next_ns;
}

/* Free calls counted from A to B: entry hits less return hits (every
 * allocator probe has a return probe, free has none). */
double budget__frees(const struct budget_sample *a, const struct budget_sample *b)
{
	double e = (double)(b->entries - a->entries), r = (double)(b->returns - a->returns);

	return e > r ? e - r : 0;
}

void budget__fit(struct budget *b, const struct window_span *s)
{
	double run_live = (double)(s->run_end - s->run_begin), run_tail = (double)(s->run_tail - s->run_end);
	double c;

	if (!s->run_begin || s->run_end < s->run_begin || s->run_tail < s->run_end ||
	    s->frees_live < BUDGET_MIN_FREES || s->frees_tail < BUDGET_MIN_FREES)
		return;
	b->fit_num += run_live * s->frees_tail - run_tail * s->frees_live;
	b->fit_den += s->cost_live * s->frees_tail - s->cost_tail * s->frees_live;
	if (++b->fit_windows < BUDGET_FIT_MIN || b->fit_den <= 0)
		return;
	c = b->fit_num / b->fit_den;
	b->scale = c < BUDGET_SCALE_MIN ? BUDGET_SCALE_MIN : c > BUDGET_SCALE_MAX ? BUDGET_SCALE_MAX : c;
}

/* The probes slow the target's work; they cannot make it busier. A target
 * that worked faster after a window than it ran during it (connections
 * arriving at an idle server, then their load) got busier: the window does
 * not stand for that load, and its weight is bounded by the work it would
 * have done in the whole time at its run rate while live. */
static double bounded(double period_work, double run_live, uint64_t live, double all, double work_live)
{
	double at_live_rate = all * run_live / (double)live;
	double w = (period_work < at_live_rate ? period_work : at_live_rate) / work_live;

	return w < 1 ? 1 : w;
}

/* The live window's calls, in frees' terms: its frees, or half its
 * allocator calls where it allocated more than it freed. A target makes
 * about as many of each over time, and the tail that prices a free sees
 * only frees; a window that caught a burst of allocations (50 clients
 * connecting to redis-server, each given its buffers) did that much more
 * work than its frees say, and weighed for its frees alone it stood for up
 * to 20% of an estimated heap that held 0.07% of it. */
static double live_calls(const struct window_span *s)
{
	double half = (s->allocs_live + s->frees_live) / 2;

	return half > s->frees_live ? half : s->frees_live;
}

/* ... with C ns of the target's for each ns priced at calibration. */
static double weight_at(const struct window_span *s, uint64_t next, uint64_t run_next, double c)
{
	uint64_t live = s->end > s->begin ? s->end - s->begin : 1;
	double all = (double)(next > s->begin ? next - s->begin : live);
	double slow = 1;
	bool runs = s->run_begin && s->run_end >= s->run_begin && s->run_tail >= s->run_end && run_next >= s->run_tail;

	if (runs && s->frees_live >= BUDGET_MIN_FREES && s->frees_tail >= BUDGET_MIN_FREES) {
		double run_live = (double)(s->run_end - s->run_begin), run_tail = (double)(s->run_tail - s->run_end);
		double work_tail = run_tail - c * s->cost_tail, work_live;

		/* The tail's work by its run time less what its probes cost
		 * (frees only: a smaller share of it than the window's, so an
		 * error in the price moves it less); the live window's by its
		 * frees, counted at the tail's work per free, not by a
		 * difference of two nearly equal figures. */
		if (work_tail < BUDGET_TAIL_WORK_MIN * run_tail)
			work_tail = BUDGET_TAIL_WORK_MIN * run_tail;
		work_live = work_tail / s->frees_tail * live_calls(s);
		/* Where the price leaves a good part of the window's run time
		 * to the target (a quarter or more), that difference is its
		 * work: the tail's work per free stands for the window's only
		 * where both did the same, and a tail that caught another phase
		 * of the target (a burst of allocations with little work of
		 * their own, a phase with one more allocation a round) moved
		 * the window's figure by its own: tests/progs/budget_truth's
		 * phased site 1.11 to 1.34 times its share, 0.81 to 1.13 by the
		 * price. Nor does it go below what the price leaves. */
		if (run_live - c * s->cost_live >= BUDGET_PRICED_WORK_MIN * run_live || work_live < run_live - c * s->cost_live)
			work_live = run_live - c * s->cost_live;
		if (work_live > run_live)
			work_live = run_live;
		if (work_live > 0)
			return bounded(work_live + work_tail + (double)(run_next - s->run_tail), run_live, live, all,
				       work_live);
	}
	if (runs && s->run_end > s->run_begin && run_next > s->run_end && all > (double)live) {
		double run_live = (double)(s->run_end - s->run_begin), run_off = (double)(run_next - s->run_end);
		double phi_live = c * s->cost_live / run_live, phi_off = c * s->cost_tail / run_off;
		double rate_live, rate_off;

		/* Bounded to 90%: where the probes take nearly all of a
		 * window's run time, the work left is a small difference of
		 * large figures. */
		phi_live = phi_live > 0.9 ? 0.9 : phi_live < 0 ? 0 : phi_live;
		phi_off = phi_off > 0.9 ? 0.9 : phi_off < 0 ? 0 : phi_off;
		rate_live = run_live * (1 - phi_live) / (double)live;
		rate_off = run_off * (1 - phi_off) / (all - (double)live);
		if (rate_off > run_live / (double)live)
			rate_off = run_live / (double)live; /* busier after it: see bounded() */
		slow = rate_live > 0 ? rate_off / rate_live : 1;
	}
	slow = slow < 1 ? 1 : slow > 50 ? 50 : slow;
	return all / (double)live * slow;
}

double budget__window_weight(const struct budget *b, const struct window_span *s, uint64_t next, uint64_t run_next)
{
	return weight_at(s, next, run_next, b->scale);
}

double budget__window_weight_unscaled(const struct window_span *s, uint64_t next, uint64_t run_next)
{
	return weight_at(s, next, run_next, 1.0);
}
