/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A bump allocator for what lives as long as its owner (an analysis, a
 * replay): many small copies freed all at once.
 */
#ifndef MEMTRACE_ARENA_H
#define MEMTRACE_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;
};

/* N bytes, 8-aligned, or NULL. */
void *arena__alloc(struct arena *a, size_t n);

/* A copy of S in the arena; NULL stays NULL. Sets *err to -ENOMEM on
 * failure and leaves it alone otherwise. */
const char *arena__strdup(struct arena *a, const char *s, int *err);

/* Everything the arena handed out goes at once. */
void arena__free(struct arena *a);

#endif /* MEMTRACE_ARENA_H */
