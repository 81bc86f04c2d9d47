// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Reading the .note.stapsdt notes that inproc/memtrace.h (and sys/sdt.h)
 * emit: per site, the probe's address, the base the linker moved it by, its
 * semaphore, and argument specs like "8@%rdi" or "8@$0".
 */
#include "usdt.h"
#include "elf_util.h"

#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NT_STAPSDT 3

/* struct pt_regs of x86-64, as BPF sees it. */
static const struct {
	const char *names[4]; /* 64, 32, 16, 8-bit names */
	uint16_t off;
} regs[] = {
	{ { "r15", "r15d", "r15w", "r15b" }, 0 },   { { "r14", "r14d", "r14w", "r14b" }, 8 },
	{ { "r13", "r13d", "r13w", "r13b" }, 16 },  { { "r12", "r12d", "r12w", "r12b" }, 24 },
	{ { "rbp", "ebp", "bp", "bpl" }, 32 },      { { "rbx", "ebx", "bx", "bl" }, 40 },
	{ { "r11", "r11d", "r11w", "r11b" }, 48 },  { { "r10", "r10d", "r10w", "r10b" }, 56 },
	{ { "r9", "r9d", "r9w", "r9b" }, 64 },      { { "r8", "r8d", "r8w", "r8b" }, 72 },
	{ { "rax", "eax", "ax", "al" }, 80 },       { { "rcx", "ecx", "cx", "cl" }, 88 },
	{ { "rdx", "edx", "dx", "dl" }, 96 },       { { "rsi", "esi", "si", "sil" }, 104 },
	{ { "rdi", "edi", "di", "dil" }, 112 },     { { "rip", "eip", "ip", "" }, 128 },
	{ { "rsp", "esp", "sp", "spl" }, 152 },
};

static int parse_reg(const char *name, uint16_t *reg_off)
{
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		for (int w = 0; w < 4; w++) {
			if (*regs[i].names[w] && !strcmp(name, regs[i].names[w])) {
				*reg_off = regs[i].off;
				return 0;
			}
		}
	}
	return -EINVAL;
}

int usdt_parse_arg(const char *arg, uint8_t *kind, uint16_t *reg_off, int64_t *imm)
{
	const char *op = strchr(arg, '@');
	char *end, *rparen, name[8];
	long width;
	uint8_t w;

	if (!op)
		return -EINVAL;
	width = strtol(arg, &end, 10);
	/* bounded first: labs(LONG_MIN), from a note's "-9223372036854775808@", is undefined */
	if (end != op || width < -8 || width > 8 ||
	    (labs(width) != 1 && labs(width) != 2 && labs(width) != 4 && labs(width) != 8))
		return -EINVAL;
	w = (uint8_t)((labs(width) == 8 ? 0 : labs(width)) << 4 | (width < 0 ? MT_USDT_SIGNED : 0));
	op++;
	*imm = 0;
	if (*op == '$') {
		*imm = strtoll(op + 1, &end, 0);
		if (end == op + 1 || *end)
			return -EINVAL;
		*kind = MT_USDT_ARG_IMM | w;
		return 0;
	}
	if (*op == '%') {
		if (parse_reg(op + 1, reg_off))
			return -EINVAL;
		*kind = MT_USDT_ARG_REG | w;
		return 0;
	}
	/* OFFSET(%REG) or (%REG); no index, scale or segment */
	*imm = strtoll(op, &end, 0);
	rparen = end[0] == '(' && end[1] == '%' ? strchr(end + 2, ')') : NULL;
	if (!rparen || rparen[1] || (size_t)(rparen - end - 2) >= sizeof(name))
		return -EINVAL;
	memcpy(name, end + 2, rparen - end - 2);
	name[rparen - end - 2] = 0;
	if (parse_reg(name, reg_off))
		return -EINVAL;
	*kind = MT_USDT_ARG_MEM | w;
	return 0;
}

static int parse_args(const char *args, struct usdt_site *site)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", args);
	site->nargs = 0;
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		int i = site->nargs;

		int64_t imm = 0;

		if (i >= MT_USDT_MAX_ARGS ||
		    usdt_parse_arg(tok, &site->spec.kind[i], &site->spec.reg_off[i], &imm)) {
			site->problem = "its arguments cannot be decoded";
			return 0;
		}
		site->spec.imm[i] = imm;
		site->nargs++;
	}
	return 0;
}

static uint64_t section_addr(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, want))
			return sh.sh_addr;
	}
	return 0;
}

