// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * marks: a small "game loop" annotated with inproc/memtrace.h (zones,
 * frame marks, pools, thread names), main thread plus two workers.
 * tests/e2e/marks.sh asserts the figures below exactly.
 *
 * Startup: main names itself "main" and starts workers 0 and 1 (named
 * "worker-0", "worker-1"), then marks frame 0, named "startup". Then
 * NFRAMES = 4 frames; in each, main runs:
 *
 *   zone frame {
 *     zone update { 2 x site_update (malloc 100);
 *                   physics (ZONE_BEGIN/END) { site_physics (malloc 64), freed } }
 *     worker 0, then worker 1 (one at a time, main waiting):
 *       zone job { 3 x site_job (malloc 32 * (w + 1)), all freed }
 *     zone render { site_render (malloc 256), freed;
 *                   3 x MEMTRACE_ALLOC("frame_arena", 128) }
 *     MEMTRACE_POOL_RESET("frame_arena")
 *     the 2 update blocks freed (in zone frame)
 *   }
 *   MEMTRACE_FRAME_MARK()
 *
 * Then, outside zones: pool "nodes": 5 x MEMTRACE_ALLOC 24 bytes, 3 of them
 * MEMTRACE_FREEd; the workers are joined; and main enters zone "shutdown",
 * makes site_shutdown_leak (malloc 1000, never freed) and exits without
 * ending the zone.
 *
 *   zone      count allocs bytes incl_allocs incl_bytes leaked peak open_at_end
 *   frame     4     0      0     16          2080       0      0    0
 *   update    4     8      800   12          1056       0      200  0
 *   physics   4     4      256   4           256        0      64   0
 *   render    4     4      1024  4           1024       0      256  0
 *   job       8     24     1152  24          1152       0      192  0
 *   shutdown  1     1      1000  1           1000       1000   1000 1
 *
 * (job: both workers, one at a time, so its peak is worker 1's 3 x 64.)
 * time_ns: each is > 0; shutdown's runs to the end of the trace.
 *
 *   frames: count 5
 *   frame  name     allocations  allocated_bytes
 *   0      startup  2            544    glibc 2.36: pthread_create's DTV calloc (272) per thread
 *   1..4   -        10           808    main 4 (520 B) + workers 6 (288 B)
 *   after the last mark: 1 allocation, 1000 bytes (site_shutdown_leak)
 *
 *   pool         allocations bytes leaked_allocations leaked_bytes peak resets frees
 *   frame_arena  12          1536  0                  0            384  4      0
 *   nodes        5           120   2                  48           120  0      3
 *
 *   threads: main, worker-0, worker-1 (by tid)
 *
 * Pool marks are not heap allocations: totals.allocations is 43 with glibc
 * 2.36 (the 41 mallocs above and the 2 DTV callocs) and leaves out the
 * pools' 17.
 *
 * On stdout it writes exactly one line, "marks: done".
 */
#include "../../inproc/memtrace.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define NFRAMES 4
#define NWORKERS 2
#define NJOB 3
#define NARENA 3
#define NNODES 5

static sem_t go[NWORKERS], done[NWORKERS];
static char frame_arena[NARENA * 128];
static char nodes[NNODES * 24];
static void *volatile leak;

static void die(const char *msg)
{
	if (write(2, msg, strlen(msg)) < 0)
		_exit(2);
	_exit(2);
}

static void *checked(void *p)
{
	if (!p)
		die("marks: allocation failed\n");
	return p;
}

NOINLINE void *site_update(void) { return checked(malloc(100)); }
NOINLINE void *site_physics(void) { return checked(malloc(64)); }
NOINLINE void *site_job(size_t size) { return checked(malloc(size)); }
NOINLINE void *site_render(void) { return checked(malloc(256)); }
NOINLINE void *site_shutdown_leak(void) { return checked(malloc(1000)); }

NOINLINE void worker_job(long w)
{
	void *volatile blocks[NJOB];
	int i;

	MEMTRACE_ZONE("job");
	for (i = 0; i < NJOB; i++)
		blocks[i] = site_job(32 * (size_t)(w + 1));
	for (i = 0; i < NJOB; i++)
		free(blocks[i]);
}

NOINLINE void *worker_main(void *arg)
{
	static const char *const names[NWORKERS] = { "worker-0", "worker-1" };
	long w = (long)arg;
	int f;

	MEMTRACE_THREAD_NAME(names[w]);
	for (f = 0; f < NFRAMES; f++) {
		while (sem_wait(&go[w]) != 0)
			;
		worker_job(w);
		sem_post(&done[w]);
	}
	return NULL;
}

NOINLINE void run_workers(void)
{
	int w;

	/* One at a time, so the figures do not depend on scheduling. */
	for (w = 0; w < NWORKERS; w++) {
		sem_post(&go[w]);
		while (sem_wait(&done[w]) != 0)
			;
	}
}

NOINLINE void update(void *volatile *kept)
{
	void *volatile p;

	MEMTRACE_ZONE("update");
	kept[0] = site_update();
	kept[1] = site_update();
	MEMTRACE_ZONE_BEGIN("physics");
	p = site_physics();
	free(p);
	MEMTRACE_ZONE_END("physics");
}

NOINLINE void render(void)
{
	void *volatile p;
	int i;

	MEMTRACE_ZONE("render");
	p = site_render();
	free(p);
	for (i = 0; i < NARENA; i++)
		MEMTRACE_ALLOC("frame_arena", frame_arena + 128 * i, 128);
}

NOINLINE void frame(void)
{
	void *volatile kept[2];

	MEMTRACE_ZONE("frame");
	update(kept);
	run_workers();
	render();
	MEMTRACE_POOL_RESET("frame_arena");
	free(kept[0]);
	free(kept[1]);
}

NOINLINE void use_nodes(void)
{
	int i;

	for (i = 0; i < NNODES; i++)
		MEMTRACE_ALLOC("nodes", nodes + 24 * i, 24);
	for (i = 0; i < 3; i++)
		MEMTRACE_FREE("nodes", nodes + 24 * i);
}

int main(void)
{
	static const char msg[] = "marks: done\n";
	pthread_t tid[NWORKERS];
	long w;
	int f;

	MEMTRACE_THREAD_NAME("main");
	for (w = 0; w < NWORKERS; w++) {
		if (sem_init(&go[w], 0, 0) || sem_init(&done[w], 0, 0))
			die("marks: sem_init failed\n");
		if (pthread_create(&tid[w], NULL, worker_main, (void *)w) != 0)
			die("marks: pthread_create failed\n");
	}
	MEMTRACE_FRAME_MARK_NAMED("startup");
	for (f = 0; f < NFRAMES; f++) {
		frame();
		MEMTRACE_FRAME_MARK();
	}
	use_nodes();
	for (w = 0; w < NWORKERS; w++)
		pthread_join(tid[w], NULL);
	if (write(1, msg, sizeof(msg) - 1) < 0)
		return 2;
	/* Left open on purpose: a zone still open when the trace ends. */
	MEMTRACE_ZONE_BEGIN("shutdown");
	leak = site_shutdown_leak();
	return 0;
}
