// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The unwind-table builder's checks against damaged CFI
 * (user/record/unwind_table.h): a rule a compiler would not write for the
 * code it describes becomes a row that stops the walk, never a guess. On
 * the stripped no-frame-pointer build of tests/progs/unwind_levels kept in
 * tests/fuzz/walk/ (the one tests/fuzz/fuzz_unwind_walk runs), whose
 * level2 is:
 *     1210: sub $0x8,%rsp      FDE at .eh_frame+0xa4, program:
 *     1214: call level3          advance_loc 4; def_cfa_offset 16
 *     1219: add $0x8,%rsp        advance_loc 9; def_cfa_offset 8
 *     121d: ret
 * each test damages one byte of that program and looks at the rows. The
 * build with CFI only in .debug_frame, beside it, checks the decoding of
 * CFA programs before libdw runs them.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unwind_table.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "tests/fuzz/walk/unwind_levels_nofp"
#define PROGRAM_DEBUG_FRAME "tests/fuzz/walk/unwind_levels_dbgframe"
#define LEVEL3_DEBUG_FDE 0x18 /* from .debug_frame's start; its program 24 bytes in */
#define LEVEL2_FDE 0xa4 /* from .eh_frame's start */
#define FDE_PROGRAM 17  /* length, CIE pointer, pc begin, pc range, augmentation length */

static uint8_t *file;
static size_t size;
static size_t program_at; /* file offset of level2's CFA program */

/* NAME under $TOP (tests/run.sh sets it), else under the working directory. */
static FILE *open_in_tree(const char *name)
{
	char path[4096];
	const char *top = getenv("TOP");

	snprintf(path, sizeof(path), "%s/%s", top && *top ? top : ".", name);
	return fopen(path, "rb");
}

static int setup(void **state)
{
	FILE *f = open_in_tree(PROGRAM);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (!f)
		return -1; /* not in the tree: set TOP */
	fseek(f, 0, SEEK_END);
	size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	file = malloc(size);
	if (!file || fread(file, 1, size, f) != size)
		return -1;
	fclose(f);
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)file, size);
	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return -1;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".eh_frame"))
			program_at = sh.sh_offset + LEVEL2_FDE + FDE_PROGRAM;
	elf_end(elf);
	return program_at ? 0 : -1;
}

static int teardown(void **state)
{
	free(file);
	return 0;
}

/* The table of the program with the byte at AT (from level2's CFA program)
 * set to BYTE (AT < 0: undamaged). */
static void build(int at, uint8_t byte, struct unwind_table *t)
{
	uint8_t *copy = malloc(size);
	Elf *elf;

	assert_non_null(copy);
	memcpy(copy, file, size);
	if (at >= 0)
		copy[program_at + (size_t)at] = byte;
	elf = elf_memory((char *)copy, size);
	assert_non_null(elf);
	assert_int_equal(unwind_table__build(elf, t), 0);
	elf_end(elf);
	free(copy);
}

static void expect_row(const struct unwind_table *t, uint64_t pc, int kind, int cfa_off, unsigned flags)
{
	const struct mt_unwind_row *row = unwind_table__find(t, pc);

	assert_non_null(row);
	assert_int_equal(row->cfa_kind, kind);
	if (kind == MT_CFA_RSP)
		assert_int_equal(row->cfa_off, cfa_off);
	assert_int_equal(row->flags, flags);
}

/* The program as built: every rule checked against the code. */
static void test_undamaged(void **state)
{
	struct unwind_table t;
	static const uint8_t level2_program[] = { 0x44, 0x0e, 0x10, 0x49, 0x0e, 0x08 };

	assert_memory_equal(file + program_at, level2_program, sizeof(level2_program));
	build(-1, 0, &t);
	expect_row(&t, 0x1210, MT_CFA_RSP, 8, 0);
	expect_row(&t, 0x1214, MT_CFA_RSP, 16, 0);
	expect_row(&t, 0x121c, MT_CFA_RSP, 16, 0);
	expect_row(&t, 0x121d, MT_CFA_RSP, 8, 0);
	assert_int_equal(t.implausible, 0);
	unwind_table__free(&t);
}

/* def_cfa_offset 24 after a sub of 8: aligned, plausible alone, and wrong:
 * the walk would read level1's return address as level2's. */
static void test_offset_not_what_the_code_did(void **state)
{
	struct unwind_table t;

	build(2, 0x18, &t);
	expect_row(&t, 0x1214, MT_CFA_NONE, 0, 0);
	expect_row(&t, 0x121c, MT_CFA_NONE, 0, 0);
	assert_int_equal(t.implausible, 2); /* that row, and the next, judged against it */
	unwind_table__free(&t);
}

