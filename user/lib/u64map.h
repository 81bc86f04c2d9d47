/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small open-addressing hash map from a non-zero 64-bit key to a 64-bit
 * value and a 32-bit tag, with real deletion (backward shift, no
 * tombstones) and a clear that keeps the memory. For the analyses' side
 * tables: pointers, ids, tids.
 */
#ifndef MEMTRACE_U64MAP_H
#define MEMTRACE_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64map_entry {
	uint64_t key; /* 0: empty slot */
	uint64_t val;
	uint32_t tag;
};

struct u64map {
	struct u64map_entry *slots;
	size_t mask;
	size_t count;
};

/* The entry of KEY (non-zero), or NULL. */
struct u64map_entry *u64map__get(const struct u64map *m, uint64_t key);

/* The entry of KEY, created zeroed (*existed false) if there was none.
 * NULL when growing fails. Pointers into the map are valid until the next
 * insert or remove. */
struct u64map_entry *u64map__insert(struct u64map *m, uint64_t key, bool *existed);

/* Remove E, an entry of M. */
void u64map__remove(struct u64map *m, struct u64map_entry *e);

/* Remove every entry; the memory stays for reuse. */
void u64map__clear(struct u64map *m);

void u64map__free(struct u64map *m);

#endif /* MEMTRACE_U64MAP_H */
