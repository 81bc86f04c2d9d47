// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Open addressing with linear probing; the table stays at most half full. */
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void strtab__init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
}

void strtab__free(struct strtab *t)
{
	for (size_t i = 0; i < t->nr; i++)
		free((char *)t->strs[i]);
	free(t->strs);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* FNV-1a: short strings, no adversary. */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The slot holding S, or the empty slot where it belongs. */
static uint32_t *strtab__slot(const struct strtab *t, const char *s)
{
	size_t i = str_hash(s) & t->mask;

	while (t->slots[i] && strcmp(t->strs[t->slots[i] - 1], s))
		i = (i + 1) & t->mask;
	return &t->slots[i];
}

static int strtab__grow(struct strtab *t)
{
	size_t nslots = t->slots ? (t->mask + 1) * 2 : 64;
	uint32_t *old = t->slots;
	const char **strs;

	strs = realloc(t->strs, nslots / 2 * sizeof(*strs));
	if (!strs)
		return -ENOMEM;
	t->strs = strs;
	t->slots = calloc(nslots, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->mask = nslots - 1;
	t->cap = nslots / 2; /* only now: the slots must stay at most half full */
	for (size_t i = 0; i < t->nr; i++)
		*strtab__slot(t, t->strs[i]) = (uint32_t)(i + 1);
	free(old);
	return 0;
}

int64_t strtab__intern(struct strtab *t, const char *s)
{
	uint32_t *slot;
	int err;

	if (!s)
		s = "";
	if (t->nr >= t->cap) {
		err = strtab__grow(t);
		if (err)
			return err;
	}
	slot = strtab__slot(t, s);
	if (!*slot) {
		t->strs[t->nr] = strdup(s);
		if (!t->strs[t->nr])
			return -ENOMEM;
		*slot = (uint32_t)++t->nr;
	}
	return *slot - 1;
}
