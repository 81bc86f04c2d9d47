// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * budget.h: the --budget controller on a simulated target. The simulation
 * is the controller's own model made concrete: a single-threaded target
 * busy all the time, whose allocator calls hit the probes at a rate that
 * the test sets, each hit costing what the calibration said. What the
 * controller must do: keep the priced cost within the budget over time,
 * adapt the share of time live to the rate, end a window early when a burst
 * arrives inside it, and carry what a cycle overspent into the next.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "budget.h"

#define MS 1000000ULL

struct sim {
	struct budget b;
	struct budget_sample s;
	uint64_t now;
	bool allocs, frees; /* which probes are attached */
	double rate;        /* allocator calls per ns of the target's time, if traced */
	double cost;        /* what the probes took, priced as the controller prices it */
	uint64_t live_ns, windows, cuts;
	uint64_t own_per_window; /* the recorder's CPU time for each window (attach, detach, events) */
	double busy;             /* the host's busy share (1: saturated) */
	int attach_ms;           /* what attaching a window's probes takes, the frees' live first */
	uint64_t planned, live_start, tail_start, last_planned, last_live, last_tail;
	bool last_cut; /* the last window was cut short by a burst */
};

/* One ms of the target: it makes allocator calls at RATE while untraced,
 * half allocations (an entry and a return when their probes are attached)
 * and half frees (an entry); a probed call costs its hits, so a traced
 * target makes fewer calls per ms, as a real one does. Its run time is the
 * whole ms. */
static void run_ms(struct sim *m)
{
	double per_call = 0, calls, e = 0, r = 0;

	if (m->allocs)
		per_call += (m->b.trap.entry_ns + m->b.trap.return_ns + 2 * m->b.prog_ns_per_hit) / 2;
	if (m->frees)
		per_call += (m->b.trap.entry_ns + m->b.prog_ns_per_hit) / 2;
	calls = m->rate > 0 ? (double)MS / (1 / m->rate + per_call) : 0;
	if (m->allocs) {
		e += calls / 2;
		r += calls / 2;
	}
	if (m->frees)
		e += calls / 2;
	m->s.entries += (uint64_t)e;
	m->s.returns += (uint64_t)r;
	m->s.target_cpu_ns += MS;
	m->s.host_ticks += 1000;
	m->s.host_idle_ticks += (uint64_t)(1000 * (1 - m->busy));
	m->cost += e * m->b.trap.entry_ns + r * m->b.trap.return_ns + (e + r) * m->b.prog_ns_per_hit;
	m->now += MS;
	if (m->allocs)
		m->live_ns += MS;
}

static void step(struct sim *m)
{
	uint64_t cuts = m->b.cut_windows;

	switch (budget__tick(&m->b, m->now, &m->s)) {
	case BUDGET_OPEN:
		m->planned = m->b.next_ns - m->now;
		m->last_live = m->last_tail = 0;
		m->frees = true;
		for (int i = 0; i < m->attach_ms; i++)
			run_ms(m); /* the recorder attaches; the target runs on, its frees probed */
		budget__attached(&m->b, m->now, &m->s);
		m->allocs = true;
		m->live_start = m->now;
		m->windows++;
		m->s.own_cpu_ns += m->own_per_window;
		break;
	case BUDGET_CLOSE:
		if (m->now < m->b.since_ns) /* never: since is now */
			fail();
		m->allocs = false;
		m->last_planned = m->planned;
		m->last_live = m->now - m->live_start;
		m->last_cut = m->b.cut_windows != cuts;
		m->tail_start = m->now;
		break;
	case BUDGET_TAIL_END:
		m->frees = false;
		m->last_tail = m->now - m->tail_start;
		break;
	default:
		break;
	}
	run_ms(m);
}

static void sim_init(struct sim *m, double pct, double rate)
{
	struct budget_cost c = { .entry_ns = 5000, .return_ns = 1300 };

	*m = (struct sim){ .now = 1000 * MS, .rate = rate, .busy = 1 };
	m->s.host_ticks = 1000; /* the host's CPU time read from the start */
	budget__init(&m->b, pct, &c, 1, m->now, &m->s);
}

/* The priced cost over a long run stays within the budget of the target's
 * work, and below it by no more than the controller's margin. */
