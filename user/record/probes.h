/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_PROBES_H
#define MEMTRACE_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Which BPF entry program handles a function. */
enum probe_prog {
	PROBE_MALLOC,
	PROBE_CALLOC,
	PROBE_REALLOC,
	PROBE_REALLOCARRAY,
	PROBE_MEMALIGN,
	PROBE_POSIX_MEMALIGN,
	PROBE_FREE,
	PROBE_DELETE,
	PROBE_NR_PROGS,
};

struct probe {
	const char *func;  /* symbol name (static string) */
	char *path;        /* file to attach to, as memtrace can open it */
	uint64_t offset;   /* file offset of the probed instruction */
	uint32_t skipped;  /* bytes from the function's start to it */
	bool emulated;     /* on an instruction the kernel emulates */
	char insn[64];     /* the probed instruction, Intel syntax */
	const char *why;   /* !emulated: why no emulated site qualifies */
	char moved[64];    /* where the site finds arguments the code moved, for -v */
	uint64_t arg_cookie; /* their registers, as MT_COOKIE_ARG_SHIFT lays them out */
	enum probe_prog prog;
	bool ret;          /* also a return probe */
	bool may_nest;     /* its code may call another probed function */
	uint64_t vaddr;    /* the function's ELF address */
	uint64_t size;     /* bytes of it read (at most a few KiB) */
};

#define PROBE_MAX 64 /* more than the allocator functions memtrace knows */

/* An allocator function left without a probe: it only forwards to another
 * one that is probed (decided by decoding it, see placement.h). Its frames
 * are part of the allocator: the allocation's site is its caller. */
struct forwarder {
	const char *func;  /* symbol name (static string) */
	const char *to;    /* the allocator function it forwards to (static string) */
	char *path;        /* its file, as memtrace can open it */
	uint64_t file_offset; /* of its first byte */
	uint64_t vaddr;    /* its ELF address */
	uint64_t size;     /* its bytes */
};

struct probe_set {
	struct probe *v;
	size_t nr;
	size_t nr_modules; /* distinct files probed */
	struct forwarder *fwd;
	size_t nr_fwd;
};

/*
 * Decide, for every allocator function, which of CANDIDATES (files in the
 * order the dynamic linker searches them) defines it, as the linker would
 * bind it. With LIB set, only that file is used. Functions no candidate
 * defines are skipped. With SKIP_FORWARDERS, those that only forward to
 * another probed one go to PS->fwd instead of being probed: the caller must
 * then be able to unwind through them (their code has no frame pointer), so
 * a recorder walking frame pointers only keeps them probed. With
 * MEMTRACE_NO_PLACEMENT set, every function gets a probe at its first byte,
 * as peers place them. 0, or -ESRCH if not even malloc and free were found.
 */
int probe_set__resolve(struct probe_set *ps, char *const *candidates, size_t n, const char *lib,
		       bool skip_forwarders);

void probe_set__free(struct probe_set *ps);

#endif /* MEMTRACE_PROBES_H */
