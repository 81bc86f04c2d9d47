// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Call frame information judged against the code it describes, and CFA
 * programs decoded before libdw runs them. See cfi_check.h for the rules.
 */
#include "cfi_check.h"
#include "elf_util.h"
#include "util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

/* LEN code bytes that end at VADDR, from the file, or NULL. */
static const uint8_t *code_before(Elf *elf, uint64_t vaddr, size_t len)
{
	size_t size;
	const char *raw = elf_rawfile(elf, &size);
	uint64_t off;

	if (!raw || vaddr < len || elf_offset_of_vaddr(elf, vaddr - len, &off) || off > size ||
	    len > size - off)
		return NULL;
	return (const uint8_t *)raw + off;
}

/* Whether the LEN bytes that end at VADDR start with B0, then B1 (any if -1). */
static bool code_is(Elf *elf, uint64_t vaddr, size_t len, uint8_t b0, int b1)
{
	const uint8_t *p = code_before(elf, vaddr, len);

	return p && p[0] == b0 && (b1 < 0 || (len > 1 && p[1] == b1));
}

/* Whether the instruction that ends at VADDR moves rsp down by DELTA bytes
 * (up if negative), as a row of the CFA offset that grows by DELTA there
 * claims; or does not fall through (ret, jmp, a call that does not return),
 * so that the row starts a block entered from elsewhere, whose rule the code
 * before it does not decide. GCC, clang and glibc's CFI macros put each
 * change of the CFA offset right after the push, pop, sub or add that made
 * it; damaged CFI rarely keeps to that. */
/* The length of the nop (alignment padding) that ends at VADDR, or 0: the
 * forms GCC and binutils pad with. */
