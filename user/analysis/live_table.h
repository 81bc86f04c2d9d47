/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The replay engine's table of blocks by pointer (replay.h's rules): live
 * blocks, and freed pointers remembered so that a second free of one is
 * told apart from a free of memory allocated before the trace. A table of
 * its own rather than u64map because it is the hot path of every replay:
 * entries carry the block itself, a free keeps its slot for the reuse that
 * allocators make of addresses, and old freed entries are dropped in bulk.
 */
#ifndef MEMTRACE_LIVE_TABLE_H
#define MEMTRACE_LIVE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LIVE_FREED UINT32_MAX /* live_entry.stack of a freed entry */
/* A freed pointer is never forgotten before this many later frees; glibc
 * caches a few hundred chunks per thread (tcache, fastbins). */
#define FREED_KEEP 65536

/*
 * An allocation, live or freed. ptr 0 marks a free slot (0 is never
 * allocated). A freed entry remembers a pointer whose last event was a
 * matched free: allocators free again what they had cached (glibc's tcache
 * at thread exit), and that is not memory from before the trace. It is
 * turned back into a live entry when the pointer is allocated again, which
 * is how allocators reuse addresses, so freed entries cost no extra probe.
 */
struct live_entry {
	uint64_t ptr;
	uint64_t size;
	uint64_t seq;    /* live: global allocation number, for temporariness;
			    freed: when it was freed (live_table.freed_stamp) */
	uint32_t stack;  /* stack index; LIVE_FREED: freed */
	uint32_t thread; /* thread index */
	uint32_t zone;   /* name of its exclusive zone; REPLAY_NONE */
	uint32_t born_us; /* --budget traces: its time, us after the trace's start (mod 2^32) */
};

/* Linear probing. A free keeps its entry (as freed) rather than deleting
 * it, and an allocation at that pointer takes it back; the load counts
 * freed entries, so probes stay short. Freed entries whose pointer is never
 * reused would pile up, so when they are many, the old ones are deleted
 * (backward shift, no tombstones) instead of growing the table. */
struct live_table {
	struct live_entry *slots;
	size_t mask;
	unsigned int shift;   /* 64 - log2(capacity): the hash takes the high bits */
	size_t count;         /* entries, live and freed */
	size_t nfreed;        /* freed entries */
	uint64_t freed_stamp; /* frees so far: the seq of the latest freed entry */
};

static inline bool live_entry__is_freed(const struct live_entry *e)
{
	return e->stack == LIVE_FREED;
}

/* An empty table; 0 or -ENOMEM. */
int live_table__init(struct live_table *t);
void live_table__free(struct live_table *t);

static inline size_t live__home(const struct live_table *t, uint64_t ptr)
{
	/* Fibonacci hashing: the high bits of the product mix the pointer's
	 * middle bits, where allocations differ (the low 4 are alignment). */
	return (size_t)((ptr * 0x9E3779B97F4A7C15ULL) >> t->shift);
}

/* The entry of PTR, live or freed, or NULL. Inline: every free looks. */
static inline struct live_entry *live_table__find(const struct live_table *t, uint64_t ptr)
{
	for (size_t i = live__home(t, ptr); t->slots[i].ptr; i = (i + 1) & t->mask)
		if (t->slots[i].ptr == ptr)
			return &t->slots[i];
	return NULL;
}

/* The slot for PTR: its entry if there is one, live or freed (*existed
 * set), else a free slot now holding PTR. NULL only when growing fails.
 * Pointers into the table are valid until the next insert. */
struct live_entry *live_table__insert(struct live_table *t, uint64_t ptr, bool *existed);

/* E's pointer was freed: keep it as a freed entry. */
static inline void live_table__mark_freed(struct live_table *t, struct live_entry *e)
{
	e->stack = LIVE_FREED;
	e->seq = ++t->freed_stamp;
	t->nfreed++;
}

#endif /* MEMTRACE_LIVE_TABLE_H */
