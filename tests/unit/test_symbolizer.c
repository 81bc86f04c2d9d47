// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * procmaps and the symbolizer on this very process: return addresses taken
 * at call sites whose lines we record must come back as those lines, with
 * inline frames; libc must be found with its build-id.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "elf_util.h"
#include "procmaps.h"
#include "symbolizer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* No inlining, cloning or IPA: the calls below must stay real calls. */
#if defined(__clang__)
#define MT_NOIPA __attribute__((noinline))
#else
#define MT_NOIPA __attribute__((noipa))
#endif

uint64_t mt_test_callee(void);
uint64_t mt_test_caller(void);
uint64_t mt_test_inline_caller(void);

static volatile int caller_line, inlined_line, inline_call_line;

MT_NOIPA uint64_t mt_test_callee(void)
{
	uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);

	asm volatile("" : "+r"(ra));
	return ra;
}

/* The asm after each call keeps it from becoming a tail call (sibling-call
 * optimization is on at -O2), which would leave no return address here. */
MT_NOIPA uint64_t mt_test_caller(void)
{
	uint64_t ra = mt_test_callee(); caller_line = __LINE__;

	asm volatile("" : "+r"(ra)::"memory");
	return ra;
}

static inline __attribute__((always_inline)) uint64_t mt_test_inlined(void)
{
	uint64_t ra = mt_test_callee(); inlined_line = __LINE__;

	asm volatile("" : "+r"(ra)::"memory");
	return ra;
}

MT_NOIPA uint64_t mt_test_inline_caller(void)
{
	uint64_t ra = mt_test_inlined(); inline_call_line = __LINE__;

	asm volatile("" : "+r"(ra)::"memory");
	return ra;
}

struct fixture {
	struct procmaps pm;
	struct symbolizer *sym;
	char exe[PATH_MAX];
	int exe_mod; /* index of our text mapping, = the symbolizer's module index */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const struct trace_module *m;

