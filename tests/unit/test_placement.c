// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/record/placement_x86.c: where an allocator function's probe goes
 * (the first instruction the kernel emulates that every call executes
 * before the probe's argument registers, rsp or rbp change, and that no
 * branch of the function lands on or before), and whether a function only
 * forwards to another allocator. The machine code below is what `as`
 * assembles from the Intel-syntax lines in the comments, shaped like the
 * allocators of glibc, jemalloc, mimalloc and libstdc++.
 */
#include "placement.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#define V 0x10000 /* the ELF address every sample function starts at */

struct want {
	uint32_t offset;
	bool emulated;
	const char *insn;
};

static void check(const uint8_t *code, size_t len, unsigned nargs, struct want w, const char *what)
{
	struct placement pl;

	assert_int_equal(placement_choose(code, len, V, nargs, UINT32_MAX, &pl), 0);
	assert_int_equal(pl.offset, w.offset);
	assert_int_equal(pl.emulated, w.emulated);
	assert_string_equal(pl.insn, w.insn);
	assert_true(pl.emulated ? pl.why == NULL : pl.why != NULL);
	print_message("%s: +%u %s, %s%s\n", what, pl.offset, pl.insn,
		      pl.emulated ? "emulated" : "single-stepped: ", pl.emulated ? "" : pl.why);
}

/* glibc free: the test is single-stepped, the je after it emulated and still on every path. */
static void test_free_past_test(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x85, 0xff,       /* test rdi, rdi */
		0x74, 0x05,             /* je +0xa */
		0x55,                   /* push rbp */
		0x48, 0x89, 0xe5,       /* mov rbp, rsp */
		0x5d,                   /* pop rbp */
		0xc3,                   /* ret */
	};

	check(code, sizeof(code), 1, (struct want){ .offset = 3, .emulated = true, .insn = "je 0x1000a" },
	      "free-like");
}

/* glibc malloc: push r12 (REX.B) first. */
static void test_push_first(void **state)
{
	static const uint8_t code[] = { 0x41, 0x54, 0xc3 }; /* push r12; ret */

	check(code, sizeof(code), 1, (struct want){ .offset = 0, .emulated = true, .insn = "push r12" },
	      "malloc-like");
}

/* jemalloc free: rax, rdx and rcx change before the jne, which is fine for
 * free (it reads rdi only) and not for a function whose probe reads rdx. */
static void test_only_read_args_matter(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf8,                         /* mov rax, rdi */
		0x48, 0x8b, 0x15, 0x00, 0x10, 0x00, 0x00, /* mov rdx, qword ptr [rip + 0x1000] */
		0x48, 0x89, 0xf9,                         /* mov rcx, rdi */
		0x48, 0x3b, 0x88, 0xb0, 0x01, 0x00, 0x00, /* cmp rcx, qword ptr [rax + 0x1b0] */
		0x75, 0x01,                               /* jne +0x17 */
		0xc3, 0xc3,                               /* ret; ret */
	};

	check(code, sizeof(code), 1, (struct want){ .offset = 20, .emulated = true, .insn = "jne 0x10017" },
	      "jemalloc-free-like, 1 argument");
	check(code, sizeof(code), 3, (struct want){ .offset = 0, .emulated = false, .insn = "mov rax, rdi" },
	      "the same, 3 arguments");
}

/* mimalloc malloc: the size is copied to rsi, then rdi is reused; the
 * probe moves on to the ja and reads the size from rsi there. A 32-bit copy
 * (mov esi, edi) keeps only half of it: the argument is lost. */
static void test_arg_moved(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, /* mov rax, qword ptr [rip + 0x1000] */
		0x48, 0x89, 0xfe,                         /* mov rsi, rdi */
		0x64, 0x48, 0x8b, 0x38,                   /* mov rdi, qword ptr fs:[rax] */
		0x48, 0x81, 0xfe, 0x00, 0x04, 0x00, 0x00, /* cmp rsi, 0x400 */
		0x77, 0x00,                               /* ja +0x17 */
		0xc3,                                     /* ret */
	};
	static const uint8_t half[] = {
		0x89, 0xfe,             /* mov esi, edi */
		0x31, 0xff,             /* xor edi, edi */
		0x74, 0x00,             /* je +6 */
		0xc3,                   /* ret */
	};
	struct placement pl;

	check(code, sizeof(code), 1, (struct want){ .offset = 21, .emulated = true, .insn = "ja 0x10017" },
	      "mimalloc-malloc-like");
	assert_int_equal(placement_choose(code, sizeof(code), V, 1, UINT32_MAX, &pl), 0);
	assert_int_equal(pl.arg_reg[0], MT_ARG_RSI);
	assert_string_equal(pl.moved, "argument 1 in rsi");
	check(half, sizeof(half), 1, (struct want){ .offset = 0, .emulated = false, .insn = "mov esi, edi" },
	      "a 32-bit copy");
}

