// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/record/file_memo.c: a fact remembered about a file is found again
 * while the file is the same, and not once it may not be:
 * - another file put at its name (another inode);
 * - the file rewritten in place, the same size, its modification time set
 *   back by its owner (utimensat): its change time moved.
 */
#include "file_memo.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/test_file_memo.XXXXXX";

static void file_make(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, 4), 4);
	close(fd);
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

static void test_same_file_only(void **state)
{
	char path[64], other[64];
	struct timespec times[2];
	struct stat st;
	uint64_t v = 0;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/lib.so", dir);
	snprintf(other, sizeof(other), "%s/other.so", dir);
	file_make(path, "abcd");
	assert_int_equal(file_memo__get(path, FILE_MARKS, 0, &v), -ENOENT);
	file_memo__put(path, FILE_MARKS, 0, 7);
	assert_int_equal(file_memo__get(path, FILE_MARKS, 0, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(file_memo__get(path, FILE_MARKS, 1, &v), -ENOENT); /* another ARG */

	/* rewritten in place, the same size, its times set back */
	assert_int_equal(stat(path, &st), 0);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	pause_ms(20); /* a change time a tick later */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "wxyz", 4, 0), 4);
	close(fd);
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mtim.tv_nsec, times[1].tv_nsec); /* what a size and mtime key would take as unchanged */
	assert_int_equal(file_memo__get(path, FILE_MARKS, 0, &v), -ENOENT);

	/* learned again, then another file put at its name */
	file_memo__put(path, FILE_MARKS, 0, 9);
	assert_int_equal(file_memo__get(path, FILE_MARKS, 0, &v), 0);
	assert_int_equal(v, 9);
	file_make(other, "wxyz");
	assert_int_equal(rename(other, path), 0);
	assert_int_equal(file_memo__get(path, FILE_MARKS, 0, &v), -ENOENT);
	assert_int_equal(file_memo__get("/nonexistent/x", FILE_MARKS, 0, &v), -ENOENT);
	unlink(path);
	rmdir(dir);
	print_message("a fact found again on the same file; not after a rewrite with its mtime set back, nor on "
		      "another file at its name\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_file_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
