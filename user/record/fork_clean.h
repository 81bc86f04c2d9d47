/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The breakpoints a recorded process's fork inherits, taken out of the
 * child. A uprobe is an int3 (0xCC) the kernel writes over an instruction's
 * first byte; fork copies the page, breakpoint and all, into the child. The
 * links are made for the target's pid, so the kernel runs no program in the
 * child, but every call there still traps (5 us a malloc on kernel 6.18,
 * docs/performance.md), and the kernel never takes the breakpoint out of
 * the child while the link lives. Without --follow-children nothing records
 * the child: this puts its original first bytes back.
 *
 * Rules:
 * - sites are what the loader attached for the target (file and offset),
 *   their original bytes read from the file through the held mapping
 *   descriptor (procmaps.h), never by a path the target controls;
 * - a child sharing the target's memory (a vfork, a thread, a reused pid)
 *   is left alone: kcmp says so before and after its memory is opened;
 * - the child's memory is opened once (bound to its mm then: an exec after
 *   leaves the writes in the dead mm) and a byte is written only where the
 *   child holds 0xCC followed by the file's next bytes; anything else (a
 *   different byte, a short read, the child gone) is left and the next
 *   site tried.
 */
#ifndef MEMTRACE_FORK_CLEAN_H
#define MEMTRACE_FORK_CLEAN_H

#include <stddef.h>
#include <stdint.h>

#define FORK_CLEAN_BYTES 8 /* bytes compared at a site, at most (to the next site of its file) */

struct fork_site {
	uint64_t dev, ino;               /* the probed file */
	uint64_t offset;                 /* file offset of the breakpoint */
	uint8_t orig[FORK_CLEAN_BYTES];  /* the file's bytes there */
	uint32_t len;                    /* of them compared: cut at the next site */
};

struct fork_clean {
	struct fork_site *v;
	size_t nr, cap;
	uint64_t children;   /* forks reported */
	uint64_t cleaned;    /* of them with every breakpoint found restored */
	uint64_t restored;   /* breakpoints restored, all children */
	uint64_t ns;         /* the recorder's time spent on them (its caller adds it) */
};

/* Remember N breakpoints at OFFSETS of FILE (a path memtrace opens: the
 * held "/proc/self/fd/N"); those known already are skipped. 0 or -errno. */
int fork_clean__add(struct fork_clean *fc, const char *file, const uint64_t *offsets, size_t n);

/* Take the breakpoints out of CHILD, forked by TARGET, and out of the
 * processes it forked before that (counted as children too): how many
 * were restored in CHILD (0: none found, or left alone), or -errno (the
 * child gone). */
int fork_clean__child(struct fork_clean *fc, int target, int child);

void fork_clean__free(struct fork_clean *fc);

#endif /* MEMTRACE_FORK_CLEAN_H */
