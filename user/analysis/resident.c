// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "resident.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A stretch of resident pages under one holder. */
struct piece {
	uint64_t start, end, live;
	uint32_t stack, kind, flags, vma;
	size_t next_map; /* not in a seen mapping: the first of them past it (its stretch, with vma) */
};

static int by_start(const void *x, const void *y)
{
	const struct analysis_mapping *a = x, *b = y;

	return (a->start > b->start) - (a->start < b->start);
}

struct pieces {
	struct piece *v;
	size_t n, cap;
};

static int piece_add(struct pieces *p, uint64_t start, uint64_t end, uint32_t kind, uint32_t vma,
		     const struct analysis_mapping *m, size_t next_map)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct piece *v = realloc(p->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = (struct piece){
		.start = start, .end = end, .kind = kind, .vma = vma, .next_map = m ? 0 : next_map,
		.stack = m ? m->stack : 0,
		.flags = m ? RG_MAPPED | (m->allocator ? RG_IN_ALLOC : 0) | (m->stack_call ? RG_STACK_CALL : 0) : 0,
	};
	return 0;
}

/* The runs of RES cut where the mappings SORTED (N, by start) begin and end. */
static int cut_runs(struct pieces *p, const struct trace_resident *res, const struct analysis_mapping *sorted, size_t n)
{
	size_t run = 0;

	for (uint32_t v = 0; v < res->nvmas; v++) {
		uint32_t kind = res->vmas[v].kind;

		for (uint32_t k = 0; k < res->vmas[v].nruns; k++, run++) {
			uint64_t cur = res->runs[run].start, end = res->runs[run].end;
			size_t lo = 0, hi = n;

			while (lo < hi) { /* the first mapping that starts after CUR */
				size_t mid = (lo + hi) / 2;

				if (sorted[mid].start <= cur)
					lo = mid + 1;
				else
					hi = mid;
			}
			size_t j = lo ? lo - 1 : 0;

			while (cur < end) {
				const struct analysis_mapping *m = j < n ? &sorted[j] : NULL;
				uint64_t next;

				if (m && m->start + m->len <= cur) { /* behind: the next one */
					j++;
					continue;
				}
				if (m && m->start <= cur) {
					next = m->start + m->len < end ? m->start + m->len : end;
				} else {
					next = m && m->start < end ? m->start : end;
					m = NULL;
				}
				if (piece_add(p, cur, next, kind, v, m, j))
					return -ENOMEM;
				cur = next;
			}
		}
	}
	return 0;
}

/* The part of the kernel's mapping VMA that no seen mapping covers, up to
 * the seen mapping NEXT_MAP (of the sorted ones): what is known of a range
 * no call the trace saw mapped. Never 0 (a u64map key). */
static uint64_t stretch_key(uint32_t vma, size_t next_map)
{
	return ((uint64_t)next_map << 32 | vma) + 1;
}

/* The live blocks' bytes over the pieces (sorted, disjoint), and which
 * stretches outside the seen mappings SORTED (N) hold one (STRETCHES). */
static int lay_blocks(struct resident_snapshot *s, struct pieces *p, const struct live_table *live,
		      const struct trace_resident *res, const struct analysis_mapping *sorted, size_t n,
		      struct u64map *stretches)
{
	for (size_t i = 0; i <= live->mask; i++) {
		const struct live_entry *e = &live->slots[i];
		uint64_t start, end, on = 0;
		size_t lo = 0, hi = p->n, mlo = 0, mhi = n;
		bool existed;

		if (!e->ptr || live_entry__is_freed(e) || !e->size)
			continue;
		start = e->ptr;
		end = start + e->size < start ? UINT64_MAX : start + e->size;
		s->heap_live += e->size;
		while (mlo < mhi) { /* the first seen mapping that starts after START */
			size_t mid = (mlo + mhi) / 2;

			if (sorted[mid].start <= start)
				mlo = mid + 1;
			else
				mhi = mid;
		}
		if (!mlo || sorted[mlo - 1].start + sorted[mlo - 1].len <= start) { /* in no seen mapping */
			for (size_t vlo = 0, vhi = res->nvmas; vlo < vhi;) { /* the kernel's mapping holding START */
				size_t mid = (vlo + vhi) / 2;

				if (res->vmas[mid].end <= start) {
					vlo = mid + 1;
				} else {
					if (res->vmas[mid].start <= start &&
					    !u64map__insert(stretches, stretch_key((uint32_t)mid, mlo), &existed))
						return -ENOMEM;
					vhi = mid;
				}
			}
		}
		while (lo < hi) { /* the first piece that ends after START */
			size_t mid = (lo + hi) / 2;

			if (p->v[mid].end <= start)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo; j < p->n && p->v[j].start < end; j++) {
			uint64_t a = p->v[j].start > start ? p->v[j].start : start;
			uint64_t b = p->v[j].end < end ? p->v[j].end : end;

			p->v[j].live += b - a;
			on += b - a;
		}
		if (e->stack < s->nby_stack)
			s->by_stack[e->stack] += on;
		s->heap_live_not_resident += e->size - on;
	}
	return 0;
}

