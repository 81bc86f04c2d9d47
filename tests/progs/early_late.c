// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * early_late: allocations at the edges of a program's life, each from its
 * own site, for tests/e2e/preload.sh (both capture paths must count them
 * the same):
 *
 *   site                 when                                       allocs  bytes  leaked
 *   site_before_main     a constructor, before main                 3       300    1 (100)
 *   site_in_main         main                                       2       200    0
 *   site_thread_exit     a thread's key destructor, as it exits     4       1600   0
 *   site_in_atexit       an atexit handler                          2       400    2 (400)
 *   site_in_destructor   a destructor, after main returned          5       250    5 (250)
 *
 * Each site's blocks but the leaked ones are freed in the same place. On
 * stdout: "early_late: done".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile keep[16];
static pthread_key_t key;

NOINLINE static void *site_before_main(void) { return malloc(100); }
NOINLINE static void *site_in_main(void) { return malloc(100); }
NOINLINE static void *site_thread_exit(void) { return malloc(400); }
NOINLINE static void *site_in_atexit(void) { return malloc(200); }
NOINLINE static void *site_in_destructor(void) { return malloc(50); }

__attribute__((constructor)) static void early(void)
{
	keep[0] = site_before_main();
	free(site_before_main());
	free(site_before_main());
}

static void at_thread_exit(void *v)
{
	for (int i = 0; i < 4; i++)
		free(site_thread_exit());
}

static void *thread_main(void *arg)
{
	pthread_setspecific(key, (void *)1);
	return NULL;
}

static void late(void)
{
	keep[1] = site_in_atexit();
	keep[2] = site_in_atexit();
}

__attribute__((destructor)) static void last(void)
{
	for (int i = 0; i < 5; i++)
		keep[3 + i] = site_in_destructor();
}

int main(void)
{
	pthread_t t;

	free(site_in_main());
	free(site_in_main());
	pthread_key_create(&key, at_thread_exit);
	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	atexit(late);
	fputs("early_late: done\n", stdout);
	return 0;
}