/* def_cfa_offset 12: not a multiple of 8, never an rsp value. */
static void test_offset_unaligned(void **state)
{
	struct unwind_table t;

	build(2, 0x0c, &t);
	expect_row(&t, 0x1214, MT_CFA_NONE, 0, 0);
	unwind_table__free(&t);
}

/* advance_loc 3: the new rule would start inside the sub, one byte early. */
static void test_row_moved(void **state)
{
	struct unwind_table t;

	build(0, 0x43, &t);
	expect_row(&t, 0x1213, MT_CFA_NONE, 0, 0);
	unwind_table__free(&t);
}

/* The epilogue's def_cfa_offset 16: the ret would find no return address. */
static void test_ret_not_at_rsp_plus_8(void **state)
{
	struct unwind_table t;

	build(5, 0x10, &t);
	expect_row(&t, 0x1214, MT_CFA_RSP, 16, 0);
	expect_row(&t, 0x121d, MT_CFA_NONE, 0, 0);
	unwind_table__free(&t);
}

/* The program cut after its first rule (advance_loc 9 becomes a nop): the
 * body's rule would cover the add and the ret. */
static void test_program_cut_short(void **state)
{
	struct unwind_table t;

	build(3, 0x00, &t);
	expect_row(&t, 0x1214, MT_CFA_NONE, 0, 0);
	expect_row(&t, 0x121d, MT_CFA_NONE, 0, 0);
	unwind_table__free(&t);
}

/* The program wiped (its first rule a nop): the entry's rule would cover
 * the whole function, past the sub that changed rsp. */
static void test_program_wiped(void **state)
{
	struct unwind_table t;

	build(0, 0x00, &t);
	expect_row(&t, 0x1210, MT_CFA_NONE, 0, 0);
	unwind_table__free(&t);
}

/* The file offset of the section named NAME in F (SIZE bytes), or 0; its
 * vaddr in *ADDR if not NULL. */
static size_t section_at(uint8_t *f, size_t size, const char *name, uint64_t *addr)
{
	Elf *elf = elf_memory((char *)f, size);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx, off = 0;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			off = sh.sh_offset;
			if (addr)
				*addr = sh.sh_addr;
		}
	elf_end(elf);
	return off;
}

static size_t section_offset(uint8_t *f, size_t size, const char *name)
{
	return section_at(f, size, name, NULL);
}

/* A register number of two million in a CFA program (DW_CFA_undefined in
 * place of level3's def_cfa_offset 16 and offset rbx): libdw would size
 * every frame's registers by it. The section is not used: no rows from
 * it, where the undamaged one gives level2's. */
static void test_huge_register(void **state)
{
	static const uint8_t level3_program[] = { 0x41, 0x0e, 0x10, 0x83, 0x02, 0x59, 0x0e, 0x08 };
	static const uint8_t undefined_huge[] = { 0x07, 0xff, 0xff, 0x7f };
	FILE *f = open_in_tree(PROGRAM_DEBUG_FRAME);
	struct unwind_table t;
	const struct mt_unwind_row *row;
	uint8_t *buf;
	size_t n, at;
	Elf *elf;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, n, f), n);
	fclose(f);
	at = section_offset(buf, n, ".debug_frame") + LEVEL3_DEBUG_FDE + 24;
	assert_memory_equal(buf + at, level3_program, sizeof(level3_program));

	elf = elf_memory((char *)buf, n);
	assert_int_equal(unwind_table__build(elf, &t), 0);
	elf_end(elf);
	row = unwind_table__find(&t, 0x1214);
	assert_non_null(row);
	assert_int_equal(row->cfa_kind, MT_CFA_RSP);
	assert_int_equal(row->cfa_off, 16);
	unwind_table__free(&t);

	memcpy(buf + at + 1, undefined_huge, sizeof(undefined_huge));
	elf = elf_memory((char *)buf, n);
	assert_int_equal(unwind_table__build(elf, &t), 0); /* .eh_frame still has crt's code */
	elf_end(elf);
	row = unwind_table__find(&t, 0x1214);
	assert_true(!row || row->cfa_kind == MT_CFA_NONE);
	unwind_table__free(&t);
	free(buf);
}

/* The table of COPY (SIZE bytes, freed here), its section headers gone
 * unless SECTIONS (libdw then finds .eh_frame through PT_GNU_EH_FRAME):
 * what unwind_table__build returned. */