static void test_steady_within_budget(void **state)
{
	static const double pct[] = { 5, 1 }, rate[] = { 1e-5, 1e-4, 1e-3 }; /* 10 k, 100 k, 1 M calls/s */

	for (size_t i = 0; i < 2; i++) {
		for (size_t k = 0; k < 3; k++) {
			struct sim m;
			double share;

			sim_init(&m, pct[i], rate[k]);
			for (int t = 0; t < 60000; t++) /* a minute */
				step(&m);
			share = m.cost / (60000.0 * MS - m.cost);
			assert_true(share <= pct[i] / 100 * 1.05);
			assert_true(share >= pct[i] / 100 * 0.5);
			assert_true(m.windows >= 30); /* at least one every 2 s */
			print_message("--budget %g at %.0f k calls/s: %.2f%% of its work, %llu windows, live %.2f%%\n",
				      pct[i], rate[k] * 1e6, 100 * share, (unsigned long long)m.windows,
				      100.0 * m.live_ns / (60000.0 * MS));
		}
	}
}

/* A burst inside a window ends it before its planned length, and what the
 * cycle spent beyond its share is paid by a longer pause. */
static void test_burst_cuts_the_window(void **state)
{
	struct sim m;
	uint64_t planned, cut_at = 0;
	double before;

	sim_init(&m, 5, 1e-5);
	for (int t = 0; t < 20000; t++)
		step(&m);
	/* wait for a window to open, then make the target 100 x busier */
	while (m.b.state != BUDGET_LIVE)
		step(&m);
	planned = m.b.next_ns;
	before = m.b.cut_windows;
	m.rate = 1e-3;
	while (m.b.state == BUDGET_LIVE) {
		cut_at = m.now;
		step(&m);
	}
	assert_true(m.b.cut_windows == before + 1);
	assert_true(cut_at < planned);
	print_message("a 100 x burst ended the window %.1f ms before its planned end\n",
		      (double)(planned - cut_at) / MS);
	/* over the next minute at the burst's rate, still within the budget */
	m.cost = 0;
	for (int t = 0; t < 60000; t++)
		step(&m);
	assert_true(m.cost / (60000.0 * MS - m.cost) <= 0.05 * 1.05);
}

/* An idle target: windows without hits cost nothing and come at the
 * shortest period the cycle allows, so a quiet service is sampled often. */
static void test_idle_target(void **state)
{
	struct sim m;

	sim_init(&m, 1, 0);
	for (int t = 0; t < 10000; t++)
		step(&m);
	assert_true(m.cost == 0);
	assert_true(m.windows >= 100);
	print_message("idle target: %llu windows in 10 s\n", (unsigned long long)m.windows);
}

/* The recorder's own CPU time, charged by how busy the host was. */
static void test_own_cost(void **state)
{
	struct budget_sample a = { .own_cpu_ns = 1000, .host_ticks = 100, .host_idle_ticks = 50 };
	struct budget_sample b = { .own_cpu_ns = 3000, .host_ticks = 200, .host_idle_ticks = 50 };

	(void)state;
	assert_true(budget__own_cost(&a, &b) == 2000); /* saturated: all of it */
	b.host_idle_ticks = 100;
	assert_true(budget__own_cost(&a, &b) == 1000); /* half idle: half */
	b.host_idle_ticks = 150;
	assert_true(budget__own_cost(&a, &b) == 0);    /* idle: none */
	b.host_ticks = 0;
	assert_true(budget__own_cost(&a, &b) == 2000); /* unknown: all */
	b.own_cpu_ns = 500;
	assert_true(budget__own_cost(&a, &b) == 0);    /* a clock that went back: none */
}

/* A recorder that spends 2 ms of CPU a window: on a saturated host the
 * windows thin out so that the probes and the recorder together stay
 * within the budget; on an idle host it is not charged. */
static void test_recorder_charged(void **state)
{
	struct sim busy, idle;
	double share;

	(void)state;
	sim_init(&busy, 5, 1e-4);
	busy.own_per_window = 2 * MS;
	busy.busy = 1;
	sim_init(&idle, 5, 1e-4);
	idle.own_per_window = 2 * MS;
	idle.busy = 0;
	for (int t = 0; t < 60000; t++) {
		step(&busy);
		step(&idle);
	}
	share = (busy.cost + (double)busy.windows * 2 * MS) / (60000.0 * MS - busy.cost);
	assert_true(share <= 0.05 * 1.05);
	assert_true(busy.b.own_cost_ns > 0);
	assert_true(idle.b.own_cost_ns == 0);
	assert_true(busy.windows < idle.windows);
	print_message("2 ms of the recorder a window: %llu windows on a saturated host, %llu on an idle one; "
		      "%.2f%% of the work on the saturated one\n",
		      (unsigned long long)busy.windows, (unsigned long long)idle.windows, 100 * share);
}

/* Following a process (--follow-children) cost 500 ms of CPU before its
 * budget began: its first window opens when it would have, every later one
 * waits until the target's work has paid for that too, and the cost is in
 * cost_ns and follow_cost_ns. */
