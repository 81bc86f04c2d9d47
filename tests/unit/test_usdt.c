// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * usdt_parse_arg: the argument forms of .note.stapsdt that memtrace reads
 * (inproc/memtrace.h's, and the compilers' for glibc's allocator probes):
 * each kind, width, sign, register and constant, and the forms refused.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "usdt.h"

#include <errno.h>

/* struct pt_regs offsets, as BPF reads them */
#define RDI 112
#define RSI 104
#define RBX 40
#define RBP 32
#define R12 24

static void parse(const char *arg, uint8_t kind, uint16_t reg, int64_t imm)
{
	uint8_t k = 0xff;
	uint16_t r = 0xffff;
	int64_t i = 12345;

	assert_int_equal(usdt_parse_arg(arg, &k, &r, &i), 0);
	assert_int_equal(k, kind);
	if (MT_USDT_KIND(kind) != MT_USDT_ARG_IMM)
		assert_int_equal(r, reg);
	assert_int_equal(i, imm);
}

static void test_registers(void **state)
{
	(void)state;
	parse("8@%rdi", MT_USDT_ARG_REG, RDI, 0);
	parse("-8@%rsi", MT_USDT_ARG_REG | MT_USDT_SIGNED, RSI, 0);
	parse("-4@%edi", MT_USDT_ARG_REG | 4 << 4 | MT_USDT_SIGNED, RDI, 0);
	parse("4@%ebx", MT_USDT_ARG_REG | 4 << 4, RBX, 0);
	parse("2@%si", MT_USDT_ARG_REG | 2 << 4, RSI, 0);
	parse("1@%r12b", MT_USDT_ARG_REG | 1 << 4, R12, 0);
	parse("-1@%dil", MT_USDT_ARG_REG | 1 << 4 | MT_USDT_SIGNED, RDI, 0);
}

static void test_constants(void **state)
{
	(void)state;
	parse("8@$0", MT_USDT_ARG_IMM, 0, 0);
	parse("-4@$-8", MT_USDT_ARG_IMM | 4 << 4 | MT_USDT_SIGNED, 0, -8);
	parse("8@$0x40", MT_USDT_ARG_IMM, 0, 64);
}

static void test_memory(void **state)
{
	(void)state;
	parse("8@8(%rdi)", MT_USDT_ARG_MEM, RDI, 8);
	parse("8@(%rbx)", MT_USDT_ARG_MEM, RBX, 0);
	parse("-4@-24(%rbp)", MT_USDT_ARG_MEM | 4 << 4 | MT_USDT_SIGNED, RBP, -24);
	parse("8@0x10(%r12)", MT_USDT_ARG_MEM, R12, 16);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"%rdi",             /* no size */
		"3@%rdi",           /* no such width */
		"16@%rdi",
		"8@%xmm0",          /* not a general register */
		"8@8(%rdi,%rax,8)", /* an index register */
		"8@%fs:8",          /* a segment */
		"8@main_arena(%rip)", /* a symbol, not a number */
		"8@8(%rdi",
		"8@8(%rdi)x",
		"8@$",
		"8@$1x",
		"",
		"-9223372036854775808@$0", /* LONG_MIN bytes: labs() of it is undefined */
		"9223372036854775807@%rdi",
		"-16@%rdi",
	};
	uint8_t k;
	uint16_t r;
	int64_t i;

	(void)state;
	for (size_t n = 0; n < sizeof(bad) / sizeof(bad[0]); n++)
		assert_int_equal(usdt_parse_arg(bad[n], &k, &r, &i), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers),
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