static int build_copy(uint8_t *copy, bool sections, struct unwind_table *t)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)copy;
	Elf *elf;
	int err;

	if (!sections) {
		eh->e_shoff = 0;
		eh->e_shnum = 0;
		eh->e_shstrndx = 0;
	}
	elf = elf_memory((char *)copy, size);
	assert_non_null(elf);
	err = unwind_table__build(elf, t);
	elf_end(elf);
	free(copy);
	return err;
}

/* The nofp build with its section headers gone (libdw then finds .eh_frame
 * through PT_GNU_EH_FRAME, to the end of the file) and, if HUGE, level2's
 * program starting with DW_CFA_undefined of register two million. What
 * unwind_table__build returned. */
static int build_without_sections(bool huge, struct unwind_table *t)
{
	static const uint8_t undefined_huge[] = { 0x07, 0xff, 0xff, 0x7f };
	uint8_t *copy = malloc(size);

	assert_non_null(copy);
	memcpy(copy, file, size);
	if (huge)
		memcpy(copy + program_at, undefined_huge, sizeof(undefined_huge));
	return build_copy(copy, false, t);
}

/* Without section headers the programs are checked all the same: the
 * undamaged file gives level2's rows, the damaged one none (before, libdw
 * ran it unchecked; fuzz_unwind_table's 1.6 KiB file took 2 GB and 5 s). */
static void test_huge_register_no_section_headers(void **state)
{
	struct unwind_table t;

	assert_int_equal(build_without_sections(false, &t), 0);
	expect_row(&t, 0x1210, MT_CFA_RSP, 8, 0);
	expect_row(&t, 0x1214, MT_CFA_RSP, 16, 0);
	unwind_table__free(&t);
	/* .eh_frame is its only CFI: no table at all */
	assert_int_equal(build_without_sections(true, &t), -ENODATA);
}

/* The nofp build with the .eh_frame_hdr search table's entry for level2
 * pointing one byte into level2's FDE if OFF_FDE, and without section
 * headers unless SECTIONS. What unwind_table__build returned. */
static int build_search_table(bool off_fde, bool sections, struct unwind_table *t)
{
	uint8_t *copy = malloc(size);
	uint64_t hdr_addr = 0, eh_addr = 0;
	size_t hdr = section_at(file, size, ".eh_frame_hdr", &hdr_addr);
	int32_t level2, fde;
	uint32_t count;
	int found = 0;

	assert_non_null(copy);
	assert_true(section_at(file, size, ".eh_frame", &eh_addr));
	level2 = (int32_t)(eh_addr + LEVEL2_FDE - hdr_addr);
	memcpy(copy, file, size);
	/* version 1; eh_frame_ptr, count, table: pcrel sdata4, udata4, datarel sdata4 */
	assert_memory_equal(copy + hdr, "\x01\x1b\x03\x3b", 4);
	memcpy(&count, copy + hdr + 8, 4);
	for (uint32_t i = 0; i < count; i++) {
		size_t at = hdr + 12 + 8 * i + 4; /* the entry's FDE pointer, after its start */

		memcpy(&fde, copy + at, 4);
		if (fde != level2)
			continue;
		found++;
		fde += off_fde;
		memcpy(copy + at, &fde, 4);
	}
	assert_int_equal(found, 1);
	return build_copy(copy, sections, t);
}

/* A search table entry pointing inside an FDE: libdw would parse an entry
 * there, a program never checked (fuzz_unwind_table's 1.6 KiB file had
 * libdw ask for 2 GB so). .eh_frame, the only CFI, is refused: no table,
 * with the section headers or without; the undamaged file gives level2's
 * rows both ways. */
static void test_search_table_off_an_fde(void **state)
{
	struct unwind_table t;

	for (int sections = 0; sections < 2; sections++) {
		assert_int_equal(build_search_table(false, sections, &t), 0);
		expect_row(&t, 0x1214, MT_CFA_RSP, 16, 0);
		unwind_table__free(&t);
		assert_int_equal(build_search_table(true, sections, &t), -ENODATA);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_undamaged),
		cmocka_unit_test(test_offset_not_what_the_code_did),
		cmocka_unit_test(test_offset_unaligned),
		cmocka_unit_test(test_row_moved),
		cmocka_unit_test(test_ret_not_at_rsp_plus_8),
		cmocka_unit_test(test_program_cut_short),
		cmocka_unit_test(test_program_wiped),
		cmocka_unit_test(test_huge_register),
		cmocka_unit_test(test_huge_register_no_section_headers),
		cmocka_unit_test(test_search_table_off_an_fde),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
