// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * malloc_bench: the target program make bench traces.
 *
 *   malloc_bench THREADS ITERATIONS [SIZE]
 *   malloc_bench THREADS SECONDSs [SIZE]      e.g. "20s": run for a fixed time
 *
 * Each thread does p = malloc(size); touch one byte; free(p) in a loop, after a
 * warm-up, all threads released together by a barrier. SIZE 0 or absent cycles
 * through a fixed mix of 16..512 bytes, so that byte-based sampling has varied
 * sizes to weigh and every run sees the same sequence.
 *
 * Built as C++ (g++ -x c++) with -DBENCH_NEW=1 the pair is operator new and
 * delete, with -DBENCH_NEW=2 new[] and delete[]: make bench's C++ rows.
 *
 * Prints one line on stdout:
 *   malloc_bench threads=T pairs=N ns_per_pair=X cpu_s=C
 * ns_per_pair is each thread's wall time of its timed loop divided by its pairs,
 * averaged over threads; cpu_s is this process's user+sys CPU, which lets the
 * bench take it out of a recorder's rusage that includes its reaped child.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define WARMUP_PAIRS 2000
#define MAX_THREADS 256
/* Check the clock only this often in timed mode, so clock_gettime stays out of the cost. */
#define CLOCK_STRIDE 256

static const size_t size_mix[] = { 16, 32, 48, 64, 96, 128, 256, 512 };
#define SIZE_MIX_NR (sizeof(size_mix) / sizeof(size_mix[0]))

struct worker {
	pthread_t tid;
	uint64_t pairs;  /* done in the timed loop */
	uint64_t ns;     /* wall time of the timed loop */
};

static pthread_barrier_t start_line;
static uint64_t iterations; /* pairs per thread, or 0 in timed mode */
static uint64_t run_ns;     /* timed mode: how long each thread runs */
static size_t fixed_size;   /* 0: cycle through size_mix */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#if defined(__cplusplus) && BENCH_NEW == 2
#define ALLOC(size) (new char[size])
#define FREE(p) (delete[] (p))
#elif defined(__cplusplus) && BENCH_NEW == 1
#define ALLOC(size) (static_cast<char *>(::operator new(size)))
#define FREE(p) (::operator delete(p))
#else
#define ALLOC(size) ((char *)malloc(size))
#define FREE(p) free(p)
#endif

/* noinline keeps one allocation and one free call per pair whatever the optimizer does. */
static __attribute__((noinline)) int one_pair(size_t size)
{
	char *p = ALLOC(size);

	if (!p)
		return -ENOMEM;
	*(volatile char *)p = 1;
	/* The compiler may not drop the pair: p escapes to an opaque asm. */
	__asm__ volatile("" : : "r"(p) : "memory");
	FREE(p);
	return 0;
}

static size_t size_at(uint64_t i)
{
	/* Stride 3 is coprime with the mix length, so neighbours differ and all sizes recur. */
	return fixed_size ? fixed_size : size_mix[(i * 3) % SIZE_MIX_NR];
}

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	uint64_t i, start, end = 0, deadline;

	for (i = 0; i < WARMUP_PAIRS; i++) {
		if (one_pair(size_at(i)))
			return (void *)-1;
	}
	pthread_barrier_wait(&start_line);
	start = now_ns();
	if (iterations) {
		for (i = 0; i < iterations; i++) {
			if (one_pair(size_at(i)))
				return (void *)-1;
		}
		end = now_ns();
	} else {
		deadline = start + run_ns;
		for (i = 0;; i++) {
			if (one_pair(size_at(i)))
				return (void *)-1;
			if (i % CLOCK_STRIDE == CLOCK_STRIDE - 1 && (end = now_ns()) >= deadline)
				break;
		}
		i++;
	}
	w->pairs = i;
	w->ns = end - start;
	return NULL;
}

static int parse_args(int argc, char **argv, unsigned *threads)
{
	char *end;
	double secs;

	if (argc < 3 || argc > 4)
		return -1;
	*threads = strtoul(argv[1], &end, 10);
	if (*end || *threads == 0 || *threads > MAX_THREADS)
		return -1;
	if (argv[2][0] && argv[2][strlen(argv[2]) - 1] == 's') {
		secs = strtod(argv[2], &end);
		if (*end != 's' || !(secs > 0) || secs > 86400)
			return -1;
		run_ns = (uint64_t)(secs * 1e9);
	} else {
		iterations = strtoull(argv[2], &end, 10);
		if (*end || iterations == 0)
			return -1;
	}
	if (argc == 4) {
		fixed_size = strtoul(argv[3], &end, 10);
		if (*end)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	unsigned threads, t;
	uint64_t pairs = 0;
	double ns_sum = 0;
	struct rusage ru;
	void *res;
	int err;

	if (parse_args(argc, argv, &threads)) {
		fprintf(stderr, "usage: malloc_bench THREADS (ITERATIONS | SECONDSs) [SIZE]\n");
		return 2;
	}
	pthread_barrier_init(&start_line, NULL, threads);
	for (t = 0; t < threads; t++) {
		err = pthread_create(&workers[t].tid, NULL, worker_main, &workers[t]);
		if (err) {
			fprintf(stderr, "malloc_bench: failed to create thread: %s\n", strerror(err));
			return 1;
		}
	}
	for (t = 0; t < threads; t++) {
		pthread_join(workers[t].tid, &res);
		if (res) {
			fprintf(stderr, "malloc_bench: malloc failed\n");
			return 1;
		}
		pairs += workers[t].pairs;
		ns_sum += (double)workers[t].ns / workers[t].pairs;
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("malloc_bench threads=%u pairs=%llu ns_per_pair=%.1f cpu_s=%.3f\n", threads,
	       (unsigned long long)pairs, ns_sum / threads,
	       ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	return 0;
}
