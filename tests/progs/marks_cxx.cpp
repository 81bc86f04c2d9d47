// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * marks_cxx: the C++ side of inproc/memtrace.h (RAII zones, new/delete),
 * main thread plus one std::thread worker. tests/e2e/marks.sh asserts the
 * figures below exactly.
 *
 * Startup: main names itself "cxx-main", starts the worker (it names itself
 * "cxx-worker"), marks frame 0 ("startup"). Then NFRAMES = 3 frames; in
 * each, main runs:
 *
 *   MEMTRACE_ZONE("cxx_frame") {
 *     { MEMTRACE_ZONE("spawn"); site_spawn: new Particle[4] (64 bytes) }
 *     the worker (main waiting): MEMTRACE_ZONE("cxx_job") { site_job: new char[200], deleted }
 *     site_scratch: new int[10] (40 bytes), deleted
 *     the particles deleted
 *     pool "cxx_pool": MEMTRACE_ALLOC 32 bytes twice, MEMTRACE_FREE the first
 *   }
 *   MEMTRACE_FRAME_MARK()
 *
 * Then main joins the worker, enters MEMTRACE_ZONE("cxx_teardown"), makes
 * site_teardown_leak (new char[500], never deleted) and calls std::exit
 * inside the zone, so its destructor never runs: the zone is open at the end.
 *
 *   zone          count allocs bytes incl_allocs incl_bytes leaked peak open_at_end
 *   cxx_frame     3     3      120   6           312        0      40   0
 *   spawn         3     3      192   3           192        0      64   0
 *   cxx_job       3     3      600   3           600        0      200  0
 *   cxx_teardown  1     1      500   1           500        500    500  1
 *
 *   frames: count 4
 *   frame  name     allocations  allocated_bytes
 *   0      startup  (libstdc++'s and glibc's own: not asserted)
 *   1..3   -        3            304    spawn 64 + job 200 + scratch 40
 *   after the last mark: 1 allocation, 500 bytes (site_teardown_leak)
 *
 *   pool      allocations bytes frees leaked_allocations leaked_bytes peak resets
 *   cxx_pool  6           192   3     3                  96           128  0
 *   (live after each frame: 32, 64, 96; the peak, 128, just before the third free)
 *
 *   threads: cxx-main, cxx-worker
 *
 * On stdout it writes exactly one line, "marks_cxx: done".
 */
#include "../../inproc/memtrace.h"

#include <cstdlib>
#include <cstring>
#include <semaphore.h>
#include <thread>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

namespace {

const int NFRAMES = 3;

struct Particle {
	float x, y, vx, vy;
};

sem_t go, done;
char slab[2 * NFRAMES * 32];
char *volatile leak;

void wait_on(sem_t *s)
{
	while (sem_wait(s) != 0)
		;
}

} // namespace

NOINLINE Particle *site_spawn() { return new Particle[4]; }
NOINLINE char *site_job() { return new char[200]; }
NOINLINE int *site_scratch() { return new int[10]; }
NOINLINE char *site_teardown_leak() { return new char[500]; }

NOINLINE void worker()
{
	MEMTRACE_THREAD_NAME("cxx-worker");
	for (int f = 0; f < NFRAMES; f++) {
		wait_on(&go);
		{
			MEMTRACE_ZONE("cxx_job");
			char *volatile p = site_job();
			delete[] p;
		}
		sem_post(&done);
	}
}

NOINLINE void frame(int f)
{
	MEMTRACE_ZONE("cxx_frame");
	Particle *particles;
	{
		MEMTRACE_ZONE("spawn");
		particles = site_spawn();
	}
	sem_post(&go);
	wait_on(&done);
	int *volatile scratch = site_scratch();
	delete[] scratch;
	delete[] particles;
	MEMTRACE_ALLOC("cxx_pool", slab + 64 * f, 32);
	MEMTRACE_ALLOC("cxx_pool", slab + 64 * f + 32, 32);
	MEMTRACE_FREE("cxx_pool", slab + 64 * f);
}

int main()
{
	static const char msg[] = "marks_cxx: done\n";

	MEMTRACE_THREAD_NAME("cxx-main");
	if (sem_init(&go, 0, 0) || sem_init(&done, 0, 0))
		return 2;
	std::thread t(worker);
	MEMTRACE_FRAME_MARK_NAMED("startup");
	for (int f = 0; f < NFRAMES; f++) {
		frame(f);
		MEMTRACE_FRAME_MARK();
	}
	t.join();
	if (write(1, msg, sizeof(msg) - 1) < 0)
		return 2;
	MEMTRACE_ZONE("cxx_teardown");
	leak = site_teardown_leak();
	std::exit(0); // inside the zone: its destructor never runs
}
