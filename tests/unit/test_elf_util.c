// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elf_util against real files: this test binary (known functions, found via
 * its own mappings) and the libc it runs with (versioned symbols, ifuncs).
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "elf_util.h"
#include "procmaps.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#define MT_NOIPA __attribute__((noinline))
#else
#define MT_NOIPA __attribute__((noipa))
#endif

int mt_test_target(int x);

MT_NOIPA int mt_test_target(int x)
{
	asm volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* File offset of a live code address, through our own mappings. */
static uint64_t runtime_offset(const void *addr, char *path, size_t cap)
{
	struct procmaps pm;
	const struct trace_module *m;
	uint64_t off;

	assert_int_equal(procmaps__read(&pm, getpid()), 0);
	m = procmaps__find(&pm, (uint64_t)(uintptr_t)addr);
	assert_non_null(m);
	off = (uint64_t)(uintptr_t)addr - m->start + m->file_offset;
	if (path)
		snprintf(path, cap, "%s", m->path);
	procmaps__free(&pm);
	return off;
}

static void test_find_own_function(void **state)
{
	char exe[PATH_MAX];
	struct elf_function fn;
	uint64_t off = runtime_offset((const void *)mt_test_target, exe, sizeof(exe));

	assert_int_equal(elf_find_function(exe, "mt_test_target", &fn), 0);
	assert_int_equal(fn.file_offset, off);
	assert_true(fn.size > 0);
	assert_false(fn.is_ifunc);
	assert_int_equal(mt_test_target(1), 4);
	print_message("mt_test_target at file offset 0x%llx in %s\n", (unsigned long long)off, exe);
}

static void test_read_function_bytes(void **state)
{
	char exe[PATH_MAX];
	struct elf_function fn;
	struct elf_file *f;
	unsigned char buf[16];

	runtime_offset((const void *)mt_test_target, exe, sizeof(exe));
	f = elf_file__open(exe);
	assert_non_null(f);
	assert_int_equal(elf_file__read(f, 0, buf, 4), 0);
	assert_memory_equal(buf, "\177ELF", 4);
	assert_int_equal(elf_file__find_function(f, "mt_test_target", &fn), 0);
	assert_int_equal(elf_file__read(f, fn.file_offset, buf, sizeof(buf)), 0);
	/* The text we run is the text in the file. */
	assert_memory_equal(buf, (const void *)mt_test_target, sizeof(buf));
	assert_int_equal(elf_file__read(f, UINT64_C(1) << 40, buf, 4), -EIO);
	elf_file__close(f);
}

static void test_libc_symbols(void **state)
{
	char libc[PATH_MAX];
	struct elf_function fn;
	struct elf_file *f;
	uint64_t off = runtime_offset((const void *)malloc, libc, sizeof(libc));
	uint64_t vaddr;

	f = elf_file__open(libc);
	assert_non_null(f);
	assert_int_equal(elf_file__find_function(f, "malloc", &fn), 0);
	assert_int_equal(fn.file_offset, off);
	assert_int_equal(elf_file__find_function(f, "mt_no_such_function", &fn), -ESRCH);
	/* realpath has a hidden old version; the default is what we bind to. */
	assert_int_equal(elf_file__find_function(f, "realpath", &fn), 0);
	assert_int_equal(fn.file_offset, runtime_offset((const void *)realpath, NULL, 0));
	assert_int_equal(elf_vaddr_of_offset(elf_file__elf(f), fn.file_offset, &vaddr), 0);
	assert_int_equal(vaddr, fn.vaddr);
	/* memcpy's default version is an ifunc resolver. */
	assert_int_equal(elf_file__find_function(f, "memcpy", &fn), 0);
	assert_true(fn.is_ifunc);
	elf_file__close(f);
	print_message("checked malloc, realpath@@, memcpy ifunc in %s\n", libc);
}

static void test_errors(void **state)
{
	struct elf_function fn;
	uint8_t id[32];
	uint32_t len;

	assert_int_equal(elf_find_function("/nonexistent/mt", "malloc", &fn), -ENOENT);
	assert_int_equal(elf_read_build_id("/nonexistent/mt", id, sizeof(id), &len), -ENOENT);
	assert_int_equal(elf_find_function("/proc/self/maps", "malloc", &fn), -EINVAL);
	assert_null(elf_file__open("/proc/self/maps"));
	assert_int_equal(errno, EINVAL);
}

static void test_build_id(void **state)
{
	uint8_t a[32], b[32];
	uint32_t la = 0, lb = 0;

	assert_int_equal(elf_read_build_id("/proc/self/exe", a, sizeof(a), &la), 0);
	assert_int_equal(la, 20); /* gcc's default: sha1 */
	assert_int_equal(elf_read_build_id("/proc/self/exe", b, sizeof(b), &lb), 0);
	assert_int_equal(lb, la);
	assert_memory_equal(a, b, la);
	assert_int_equal(elf_read_build_id("/proc/self/exe", b, 8, &lb), -ENOSPC);
}

static void test_no_build_id(void **state)
{
	char dir[] = "/tmp/mt_elf_XXXXXX", cmd[512], bin[64];
	uint8_t id[32];
	uint32_t len;
	int rc;

	assert_non_null(mkdtemp(dir));
	snprintf(bin, sizeof(bin), "%s/a.out", dir);
	snprintf(cmd, sizeof(cmd),
		 "printf 'int main(void){return 0;}' > %s/a.c && "
		 "${CC:-cc} -Wl,--build-id=none -o %s %s/a.c 2>/dev/null",
		 dir, bin, dir);
	rc = system(cmd);
	if (rc != 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		(void)!system(cmd);
		skip();
	}
	assert_int_equal(elf_read_build_id(bin, id, sizeof(id), &len), -ENODATA);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

/* The recorder's cheap look for new modules (procmaps__files_hash): the hash
 * stays put while only anonymous memory comes and goes, as a busy allocator
 * makes it, and moves when a file is mapped or unmapped. */
static void test_files_hash(void **state)
{
	uint64_t h0, h1, h2, h3;
	void *anon, *file;
	int fd;

	(void)state;
	assert_int_equal(procmaps__files_hash(getpid(), &h0), 0);
	anon = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_ptr_not_equal(anon, MAP_FAILED);
	assert_int_equal(procmaps__files_hash(getpid(), &h1), 0);
	assert_true(h1 == h0);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	file = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_ptr_not_equal(file, MAP_FAILED);
	assert_int_equal(procmaps__files_hash(getpid(), &h2), 0);
	assert_true(h2 != h1);
	munmap(file, 4096);
	munmap(anon, 1 << 20);
	assert_int_equal(procmaps__files_hash(getpid(), &h3), 0);
	assert_true(h3 == h0);
	assert_int_equal(procmaps__files_hash(INT_MAX, &h3), -ENOENT);
}

/* What a --follow-children child's binding is checked by (procmaps__code_hash):
 * a data file mapped (postgres maps shared memory per query) leaves it; an
 * executable mapping moves it, and its end brings it back. */
static void code_hash_moves(void)
{
	uint64_t h0, h1, h2, h3;
	void *data, *code;
	int fd;

	assert_int_equal(procmaps__code_hash(getpid(), &h0), 0);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	data = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_ptr_not_equal(data, MAP_FAILED);
	assert_int_equal(procmaps__code_hash(getpid(), &h1), 0);
	assert_true(h1 == h0);
	code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_ptr_not_equal(code, MAP_FAILED);
	assert_int_equal(procmaps__code_hash(getpid(), &h2), 0);
	assert_true(h2 != h1);
	munmap(code, 4096);
	munmap(data, 4096);
	assert_int_equal(procmaps__code_hash(getpid(), &h3), 0);
	assert_true(h3 == h0);
}

/* ... read by PROCMAP_QUERY where the kernel has it, and from the text of
 * /proc/PID/maps (older kernels; MEMTRACE_NO_PROCMAP_QUERY): each way. */
static void test_code_hash(void **state)
{
	uint64_t h;

	(void)state;
	code_hash_moves();
	assert_int_equal(setenv("MEMTRACE_NO_PROCMAP_QUERY", "1", 1), 0);
	code_hash_moves();
	assert_int_equal(procmaps__code_hash(INT_MAX, &h), -ENOENT);
	unsetenv("MEMTRACE_NO_PROCMAP_QUERY");
	assert_int_equal(procmaps__code_hash(INT_MAX, &h), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_own_function),
		cmocka_unit_test(test_read_function_bytes),
		cmocka_unit_test(test_libc_symbols),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_build_id),
		cmocka_unit_test(test_no_build_id),
		cmocka_unit_test(test_files_hash),
		cmocka_unit_test(test_code_hash),
	};

	return cmocka_run_group_tests_name("elf_util", tests, NULL, NULL);
}
