// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * forever: allocates, fills, checks and frees blocks until SIGTERM, then
 * says whether every block held what was written to it and exits 0. Used to
 * show that a recorder that attaches, detaches or dies under it does not
 * disturb it.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

__attribute__((noinline)) static unsigned char *site_forever(size_t n)
{
	return malloc(n);
}

int main(void)
{
	unsigned long rounds = 0, bad = 0;

	signal(SIGTERM, on_term);
	while (!stop) {
		size_t n = 16 + (rounds % 64) * 8;
		unsigned char *p = site_forever(n);

		if (!p)
			return 2;
		memset(p, (int)(rounds & 0xff), n);
		for (size_t i = 0; i < n; i++)
			bad += p[i] != (unsigned char)(rounds & 0xff);
		free(p);
		rounds++;
		if (rounds % 64 == 0)
			usleep(100);
	}
	if (bad) {
		write(1, "forever: corrupted\n", 19);
		return 1;
	}
	write(1, "forever: clean exit\n", 20);
	return 0;
}