static void test_follow_charged(void **state)
{
	struct sim plain, followed;
	uint64_t first_plain = 0, first_followed = 0, second_plain = 0, second_followed = 0;

	(void)state;
	sim_init(&plain, 5, 1e-4);
	sim_init(&followed, 5, 1e-4);
	budget__charge_follow(&followed.b, 500.0 * MS);
	assert_true(followed.b.follow_cost_ns == 500.0 * MS && followed.b.cost_ns == 500.0 * MS);
	for (int t = 0; t < 60000; t++) {
		step(&plain);
		step(&followed);
		if (plain.windows == 1 && !first_plain)
			first_plain = plain.now;
		if (followed.windows == 1 && !first_followed)
			first_followed = followed.now;
		if (plain.windows == 2 && !second_plain)
			second_plain = plain.now;
		if (followed.windows == 2 && !second_followed)
			second_followed = followed.now;
	}
	assert_true(first_followed == first_plain);
	/* at 5% (80% of it aimed at), 500 ms is paid by 12.5 s of work */
	assert_true(second_followed >= first_followed + 10000 * MS);
	assert_true(second_plain < first_plain + 1000 * MS);
	assert_true(followed.b.cost_ns > 500.0 * MS && followed.b.follow_cost_ns == 500.0 * MS);
	print_message("500 ms of following: the second window %.1f s after the first (%.2f s unfollowed)\n",
		      (double)(second_followed - first_followed) / 1e9, (double)(second_plain - first_plain) / 1e9);
}

/* The large blocks' probes, attached throughout, are charged as they hit
 * (budget__charge_always), priced at the calibrated hit, owed like
 * following: a target whose mmap and munmap probes alone spend the budget
 * waits for its next window, and no window's price, cut or frees count
 * them. */
static void test_large_charged(void **state)
{
	struct sim plain, large;
	uint64_t second_plain = 0, second_large = 0, first = 0;

	(void)state;
	sim_init(&plain, 5, 1e-4);
	sim_init(&large, 5, 1e-4);
	for (int t = 0; t < 20000; t++) {
		step(&plain);
		step(&large);
		/* 200 000 mmap/munmap hits a second, half of them with a return */
		if (large.b.windows)
			budget__charge_always(&large.b, 100, 100);
		if (plain.windows == 1 && !first)
			first = plain.now;
		if (plain.windows == 2 && !second_plain)
			second_plain = plain.now;
		if (large.windows == 2 && !second_large)
			second_large = large.now;
	}
	assert_true(first && second_plain);
	/* 100 x 5000 + 100 x 1300 ns a ms: 63% of the target's work, far past
	 * 5%: the second window waits, the third never comes */
	assert_true(!second_large || second_large > second_plain + 1000 * MS);
	assert_true(large.windows < plain.windows);
	assert_true(large.b.large_cost_ns > 0.6 * (double)(large.now - first) &&
		    large.b.large_cost_ns <= large.b.cost_ns);
	assert_true(plain.b.large_cost_ns == 0);
	/* its first window cost what the plain one's did: the hits are not its */
	assert_true(large.b.cut_windows == plain.b.cut_windows || large.windows <= 1);
	print_message("large blocks' probes at 63%%: %llu windows in 20 s against %llu\n",
		      (unsigned long long)large.windows, (unsigned long long)plain.windows);
}

/* Attaching takes 2 ms (the free probes live first): each window still
 * takes allocations for as long as planned, its tail is as long as that,
 * and the attaching's cost is paid from the budget like the rest. */
static void test_attach_time(void **state)
{
	struct sim m;
	uint64_t checked = 0;
	double share;

	(void)state;
	sim_init(&m, 5, 1e-4);
	m.attach_ms = 2;
	for (int t = 0; t < 60000; t++) {
		bool tail = m.b.state == BUDGET_TAIL;

		step(&m);
		if (tail && m.b.state == BUDGET_OFF && !m.last_cut) { /* a window cut by a burst is not as planned */
			/* the model's clock moves by a ms: a window planned
			 * shorter than 5 ms closes at the ms after its end */
			assert_true(m.last_live >= m.last_planned && m.last_live < m.last_planned + MS);
			assert_int_equal(m.last_tail, m.last_live);
			checked++;
		}
	}
	share = m.cost / (60000.0 * MS - m.cost);
	assert_true(checked >= 30);
	assert_true(share <= 0.05 * 1.05);
	print_message("2 ms to attach: %llu windows checked, each live as planned and its tail as long; "
		      "%.2f%% of the work\n", (unsigned long long)checked, 100 * share);
}