	if (!fx || procmaps__read(&fx->pm, getpid()) != 0)
		return -1;
	fx->sym = symbolizer__new(NULL);
	if (!fx->sym || proc_exe_path(getpid(), fx->exe, sizeof(fx->exe)) != 0)
		return -1;
	for (size_t i = 0; i < fx->pm.nr; i++)
		if (symbolizer__add_module(fx->sym, &fx->pm.mods[i]) != 0)
			return -1;
	m = procmaps__find(&fx->pm, (uint64_t)(uintptr_t)mt_test_caller);
	if (!m)
		return -1;
	fx->exe_mod = (int)(m - fx->pm.mods);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	symbolizer__free(fx->sym);
	procmaps__free(&fx->pm);
	free(fx);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

static void test_procmaps_self(void **state)
{
	struct fixture *fx = *state;
	const struct trace_module *exe = &fx->pm.mods[fx->exe_mod], *libc;
	uint8_t id[32];
	uint32_t len;
	bool libc_path = false;

	assert_string_equal(exe->path, fx->exe);
	assert_int_equal(elf_read_build_id(fx->exe, id, sizeof(id), &len), 0);
	assert_int_equal(exe->build_id_len, len);
	assert_memory_equal(exe->build_id, id, len);
	libc = procmaps__find(&fx->pm, (uint64_t)(uintptr_t)malloc);
	assert_non_null(libc);
	assert_non_null(strstr(libc->path, "libc.so"));
	assert_int_equal(libc->build_id_len, 20);
	assert_null(procmaps__find(&fx->pm, 0x10));
	/* Every mapped file once. */
	for (size_t i = 0; i < fx->pm.nr_paths; i++) {
		libc_path |= strcmp(fx->pm.paths[i], libc->path) == 0;
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(fx->pm.paths[i], fx->pm.paths[j]);
	}
	assert_true(libc_path);
	print_message("%zu executable mappings, %zu files; libc %s\n", fx->pm.nr, fx->pm.nr_paths,
		      libc->path);
}

static void test_proc_exe_path(void **state)
{
	char small[4];

	assert_int_equal(proc_exe_path(getpid(), small, sizeof(small)), -ENAMETOOLONG);
	assert_int_equal(proc_exe_path(-1, small, sizeof(small)), -ENOENT);
}

static void test_resolve_caller(void **state)
{
	struct fixture *fx = *state;
	uint64_t ra = mt_test_caller();
	struct trace_symbol s;
	struct elf_function fn;

	assert_int_equal(symbolizer__resolve(fx->sym, ra, &s), 0);
	assert_int_equal(s.addr, ra);
	assert_int_equal(s.module, fx->exe_mod);
	assert_int_equal(elf_find_function(fx->exe, "mt_test_caller", &fn), 0);
	assert_true(s.module_offset > fn.vaddr && s.module_offset <= fn.vaddr + fn.size);
	assert_int_equal(s.nframes, 1);
	assert_string_equal(s.frames[0].function, "mt_test_caller");
	assert_string_equal(base_name(s.frames[0].file), "test_symbolizer.c");
	assert_int_equal(s.frames[0].line, caller_line);
	print_message("%s at %s:%u\n", s.frames[0].function, s.frames[0].file, s.frames[0].line);
}

static void test_resolve_inline(void **state)
{
	struct fixture *fx = *state;
	uint64_t ra = mt_test_inline_caller();
	struct trace_symbol s;

	assert_int_equal(symbolizer__resolve(fx->sym, ra, &s), 0);
	assert_int_equal(s.nframes, 2);
	assert_string_equal(s.frames[0].function, "mt_test_inlined");
	assert_string_equal(base_name(s.frames[0].file), "test_symbolizer.c");
	assert_int_equal(s.frames[0].line, inlined_line);
	assert_string_equal(s.frames[1].function, "mt_test_inline_caller");
	assert_string_equal(base_name(s.frames[1].file), "test_symbolizer.c");
	assert_int_equal(s.frames[1].line, inline_call_line);
	print_message("%s:%u inlined into %s:%u\n", s.frames[0].function, s.frames[0].line,
		      s.frames[1].function, s.frames[1].line);
}

static void test_resolve_libc(void **state)
{
	struct fixture *fx = *state;
	const struct trace_module *libc = procmaps__find(&fx->pm, (uint64_t)(uintptr_t)malloc);
	struct trace_symbol s;

	/* As if malloc's first instruction were a call. */
	assert_int_equal(symbolizer__resolve(fx->sym, (uint64_t)(uintptr_t)malloc + 1, &s), 0);
	assert_int_equal(s.module, (int)(libc - fx->pm.mods));
	assert_true(s.nframes >= 1);
	assert_non_null(s.frames[s.nframes - 1].function);
	assert_non_null(strstr(s.frames[s.nframes - 1].function, "malloc"));
	print_message("malloc+1 -> %s\n", s.frames[s.nframes - 1].function);
}

static void test_resolve_nowhere(void **state)
{
	struct fixture *fx = *state;
	struct trace_symbol s;

	assert_int_equal(symbolizer__resolve(fx->sym, 0x10, &s), 0);
	assert_int_equal(s.module, -1);
	assert_int_equal(s.nframes, 0);
	assert_null(s.frames);
}

/* A module whose file is gone, or whose file is not the one that was
 * mapped (build-id differs), gives module+offset and no made-up names. */
static void test_resolve_unreadable(void **state)
{
	struct fixture *fx = *state;
	struct symbolizer *sym = symbolizer__new("/nonexistent-root");
	struct trace_module gone = {.start = 0x10000, .end = 0x20000, .file_offset = 0x1000,
				    .path = "/nonexistent/libgone.so"};
	struct trace_module wrong = fx->pm.mods[fx->exe_mod];
	uint64_t ra = mt_test_caller();
	struct trace_symbol s;

	assert_non_null(sym);
	wrong.build_id[0] ^= 0xff;
	assert_int_equal(symbolizer__add_module(sym, &gone), 0);
	assert_int_equal(symbolizer__add_module(sym, &wrong), 0);
	assert_int_equal(symbolizer__resolve(sym, 0x10010, &s), 0);
	assert_int_equal(s.module, 0);
	assert_int_equal(s.module_offset, 0x1010);
	assert_int_equal(s.nframes, 0);
	assert_int_equal(symbolizer__resolve(sym, ra, &s), 0);
	assert_int_equal(s.module, 1);
	assert_int_equal(s.nframes, 0);
	symbolizer__free(sym);
}

/* Files are read under the root first: the target's view of the tree. */
static void test_resolve_with_root(void **state)
{
	struct fixture *fx = *state;
	char root[64];
	struct symbolizer *sym;
	struct trace_symbol s;
	uint64_t ra = mt_test_caller();

	snprintf(root, sizeof(root), "/proc/%d/root", (int)getpid());
	sym = symbolizer__new(root);
	assert_non_null(sym);
	assert_int_equal(symbolizer__add_module(sym, &fx->pm.mods[fx->exe_mod]), 0);
	assert_int_equal(symbolizer__resolve(sym, ra, &s), 0);
	assert_int_equal(s.module, 0);
	assert_int_equal(s.nframes, 1);
	assert_string_equal(s.frames[0].function, "mt_test_caller");
	symbolizer__free(sym);
}

/* Stripped binaries on another machine: only /usr/lib/debug/.build-id has
 * the file (libc6-dbg provides libc's), and addresses still resolve. */
static void test_resolve_debug_only(void **state)
{
	struct fixture *fx = *state;
	const struct trace_module *libc = procmaps__find(&fx->pm, (uint64_t)(uintptr_t)malloc);
	struct trace_module moved = *libc;
	uint64_t addr = (uint64_t)(uintptr_t)malloc + 1;
	struct trace_symbol want, got;
	struct symbolizer *sym;

	char debug[128], hex[2 * sizeof(libc->build_id) + 1] = "";

	/* Skipped only where the host has no debug file for this libc: a
	 * symbolizer that cannot use the one it has fails. */
	for (uint32_t i = 0; i < libc->build_id_len; i++)
		snprintf(hex + 2 * i, 3, "%02x", libc->build_id[i]);
	snprintf(debug, sizeof(debug), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (!libc->build_id_len || access(debug, R_OK))
		skip();
	moved.path = "/nonexistent/libc.so.6";
	sym = symbolizer__new(NULL);
	assert_non_null(sym);
	assert_int_equal(symbolizer__add_module(sym, &moved), 0);
	assert_int_equal(symbolizer__resolve(sym, addr, &got), 0);
	assert_true(got.nframes > 0);
	assert_int_equal(symbolizer__resolve(fx->sym, addr, &want), 0);
	assert_int_equal(got.module_offset, want.module_offset);
	assert_int_equal(got.nframes, want.nframes);
	assert_string_equal(got.frames[0].function, want.frames[0].function);
	print_message("malloc+1 from the build-id debug file -> %s\n", got.frames[0].function);
	symbolizer__free(sym);
}

static void test_demangle(void **state)
{
	char *d = symbolizer_demangle("_ZN3foo3barEi");

	assert_string_equal(d, "foo::bar(int)");
	free(d);
	d = symbolizer_demangle("_ZN4core3fmt5write17h0123456789abcdefE"); /* legacy Rust */
	assert_string_equal(d, "core::fmt::write");
	free(d);
	d = symbolizer_demangle("_RNvCs1234_7mycrate3foo"); /* Rust v0 */
	assert_string_equal(d, "mycrate::foo");
	free(d);
	assert_null(symbolizer_demangle("mt_test_caller"));
	assert_null(symbolizer_demangle("_Zgarbage"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_procmaps_self),
		cmocka_unit_test(test_proc_exe_path),
		cmocka_unit_test(test_resolve_caller),
		cmocka_unit_test(test_resolve_inline),
		cmocka_unit_test(test_resolve_libc),
		cmocka_unit_test(test_resolve_nowhere),
		cmocka_unit_test(test_resolve_unreadable),
		cmocka_unit_test(test_resolve_with_root),
		cmocka_unit_test(test_resolve_debug_only),
		cmocka_unit_test(test_demangle),
	};

	return cmocka_run_group_tests_name("symbolizer", tests, setup, teardown);
}