/* glibc's realloc style of mimalloc: both arguments shuffled before a tail jump. */
static void test_args_shuffled(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf2,             /* mov rdx, rsi */
		0x48, 0x89, 0xfe,             /* mov rsi, rdi */
		0x48, 0x89, 0xc7,             /* mov rdi, rax */
		0xe9, 0x00, 0x10, 0x00, 0x00, /* jmp mi_heap_realloc */
	};
	struct placement pl;

	assert_int_equal(placement_choose(code, sizeof(code), V, 2, UINT32_MAX, &pl), 0);
	assert_int_equal(pl.offset, 9);
	assert_true(pl.emulated);
	assert_int_equal(pl.arg_reg[0], MT_ARG_RSI);
	assert_int_equal(pl.arg_reg[1], MT_ARG_RDX);
	assert_string_equal(pl.moved, "argument 1 in rsi, argument 2 in rdx");
	print_message("realloc-like: +9 jmp, %s\n", pl.moved);
}

/* CET builds: endbr64 is not emulated, and changes nothing. */
static void test_endbr64_walked_past(void **state)
{
	static const uint8_t code[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0xc3 }; /* endbr64; push rbp; ret */

	check(code, sizeof(code), 1, (struct want){ .offset = 4, .emulated = true, .insn = "push rbp" },
	      "CET");
}

/* A loop back to the je would hit the probe twice per call. */
static void test_branch_into_prologue(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x85, 0xff, /* test rdi, rdi */
		0x74, 0x05,       /* 1: je +0xa */
		0x48, 0x89, 0xf8, /* mov rax, rdi */
		0xeb, 0xf9,       /* jmp 1b */
		0xc3,             /* ret */
	};

	check(code, sizeof(code), 1, (struct want){ .offset = 0, .emulated = false, .insn = "test rdi, rdi" },
	      "branch into the prologue");
}

/* A cold part elsewhere jumping back to the je: the probe stays at +0;
 * one landing past the je changes nothing. */
static void test_branch_from_outside(void **state)
{
	static const uint8_t code[] = { 0x48, 0x85, 0xff, 0x74, 0x00, 0xc3 }; /* test rdi, rdi; je +5; ret */
	struct placement pl;

	assert_int_equal(placement_choose(code, sizeof(code), V, 1, 3, &pl), 0);
	assert_int_equal(pl.offset, 0);
	assert_false(pl.emulated);
	assert_int_equal(placement_choose(code, sizeof(code), V, 1, 5, &pl), 0);
	assert_int_equal(pl.offset, 3);
	assert_true(pl.emulated);
	print_message("a branch from outside onto the je keeps the probe at +0; past it, at +3\n");
}

/* Emulation is decided by the bytes: segment-prefixed and 16-bit forms are not. */
static void test_prefixes(void **state)
{
	static const uint8_t pushw[] = { 0x66, 0x55, 0xc3 };      /* push bp: 16-bit */
	static const uint8_t nop[] = { 0x90, 0xc3 };              /* nop */
	static const uint8_t bnd_jmp[] = { 0xf2, 0xeb, 0x00, 0xc3 }; /* bnd jmp +3 */

	check(pushw, sizeof(pushw), 1, (struct want){ .offset = 0, .emulated = false, .insn = "push bp" },
	      "push bp");
	check(nop, sizeof(nop), 1, (struct want){ .offset = 0, .emulated = true, .insn = "nop" }, "nop");
	check(bnd_jmp, sizeof(bnd_jmp), 1,
	      (struct want){ .offset = 0, .emulated = true, .insn = "bnd jmp 0x10003" }, "bnd jmp");
}

/* --- forwarders: targets V+0x1000.. are a probed allocator, V+0x2000.. some
 * other function, V+0x3000.. no function (a cold part). */
static enum placement_target classify(void *ctx, uint64_t addr, bool slot)
{
	uint64_t t = addr - V;

