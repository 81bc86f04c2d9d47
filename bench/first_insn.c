// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * first_insn: prints CLOCK_REALTIME in microseconds from its first
 * constructor, the first of its own code to run; bench/attach.sh takes the
 * time from starting memtrace to this line as "-- CMD: the program's first
 * instruction runs".
 */
#include <stdio.h>
#include <time.h>

__attribute__((constructor(101))) static void first(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("first_insn %lld\n", (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
	fflush(stdout);
}

int main(void)
{
	return 0;
}
