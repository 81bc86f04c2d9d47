// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The replay's block table (live_table.h): linear probing, no tombstones. */
#include "live_table.h"

#include <errno.h>
#include <stdlib.h>



static int live__resize(struct live_table *t, unsigned int bits)
{
	size_t cap = (size_t)1 << bits, i;
	struct live_table n = *t;

	n.slots = calloc(cap, sizeof(*n.slots));
	if (!n.slots)
		return -ENOMEM;
	n.mask = cap - 1;
	n.shift = 64 - bits;
	for (i = 0; t->slots && i <= t->mask; i++) {
		size_t j;

		if (!t->slots[i].ptr)
			continue;
		for (j = live__home(&n, t->slots[i].ptr); n.slots[j].ptr; j = (j + 1) & n.mask)
			;
		n.slots[j] = t->slots[i];
	}
	free(t->slots);
	*t = n;
	return 0;
}

/* Empty slot I, shifting back every later entry of its run that would no
 * longer be reachable from its home slot (no tombstones). */
static void live__remove_at(struct live_table *t, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & t->mask;
		if (!t->slots[j].ptr)
			break;
		home = live__home(t, t->slots[j].ptr);
		if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].ptr = 0;
	t->count--;
}

/* Forget the pointers freed FREED_KEEP or more frees ago, in place. */
static void live__drop_old_freed(struct live_table *t)
{
	uint64_t cutoff = t->freed_stamp - FREED_KEEP;
	size_t i, start, left;

	/* Walk once round from an empty slot: shifting back never moves an
	 * entry across it, so each entry is looked at once (a slot whose entry
	 * was removed is looked at again for the one shifted into it). */
	for (start = 0; t->slots[start].ptr; start++)
		;
	for (i = (start + 1) & t->mask, left = t->mask; left;) {
		struct live_entry *e = &t->slots[i];

		if (e->ptr && live_entry__is_freed(e) && e->seq <= cutoff) {
			live__remove_at(t, i);
			t->nfreed--;
			continue;
		}
		i = (i + 1) & t->mask;
		left--;
	}
}

/* Make room for one more entry. */
static int live__reserve(struct live_table *t)
{
	if ((t->count + 1) * 10 <= (t->mask + 1) * 7)
		return 0;
	/* At most FREED_KEEP freed entries survive, so dropping the old ones
	 * when there are more than twice that, and more than live ones, deletes
	 * over a quarter of the entries: it is rare, and the table grows only
	 * while freed entries are few, so it stays a small multiple of the
	 * live ones (or of FREED_KEEP). */
	if (t->nfreed > 2 * FREED_KEEP && t->nfreed > t->count - t->nfreed) {
		live__drop_old_freed(t);
		if ((t->count + 1) * 10 <= (t->mask + 1) * 7)
			return 0;
	}
	/* Grow at 70% load: linear probing stays short up to there. */
	return live__resize(t, 64 - t->shift + 1);
}


/* The slot for PTR: its entry if there is one, live or freed (*existed
 * set), else a free slot now holding PTR. NULL only when growing fails. */
struct live_entry *live_table__insert(struct live_table *t, uint64_t ptr, bool *existed)
{
	size_t i;

	if (live__reserve(t))
		return NULL;
	for (i = live__home(t, ptr); t->slots[i].ptr; i = (i + 1) & t->mask) {
		if (t->slots[i].ptr == ptr) {
			*existed = true;
			return &t->slots[i];
		}
	}
	*existed = false;
	t->slots[i].ptr = ptr;
	t->count++;
	return &t->slots[i];
}

/* E's pointer was freed: keep it as a freed entry. */

int live_table__init(struct live_table *t)
{
	*t = (struct live_table){ 0 };
	return live__resize(t, 10);
}

void live_table__free(struct live_table *t)
{
	free(t->slots);
	t->slots = NULL;
}