	if (slot)
		return TARGET_OTHER;
	return t >= 0x1000 && t < 0x2000 ? TARGET_ALLOCATOR : t >= 0x3000 && t < 0x4000 ? TARGET_COLD
											 : TARGET_OTHER;
}

static bool forwards(const uint8_t *code, size_t len, bool void_return)
{
	return placement_forwards(code, len, V, void_return, classify, NULL);
}

/* libstdc++'s operator new: malloc, and on failure the new handler in a
 * loop or a throw in the cold part. */
static void test_operator_new(void **state)
{
	static const uint8_t code[] = {
		0xf3, 0x0f, 0x1e, 0xfa,             /* endbr64 */
		0x48, 0x85, 0xff,                   /* test rdi, rdi */
		0xb8, 0x01, 0x00, 0x00, 0x00,       /* mov eax, 1 */
		0x53,                               /* push rbx */
		0x48, 0x0f, 0x45, 0xc7,             /* cmovne rax, rdi */
		0x48, 0x89, 0xc3,                   /* mov rbx, rax */
		0x48, 0x89, 0xdf,                   /* 6: mov rdi, rbx */
		0xe8, 0xfb, 0x0f, 0x00, 0x00,       /* call malloc */
		0x48, 0x85, 0xc0,                   /* test rax, rax */
		0x74, 0x02,                         /* je 7f */
		0x5b,                               /* pop rbx */
		0xc3,                               /* ret */
		0xe8, 0xfb, 0x1f, 0x00, 0x00,       /* 7: call std::get_new_handler */
		0x48, 0x85, 0xc0,                   /* test rax, rax */
		0x0f, 0x84, 0xfa, 0x2f, 0x00, 0x00, /* je the cold part (throws) */
		0xff, 0xd0,                         /* call rax */
		0xeb, 0xdf,                         /* jmp 6b */
	};

	assert_true(forwards(code, sizeof(code), false));
	print_message("operator new (malloc, new handler loop, cold throw): forwards\n");
}

/* A replacement operator new with a pool: small sizes never reach malloc. */
static void test_pool_is_no_forwarder(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x83, 0xff, 0x40,       /* cmp rdi, 64 */
		0x77, 0x05,                   /* ja 8f */
		0xe9, 0xfb, 0x1f, 0x00, 0x00, /* jmp pool_alloc */
		0xe9, 0xfb, 0x0f, 0x00, 0x00, /* 8: jmp malloc */
	};
	static const uint8_t own_value[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00,             /* call malloc */
		0x48, 0x85, 0xc0,                         /* test rax, rax */
		0x75, 0x07,                               /* jne 9f */
		0x48, 0x8d, 0x05, 0x00, 0x01, 0x00, 0x00, /* lea rax, [rip + 0x100] */
		0xc3,                                     /* 9: ret */
	};

	assert_false(forwards(code, sizeof(code), false));
	/* on one path malloc's NULL is replaced by a block of its own */
	assert_true(forwards(own_value, 10, false) == false);
	assert_false(forwards(own_value, sizeof(own_value), false));
	print_message("a tail call to a pool, a block of its own, a cut-off body: no forwarder\n");
}

/* glibc's reallocarray: realloc, or NULL with errno set on overflow. A
 * function returning nothing (free's role) may not end a path without it. */
static void test_reallocarray(void **state)
{
	static const uint8_t code[] = {
		0x48, 0x89, 0xf0,                         /* mov rax, rsi */
		0x48, 0xf7, 0xe2,                         /* mul rdx */
		0x48, 0x89, 0xc6,                         /* mov rsi, rax */
		0x70, 0x05,                               /* jo 10f */
		0xe9, 0xfb, 0x0f, 0x00, 0x00,             /* jmp realloc */
		0x48, 0x8b, 0x05, 0x00, 0x10, 0x00, 0x00, /* 10: mov rax, qword ptr [rip + 0x1000] */
		0x64, 0xc7, 0x00, 0x0c, 0x00, 0x00, 0x00, /* mov dword ptr fs:[rax], 12 */
		0x31, 0xc0,                               /* xor eax, eax */
		0xc3,                                     /* ret */
	};
	struct placement pl;

	assert_true(forwards(code, sizeof(code), false));
	assert_false(forwards(code, sizeof(code), true));
	assert_int_equal(placement_choose(code, sizeof(code), V, 3, UINT32_MAX, &pl), 0);
	assert_false(pl.emulated); /* mul writes rdx before the jo */
	print_message("reallocarray: forwards (NULL on overflow); placement single-stepped: %s\n", pl.why);
}