/* A window of a busy target in the model budget.h's weights assume: W ns
 * of its own work per allocator call, calls alternating allocation and
 * free, each hit costing C_TRUE times its calibrated price. The window is
 * live LIVE ms, its tail as long, then OFF ms untraced. TRUTH: what it
 * stands for, the work of the whole over the work while live. */
struct model_window {
	struct window_span s;
	uint64_t next, run_next;
	double truth;
};

static struct model_window model_window(const struct budget *b, double w, double c_true, uint64_t live,
					uint64_t off)
{
	double pa = b->trap.entry_ns + b->trap.return_ns + 2 * b->prog_ns_per_hit; /* an allocation, priced */
	double pf = b->trap.entry_ns + b->prog_ns_per_hit;                          /* a free */
	double n_live = (double)live / (w + c_true * (pa + pf) / 2), n_tail = (double)live / (w + c_true * pf / 2);
	uint64_t base = 1000 * MS, t0 = 5000 * MS;
	struct model_window m = { .next = t0 + 2 * live + off, .run_next = base + 2 * live + off };

	m.s = (struct window_span){ .begin = t0, .end = t0 + live, .tail_end = t0 + 2 * live,
				    .run_begin = base, .run_end = base + live, .run_tail = base + 2 * live,
				    .cost_live = n_live / 2 * (pa + pf), .cost_tail = n_tail / 2 * pf,
				    .frees_live = n_live / 2, .frees_tail = n_tail / 2, .allocs_live = n_live / 2 };
	m.truth = (n_live * w + n_tail * w + (double)off) / (n_live * w);
	return m;
}

/* The scale is fitted from windows of different densities: what the trap
 * costs in the target, against what it cost in the calibration loop. */
static void test_scale_fitted(void **state)
{
	static const double w[] = { 400, 2000, 10000, 400, 800 }; /* ns of work per call */
	struct sim m;

	sim_init(&m, 5, 0);
	assert_true(m.b.scale == 1);
	for (size_t i = 0; i < 5; i++) {
		struct model_window x = model_window(&m.b, w[i], 1.2, 2 * MS, 200 * MS);

		budget__fit(&m.b, &x.s);
		if (i + 1 < BUDGET_FIT_MIN)
			assert_true(m.b.scale == 1); /* too few windows yet */
	}
	assert_true(fabs(m.b.scale - 1.2) < 0.001);
	print_message("scale fitted from 5 windows: %.4f (truth 1.2)\n", m.b.scale);
}

/* Where the probes take 94% of a live window's run time (600 ns of work
 * per call against 9.5 us of probes), the weight counted by frees is
 * within 2% of the truth once the scale is fitted, and denser windows
 * weigh more. Denser still (100 ns a call: the tail's work 2% of its run
 * time), the tail's work is bounded: the weight is low, not unbounded. */
static void test_weight_by_frees(void **state)
{
	static const double w[] = { 600, 2000, 10000 };
	double last = 1e300;
	struct sim m;

	sim_init(&m, 5, 0);
	for (size_t i = 0; i < 3; i++) {
		struct model_window x = model_window(&m.b, w[i], 1.2, 2 * MS, 200 * MS);

		budget__fit(&m.b, &x.s);
		budget__fit(&m.b, &x.s);
	}
	for (size_t i = 0; i < 3; i++) {
		struct model_window x = model_window(&m.b, w[i], 1.2, 2 * MS, 200 * MS);
		double got = budget__window_weight(&m.b, &x.s, x.next, x.run_next);

		print_message("%5.0f ns of work a call: weight %.1f, truth %.1f\n", w[i], got, x.truth);
		assert_true(fabs(got / x.truth - 1) < 0.02);
		assert_true(got < last);
		last = got;
	}
	{
		struct model_window x = model_window(&m.b, 100, 1.2, 2 * MS, 200 * MS);
		double got = budget__window_weight(&m.b, &x.s, x.next, x.run_next);

		print_message("  100 ns of work a call: weight %.1f, truth %.1f (bounded)\n", got, x.truth);
		assert_true(got < x.truth && got > 0.1 * x.truth);
	}
}

/* A window that caught a burst of allocations (clients connecting, each
 * given its buffers: ten allocations a free) did the work of its calls, not
 * of its frees alone, and weighs less than a window of the same frees in a
 * steady state; one that freed more than it allocated (a flush) weighs as
 * its frees say, as before. */
