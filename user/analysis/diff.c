// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Sort-merge matching: both traces' sites in one array sorted by key, so
 * equal keys sit together whatever side they come from. */
#include "diff.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct diff_ref {
	const struct analysis_site *site;
	bool is_new;
};

static const char *basename_of(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path;
}

/* The matching order of diff.h: a function (else the name), file, line,
 * module basename. */
static int site_key_cmp(const struct analysis_site *x, const struct analysis_site *y)
{
	int c;

	c = strcmp_null(x->function ? x->function : x->name, y->function ? y->function : y->name);
	if (!c)
		c = (x->function != NULL) - (y->function != NULL);
	if (!c)
		c = strcmp_null(x->file, y->file);
	if (!c)
		c = (x->line > y->line) - (x->line < y->line);
	if (!c)
		c = strcmp_null(basename_of(x->module), basename_of(y->module));
	return c;
}

static int ref_cmp(const void *x, const void *y)
{
	return site_key_cmp(((const struct diff_ref *)x)->site, ((const struct diff_ref *)y)->site);
}

/* Fold the refs R[0..n), all of one key, into S. */
static void site_merge(struct diff_site *s, const struct diff_ref *r, size_t n)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < n; i++) {
		const struct analysis_site *x = r[i].site;

		analysis_figures__add(r[i].is_new ? &s->b : &s->a, &x->figures);
		/* NEW's names win: they are what the user runs now */
		if (!s->name || r[i].is_new) {
			s->name = x->name;
			s->function = x->function;
			s->file = x->file;
			s->line = x->line;
			s->module = x->module;
		}
	}
}

int diff_site__growth(const struct diff_site *s)
{
	const uint64_t a[] = { s->a.allocated_bytes, s->a.leaked_bytes, s->a.peak_bytes,
			       s->a.allocations, s->a.leaked_allocations, s->a.temporary_allocations };
	const uint64_t b[] = { s->b.allocated_bytes, s->b.leaked_bytes, s->b.peak_bytes,
			       s->b.allocations, s->b.leaked_allocations, s->b.temporary_allocations };

	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++) {
		if (a[i] != b[i])
			return b[i] > a[i] ? 1 : -1;
	}
	return 0;
}

/* S's change per field, in diff.h's order of importance. */
static void site_deltas(const struct diff_site *s, int64_t d[6])
{
	d[0] = diff_delta(s->a.allocated_bytes, s->b.allocated_bytes);
	d[1] = diff_delta(s->a.leaked_bytes, s->b.leaked_bytes);
	d[2] = diff_delta(s->a.peak_bytes, s->b.peak_bytes);
	d[3] = diff_delta(s->a.allocations, s->b.allocations);
	d[4] = diff_delta(s->a.leaked_allocations, s->b.leaked_allocations);
	d[5] = diff_delta(s->a.temporary_allocations, s->b.temporary_allocations);
}

/* Larger change first, field by field, as diff.h orders. */
static int growth_cmp(const void *x, const void *y)
{
	const struct diff_site *p = x, *q = y;
	int64_t dp[6], dq[6];
	struct analysis_site kp = { .name = p->name, .function = p->function, .file = p->file,
				    .line = p->line, .module = p->module };
	struct analysis_site kq = { .name = q->name, .function = q->function, .file = q->file,
				    .line = q->line, .module = q->module };

	site_deltas(p, dp);
	site_deltas(q, dq);
	for (size_t i = 0; i < 6; i++) {
		if (dp[i] != dq[i])
			return dp[i] > dq[i] ? -1 : 1;
	}
	return site_key_cmp(&kp, &kq);
}

int diff__sites(struct diff *d, const struct analysis_site *sa, size_t na,
		const struct analysis_site *sb, size_t nb)
{
	struct diff_ref *refs;
	size_t n = na + nb, i, j;

	d->sites = NULL;
	d->nsites = 0;
	refs = malloc((n ? n : 1) * sizeof(*refs));
	d->sites = malloc((n ? n : 1) * sizeof(*d->sites));
	if (!refs || !d->sites) {
		free(refs);
		free(d->sites);
		d->sites = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < na; i++)
		refs[i] = (struct diff_ref){ .site = &sa[i], .is_new = false };
	for (i = 0; i < nb; i++)
		refs[na + i] = (struct diff_ref){ .site = &sb[i], .is_new = true };
	qsort(refs, n, sizeof(*refs), ref_cmp);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !ref_cmp(&refs[i], &refs[j]); j++)
			;
		site_merge(&d->sites[d->nsites++], &refs[i], j - i);
	}
	free(refs);
	qsort(d->sites, d->nsites, sizeof(*d->sites), growth_cmp);
	return 0;
}

static void diff_rss_of(struct diff_rss *to, const struct analysis_rss *rs)
{
	const struct analysis_rss_point *pk, *last;

	if (!rs->npoints)
		return;
	pk = &rs->points[rs->peak];
	last = &rs->points[rs->npoints - 1];
	*to = (struct diff_rss){
		.has = true,
		.peak_resident = pk->anon + pk->file + pk->shmem,
		.last_resident = last->anon + last->file + last->shmem,
		.peak_anon = pk->anon,
		.last_anon = last->anon,
		.reconciled = rs->at_end.seen,
		.heap_known = rs->at_end.heap_known,
		.allocator_resident = rs->at_end.allocator_resident,
		.allocator_free_resident = rs->at_end.allocator_free_resident,
		.outside_resident = rs->at_end.outside_resident,
		.thread_stacks = rs->at_end.thread_stacks,
		.heap_live_not_resident = rs->at_end.heap_live_not_resident,
		.glibc = rs->maps.glibc_probed,
		.arenas_new = rs->maps.glibc.arenas_new,
		.heap_grown_bytes = rs->maps.glibc.heap_grown_bytes,
		.sbrk_more_bytes = rs->maps.glibc.sbrk_more_bytes,
		.sbrk_less_bytes = rs->maps.glibc.sbrk_less_bytes,
		.retries = rs->maps.glibc.retries,
	};
}

int diff__analyses(struct diff *d, const struct analysis *base, const struct analysis *new_)
{
	const struct analysis_site *sa, *sb;
	size_t na, nb;

	memset(d, 0, sizeof(*d));
	d->a = *analysis__totals(base);
	d->b = *analysis__totals(new_);
	diff_rss_of(&d->rss_a, &analysis__trace(base)->rss);
	diff_rss_of(&d->rss_b, &analysis__trace(new_)->rss);
	sa = analysis__sites(base, &na);
	sb = analysis__sites(new_, &nb);
	return diff__sites(d, sa, na, sb, nb);
}

void diff__free(struct diff *d)
{
	free(d->sites);
	d->sites = NULL;
	d->nsites = 0;
}
