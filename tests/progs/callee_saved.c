// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * For tests/e2e/agent.sh: whether probing harms the registers a function
 * must keep for its caller. Five values live across every malloc and free
 * (so in callee-saved registers), checked after each call, for argv[1]
 * seconds (default 4), a call pair every millisecond. Exit status 0, or 3
 * the moment one of them changed (a return probe's hijack written over a
 * saved register instead of the return address would do that).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The pointers escape through this, so the compiler keeps every malloc. */
void *volatile sink;

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	long end = now_ms() + 1000 * (argc > 1 ? atol(argv[1]) : 4);
	long a = 0x1111, b = 0x2222, c = 0x3333, d = 0x4444, e = 0x5555;

	for (long i = 0; now_ms() < end; i++) {
		void *p = malloc(64 + (size_t)(i & 63));

		sink = p;
		/* the values stay in registers across the calls (the compiler
		 * cannot know them), and are checked after each */
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e));
		if (a != 0x1111 + i || b != 0x2222 + 2 * i || c != 0x3333 + 3 * i || d != 0x4444 + 4 * i ||
		    e != 0x5555 + 5 * i)
			goto changed;
		free(p);
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e));
		if (a != 0x1111 + i || b != 0x2222 + 2 * i || c != 0x3333 + 3 * i || d != 0x4444 + 4 * i ||
		    e != 0x5555 + 5 * i)
			goto changed;
		a += 1, b += 2, c += 3, d += 4, e += 5;
		usleep(1000);
	}
	return 0;
changed:
	fprintf(stderr, "callee_saved: a register changed across malloc or free\n");
	return 3;
}
