/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_UNWIND_TABLE_H
#define MEMTRACE_UNWIND_TABLE_H

/*
 * A module's call frame information (.eh_frame, else .debug_frame) turned
 * into what the BPF stack walker can use: rows sorted by address, each
 * saying from which address on how to find the CFA (rsp or rbp plus an
 * offset, a PLT stub, a signal frame), that the return address is at
 * CFA - 8, and where the caller's rbp was saved. A rule the walker cannot
 * follow (a DWARF expression) becomes a row that stops the walk there and
 * marks the stack truncated: it never guesses.
 *
 * Rules:
 * - rows are sorted by pc, no two with the same pc; a row applies from its
 *   pc up to the next row's; an address before the first row or in a gap
 *   between FDEs (a MT_CFA_NONE row) has no table;
 * - adjacent rows with identical rules are merged;
 * - a rule that looks like damage stops the walk too, and one the code
 *   cannot confirm is flagged MT_ROW_CHECK_RA (cfi_check.h has the checks);
 * - only x86-64 (DWARF registers 6 rbp, 7 rsp, 16 return address).
 */
#include <linux/types.h>
#include "memtrace_abi.h"
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct unwind_table {
	struct mt_unwind_row *rows;
	size_t nr;
	size_t cap;
	bool frame_pointers; /* most code keeps rbp as the frame pointer (CFA = rbp + 16) */
	size_t fdes;         /* FDEs read */
	size_t unsupported;  /* rows whose rule the walker cannot follow */
	size_t implausible;  /* rows whose rule looked like damage (cfi_check.h) */
};

/* Build the table of the ELF file ELF. 0, -ENODATA if it has no usable CFI,
 * -ENOMEM. A damaged CFI never crashes: what cannot be read is left out. */
int unwind_table__build(Elf *elf, struct unwind_table *t);

/* Build from PATH, through the on-disk cache keyed by build-id
 * ($XDG_CACHE_HOME or ~/.cache, memtrace/unwind/); NULL CACHE_DIR: no cache. */
int unwind_table__load(const char *path, const char *cache_dir, struct unwind_table *t);

/* The row that applies at VADDR, or NULL: the lookup the BPF walker does. */
const struct mt_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t vaddr);

void unwind_table__free(struct unwind_table *t);

#endif /* MEMTRACE_UNWIND_TABLE_H */
