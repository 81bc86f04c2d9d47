/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --rss: a resident snapshot (which anonymous pages were present, by
 * pagemap) laid over the mappings the MAP records made and the live blocks
 * of the same moment. It splits the resident pages by the call that mapped
 * their range (cut where those mappings begin and end, not where the
 * kernel's merged mappings do) and keeps the sums per group; replay.c
 * names the groups at the end and says whose each is (analysis_reconcile).
 * Pure: no file, no output.
 */
#ifndef MEMTRACE_RESIDENT_H
#define MEMTRACE_RESIDENT_H

#include "live_table.h"
#include "replay.h"
#include "u64map.h"

#define RG_MAPPED 0x1     /* in a mapping an mmap the trace saw made */
#define RG_IN_ALLOC 0x2   /* that mmap came while an allocator call was open */
#define RG_LIVE 0x4       /* pages under live blocks (the allocator's, whatever else) */
#define RG_BLOCKS 0x8     /* not RG_MAPPED: the part of the kernel's mapping between seen ones holds a live block */
#define RG_STACK_CALL 0x10 /* that mmap asked for a stack (MAP_STACK) */

/* Resident pages of one kind of holder. */
struct resident_group {
	uint32_t stack; /* RG_MAPPED: the mmap's stack index; else 0 */
	uint32_t kind;  /* enum trace_vma_kind of the mapping the kernel has */
	uint32_t flags; /* RG_* */
	uint64_t resident; /* bytes of anonymous pages present */
	uint64_t live;     /* of them, bytes under live blocks */
};

struct resident_snapshot {
	uint64_t ts;
	uint64_t resident_anon;          /* all the runs' bytes */
	uint64_t heap_live;              /* the live heap then (block sizes, as asked for) */
	uint64_t heap_live_not_resident; /* live blocks' bytes on pages not present */
	bool heap_known;                 /* the live blocks were given */
	struct resident_group *groups;
	size_t ngroups, cap;
	uint64_t *by_stack; /* heap_known: live blocks' bytes on resident pages, by allocation stack index */
	size_t nby_stack, by_stack_cap;
};

/* Fill S from RES, the mappings MAPS (N, in any order) and, when LIVE is
 * not NULL, its live blocks; HEAP_KNOWN: they are every live block (else
 * they only tell which mappings are the allocator's). 0 or -ENOMEM (S then
 * empty). */
int resident_snapshot__take(struct resident_snapshot *s, const struct trace_resident *res,
			    const struct analysis_mapping *maps, size_t n, const struct live_table *live,
			    bool heap_known, size_t nstacks);
/* Copy FROM into TO (its memory reused). 0 or -ENOMEM. */
int resident_snapshot__copy(struct resident_snapshot *to, const struct resident_snapshot *from);
void resident_snapshot__free(struct resident_snapshot *s);

#endif /* MEMTRACE_RESIDENT_H */
