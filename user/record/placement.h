/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_PLACEMENT_H
#define MEMTRACE_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Where in a function its entry probe goes. A uprobe on an instruction the
 * kernel emulates costs a fraction of one it must single-step, so the probe
 * moves to the first such instruction that every call executes, before the
 * argument registers or the stack pointer change and that no branch in the
 * function targets; the return address is then still at [sp].
 */
struct placement {
	uint32_t offset;   /* bytes from the function's start */
	bool emulated;     /* false: fell back to the function's first instruction */
	const char *insn;  /* mnemonic of the probed instruction, for -v */
};

/* Decide for the machine code CODE (LEN bytes from the function's start; the
 * whole function if possible, so branches into the prologue are seen). */
void placement_choose(const uint8_t *code, size_t len, struct placement *out);

#endif /* MEMTRACE_PLACEMENT_H */
