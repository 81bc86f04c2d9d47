/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_USDT_H
#define MEMTRACE_USDT_H

#include <linux/types.h>
#include "memtrace_abi.h"
#include <stddef.h>
#include <stdint.h>

/* One USDT probe site of a file, as its .note.stapsdt describes it. */
struct usdt_site {
	char name[32];           /* probe name, e.g. "zone_begin" */
	uint64_t file_offset;    /* where the uprobe goes */
	uint64_t sema_offset;    /* file offset of its semaphore; 0: none */
	struct mt_usdt_spec spec;
	int nargs;
	const char *problem;     /* why this site cannot be attached; NULL if it can */
};

/*
 * The sites of PROVIDER in the ELF file PATH, with their arguments decoded
 * (registers and constants: inproc/memtrace.h emits no other forms). A
 * malformed note of PROVIDER (a probe outside executable code, a semaphore
 * outside writable data, arguments in memory) is listed with its problem
 * set, so the caller can skip it and say so. *OUT is malloc'ed. 0 (possibly
 * with *N == 0), or -errno.
 */
int usdt_sites(const char *path, const char *provider, struct usdt_site **out, size_t *n);

/* Decode one "SIZE@OPERAND" argument. 0, or -EINVAL for forms not handled. */
int usdt_parse_arg(const char *arg, uint8_t *kind, uint16_t *reg_off, int64_t *imm);

#endif /* MEMTRACE_USDT_H */