static size_t nop_before(Elf *elf, uint64_t vaddr)
{
	static const uint8_t nops[][11] = {
		{ 0x90 }, { 0xcc }, { 0x66, 0x90 }, { 0x0f, 0x1f, 0x00 }, { 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 }, { 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	static const uint8_t lens[] = { 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	size_t best = 0;

	for (size_t i = 0; i < sizeof(lens); i++) {
		const uint8_t *p = code_before(elf, vaddr, lens[i]);

		if (p && !memcmp(p, nops[i], lens[i]))
			best = lens[i];
	}
	/* 0x66 prefixes before the 10-byte form pad further */
	while (best >= 10 && best < 15 && code_is(elf, vaddr, best + 1, 0x66, -1))
		best++;
	return best;
}

/* Whether the instruction that ends at VADDR does not fall through (ret,
 * jmp, int3, ud2, a call that does not return), past alignment padding. */
static bool block_ends_before(Elf *elf, uint64_t vaddr)
{
	const uint8_t *p;

	for (int i = 0; i < 8; i++) {
		size_t pad;

		if ((p = code_before(elf, vaddr, 1)) && (p[0] == 0xc3 || p[0] == 0xcc))
			return true; /* ret, int3 */
		if (code_is(elf, vaddr, 2, 0xeb, -1) || code_is(elf, vaddr, 5, 0xe9, -1) || /* jmp */
		    code_is(elf, vaddr, 5, 0xe8, -1) ||                                     /* call (noreturn) */
		    code_is(elf, vaddr, 2, 0x0f, 0x0b) ||                                  /* ud2 */
		    code_is(elf, vaddr, 6, 0xff, 0x25) || code_is(elf, vaddr, 6, 0xff, 0x15)) /* jmp, call *rip+x */
			return true;
		if ((p = code_before(elf, vaddr, 2)) && p[0] == 0xff && p[1] >= 0xd0 && p[1] <= 0xe7)
			return true; /* call *reg, jmp *reg */
		if ((p = code_before(elf, vaddr, 3)) && p[0] == 0x41 && p[1] == 0xff && p[2] >= 0xd0 && p[2] <= 0xe7)
			return true; /* call *r8-r15, jmp *r8-r15 */
		if (!(pad = nop_before(elf, vaddr)))
			return false;
		vaddr -= pad;
	}
	return false;
}

/* Whether the instruction that ends at VADDR moves rsp down by DELTA bytes
 * (up if negative), as a row of the CFA offset that grows by DELTA there
 * claims; or does not fall through, so that the row starts a block entered
 * from elsewhere, whose rule the code before it does not decide. GCC, clang
 * and glibc's CFI macros put each change of the CFA offset right after the
 * push, pop, sub or add that made it; damaged CFI rarely keeps to that. */
static bool rsp_moved_by(Elf *elf, uint64_t vaddr, int64_t delta)
{
	const uint8_t *p;
	if (delta == 8) {
		if ((p = code_before(elf, vaddr, 1)) && p[0] >= 0x50 && p[0] <= 0x57)
			return true; /* push reg */
		if ((p = code_before(elf, vaddr, 2)) && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
			return true; /* push r8-r15 */
		if (code_is(elf, vaddr, 2, 0x6a, -1) || code_is(elf, vaddr, 5, 0x68, -1) ||
		    code_is(elf, vaddr, 6, 0xff, 0x35) || code_is(elf, vaddr, 1, 0x9c, -1))
			return true; /* push imm, push rip+x, pushf */
		/* push disp(reg): ff /6, disp8 or disp32, through a SIB byte for rsp */
		if (code_is(elf, vaddr, 4, 0xff, 0x74) || code_is(elf, vaddr, 7, 0xff, 0xb4))
			return true;
		if (((p = code_before(elf, vaddr, 3)) && p[0] == 0xff && (p[1] & 0xf8) == 0x70) ||
		    ((p = code_before(elf, vaddr, 6)) && p[0] == 0xff && (p[1] & 0xf8) == 0xb0) ||
		    ((p = code_before(elf, vaddr, 2)) && p[0] == 0xff && (p[1] & 0xf8) == 0x30))
			return true;
	}
	if (delta == -8) {
		if ((p = code_before(elf, vaddr, 1)) && p[0] >= 0x58 && p[0] <= 0x5f)
			return true; /* pop reg */
		if ((p = code_before(elf, vaddr, 2)) && p[0] == 0x41 && p[1] >= 0x58 && p[1] <= 0x5f)
			return true; /* pop r8-r15 */
		if (code_is(elf, vaddr, 1, 0x9d, -1))
			return true; /* popf */
	}
	if ((p = code_before(elf, vaddr, 4)) && p[0] == 0x48 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xc4))
		return (p[2] == 0xec ? 1 : -1) * (int64_t)(int8_t)p[3] == delta; /* sub, add $imm8, %rsp */
	if ((p = code_before(elf, vaddr, 7)) && p[0] == 0x48 && p[1] == 0x81 && (p[2] == 0xec || p[2] == 0xc4)) {
		int32_t imm;

		memcpy(&imm, p + 3, 4);
		return (p[2] == 0xec ? 1 : -1) * (int64_t)imm == delta; /* sub, add $imm32, %rsp */
	}
	/* rsp set from another register (a frame with alloca or a VLA): any change */
	if ((p = code_before(elf, vaddr, 3)) && (p[0] == 0x48 || p[0] == 0x4c) && p[1] == 0x89 && (p[2] & 0xc7) == 0xc4)
		return true; /* mov reg, %rsp */
	if (((p = code_before(elf, vaddr, 4)) && (p[0] == 0x48 || p[0] == 0x49) && p[1] == 0x8d &&
	     (p[2] & 0xf8) == 0x60 && p[2] != 0x64) ||
	    ((p = code_before(elf, vaddr, 7)) && (p[0] == 0x48 || p[0] == 0x49) && p[1] == 0x8d &&
	     (p[2] & 0xf8) == 0xa0 && p[2] != 0xa4))
		return true; /* lea disp(reg), %rsp */
	if (delta < 0 && delta > -129 && (p = code_before(elf, vaddr, 5)) && p[0] == 0x48 && p[1] == 0x8d &&
	    p[2] == 0x64 && p[3] == 0x24 && (int8_t)p[4] == -delta)
		return true; /* lea imm8(%rsp), %rsp */
	return false;
}

/* Whether the instruction that ends at VADDR is a push, pop, or an add or
 * sub of an immediate to rsp (the instructions CFI follows with a row). */
static bool rsp_moved_before(Elf *elf, uint64_t vaddr)
{
	const uint8_t *p;

	if ((p = code_before(elf, vaddr, 2)) && p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x5f)
		return true;
	if ((p = code_before(elf, vaddr, 4)) && p[0] == 0x48 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xc4))
		return true;
	if ((p = code_before(elf, vaddr, 7)) && p[0] == 0x48 && p[1] == 0x81 && (p[2] == 0xec || p[2] == 0xc4))
		return true;
	return (p = code_before(elf, vaddr, 1)) && p[0] >= 0x50 && p[0] <= 0x5f;
}


void cfi_fde_state_add(struct cfi_fde_state *st, const struct mt_unwind_row *row)
{
	if (row->cfa_kind != MT_CFA_RSP || st->nseen == sizeof(st->seen) / sizeof(st->seen[0]))
		return;
	for (size_t i = 0; i < st->nseen; i++)
		if (st->seen[i].off == row->cfa_off)
			return;
	st->seen[st->nseen].off = row->cfa_off;
	st->seen[st->nseen++].flags = row->flags;
}

/* The flags of a rule with CFA rsp + OFF restored at a block entered from
 * elsewhere: those of an earlier row with that offset (what
 * DW_CFA_remember_state saved), else unchecked. */
static uint32_t restored_flags(const struct cfi_fde_state *st, int32_t off)
{
	for (size_t i = 0; i < st->nseen; i++)
		if (st->seen[i].off == off)
			return st->seen[i].flags;
	return MT_ROW_CHECK_RA;
}

/* Whether ROW is one the walker may follow, given the rows before it in
 * its FDE (ST); sets its MT_ROW_CHECK_RA flag where its CFA offset could not
 * be checked against the code. Rules no compiler or assembler writes for
 * x86-64 are damage, and a walk that met them would read the wrong slot and
 * report a frame that is not in the stack. The CFA is an rsp value, so
 * 8-aligned, above the return address (rsp + 8 at least); an rbp-based CFA
 * is the frame-pointer layout, rbp + 16; rbp is saved in the frame, below
 * the return address (an epilogue's rows keep saying where rbp was saved
 * after its pop: harmless, and allowed). A function starts at rsp + 8; from
 * there each change of an rsp-based CFA must match the instruction before
 * its row, or start a block entered from elsewhere (after a ret or jmp),
 * which restores an earlier state. */
static bool row_rules_plausible(Elf *elf, struct mt_unwind_row *row, const struct cfi_fde_state *st)
{
	const struct mt_unwind_row *prev = st->first ? NULL : &st->prev;

	switch (row->cfa_kind) {
	case MT_CFA_RSP:
		if (row->cfa_off < 8 || row->cfa_off % 8)
			return false;
		break;
	case MT_CFA_RBP:
		if (row->cfa_off != 16)
			return false;
		break;
	case MT_CFA_PLT:
		return row->cfa_off == 10 || row->cfa_off == 11;
	default:
		return true;
	}
	if (row->rbp_rule == MT_RBP_AT_CFA && (row->rbp_off > -16 || row->rbp_off % 8))
		return false;
	/* A ret finds its return address at rsp: the CFA is rsp + 8 there. */
	if (row->cfa_kind == MT_CFA_RSP && row->cfa_off != 8 && code_is(elf, row->pc + 1, 1, 0xc3, -1))
		return false;
	if (row->cfa_kind == MT_CFA_RBP)
		return true; /* the frame-pointer layout checks itself */
	if (!prev) {
		/* A function's entry; or the cold part of one, entered by a
		 * jump with the hot part's state, which the code cannot show. */
		row->flags = row->cfa_off == 8 ? 0 : MT_ROW_CHECK_RA;
		return true;
	}
	if (prev->cfa_kind == MT_CFA_RBP) {
		/* leave, or pop %rbp, ends a frame-pointer frame at rsp + 8 */
		row->flags = row->cfa_off == 8 && (code_is(elf, row->pc, 1, 0xc9, -1) || code_is(elf, row->pc, 1, 0x5d, -1))
				     ? 0
				     : MT_ROW_CHECK_RA;
		return true;
	}
	if (prev->cfa_kind != MT_CFA_RSP) {
		row->flags = MT_ROW_CHECK_RA;
		return true;
	}
	if (prev->cfa_off == row->cfa_off) {
		/* A new row right after an instruction that moved rsp must say so. */
		if (rsp_moved_before(elf, row->pc))
			return false;
		row->flags = prev->flags;
		return true;
	}
	if (rsp_moved_by(elf, row->pc, (int64_t)row->cfa_off - prev->cfa_off)) {
		row->flags = prev->flags;
		return true;
	}
	if (block_ends_before(elf, row->pc)) {
		row->flags = restored_flags(st, row->cfa_off);
		return true;
	}
	return false;
}

/* Whether ROW, which applies up to END, ends with a ret while its CFA is
 * not rsp + 8, where a ret finds its return address: an FDE whose program
 * lost its last rows (damaged, cut short) would have its epilogue walked
 * with the body's rule. A row ends after the instruction that changed rsp
 * (push, pop, add, sub: none ends with the byte 0xc3) or at the end of the
 * function, so a last byte 0xc3 there is a ret. */
static bool ret_inside(Elf *elf, const struct mt_unwind_row *row, uint64_t end)
{
	return row->cfa_kind == MT_CFA_RSP && row->cfa_off != 8 && code_is(elf, end, 1, 0xc3, -1);
}

/* The length of the instruction at VADDR if it moves rsp (push, pop, sub
 * or add of an immediate), else 0. */
static size_t rsp_insn_at(Elf *elf, uint64_t vaddr)
{
	const uint8_t *p = code_before(elf, vaddr + 7, 7);

	if (!p)
		return 0;
	if (p[0] >= 0x50 && p[0] <= 0x5f)
		return 1; /* push, pop */
	if (p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x5f)
		return 2; /* push, pop r8-r15 */
	if (p[0] == 0x48 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xc4))
		return 4; /* sub, add $imm8, %rsp */
	if (p[0] == 0x48 && p[1] == 0x81 && (p[2] == 0xec || p[2] == 0xc4))
		return 7; /* sub, add $imm32, %rsp */
	return 0;
}

/* Whether ROW, an rsp-based rule that applies up to END, starts with an
 * instruction that moves rsp and goes on past it: the row that instruction
 * makes is missing (an FDE whose program was wiped or cut short), and the
 * rule is stale from there on. */
static bool rsp_moves_inside(Elf *elf, const struct mt_unwind_row *row, uint64_t end)
{
	size_t len;

	return row->cfa_kind == MT_CFA_RSP && (len = rsp_insn_at(elf, row->pc)) && end > row->pc + len;
}

bool cfi_row_plausible(Elf *elf, struct mt_unwind_row *row, const struct cfi_fde_state *st, uint64_t end)
{
	return row_rules_plausible(elf, row, st) && !ret_inside(elf, row, end) && !rsp_moves_inside(elf, row, end);
}

static bool uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

static bool skip(const uint8_t **p, const uint8_t *end, uint64_t n)
{
	if (n > (uint64_t)(end - *p))
		return false;
	*p += n;
	return true;
}

/* Whether the CFA program [P, END) decodes to its end and names no
 * register above CFI_MAX_REG. PTR: the size of a DW_CFA_set_loc address. */
static bool program_sane(const uint8_t *p, const uint8_t *end, unsigned ptr)
{
	while (p < end) {
		uint8_t op = *p++;
		uint64_t reg = 0, reg2 = 0, v;
		bool ok = true;

		switch (op >> 6) {
		case 1: /* advance_loc */
		case 3: /* restore */
			continue;
		case 2: /* offset */
			if (!uleb(&p, end, &v))
				return false;
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_remember_state:
		case DW_CFA_restore_state:
			break;
		case DW_CFA_set_loc: ok = skip(&p, end, ptr); break;
		case DW_CFA_advance_loc1: ok = skip(&p, end, 1); break;
		case DW_CFA_advance_loc2: ok = skip(&p, end, 2); break;
		case DW_CFA_advance_loc4: ok = skip(&p, end, 4); break;
		case DW_CFA_register:
			ok = uleb(&p, end, &reg) && uleb(&p, end, &reg2);
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
		case DW_CFA_GNU_negative_offset_extended:
			ok = uleb(&p, end, &reg) && uleb(&p, end, &v); /* an sleb skips as a uleb */
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			ok = uleb(&p, end, &reg);
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
		case DW_CFA_GNU_args_size:
			ok = uleb(&p, end, &v);
			break;
		case DW_CFA_def_cfa_expression:
			ok = uleb(&p, end, &v) && skip(&p, end, v);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			ok = uleb(&p, end, &reg) && uleb(&p, end, &v) && skip(&p, end, v);
			break;
		default:
			return false; /* no x86-64 compiler writes it */
		}
		if (!ok || reg > CFI_MAX_REG || reg2 > CFI_MAX_REG)
			return false;
	}
	return true;
}

/* The size of a pointer in encoding ENC (DW_EH_PE_*), 0 if unknown. */
static unsigned encoded_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return 8;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8: return 8;
	default: return 0;
	}
}

