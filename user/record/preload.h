/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_PRELOAD_H
#define MEMTRACE_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * record --preload: the recorder's side of the in-process capture
 * (inproc/preload/preload.c). It makes the shared memory file (a sealed
 * memfd, 0600 by construction: it has no name), the command's environment
 * (the interposer first in LD_PRELOAD, the descriptor's number), and reads
 * the threads' rings into the drain as it reads the probes' rings.
 *
 * Rules (tests/unit/test_preload.c pins each):
 * - A record is taken only when committed (its type set) and whole: a size
 *   under a header, over MT_PRELOAD_SLACK, not a multiple of 8, or past
 *   what the writer could have reserved marks the slot broken (the target
 *   is on the other side of a trust boundary), counted, never read again.
 * - What was read is zeroed before the tail moves past it.
 * - A retired slot read to its end is free again.
 * - Where the kernel keeps time by the TSC, the records carry it and are
 *   put in CLOCK_MONOTONIC ns here, from the latest pair of readings (taken
 *   as each poll starts) at the rate of the whole recording so far; else
 *   (or with MEMTRACE_PRELOAD_CLOCK=monotonic) they carry the ns.
 */
#include <linux/types.h>
#include "memtrace_abi.h"

#define MT_PRELOAD_SLACK_WORDS 256 /* MT_PRELOAD_SLACK / 8, without the ABI header here */

struct preload {
	int fd;                        /* the memfd; -1: none */
	struct mt_preload_header *hdr; /* mapped, header_bytes + nr_slots * slot_bytes */
	struct mt_preload_header geom; /* what it was made as: the target may write the header, we read this */
	size_t map_bytes;
	uint64_t records;              /* handed to the sink */
	uint64_t broken;               /* slots that broke a rule above */
	uint8_t *slot_broken;          /* by slot */
	uint64_t *tails;               /* by slot: where we read (the slot's own is the target's to change) */
	/* MT_PRELOAD_CLOCK_TSC: the records' TSC into CLOCK_MONOTONIC ns, by
	 * the first pair of readings and the latest (each poll's) */
	uint32_t unwind_gen;           /* publications of the unwind area */
	uint64_t rows_copied;          /* rows in it */
	bool tsc;
	uint64_t tsc0, mono0, tsc_at, mono_at;
	double ns_per_tick;
	uint64_t buf[MT_PRELOAD_SLACK_WORDS]; /* a record, copied out */
};

/* The interposer beside this memtrace (or in ../lib/memtrace), into BUF.
 * 0, or -ENOENT. */
int preload_find_library(char *buf, size_t cap);

/* Why PATH cannot be recorded by preloading (a static program, a setuid
 * one whose loader drops LD_PRELOAD, one that defines malloc itself, before
 * any preloaded library), into WHY; false when it can. */
bool preload_unsupported(const char *path, char *why, size_t cap);

/* Make the shared memory: NR_SLOTS rings of RING_BYTES (a power of two)
 * and STACK_DEPTH frames per stack; FOLLOW: --follow-children (each
 * process, each program, makes its own, which its recorder adopts). 0 or
 * -errno. */
int preload__open(struct preload *p, uint32_t nr_slots, uint64_t ring_bytes, uint32_t stack_depth, bool follow,
		  uint32_t unwind_rows);

/* The unwind tables the interposer walks code without frame pointers by:
 * NR mappings (MAPS, as the BPF walker's) whose rows are in ROWS (NR_ROWS
 * long), copied in, the rows added since the last time. 0, or -ENOSPC
 * (more rows than the area holds: the interposer goes on with the last). */
int preload__publish_unwind(struct preload *p, const struct mt_unwind_map *maps, uint32_t nr,
			    const struct mt_unwind_row *rows, size_t nr_rows);

/*
 * --follow-children: read the memory PID (PIDFD) made for itself, at its
 * descriptor FD, once it is there: 0 (taken: PID goes on), -EAGAIN (not yet,
 * or only its parent's or its last program's, taken by another), or -errno.
 * The target made it: its header, size and seals are checked before it is
 * mapped. FD may instead be ours already (the first process, whose memory
 * we made): PIDFD -1.
 */
int preload__adopt(struct preload *p, int pidfd, int fd, int pid);

/* The process that may write (the command's pid, known once forked). */
void preload__set_pid(struct preload *p, int pid);

/* A copy of ENVP for the command: LD_PRELOAD with LIB first (an existing
 * value kept after it), MEMTRACE_PRELOAD_FD. NULL with errno (ENOMEM;
 * EINVAL: LIB's path has a space or colon, which LD_PRELOAD cannot hold). */
char **preload__environ(const struct preload *p, const char *lib, char *const *envp);
void preload__environ_free(char **env);

/* Hand every committed record of every slot to FN (ABI records, as a ring
 * gives them). 0, or FN's error. */
int preload__poll(struct preload *p, int (*fn)(void *ctx, const void *data, size_t size), void *ctx);

/* Tell the interposer to write nothing more (recording stops). */
void preload__stop(struct preload *p);

/* Records the interposer could write nowhere (no free slot; a full ring in
 * a signal handler), and those of broken slots. */
uint64_t preload__lost(const struct preload *p);

/* For -v: threads that took a slot, times a writer found its ring full. */
void preload__counts(const struct preload *p, uint64_t *threads, uint64_t *waits);

void preload__close(struct preload *p);

#endif /* MEMTRACE_PRELOAD_H */
