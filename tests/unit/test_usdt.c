// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * usdt_parse_arg: the argument forms of .note.stapsdt that memtrace reads
 * (inproc/memtrace.h's, and the compilers' for glibc's allocator probes):
 * each kind, width, sign, register and constant, and the forms refused.
 * usdt_sites on real binaries of Debian's that carry SDT notes (PostgreSQL,
 * CPython, libstdc++; Debian's glibc has none): every note as readelf -n
 * prints it, read here apart from memtrace's code, is a site with the same
 * name, address, semaphore and arguments. A binary missing here is a skip.
 */
#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "usdt.h"

#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* --- real binaries against readelf -n ------------------------------------ */

/* A note as readelf -n --wide prints it. */
struct sdt_note {
	char provider[64];
	char name[64];
	unsigned long long pc, base, sema;
	char args[512];
};

/* The notes of PATH, from readelf's text; their count, or -1. */
static int readelf_notes(const char *path, struct sdt_note *notes, int max)
{
	char cmd[512], line[1024];
	const char *at;
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "readelf -n --wide '%s'", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		struct sdt_note *cur = n ? &notes[n - 1] : NULL;

		line[strcspn(line, "\n")] = 0;
		if ((at = strstr(line, "Provider: "))) {
			if (n == max)
				break;
			cur = &notes[n++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->provider, sizeof(cur->provider), "%s", at + 10);
		} else if (cur && (at = strstr(line, "Name: "))) {
			snprintf(cur->name, sizeof(cur->name), "%s", at + 6);
		} else if (cur && (at = strstr(line, "Location: "))) {
			assert_int_equal(sscanf(at, "Location: %llx, Base: %llx, Semaphore: %llx", &cur->pc,
						&cur->base, &cur->sema), 3);
		} else if (cur && (at = strstr(line, "Arguments:"))) {
			at += 10;
			at += strspn(at, " ");
			snprintf(cur->args, sizeof(cur->args), "%s", at);
		}
	}
	return pclose(p) == 0 ? n : -1;
}

/* The file offset of virtual address VADDR, by the PT_LOAD segments: this
 * test's own reading of the program headers, not elf_util's. */
static unsigned long long offset_of(Elf *elf, unsigned long long vaddr)
{
	size_t n = 0;

	assert_int_equal(elf_getphdrnum(elf, &n), 0);
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	fail_msg("0x%llx is in no PT_LOAD", vaddr);
	return 0;
}

/* The address of the section NAME, 0 if none. */
static unsigned long long section_address(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *s;

		if (gelf_getshdr(scn, &sh) && (s = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(s, name))
			return sh.sh_addr;
	}
	return 0;
}

/* struct pt_regs offsets of x86-64's general registers by each of their
 * names (this test's table, apart from usdt.c's) */
static int pt_regs_offset(const char *name)
{
	static const struct {
		int off;
		const char *names;
	} table[] = {
		{ 0, " r15 r15d r15w r15b " },  { 8, " r14 r14d r14w r14b " },
		{ 16, " r13 r13d r13w r13b " }, { 24, " r12 r12d r12w r12b " },
		{ 32, " rbp ebp bp bpl " },     { 40, " rbx ebx bx bl " },
		{ 48, " r11 r11d r11w r11b " }, { 56, " r10 r10d r10w r10b " },
		{ 64, " r9 r9d r9w r9b " },     { 72, " r8 r8d r8w r8b " },
		{ 80, " rax eax ax al " },      { 88, " rcx ecx cx cl " },
		{ 96, " rdx edx dx dl " },      { 104, " rsi esi si sil " },
		{ 112, " rdi edi di dil " },    { 152, " rsp esp sp spl " },
	};
	char key[16];

	snprintf(key, sizeof(key), " %s ", name);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strstr(table[i].names, key))
			return table[i].off;
	return -1;
}

/* One argument of readelf's text, "SIZE@OPERAND", as the spec memtrace's
 * BPF side reads (memtrace_abi.h): 0, or -1 for a form BPF cannot read from
 * the registers at the probe (a symbol or anything %rip-relative, an index
 * register, a segment). */
static int expect_arg(const char *arg, uint8_t *kind, int *reg, long long *imm)
{
	char regname[16], tail[8];
	int size, used = 0;
	long long off = 0;
	uint8_t w;

	if (sscanf(arg, "%d@%n", &size, &used) != 1 || !used)
		return -1;
	if (size != 1 && size != 2 && size != 4 && size != 8 && size != -1 && size != -2 &&
	    size != -4 && size != -8)
		return -1;
	w = (uint8_t)((abs(size) == 8 ? 0 : abs(size)) << 4 | (size < 0 ? MT_USDT_SIGNED : 0));
	arg += used;
	*imm = 0;
	*reg = 0;
	if (sscanf(arg, "$%lld%1s", imm, tail) == 1) {
		*kind = MT_USDT_ARG_IMM | w;
		return 0;
	}
	if (sscanf(arg, "%%%15[a-z0-9]%1s", regname, tail) == 1) {
		*reg = pt_regs_offset(regname);
		*kind = MT_USDT_ARG_REG | w;
		return *reg < 0 ? -1 : 0;
	}
	if (sscanf(arg, "(%%%15[a-z0-9])%1s", regname, tail) == 1 ||
	    sscanf(arg, "%lld(%%%15[a-z0-9])%1s", &off, regname, tail) == 2) {
		*reg = pt_regs_offset(regname);
		*imm = off;
		*kind = MT_USDT_ARG_MEM | w;
		return *reg < 0 ? -1 : 0;
	}
	return -1;
}

