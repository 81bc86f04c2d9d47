// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * drain_bench POLLS TRACE: the recorder's own work an event, apart from the
 * probes and the event rate. The records two CPUs' rings would hold under
 * malloc_bench (one malloc+free pair a microsecond on each, sizes 16..527,
 * a block per size class as glibc's cache gives them back, four stacks) go
 * through user/record/drain.c and the trace writer as record does: a poll
 * every 10 ms of each CPU's records, a flush of what is older than
 * REORDER_NS (drain.h), the trace written to TRACE and compressed. Prints its CPU time over the events:
 *   drain_bench events=N ns_per_event=X bytes_per_event=Y
 */
#include "drain.h"
#include "trace_writer.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CPUS 2
#define PAIRS_PER_POLL 5000 /* a CPU's in 10 ms at a pair a microsecond */

static double cpu_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const uint64_t stacks[4] = { 0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL, 0x94d049bb133111ebULL,
					    0xd6e8feb86659fd93ULL };
	struct trace_meta meta = { .command_line = "drain_bench", .comm = "drain_bench", .kernel = "-", .hostname = "-" };
	struct trace_end end = { .exit_status = -1 };
	uint64_t ts[CPUS], base[CPUS], events = 0, bytes = 0;
	struct trace_writer *w;
	struct drain *d;
	unsigned int seed = 1;
	long polls;
	double t0;

	if (argc != 3 || (polls = atol(argv[1])) <= 0)
		return 2;
	w = trace_writer__open(argv[2], &meta);
	d = w ? drain__new(w) : NULL;
	if (!d)
		return 1;
	for (int c = 0; c < CPUS; c++) {
		ts[c] = 1000000000ULL + c * 500;
		base[c] = 0x555555560000ULL + ((uint64_t)c << 24);
		for (int s = 0; s < 4; s++) {
			struct mt_stack_event st = { .hdr = { .type = MT_EVENT_STACK, .size = 32 + 3 * 8, .tid = 100 + c,
							      .ts = ts[c] },
						     .stack_id = stacks[s], .nr = 3 };

			st.frames[0] = 0x401000 + 16 * s;
			st.frames[1] = 0x402000;
			st.frames[2] = 0x403000;
			if (drain__record(d, &st, st.hdr.size))
				return 1;
		}
	}
	t0 = cpu_s();
	for (long p = 0; p < polls; p++) {
		for (int c = 0; c < CPUS; c++) {
			for (int i = 0; i < PAIRS_PER_POLL; i++) {
				struct mt_alloc_event a = { .hdr = { .type = MT_EVENT_ALLOC, .size = sizeof(a), .tid = 100 + c } };
				struct mt_free_event f = { .hdr = { .type = MT_EVENT_FREE, .size = sizeof(f), .tid = 100 + c } };

				seed = seed * 1103515245 + 12345;
				a.hdr.ts = ts[c];
				a.size = 16 + ((seed >> 16) & 0x1ff);
				/* a block freed at once comes back for the next call of its size class */
				a.ptr = base[c] + ((a.size + 15) & ~15ULL) * 16;
				a.stack_id = stacks[(seed >> 24) & 3];
				ts[c] += 470 + ((seed >> 4) & 63);
				f.hdr.ts = ts[c];
				f.ptr = a.ptr;
				ts[c] += 470 + ((seed >> 12) & 63);
				if (drain__record(d, &a, sizeof(a)) || drain__record(d, &f, sizeof(f)))
					return 1;
				events += 2;
			}
		}
		if (drain__flush(d, (ts[0] < ts[1] ? ts[0] : ts[1]) - REORDER_NS))
			return 1;
	}
	end.events = events;
	if (drain__flush(d, UINT64_MAX) || trace_writer__close_sized(w, &end, &bytes))
		return 1;
	printf("drain_bench events=%llu ns_per_event=%.1f bytes_per_event=%.2f\n", (unsigned long long)events,
	       (cpu_s() - t0) * 1e9 / events, (double)bytes / events);
	drain__free(d);
	return 0;
}
