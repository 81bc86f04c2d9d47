// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/record/procmaps.c's holding of a target's files, on this process:
 * - each mapped ELF file is held once and named /proc/self/fd/N, with the
 *   build-id read through it;
 * - a file stays held while a procmaps names it, even after its pid's
 *   recordings released it, and goes with the last of the two;
 * - a pid whose recordings ended and whose files are gone is forgotten (an
 *   agent meets a new pid for every process it ever matched).
 */
#include "procmaps.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct trace_module *libc_module(const struct procmaps *pm)
{
	return procmaps__find(pm, (uint64_t)(uintptr_t)malloc);
}

static void test_held_once_by_descriptor(void **state)
{
	struct procmaps pm, again;
	const struct trace_module *m;
	const char *file;
	uint8_t id[32];
	uint32_t len = 0;
	size_t n;

	(void)state;
	procmaps__hold(getpid());
	assert_int_equal(procmaps__read(&pm, getpid()), 0);
	m = libc_module(&pm);
	assert_non_null(m);
	file = procmaps__file(&pm, m->path);
	assert_non_null(file);
	assert_true(!strncmp(file, "/proc/self/fd/", 14));
	assert_int_equal(procmaps__file_build_id(file, id, sizeof(id), &len), 0);
	assert_int_equal(len, m->build_id_len);
	assert_memory_equal(id, m->build_id, len);
	n = procmaps__nr_held(getpid());
	assert_true(n > 0);
	/* a second read holds nothing more: the same files, the same descriptors */
	assert_int_equal(procmaps__read(&again, getpid()), 0);
	assert_int_equal(procmaps__nr_held(getpid()), n);
	assert_string_equal(procmaps__file(&again, m->path), file);
	procmaps__free(&again);
	/* released while a procmaps still names them: held until it goes */
	procmaps__release(getpid());
	assert_int_equal(procmaps__nr_held(getpid()), n);
	procmaps__free(&pm);
	assert_int_equal(procmaps__nr_held(getpid()), 0);
	assert_int_equal(procmaps__nr_pids(), 0);
}

static void test_held_until_released(void **state)
{
	struct procmaps pm;

	(void)state;
	procmaps__hold(getpid());
	assert_int_equal(procmaps__read(&pm, getpid()), 0);
	procmaps__free(&pm);
	/* the recording still runs: its files stay for its symbols */
	assert_true(procmaps__nr_held(getpid()) > 0);
	assert_int_equal(procmaps__nr_pids(), 1);
	procmaps__release(getpid());
	assert_int_equal(procmaps__nr_held(getpid()), 0);
	assert_int_equal(procmaps__nr_pids(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_held_once_by_descriptor),
		cmocka_unit_test(test_held_until_released),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
