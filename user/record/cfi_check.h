/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_CFI_CHECK_H
#define MEMTRACE_CFI_CHECK_H

/*
 * Checks of a module's call frame information against damage, for the
 * unwind-table builder (unwind_table.h): CFI is read from files the
 * target maps, which memtrace does not trust. A rule is judged against the
 * code it describes (the instruction before each change of the CFA, a ret
 * where the CFA must be rsp + 8), and a CFA program is decoded before
 * libdw runs it (libdw sizes a frame's register array by the largest
 * register number it meets: a damaged one costs gigabytes).
 *
 * Rules:
 * - a function starts with CFA = rsp + 8; each later change of an
 *   rsp-based CFA follows the push, pop, sub or add that made it, or starts
 *   a block entered from elsewhere (after a ret, jmp, or a call that does
 *   not return), which restores an earlier state of the same FDE;
 * - a rule whose offset the code cannot confirm (a cold part's entry, a
 *   block restoring a state not seen before) is kept, flagged
 *   MT_ROW_CHECK_RA: the walker then takes the return address it yields
 *   only if a call instruction precedes it;
 * - an rbp-based CFA is the frame-pointer layout, rbp + 16;
 * - a CFA program that names a register above CFI_MAX_REG, or does not
 *   decode to its end, makes its whole section unusable;
 * - so does a search table (.eh_frame_hdr) entry that points anywhere but at
 *   an FDE the check walked: libdw parses an entry wherever the table says,
 *   and one inside another entry's program is a program never checked.
 */
#include <linux/types.h>
#include "memtrace_abi.h"
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CFI_MAX_REG 255 /* x86-64 DWARF numbers stop at 125 (k7) */

/* What the rows of one FDE so far said, to judge the next by. */
struct cfi_fde_state {
	struct mt_unwind_row prev; /* the row before, as CFI gave it, with its flags */
	bool first;
	size_t nseen;
	struct {
		int32_t off;
		uint32_t flags;
	} seen[16]; /* rsp-based CFA offsets of earlier rows: a block after a ret restores one */
};

/* Note ROW, accepted, in ST. */
void cfi_fde_state_add(struct cfi_fde_state *st, const struct mt_unwind_row *row);

/* Whether ROW (as make_row made it from CFI), applying up to END, may be
 * followed; sets its flags. ST: the rows of its FDE before it. */
bool cfi_row_plausible(Elf *elf, struct mt_unwind_row *row, const struct cfi_fde_state *st, uint64_t end);

/* The offsets in their section of the FDEs cfi_programs_sane walked, ascending. */
struct cfi_fdes {
	uint64_t *off;
	size_t n, cap;
};

/* Whether every CIE and FDE program in D (the bytes of .eh_frame if
 * EH_FRAME, else .debug_frame, of ELF) decodes and names no register above
 * CFI_MAX_REG. FDES (may be NULL): where the FDEs start, to be freed with
 * cfi_fdes_free. */
bool cfi_programs_sane(Elf *elf, Elf_Data *d, bool eh_frame, struct cfi_fdes *fdes);

/* Whether an FDE of F starts at offset OFF. */
bool cfi_fdes_has(const struct cfi_fdes *f, uint64_t off);

void cfi_fdes_free(struct cfi_fdes *f);

#endif /* MEMTRACE_CFI_CHECK_H */
