// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/lib/target_file.c, the one way memtrace opens a target's file, on a
 * tree made here that plays the target's root:
 * - a FIFO at the path returns at once, refused (an open by name blocks for
 *   ever until a writer comes);
 * - a device is refused without being opened;
 * - an absolute symlink resolves inside the root, never on the host, and
 *   "../" cannot climb out of it;
 * - the inode asked for must be the file's (-ESTALE otherwise);
 * - a mapping of this process, through /proc/self/map_files, is its file,
 *   even once the path names another.
 */
#include "target_file.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64];
static char outside[96]; /* a file beside the root, which no open under it may reach */

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char path[256];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/mt-target-file.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(path, sizeof(path), "%s/lib", root);
	mkdir(path, 0755);
	put("/lib/real.so", "the target's own file");
	snprintf(outside, sizeof(outside), "%s.outside", root);
	{
		FILE *f = fopen(outside, "w");

		if (!f)
			return -1;
		fputs("SECRET", f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/lib/fifo.so", root);
	mkfifo(path, 0644);
	snprintf(path, sizeof(path), "%s/lib/dev.so", root);
	symlink("/dev/zero", path);
	snprintf(path, sizeof(path), "%s/lib/abs.so", root);
	symlink("/lib/real.so", path); /* absolute: the root's /lib/real.so, not the host's */
	snprintf(path, sizeof(path), "%s/lib/up.so", root);
	symlink("../../../../../../../../../../", path);
	return 0;
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, outside);
	return system(cmd) == 0 ? 0 : -1;
}

static int root_fd(void)
{
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static void expect_text(int fd, const char *want)
{
	char buf[64] = "";
	ssize_t n;

	assert_true(fd >= 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n >= 0);
	assert_string_equal(buf, want);
	close(fd);
}

static void test_regular_file(void **state)
{
	int r = root_fd();

	(void)state;
	expect_text(target_file_open_in_root(r, "/lib/real.so", 0), "the target's own file");
	close(r);
}

static void test_fifo_refused_at_once(void **state)
{
	int r = root_fd();

	(void)state;
	/* An open by name would wait here for a writer that never comes. */
	assert_int_equal(target_file_open_in_root(r, "/lib/fifo.so", 0), -EINVAL);
	close(r);
}

static void test_device_refused(void **state)
{
	int r = root_fd(), host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	/* The symlink's /dev/zero is the root's, which has none. */
	assert_int_equal(target_file_open_in_root(r, "/lib/dev.so", 0), -ENOENT);
	/* A root that has one: checked as O_PATH, never opened. */
	assert_true(host >= 0);
	assert_int_equal(target_file_open_in_root(host, "/dev/zero", 0), -EINVAL);
	close(host);
	close(r);
}

static void test_symlinks_stay_in_root(void **state)
{
	char rel[128];
	int r = root_fd(), fd;

	(void)state;
	expect_text(target_file_open_in_root(r, "/lib/abs.so", 0), "the target's own file");
	/* The outside file by "..": the walk stops at the root. */
	snprintf(rel, sizeof(rel), "/../%s", strrchr(outside, '/') + 1);
	fd = target_file_open_in_root(r, rel, 0);
	assert_int_equal(fd, -ENOENT);
	snprintf(rel, sizeof(rel), "/lib/up.so/%s", strrchr(outside, '/') + 1);
	fd = target_file_open_in_root(r, rel, 0);
	assert_int_equal(fd, -ENOENT);
	close(r);
}

static void test_inode_checked(void **state)
{
	char path[256];
	struct stat st;
	int r = root_fd(), fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/lib/real.so", root);
	assert_int_equal(stat(path, &st), 0);
	fd = target_file_open_in_root(r, "/lib/real.so", st.st_ino);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(target_file_open_in_root(r, "/lib/real.so", st.st_ino + 1), -ESTALE);
	close(r);
}

static void test_mapping_is_its_file(void **state)
{
	char path[256], line[512];
	unsigned long long start = 0, end = 0, ino = 0;
	void *map;
	FILE *f;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/lib/mapped.so", root);
	put("/lib/mapped.so", "mapped first");
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(map != MAP_FAILED);
	/* The path now names another file, as a target's swap would. */
	unlink(path);
	put("/lib/mapped.so", "SECRET swapped in");
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/lib/mapped.so"))
			sscanf(line, "%llx-%llx %*s %*s %*s %llu", &start, &end, &ino);
	fclose(f);
	assert_true(start && end);
	fd = target_file_open_mapping(getpid(), start, end, ino);
	if (fd == -EPERM) {
		skip(); /* map_files needs CAP_SYS_ADMIN: make test runs as root */
		return;
	}
	expect_text(fd, "mapped first");
	assert_int_equal(target_file_open_mapping(getpid(), start, end, ino + 1), -ESTALE);
	munmap(map, 4096);
	assert_int_equal(target_file_open_mapping(getpid(), start, end, ino), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_file),
		cmocka_unit_test(test_fifo_refused_at_once),
		cmocka_unit_test(test_device_refused),
		cmocka_unit_test(test_symlinks_stay_in_root),
		cmocka_unit_test(test_inode_checked),
		cmocka_unit_test(test_mapping_is_its_file),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