/* glibc 2.36's munmap and mmap, as Debian 12 ships them: the C library's
 * wrappers that --rss and --budget's large blocks probe. munmap has nothing
 * the kernel emulates before its syscall; past it (rdi, rsi kept by the
 * kernel) the jae is, for a probe reading two arguments. One reading a
 * fourth (rcx, which the syscall clobbers) stays at the start. mmap's jne
 * comes before its syscall, with rcx still whole. Allocator placement never
 * passes a syscall. */
static void test_syscall_wrappers(void **state)
{
	static const uint8_t munmap_code[] = {
		0xb8, 0x0b, 0x00, 0x00, 0x00,             /* mov eax, 0xb */
		0x0f, 0x05,                               /* syscall */
		0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff,       /* cmp rax, -0xfff */
		0x73, 0x01,                               /* jae +0x10 */
		0xc3,                                     /* ret */
		0x48, 0x8b, 0x0d, 0xc9, 0x13, 0x0d, 0x00, /* mov rcx, qword ptr [rip + 0xd13c9] */
	};
	static const uint8_t mmap_code[] = {
		0x41, 0x89, 0xca,                         /* mov r10d, ecx */
		0x41, 0xf7, 0xc1, 0xff, 0x0f, 0x00, 0x00, /* test r9d, 0xfff */
		0x75, 0x14,                               /* jne +0x20 */
		0xb8, 0x09, 0x00, 0x00, 0x00,             /* mov eax, 9 */
		0x0f, 0x05,                               /* syscall */
		0xc3,                                     /* ret */
	};
	struct placement pl;

	assert_int_equal(placement_choose_wrapper(munmap_code, sizeof(munmap_code), V, 2, &pl), 0);
	assert_true(pl.emulated);
	assert_int_equal(pl.offset, 13);
	assert_string_equal(pl.moved, "");
	assert_int_equal(placement_choose_wrapper(munmap_code, sizeof(munmap_code), V, 4, &pl), 0);
	assert_false(pl.emulated);
	assert_int_equal(pl.offset, 0);
	assert_int_equal(placement_choose(munmap_code, sizeof(munmap_code), V, 2, UINT32_MAX, &pl), 0);
	assert_false(pl.emulated);
	assert_int_equal(placement_choose_wrapper(mmap_code, sizeof(mmap_code), V, 4, &pl), 0);
	assert_true(pl.emulated);
	assert_int_equal(pl.offset, 10);
	assert_string_equal(pl.moved, "");
	print_message("syscall wrappers: munmap +13 (past its syscall) for two arguments, +0 for four; mmap +10\n");
}

/* A PLT stub, with and without IBT: the GOT slot it jumps through. */
static void test_plt_slot(void **state)
{
	static const uint8_t ibt[] = {
		0xf3, 0x0f, 0x1e, 0xfa,                         /* endbr64 */
		0xf2, 0xff, 0x25, 0x10, 0x00, 0x00, 0x00,       /* bnd jmp qword ptr [rip + 0x10] */
		0x0f, 0x1f, 0x44, 0x00, 0x00,                   /* nop */
	};
	static const uint8_t plain[] = { 0xff, 0x25, 0x20, 0x00, 0x00, 0x00, 0x68, 0x00, 0x00, 0x00, 0x00 };
	static const uint8_t not_stub[] = { 0x55, 0xc3 };

	assert_int_equal(placement_plt_slot(ibt, sizeof(ibt), V), V + 11 + 0x10);
	assert_int_equal(placement_plt_slot(plain, sizeof(plain), V), V + 6 + 0x20);
	assert_int_equal(placement_plt_slot(not_stub, sizeof(not_stub), V), 0);
	print_message("PLT stubs: GOT slots found; no slot in a function\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_free_past_test),
		cmocka_unit_test(test_push_first),
		cmocka_unit_test(test_only_read_args_matter),
		cmocka_unit_test(test_arg_moved),
		cmocka_unit_test(test_args_shuffled),
		cmocka_unit_test(test_endbr64_walked_past),
		cmocka_unit_test(test_branch_into_prologue),
		cmocka_unit_test(test_branch_from_outside),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_operator_new),
		cmocka_unit_test(test_pool_is_no_forwarder),
		cmocka_unit_test(test_syscall_wrappers),
		cmocka_unit_test(test_reallocarray),
		cmocka_unit_test(test_plt_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