static int grow(struct usdt_site **v, size_t n, size_t *cap)
{
	struct usdt_site *p;

	if (n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 32;
	p = realloc(*v, *cap * sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	return 0;
}

/* Where the probe and its semaphore are: code must be executable and a
 * semaphore writable, or the kernel refuses the link (and with it every
 * other site of the file, were it attached with them). */
static const char *check_addresses(Elf *elf, uint64_t pc, uint64_t sema, struct usdt_site *site)
{
	uint32_t flags = 0;

	if (elf_segment_flags(elf, pc, &flags) || !(flags & PF_X) ||
	    elf_offset_of_vaddr(elf, pc, &site->file_offset))
		return "its address is not in executable code";
	if (sema && (elf_segment_flags(elf, sema, &flags) || !(flags & PF_W) ||
		     elf_offset_of_vaddr(elf, sema, &site->sema_offset)))
		return "its semaphore is not in writable data";
	return NULL;
}

/* Whether the code at file offset OFF is a nop and then a 5-byte nop, as
 * inproc/memtrace.h writes a site on x86-64. */
static bool nop5_follows(Elf *elf, uint64_t off)
{
	static const uint8_t want[6] = { 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	size_t size = 0;
	const uint8_t *raw = (const uint8_t *)elf_rawfile(elf, &size);

	return raw && off <= size && size - off >= sizeof(want) && !memcmp(raw + off, want, sizeof(want));
}

/* One note's description: pc, base, semaphore (8 bytes each), then
 * "provider\0name\0args\0". -ENOENT for another provider's note or one
 * too broken to name; a note of PROVIDER with a problem comes back with
 * site->problem set. */
static int take_note(Elf *elf, const uint8_t *desc, size_t len, uint64_t base_addr,
		     const char *provider, struct usdt_site *site)
{
	uint64_t pc, base, sema;
	const char *prov = (const char *)desc + 24, *name, *args, *end = (const char *)desc + len;

	if (len < 27)
		return -ENOENT;
	memcpy(&pc, desc, 8);
	memcpy(&base, desc + 8, 8);
	memcpy(&sema, desc + 16, 8);
	name = memchr(prov, 0, end - prov);
	if (!name || strcmp(prov, provider))
		return -ENOENT;
	name++;
	args = memchr(name, 0, end - name);
	memset(site, 0, sizeof(*site));
	snprintf(site->name, sizeof(site->name), "%.*s", (int)(args ? args - name : end - name), name);
	if (!args || !memchr(args + 1, 0, end - args - 1)) {
		site->problem = "its note is malformed";
		return 0;
	}
	if (strlen(name) >= sizeof(site->name)) {
		site->problem = "its name is too long";
		return 0;
	}
	args++;
	/* Prelinking moves the code but not the note: base says by how much. */
	if (base_addr && base) {
		pc += base_addr - base;
		if (sema)
			sema += base_addr - base;
	}
	site->problem = check_addresses(elf, pc, sema, site);
	if (!site->problem)
		site->nop5 = nop5_follows(elf, site->file_offset);
	return site->problem ? 0 : parse_args(args, site);
}

static int scan_notes(Elf *elf, const char *provider, struct usdt_site **v, size_t *n)
{
	uint64_t base_addr = section_addr(elf, ".stapsdt.base");
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *data;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
			    memcmp((char *)data->d_buf + name_off, "stapsdt", 8))
				continue;
			if (grow(v, *n, &cap))
				return -ENOMEM;
			if (!take_note(elf, (uint8_t *)data->d_buf + desc_off, nh.n_descsz, base_addr,
				       provider, &(*v)[*n]))
				(*n)++;
		}
	}
	return 0;
}

int usdt_sites(const char *path, const char *provider, struct usdt_site **out, size_t *n)
{
	struct elf_file *f = elf_file__open(path);
	int err;

	*out = NULL;
	*n = 0;
	if (!f)
		return -errno;
	err = scan_notes(elf_file__elf(f), provider, out, n);
	elf_file__close(f);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

bool usdt_kernel_nop5(void)
{
#if defined(__x86_64__)
	/* The uprobe syscall (336 on x86-64) answers ENXIO to any caller but
	 * the kernel's own trampoline; a kernel without it, ENOSYS. */
	errno = 0;
	return syscall(336) == -1 && errno == ENXIO;
#else
	return false;
#endif
}

bool usdt_probe_nop5(void)
{
	const char *force = getenv("MEMTRACE_MARK_NOP");

	return !(force && !strcmp(force, "1")) && usdt_kernel_nop5();
}
