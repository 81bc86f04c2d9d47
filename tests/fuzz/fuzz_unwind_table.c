// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as an ELF file whose call frame information
 * (.eh_frame_hdr, .eh_frame) becomes an unwind table (user/record/unwind_table.c),
 * as record does for every module the target maps: those files are not
 * trusted input. Beyond not crashing, the table must keep its rules: rows
 * strictly sorted by address, every kind and rbp rule one the BPF walker
 * knows, and a lookup giving the row that covers the address.
 */
#include "elf_util.h"
#include "fuzz_consume.h"
#include "unwind_table.h"

#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table t;
	struct elf_file *f;
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	f = elf_file__open(path);
	if (f && unwind_table__build(elf_file__elf(f), &t) == 0) {
		for (size_t i = 0; i < t.nr; i++) {
			if ((i && t.rows[i].pc <= t.rows[i - 1].pc) || t.rows[i].cfa_kind > MT_CFA_END ||
			    t.rows[i].rbp_rule > MT_RBP_AT_CFA)
				abort();
			if (unwind_table__find(&t, t.rows[i].pc) != &t.rows[i])
				abort();
		}
		unwind_table__free(&t);
	}
	if (f)
		elf_file__close(f);
	close(fd);
	return 0;
}
