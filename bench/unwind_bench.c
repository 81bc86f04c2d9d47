// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unwind_bench FILE...: for each file, how long building its unwind table
 * takes (user/record/unwind_table.c) from its CFI and from the on-disk cache, and
 * how big the table is. make bench prints it for libc, libstdc++,
 * libsqlite3 and redis-server.
 *   unwind_bench name=NAME rows=N bytes=B fp=0|1 build_ms=X cached_ms=Y
 */
#include "unwind_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/memtrace-unwind-bench.XXXXXX";

	if (argc < 2 || !mkdtemp(dir))
		return 2;
	for (int i = 1; i < argc; i++) {
		struct unwind_table t;
		double t0 = now_ms(), built, cached;
		const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		if (unwind_table__load(argv[i], dir, &t)) {
			printf("unwind_bench name=%s error\n", base);
			continue;
		}
		built = now_ms() - t0;
		unwind_table__free(&t);
		t0 = now_ms();
		unwind_table__load(argv[i], dir, &t);
		cached = now_ms() - t0;
		printf("unwind_bench name=%s rows=%zu bytes=%zu fp=%d build_ms=%.1f cached_ms=%.1f\n", base,
		       t.nr, t.nr * sizeof(*t.rows), t.frame_pointers, built, cached);
		unwind_table__free(&t);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : 0;
}
