// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The one bump allocator (arena.h). */
#include "arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK 65536

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t size;
	char data[];
};

void *arena__alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;

	n = (n + 7) & ~(size_t)7;
	if (!b || b->size - b->used < n) {
		size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += n;
	return b->data + b->used - n;
}

const char *arena__strdup(struct arena *a, const char *s, int *err)
{
	size_t n;
	char *p;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	p = arena__alloc(a, n);
	if (!p) {
		*err = -ENOMEM;
		return NULL;
	}
	return memcpy(p, s, n);
}

void arena__free(struct arena *a)
{
	struct arena_block *b, *next;

	for (b = a->head; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
}