/* How a CIE's FDEs are laid out: the size of their addresses, and whether
 * augmentation data (sized by a uleb) precedes their programs. */
struct cie_layout {
	Dwarf_Off off;
	unsigned ptr;
	bool z;
};

/* The layout of the FDEs of CIE C, from its augmentation string; false if
 * it is not one we can read past. */
static bool cie_layout(const Dwarf_CIE *c, bool eh_frame, struct cie_layout *l)
{
	const uint8_t *d = c->augmentation_data, *end = d + c->augmentation_data_size;
	const char *a = c->augmentation;

	l->ptr = eh_frame ? encoded_size(DW_EH_PE_absptr) : 8;
	l->z = a[0] == 'z';
	if (!l->z)
		return a[0] == 0; /* no augmentation, or one we do not know */
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (!d || d >= end || !(l->ptr = encoded_size(*d++)))
				return false;
			break;
		case 'L':
			if (!d || !skip(&d, end, 1))
				return false;
			break;
		case 'P': {
			unsigned n;

			if (!d || d >= end || !(n = encoded_size(*d)) || !skip(&d, end, 1 + n))
				return false;
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

bool cfi_programs_sane(Elf *elf, Elf_Data *d, bool eh_frame, struct cfi_fdes *fdes)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct cie_layout cies[64];
	size_t ncies = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;
	int rc;

	if (!ident || ident[EI_CLASS] != ELFCLASS64)
		return false;
	/* A module has a handful of CIEs; more is damage, or not worth it. */
	while ((rc = dwarf_next_cfi(ident, d, eh_frame, off, &next, &e)) == 0) {
		if (dwarf_cfi_cie_p(&e)) {
			if (ncies == sizeof(cies) / sizeof(cies[0]) || !cie_layout(&e.cie, eh_frame, &cies[ncies]) ||
			    !program_sane(e.cie.initial_instructions, e.cie.initial_instructions_end, cies[ncies].ptr))
				return false;
			cies[ncies++].off = off;
		} else {
			const struct cie_layout *l = NULL;
			const uint8_t *p = e.fde.start;
			uint64_t n;

			for (size_t i = 0; i < ncies && !l; i++)
				if (cies[i].off == e.fde.CIE_pointer)
					l = &cies[i];
			if (!l || !skip(&p, e.fde.end, 2 * l->ptr) || (l->z && (!uleb(&p, e.fde.end, &n) || !skip(&p, e.fde.end, n))) ||
			    !program_sane(p, e.fde.end, l->ptr))
				return false;
			/* dwarf_next_cfi walks forward: the offsets come ascending */
			if (fdes && (array_reserve((void **)&fdes->off, &fdes->cap, fdes->n + 1, sizeof(*fdes->off))))
				return false;
			if (fdes)
				fdes->off[fdes->n++] = off;
		}
		off = next;
	}
	return rc > 0; /* the end of the section, not a damaged entry */
}

bool cfi_fdes_has(const struct cfi_fdes *f, uint64_t off)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->off[mid] == off)
			return true;
		if (f->off[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

void cfi_fdes_free(struct cfi_fdes *f)
{
	free(f->off);
	memset(f, 0, sizeof(*f));
}
