// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Stacks grouped into allocation sites (sites.h; the rule is analysis.h's). */
#include "sites.h"
#include "arena.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum site_kind {
	SITE_SYMBOLIZED, /* grouped by module, function, file, line */
	SITE_RAW,        /* no function name: grouped by module + offset */
	SITE_NO_STACK,
};

static enum site_kind site_kind_of(const struct analysis_stack *s)
{
	if (!s->nframes)
		return SITE_NO_STACK;
	return s->frames[s->site].function ? SITE_SYMBOLIZED : SITE_RAW;
}

/* Order stacks so that those of one site are adjacent. */
static int site_key_cmp(const void *px, const void *py)
{
	const struct analysis_stack *x = *(const struct analysis_stack *const *)px;
	const struct analysis_stack *y = *(const struct analysis_stack *const *)py;
	enum site_kind kx = site_kind_of(x), ky = site_kind_of(y);
	const struct analysis_frame *fx, *fy;
	int c;

	if (kx != ky || kx == SITE_NO_STACK)
		return (int)kx - (int)ky;
	fx = &x->frames[x->site];
	fy = &y->frames[y->site];
	c = strcmp_null(fx->module, fy->module);
	if (c || kx == SITE_RAW) {
		if (c)
			return c;
		return fx->module_offset < fy->module_offset ? -1 : fx->module_offset > fy->module_offset;
	}
	c = strcmp_null(fx->function, fy->function);
	if (!c)
		c = strcmp_null(fx->file, fy->file);
	if (!c)
		c = fx->line < fy->line ? -1 : fx->line > fy->line;
	return c;
}

static int figures_cmp(const struct analysis_figures *x, const struct analysis_figures *y)
{
	if (x->allocated_bytes != y->allocated_bytes)
		return x->allocated_bytes > y->allocated_bytes ? -1 : 1;
	if (x->allocations != y->allocations)
		return x->allocations > y->allocations ? -1 : 1;
	return 0;
}

static int stack_rank_cmp(const void *px, const void *py)
{
	const struct analysis_stack *x = *(const struct analysis_stack *const *)px;
	const struct analysis_stack *y = *(const struct analysis_stack *const *)py;
	int c = figures_cmp(&x->figures, &y->figures);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int site_rank_cmp(const void *px, const void *py)
{
	const struct analysis_site *x = px, *y = py;
	int c = figures_cmp(&x->figures, &y->figures);

	return c ? c : strcmp(x->name, y->name);
}

static const char *site_name(struct arena *arena, const struct analysis_stack *s, int *err)
{
	const struct analysis_frame *f = &s->frames[s->site];
	const char *base;
	char buf[64];
	size_t n;
	char *name;

	if (site_kind_of(s) == SITE_NO_STACK)
		return "[no stack]";
	if (f->function)
		return f->function;
	if (!f->module) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)f->address);
		return arena__strdup(arena, buf, err);
	}
	base = strrchr(f->module, '/');
	base = base ? base + 1 : f->module;
	snprintf(buf, sizeof(buf), "+0x%llx", (unsigned long long)f->module_offset);
	n = strlen(base);
	name = arena__alloc(arena, n + strlen(buf) + 1);
	if (!name) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(name, base, n);
	strcpy(name + n, buf);
	return name;
}

/* One site from the N stacks at BY (all of the same key). */
static int site__init(struct arena *arena, struct analysis_site *site,
		      const struct analysis_stack **by, size_t n)
{
	const struct analysis_frame *f = by[0]->nframes ? &by[0]->frames[by[0]->site] : NULL;
	const struct analysis_stack **stacks;
	int err = 0;
	size_t i;

	memset(site, 0, sizeof(*site));
	stacks = malloc(n * sizeof(*stacks));
	if (!stacks)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		stacks[i] = by[i];
		analysis_figures__add(&site->figures, &by[i]->figures);
	}
	qsort(stacks, n, sizeof(*stacks), stack_rank_cmp);
	site->stacks = stacks;
	site->nstacks = n;
	site->name = site_name(arena, by[0], &err);
	if (f) {
		site->function = f->function;
		site->file = f->function ? f->file : NULL;
		site->line = f->function ? f->line : 0;
		site->module = f->module;
	}
	return err;
}

int sites__group(struct arena *arena, const struct analysis_stack **by, size_t n,
		 struct analysis_site **out, size_t *nout)
{
	struct analysis_site *sites;
	size_t i, j, ns = 0;
	int err = 0;

	qsort(by, n, sizeof(*by), site_key_cmp);
	sites = calloc(n ? n : 1, sizeof(*sites));
	if (!sites)
		return -ENOMEM;
	for (i = 0; i < n && !err; i = j) {
		for (j = i + 1; j < n && !site_key_cmp(&by[i], &by[j]); j++)
			;
		err = site__init(arena, &sites[ns++], by + i, j - i);
	}
	if (err) {
		sites__free(sites, ns);
		return err;
	}
	qsort(sites, ns, sizeof(*sites), site_rank_cmp);
	*out = sites;
	*nout = ns;
	return 0;
}

void sites__free(struct analysis_site *sites, size_t n)
{
	for (size_t i = 0; sites && i < n; i++)
		free((void *)sites[i].stacks);
	free(sites);
}