static void test_weight_allocation_burst(void **state)
{
	struct model_window x;
	double steady, burst, flush;
	struct sim m;

	sim_init(&m, 5, 0);
	x = model_window(&m.b, 600, 1.0, 2 * MS, 200 * MS);
	steady = budget__window_weight(&m.b, &x.s, x.next, x.run_next);
	x.s.allocs_live = 10 * x.s.frees_live;
	burst = budget__window_weight(&m.b, &x.s, x.next, x.run_next);
	x.s.allocs_live = x.s.frees_live / 10;
	flush = budget__window_weight(&m.b, &x.s, x.next, x.run_next);
	print_message("weight steady %.1f, burst of allocations %.1f, flush %.1f\n", steady, burst, flush);
	assert_true(burst < steady / 4);
	assert_true(fabs(flush / steady - 1) < 1e-9);
}

/* A window of an idle target (0.3 ms run in 2 ms live: connections
 * arriving) followed by its busiest time (190 ms run in 200): the window
 * stands for its time at its own run rate, not for the load that came
 * after it (700 x its work). */
static void test_weight_busier_after(void **state)
{
	struct window_span s = { .begin = 5000 * MS, .end = 5002 * MS, .tail_end = 5004 * MS,
				 .run_begin = 1000 * MS, .run_end = 1000 * MS + 300000, .run_tail = 1000 * MS + 600000,
				 .cost_live = 30000, .cost_tail = 30000, .frees_live = 30, .frees_tail = 30 };
	struct sim m;
	double got, time = 204.0 / 2;

	sim_init(&m, 5, 0);
	got = budget__window_weight(&m.b, &s, 5204 * MS, s.run_tail + 190 * MS);
	print_message("idle window before a busy time: weight %.1f, time alone %.1f\n", got, time);
	assert_true(got >= time && got < 1.2 * time);
	s.frees_live = s.frees_tail = 0; /* the priced figures: the same bound */
	got = budget__window_weight(&m.b, &s, 5204 * MS, s.run_tail + 190 * MS);
	assert_true(got >= time && got < 1.2 * time);
}

/* Without frees to count by, or without run times, the older figures. */
static void test_weight_without_frees(void **state)
{
	struct sim m;
	struct model_window x;

	sim_init(&m, 5, 0);
	x = model_window(&m.b, 2000, 1, 2 * MS, 200 * MS);
	x.s.frees_live = x.s.frees_tail = BUDGET_MIN_FREES - 1;
	x.s.cost_live = x.s.cost_tail = 0; /* an idle target: probes that cost nothing */
	/* time alone: 204 ms stood for by 2 live */
	assert_true(fabs(budget__window_weight(&m.b, &x.s, x.next, x.run_next) - 102) < 0.01);
	x.s.run_begin = 0;
	assert_true(fabs(budget__window_weight(&m.b, &x.s, x.next, x.run_next) - 102) < 0.01);
	/* a window that began as the trace ended stands for itself */
	assert_true(budget__window_weight(&m.b, &x.s, x.s.begin, 0) == 1);
}

/* A target's lanes where its ring is one for all its CPUs (the agent's
 * --budget): as before on 2 CPUs (a quarter of the ring each), and
 * together at most half its ring however many CPUs (a quarter each, every
 * CPU: 8 MiB a target on 64 CPUs under --budget 1) until a lane is the
 * least the loader makes, 4 KiB. */
static void test_lanes_fixed(void **state)
{
	uint64_t ring = budget_ring_bytes(1);

	assert_int_equal(ring, 512u << 10);
	assert_int_equal(budget_lane_ring_bytes(ring, 1), ring);
	assert_int_equal(budget_lane_ring_bytes(ring, 2), ring);
	assert_int_equal(budget_lane_ring_bytes(ring, 64) / 4, 4096); /* the least lane */
	for (int cpus = 1; cpus <= 1024; cpus++)
		for (double pct = 0.5; pct <= 16; pct *= 2) {
			uint64_t r = budget_ring_bytes(pct);

			assert_true(budget_lane_ring_bytes(r, cpus) / 4 * (uint64_t)cpus <= r / 2 ||
				    budget_lane_ring_bytes(r, cpus) / 4 <= 4096);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lanes_fixed),
		cmocka_unit_test(test_steady_within_budget),
		cmocka_unit_test(test_burst_cuts_the_window),
		cmocka_unit_test(test_idle_target),
		cmocka_unit_test(test_own_cost),
		cmocka_unit_test(test_recorder_charged),
		cmocka_unit_test(test_follow_charged),
		cmocka_unit_test(test_large_charged),
		cmocka_unit_test(test_attach_time),
		cmocka_unit_test(test_scale_fitted),
		cmocka_unit_test(test_weight_by_frees),
		cmocka_unit_test(test_weight_busier_after),
		cmocka_unit_test(test_weight_allocation_burst),
		cmocka_unit_test(test_weight_without_frees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