/* Every note of PATH that readelf prints, against usdt_sites of its provider:
 * as many sites, in the notes' order, each with the note's name, the file
 * offsets of its address and semaphore, and its arguments; a note whose
 * arguments memtrace cannot read (more than MT_USDT_MAX_ARGS, or a form
 * above) has a problem said, its arguments before that one decoded. */
static void check_binary(const char *path, int want_notes)
{
	static struct sdt_note notes[256];
	unsigned long long base_addr;
	int n, fd, checked = 0;
	Elf *elf;

	if (access(path, R_OK)) {
		printf("# %s: not on this host\n", path);
		skip();
	}
	n = readelf_notes(path, notes, 256);
	assert_int_equal(n, want_notes);
	assert_int_not_equal(elf_version(EV_CURRENT), EV_NONE);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	base_addr = section_address(elf, ".stapsdt.base");

	for (int i = 0; i < n; i++) {
		struct usdt_site *sites = NULL;
		size_t nsites = 0, k = 0;
		int of_provider = 0;

		/* each provider once, at its first note */
		for (int j = 0; j < i; j++)
			if (!strcmp(notes[j].provider, notes[i].provider))
				goto next;
		assert_int_equal(usdt_sites(path, notes[i].provider, &sites, &nsites), 0);
		for (int j = i; j < n; j++) {
			const struct sdt_note *note = &notes[j];
			unsigned long long pc = note->pc, sema = note->sema;
			const struct usdt_site *site;
			char args[512], *save = NULL, *tok;
			int a = 0, bad = 0;

			if (strcmp(note->provider, notes[i].provider))
				continue;
			of_provider++;
			assert_true(k < nsites);
			site = &sites[k++];
			/* a prelinked file's notes say how far its code moved */
			if (base_addr && note->base) {
				pc += base_addr - note->base;
				if (sema)
					sema += base_addr - note->base;
			}
			if (strcmp(site->name, note->name))
				fail_msg("%s: note %d: name %s, memtrace read %s", path, j, note->name, site->name);
			assert_int_equal(site->file_offset, offset_of(elf, pc));
			assert_int_equal(site->sema_offset, sema ? offset_of(elf, sema) : 0);
			snprintf(args, sizeof(args), "%s", note->args);
			for (tok = strtok_r(args, " ", &save); tok; tok = strtok_r(NULL, " ", &save), a++) {
				uint8_t kind;
				int reg;
				long long imm;

				if (a >= MT_USDT_MAX_ARGS || expect_arg(tok, &kind, &reg, &imm)) {
					bad = 1;
					break;
				}
				if (site->spec.kind[a] != kind ||
				    (MT_USDT_KIND(kind) != MT_USDT_ARG_IMM && site->spec.reg_off[a] != reg) ||
				    site->spec.imm[a] != imm)
					fail_msg("%s: %s:%s argument %d '%s': memtrace read kind 0x%x reg %u imm %lld, "
						 "want 0x%x %d %lld", path, note->provider, note->name, a, tok,
						 site->spec.kind[a], site->spec.reg_off[a], (long long)site->spec.imm[a],
						 kind, reg, imm);
			}
			if (bad) {
				if (!site->problem || !strstr(site->problem, "arguments"))
					fail_msg("%s: %s:%s '%s': memtrace took arguments it cannot read (problem: %s)",
						 path, note->provider, note->name, note->args,
						 site->problem ? site->problem : "none");
			} else {
				if (site->problem)
					fail_msg("%s: %s:%s '%s': %s", path, note->provider, note->name, note->args,
						 site->problem);
				assert_int_equal(site->nargs, a);
			}
			checked++;
		}
		assert_int_equal(nsites, (size_t)of_provider);
		free(sites);
next:;
	}
	printf("# %s: %d notes read as readelf prints them\n", path, checked);
	assert_int_equal(checked, n);
	elf_end(elf);
	close(fd);
}

/* Debian 12's: 71 notes of provider postgresql (semaphores on all) */
static void test_postgres(void **state)
{
	(void)state;
	check_binary("/usr/lib/postgresql/15/bin/postgres", 71);
}

/* CPython 3.11's 8 notes of provider python, each with a semaphore */
static void test_python(void **state)
{
	(void)state;
	check_binary("/usr/bin/python3.11", 8);
}

/* libstdc++'s catch, throw and rethrow, no semaphores */
static void test_libstdcxx(void **state)
{
	(void)state;
	check_binary("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registers),
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_postgres),
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_libstdcxx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