static int group_pieces(struct resident_snapshot *s, const struct pieces *p, const struct u64map *stretches)
{
	struct u64map idx = { 0 };
	int err = 0;

	for (size_t i = 0; i < p->n && !err; i++) {
		const struct piece *q = &p->v[i];
		bool blocks = !(q->flags & RG_MAPPED) && u64map__get(stretches, stretch_key(q->vma, q->next_map));
		uint32_t flags = q->flags | (q->live ? RG_LIVE : 0) | (blocks ? RG_BLOCKS : 0);
		uint64_t key = ((uint64_t)q->stack << 16 | q->kind << 8 | flags) + 1;
		struct u64map_entry *e;
		bool existed;

		s->resident_anon += q->end - q->start;
		e = u64map__insert(&idx, key, &existed);
		if (!e) {
			err = -ENOMEM;
			break;
		}
		if (!existed) {
			if (s->ngroups == s->cap) {
				size_t cap = s->cap ? 2 * s->cap : 16;
				struct resident_group *v = realloc(s->groups, cap * sizeof(*v));

				if (!v) {
					err = -ENOMEM;
					break;
				}
				s->groups = v;
				s->cap = cap;
			}
			e->val = s->ngroups;
			s->groups[s->ngroups++] = (struct resident_group){ .stack = q->stack, .kind = q->kind, .flags = flags };
		}
		s->groups[e->val].resident += q->end - q->start;
		s->groups[e->val].live += q->live;
	}
	u64map__free(&idx);
	return err;
}

int resident_snapshot__take(struct resident_snapshot *s, const struct trace_resident *res,
			    const struct analysis_mapping *maps, size_t n, const struct live_table *live,
			    bool heap_known, size_t nstacks)
{
	struct analysis_mapping *sorted = n ? malloc(n * sizeof(*sorted)) : NULL;
	struct u64map stretches = { 0 };
	struct pieces p = { 0 };
	int err;

	s->ts = res->ts;
	s->resident_anon = s->heap_live = s->heap_live_not_resident = 0;
	s->heap_known = live && heap_known;
	s->ngroups = 0;
	s->nby_stack = 0;
	if (s->heap_known && nstacks > s->by_stack_cap) {
		uint64_t *v = realloc(s->by_stack, nstacks * sizeof(*v));

		if (!v) {
			free(sorted);
			return -ENOMEM;
		}
		s->by_stack = v;
		s->by_stack_cap = nstacks;
	}
	if (s->heap_known) {
		s->nby_stack = nstacks;
		memset(s->by_stack, 0, nstacks * sizeof(*s->by_stack));
	}
	if (n && !sorted)
		return -ENOMEM;
	if (n) {
		memcpy(sorted, maps, n * sizeof(*sorted));
		qsort(sorted, n, sizeof(*sorted), by_start);
	}
	err = cut_runs(&p, res, sorted, n);
	if (!err && live)
		err = lay_blocks(s, &p, live, res, sorted, n, &stretches);
	if (!err)
		err = group_pieces(s, &p, &stretches);
	u64map__free(&stretches);
	free(sorted);
	free(p.v);
	if (err)
		s->ngroups = 0;
	return err;
}

int resident_snapshot__copy(struct resident_snapshot *to, const struct resident_snapshot *from)
{
	struct resident_group *g = to->groups;
	uint64_t *bs = to->by_stack;
	size_t cap = to->cap, bcap = to->by_stack_cap;

	if (cap < from->ngroups) {
		g = realloc(g, from->ngroups * sizeof(*g));
		if (!g)
			return -ENOMEM;
		to->groups = g;
		to->cap = cap = from->ngroups;
	}
	if (bcap < from->nby_stack) {
		bs = realloc(bs, from->nby_stack * sizeof(*bs));
		if (!bs)
			return -ENOMEM;
		to->by_stack = bs;
		to->by_stack_cap = bcap = from->nby_stack;
	}
	*to = *from;
	to->groups = g;
	to->cap = cap;
	to->by_stack = bs;
	to->by_stack_cap = bcap;
	if (from->ngroups)
		memcpy(g, from->groups, from->ngroups * sizeof(*g));
	if (from->nby_stack)
		memcpy(bs, from->by_stack, from->nby_stack * sizeof(*bs));
	return 0;
}

void resident_snapshot__free(struct resident_snapshot *s)
{
	free(s->groups);
	free(s->by_stack);
	memset(s, 0, sizeof(*s));
}
