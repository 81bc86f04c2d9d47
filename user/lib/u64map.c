// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The hash map of u64map.h: linear probing at most 70% full. */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

static inline size_t u64map__home(const struct u64map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & m->mask;
}

static int u64map__resize(struct u64map *m, size_t cap)
{
	struct u64map n = { .mask = cap - 1, .count = m->count };
	size_t i;

	n.slots = calloc(cap, sizeof(*n.slots));
	if (!n.slots)
		return -1;
	for (i = 0; m->slots && i <= m->mask; i++) {
		size_t j;

		if (!m->slots[i].key)
			continue;
		for (j = u64map__home(&n, m->slots[i].key); n.slots[j].key; j = (j + 1) & n.mask)
			;
		n.slots[j] = m->slots[i];
	}
	free(m->slots);
	*m = n;
	return 0;
}

struct u64map_entry *u64map__get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->count)
		return NULL;
	for (i = u64map__home(m, key); m->slots[i].key; i = (i + 1) & m->mask)
		if (m->slots[i].key == key)
			return &m->slots[i];
	return NULL;
}

struct u64map_entry *u64map__insert(struct u64map *m, uint64_t key, bool *existed)
{
	struct u64map_entry *e = u64map__get(m, key);
	size_t i;

	*existed = e != NULL;
	if (e)
		return e;
	if (!m->slots || (m->count + 1) * 10 > (m->mask + 1) * 7) {
		if (u64map__resize(m, m->slots ? (m->mask + 1) * 2 : 16))
			return NULL;
	}
	for (i = u64map__home(m, key); m->slots[i].key; i = (i + 1) & m->mask)
		;
	e = &m->slots[i];
	memset(e, 0, sizeof(*e));
	e->key = key;
	m->count++;
	return e;
}

void u64map__remove(struct u64map *m, struct u64map_entry *e)
{
	size_t i = (size_t)(e - m->slots), j = i;

	/* Shift back every later entry of the run that would no longer be
	 * reachable from its home slot. */
	for (;;) {
		size_t home;

		j = (j + 1) & m->mask;
		if (!m->slots[j].key)
			break;
		home = u64map__home(m, m->slots[j].key);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = 0;
	m->count--;
}

void u64map__clear(struct u64map *m)
{
	if (m->slots && m->count)
		memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	m->count = 0;
}

void u64map__free(struct u64map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
