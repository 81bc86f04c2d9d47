// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sums by key over a trace's last minute (recent.h): a ring of one-second
 * tables, the oldest cleared for reuse as time moves on. */
#include "recent.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct recent_sum {
	int64_t bytes, count;
};

/* One second's sums: KEY + 1 -> index into v. */
struct recent_second {
	uint64_t second; /* which second it holds */
	bool used;
	struct u64map index;
	struct recent_sum *v;
	size_t n, cap;
};

struct recent {
	struct recent_second ring[RECENT_SECONDS];
	uint64_t latest; /* the latest second added to */
	bool any;
};

struct recent *recent__new(void)
{
	return calloc(1, sizeof(struct recent));
}

void recent__free(struct recent *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < RECENT_SECONDS; i++) {
		u64map__free(&w->ring[i].index);
		free(w->ring[i].v);
	}
	free(w);
}

/* Second SEC's table into slot SEC % RECENT_SECONDS, its old content gone. */
static void second_reuse(struct recent *w, uint64_t sec)
{
	struct recent_second *s = &w->ring[sec % RECENT_SECONDS];

	u64map__clear(&s->index);
	s->n = 0;
	s->second = sec;
	s->used = true;
}

/* BYTES and COUNT into KEY's sums in table S (INDEX and V). */
static int sum_add(struct u64map *index, struct recent_sum **v, size_t *n, size_t *cap, uint32_t key,
		   int64_t bytes, int64_t count)
{
	bool existed;
	struct u64map_entry *e = u64map__insert(index, (uint64_t)key + 1, &existed);

	if (!e)
		return -ENOMEM;
	if (!existed) {
		if (array_reserve((void **)v, cap, *n + 1, sizeof(**v))) {
			u64map__remove(index, e);
			return -ENOMEM;
		}
		e->val = *n;
		(*v)[(*n)++] = (struct recent_sum){ 0 };
	}
	(*v)[e->val].bytes += bytes;
	(*v)[e->val].count += count;
	return 0;
}

int recent__add(struct recent *w, uint64_t t_ns, uint32_t key, int64_t bytes, int64_t count)
{
	uint64_t sec = t_ns / 1000000000ull;
	struct recent_second *s;

	if (!w->any || sec > w->latest) {
		/* the seconds after the latest up to SEC made empty (at most the whole ring) */
		uint64_t first = !w->any ? sec : sec - w->latest >= RECENT_SECONDS ? sec - (RECENT_SECONDS - 1) : w->latest + 1;

		for (uint64_t k = first; k <= sec; k++)
			second_reuse(w, k);
		w->latest = sec;
		w->any = true;
	} else if (w->latest - sec >= RECENT_SECONDS) {
		return 0; /* before every window to come */
	}
	s = &w->ring[sec % RECENT_SECONDS];
	return sum_add(&s->index, &s->v, &s->n, &s->cap, key, bytes, count);
}

int recent__sums(const struct recent *w, uint64_t end_ns, uint64_t *from_ns,
		 int (*fn)(void *ctx, uint32_t key, int64_t bytes, int64_t count), void *ctx)
{
	uint64_t from = recent_window_from(end_ns) / 1000000000ull;
	uint64_t to = end_ns / 1000000000ull;
	struct u64map index = { 0 };
	struct recent_sum *v = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	*from_ns = from * 1000000000ull;
	for (size_t i = 0; !err && i < RECENT_SECONDS; i++) {
		const struct recent_second *s = &w->ring[i];

		if (!s->used || s->second < from || s->second > to)
			continue;
		for (size_t k = 0; !err && s->index.slots && k <= s->index.mask; k++) {
			const struct u64map_entry *e = &s->index.slots[k];

			if (e->key)
				err = sum_add(&index, &v, &n, &cap, (uint32_t)(e->key - 1), s->v[e->val].bytes,
					      s->v[e->val].count);
		}
	}
	for (size_t k = 0; !err && index.slots && k <= index.mask; k++) {
		const struct u64map_entry *e = &index.slots[k];

		if (e->key)
			err = fn(ctx, (uint32_t)(e->key - 1), v[e->val].bytes, v[e->val].count);
	}
	u64map__free(&index);
	free(v);
	return err;
}
