/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_USDT_H
#define MEMTRACE_USDT_H

#include <linux/types.h>
#include "memtrace_abi.h"
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* One USDT probe site of a file, as its .note.stapsdt describes it. */
struct usdt_site {
	char name[64];           /* probe name, e.g. "zone_begin" */
	uint64_t file_offset;    /* where the uprobe goes */
	uint64_t sema_offset;    /* file offset of its semaphore; 0: none */
	struct mt_usdt_spec spec;
	int nargs;
	bool nop5;               /* a 5-byte nop follows the site's 1-byte nop (inproc/memtrace.h) */
	const char *problem;     /* why this site cannot be attached; NULL if it can */
};

/*
 * The sites of PROVIDER in the ELF file PATH, with their arguments decoded
 * (registers, constants, and memory at an offset from a register, as
 * compilers emit for glibc's probes; inproc/memtrace.h emits the first two
 * only). A malformed note of PROVIDER (a probe outside executable code, a
 * semaphore outside writable data, an argument of another form, with an
 * index register, say) is listed with its problem set, so the caller can
 * skip it and say so. *OUT is malloc'ed. 0 (possibly
 * with *N == 0), or -errno.
 */
int usdt_sites(const char *path, const char *provider, struct usdt_site **out, size_t *n);

/*
 * Whether to probe a site's 5-byte nop (usdt_site.nop5) rather than its
 * 1-byte nop: the kernel has optimized uprobes (a probe on a 5-byte nop
 * becomes a call instead of a trap), and MEMTRACE_MARK_NOP=1 does not ask
 * for the trap (tests, bench).
 */
bool usdt_probe_nop5(void);
/* Whether the kernel has optimized uprobes, whatever MEMTRACE_MARK_NOP says. */
bool usdt_kernel_nop5(void);

/* Decode one "SIZE@OPERAND" argument (SIZE 1, 2, 4 or 8, negative when
 * signed; OPERAND %REG, $CONSTANT, or OFFSET(%REG)) into a kind with its
 * width (memtrace_abi.h's MT_USDT_*), a register and a constant. 0, or
 * -EINVAL for forms not handled. */
int usdt_parse_arg(const char *arg, uint8_t *kind, uint16_t *reg_off, int64_t *imm);

#endif /* MEMTRACE_USDT_H */
