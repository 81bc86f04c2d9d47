// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The HTML viewer's data (report_html.h, "view"): the cells of
 * view_cells.h with their stacks, frames, sites, threads and zones interned
 * once, so that the page recomputes every view for a selection by summing
 * cells. Bounded: the stacks that allocate most (and, apart, those that
 * leak most, and with --rss those that first wrote most pages) are kept
 * while the cells stay within a budget; the others fold into one "other"
 * stack, whose cells still count in every sum.
 */
#include "report_html.h"
#include "export.h"
#include "json_out.h"
#include "replay.h"
#include "strtab.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_MAX_STACKS 2000  /* kept stacks, by allocated bytes */
#define VIEW_MAX_LEAKERS 200  /* and by leaked bytes */
#define VIEW_MAX_WRITERS 200  /* and by pages first written (--rss) */
#define VIEW_MAX_CELLS 40000  /* cells of the kept stacks */
#define VIEW_NONE UINT32_MAX

struct view_stack {
	uint64_t allocated_bytes, leaked_bytes, fault_bytes;
	uint32_t ncells;
	uint32_t out; /* index in the page; VIEW_NONE: folded */
};

struct view_out {
	struct replay *r;
	const struct analysis *a;
	struct view_stack *stacks; /* by engine stack index */
	size_t nstacks;
	uint32_t nkept, nfolded;
	uint64_t folded_bytes, folded_allocations;
	size_t ncells_kept;
	struct strtab strings, frame_keys;
	struct u64map site_of; /* trace stack id + 1 -> site index in the analysis */
	struct u64map site_out; /* site index + 1 -> index in the page */
	const struct analysis_site **sites; /* in the page's order */
	size_t nsites;
};

static int by_bytes(const void *x, const void *y, void *ctx)
{
	const struct view_stack *s = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (s[a].allocated_bytes != s[b].allocated_bytes)
		return s[a].allocated_bytes > s[b].allocated_bytes ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int by_leaked(const void *x, const void *y, void *ctx)
{
	const struct view_stack *s = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (s[a].leaked_bytes != s[b].leaked_bytes)
		return s[a].leaked_bytes > s[b].leaked_bytes ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int by_faults(const void *x, const void *y, void *ctx)
{
	const struct view_stack *s = ctx;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (s[a].fault_bytes != s[b].fault_bytes)
		return s[a].fault_bytes > s[b].fault_bytes ? -1 : 1;
	return a < b ? -1 : a > b;
}

static bool view_keep(struct view_out *o, uint32_t s)
{
	struct view_stack *v = &o->stacks[s];

	if (v->out != VIEW_NONE)
		return true;
	if (o->ncells_kept + v->ncells > VIEW_MAX_CELLS)
		return false;
	o->ncells_kept += v->ncells;
	v->out = o->nkept++;
	return true;
}

/* Which stacks the page keeps, in what order. 0 or -ENOMEM. */
static int view_choose(struct view_out *o, const struct view_cell *c, size_t n)
{
	uint32_t *order, nused = 0, leakers = 0;

	o->nstacks = replay__nstacks(o->r);
	o->stacks = calloc(o->nstacks ? o->nstacks : 1, sizeof(*o->stacks));
	order = calloc(o->nstacks ? o->nstacks : 1, sizeof(*order));
	if (!o->stacks || !order) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct view_stack *v = &o->stacks[c[i].stack];

		v->allocated_bytes += c[i].figures.allocated_bytes;
		v->leaked_bytes += c[i].figures.leaked_bytes;
		v->ncells++;
	}
	for (uint32_t s = 0; s < o->nstacks; s++) {
		o->stacks[s].out = VIEW_NONE;
		if (o->stacks[s].ncells)
			order[nused++] = s;
	}
	qsort_r(order, nused, sizeof(*order), by_bytes, o->stacks);
	for (uint32_t i = 0; i < nused && o->nkept < VIEW_MAX_STACKS; i++) {
		if (!view_keep(o, order[i]))
			break;
	}
	qsort_r(order, nused, sizeof(*order), by_leaked, o->stacks);
	for (uint32_t i = 0; i < nused && leakers < VIEW_MAX_LEAKERS && o->stacks[order[i]].leaked_bytes; i++) {
		if (!view_keep(o, order[i]))
			break;
		leakers++;
	}
	/* the stacks that first wrote most pages: most have no cells (the code
	 * that writes a block is seldom the code that allocates it) */
	nused = 0;
	for (uint32_t s = 0; s < o->nstacks; s++) {
		o->stacks[s].fault_bytes = replay__fault_bytes(o->r, s);
		if (o->stacks[s].fault_bytes)
			order[nused++] = s;
	}
	qsort_r(order, nused, sizeof(*order), by_faults, o->stacks);
	for (uint32_t i = 0; i < nused && i < VIEW_MAX_WRITERS; i++) {
		if (!view_keep(o, order[i]))
			break;
	}
	for (size_t i = 0; i < n; i++) {
		if (o->stacks[c[i].stack].out == VIEW_NONE) {
			o->folded_bytes += c[i].figures.allocated_bytes;
			o->folded_allocations += c[i].figures.allocations;
		}
	}
	for (uint32_t s = 0; s < o->nstacks; s++)
		o->nfolded += o->stacks[s].ncells && o->stacks[s].out == VIEW_NONE;
	free(order);
	return 0;
}

static int64_t view_string(struct view_out *o, const char *s)
{
	return strtab__intern(&o->strings, s ? s : "");
}

/* The page's index of frame F, its strings interned. */
static int64_t view_frame(struct view_out *o, const struct analysis_frame *f)
{
	char name[64], *key;
	int64_t id, fn, file, mod;

	fn = view_string(o, export_frame_name(f, name, sizeof(name)));
	file = view_string(o, f->file);
	mod = view_string(o, f->module);
	if (fn < 0 || file < 0 || mod < 0)
		return -ENOMEM;
	if (asprintf(&key, "%lld %lld %u %lld", (long long)fn, (long long)file, f->line, (long long)mod) < 0)
		return -ENOMEM;
	id = strtab__intern(&o->frame_keys, key);
	free(key);
	return id;
}

/* The page's index of the site of stack S (engine index), added if new;
 * VIEW_NO_SITE for a stack that allocated nothing (it only wrote pages). */
#define VIEW_NO_SITE (-1 - (int64_t)INT32_MAX)
static int64_t view_site(struct view_out *o, uint32_t s)
{
	struct u64map_entry *e;
	uint64_t site;
	bool existed;

	e = u64map__get(&o->site_of, (uint64_t)replay__stack(o->r, s)->id + 1);
	if (!e)
		return VIEW_NO_SITE;
	site = e->val;
	e = u64map__insert(&o->site_out, site + 1, &existed);
	if (!e)
		return -ENOMEM;
	if (!existed) {
		size_t n;

		e->val = o->nsites;
		o->sites[o->nsites++] = &analysis__sites(o->a, &n)[site];
	}
	return (int64_t)e->val;
}

static int view_index_sites(struct view_out *o)
{
	const struct analysis_site *sites;
	size_t n;

	sites = analysis__sites(o->a, &n);
	o->sites = calloc(n + 1, sizeof(*o->sites));
	if (!o->sites)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < sites[i].nstacks; k++) {
			struct u64map_entry *e;
			bool existed;

			e = u64map__insert(&o->site_of, (uint64_t)sites[i].stacks[k]->id + 1, &existed);
			if (!e)
				return -ENOMEM;
			e->val = i;
		}
	}
	return 0;
}

/* "stacks": [site, [frame, ... outermost first]] in the page's order;
 * frames and strings are interned on the way. */
static int view_stacks(struct json_out *j, struct view_out *o)
{
	uint32_t *by_out;
	int err = 0;

	by_out = calloc(o->nkept + 1, sizeof(*by_out));
	if (!by_out)
		return -ENOMEM;
	for (uint32_t s = 0; s < o->nstacks; s++) {
		if (o->stacks[s].out != VIEW_NONE)
			by_out[o->stacks[s].out] = s;
	}
	json_out__key(j, "stacks");
	json_out__begin_array(j, false);
	for (uint32_t i = 0; i < o->nkept && !err; i++) {
		const struct analysis_frame *f;
		int64_t site, id;
		size_t nf;

		site = view_site(o, by_out[i]);
		f = replay__stack_frames(o->r, by_out[i], &nf);
		if ((site < 0 && site != VIEW_NO_SITE) || (!f && errno == ENOMEM)) {
			err = site < 0 ? (int)site : -ENOMEM;
			break;
		}
		json_out__begin_array(j, true);
		json_out__i64(j, site == VIEW_NO_SITE ? -1 : site);
		json_out__begin_array(j, true);
		for (size_t k = nf; k-- > 0 && !err;) {
			id = view_frame(o, &f[k]);
			if (id < 0)
				err = (int)id;
			json_out__i64(j, id);
		}
		json_out__end_array(j);
		json_out__end_array(j);
	}
	json_out__end_array(j);
	free(by_out);
	return err;
}

static int view_tables(struct json_out *j, struct view_out *o)
{
	json_out__key(j, "sites");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < o->nsites; i++) {
		const struct analysis_site *s = o->sites[i];
		int64_t name = view_string(o, s->name), file = view_string(o, s->file);
		int64_t mod = view_string(o, s->module);

		if (name < 0 || file < 0 || mod < 0)
			return -ENOMEM;
		json_out__begin_array(j, true);
		json_out__i64(j, name);
		json_out__i64(j, file);
		json_out__u64(j, s->line);
		json_out__i64(j, mod);
		json_out__end_array(j);
	}
	json_out__end_array(j);
	json_out__key(j, "frames");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < o->frame_keys.nr; i++) {
		long long fn, file, mod;
		unsigned line;

		if (sscanf(o->frame_keys.strs[i], "%lld %lld %u %lld", &fn, &file, &line, &mod) != 4)
			return -EINVAL;
		json_out__begin_array(j, true);
		json_out__i64(j, fn);
		json_out__i64(j, file);
		json_out__u64(j, line);
		json_out__i64(j, mod);
		json_out__end_array(j);
	}
	json_out__end_array(j);
	json_out__key(j, "strings");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < o->strings.nr; i++)
		json_out__string(j, o->strings.strs[i]);
	json_out__end_array(j);
	return 0;
}

static void view_threads(struct json_out *j, const struct replay *r)
{
	json_out__key(j, "threads");
	json_out__begin_array(j, false);
	for (uint32_t t = 0; t < replay__nthreads(r); t++) {
		uint32_t name = replay__thread_name(r, t);

		json_out__begin_array(j, true);
		json_out__u64(j, replay__thread_tid(r, t));
		json_out__string(j, name == REPLAY_NONE ? NULL : replay__name(r, name));
		json_out__end_array(j);
	}
	json_out__end_array(j);
}

void report_html__figures(struct json_out *j, const struct analysis_figures *f)
{
	json_out__u64(j, f->allocations);
	json_out__u64(j, f->allocated_bytes);
	json_out__u64(j, f->leaked_allocations);
	json_out__u64(j, f->leaked_bytes);
	json_out__u64(j, f->peak_bytes);
	json_out__u64(j, f->temporary_allocations);
}

static void view_cell_out(struct json_out *j, uint32_t stack, const struct view_cell *c, int64_t zone)
{
	json_out__u64(j, stack);
	json_out__u64(j, c->thread);
	json_out__i64(j, zone);
	json_out__u64(j, c->bucket);
	json_out__u64(j, c->size_class);
	report_html__figures(j, &c->figures);
}

/* "zones" (names) and "cells", 11 numbers each (see the page's script);
 * the folded stacks' cells merged per thread, zone, bucket and class. */
static int view_cells_out(struct json_out *j, struct view_out *o, const struct view_cell *c, size_t n)
{
	struct u64map zones = { 0 }, other = { 0 };
	struct view_cell *merged = NULL;
	size_t nmerged = 0, cap = 0;
	int err = -ENOMEM;

	json_out__key(j, "zones");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n; i++) {
		struct u64map_entry *e;
		bool existed;

		if (c[i].zone == REPLAY_NONE)
			continue;
		e = u64map__insert(&zones, (uint64_t)c[i].zone + 1, &existed);
		if (!e)
			goto out;
		if (!existed) {
			e->val = zones.count - 1;
			json_out__string(j, replay__name(o->r, c[i].zone));
		}
	}
	json_out__end_array(j);
	json_out__key(j, "cells");
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n; i++) {
		uint32_t out = o->stacks[c[i].stack].out;
		int64_t zone = c[i].zone == REPLAY_NONE ? -1 :
			       (int64_t)u64map__get(&zones, (uint64_t)c[i].zone + 1)->val;
		struct u64map_entry *e;
		bool existed;

		if (out != VIEW_NONE) {
			view_cell_out(j, out, &c[i], zone);
			continue;
		}
		e = u64map__insert(&other, ((uint64_t)c[i].thread << 40 | (uint64_t)(zone + 1) << 20 |
					    (uint64_t)c[i].bucket << 8 | c[i].size_class) + 1, &existed);
		if (!e || array_reserve((void **)&merged, &cap, nmerged + 1, sizeof(*merged)))
			goto out;
		if (!existed) {
			e->val = nmerged;
			merged[nmerged] = c[i];
			merged[nmerged++].zone = (uint32_t)zone;
		} else {
			analysis_figures__add(&merged[e->val].figures, &c[i].figures);
		}
	}
	for (size_t i = 0; i < nmerged; i++)
		view_cell_out(j, o->nkept, &merged[i], (int32_t)merged[i].zone);
	json_out__end_array(j);
	err = 0;
out:
	u64map__free(&zones);
	u64map__free(&other);
	free(merged);
	return err;
}

/* "resident": [[stack in the page, bytes], ...]: --rss's live blocks on
 * resident pages at the last snapshot (folded stacks as the "other" one);
 * null when the live heap is not known. */
static void view_resident(struct json_out *j, const struct view_out *o)
{
	uint64_t other = 0;

	json_out__key(j, "resident");
	if (!replay__trace(o->r)->rss.at_end.heap_known) {
		json_out__null(j);
		return;
	}
	json_out__begin_array(j, false);
	for (uint32_t s = 0; s < o->nstacks; s++) {
		uint64_t b = replay__resident_bytes(o->r, s);

		if (!b)
			continue;
		if (o->stacks[s].out == VIEW_NONE) {
			other += b;
			continue;
		}
		json_out__begin_array(j, true);
		json_out__u64(j, o->stacks[s].out);
		json_out__u64(j, b);
		json_out__end_array(j);
	}
	if (other) {
		json_out__begin_array(j, true);
		json_out__u64(j, o->nkept);
		json_out__u64(j, other);
		json_out__end_array(j);
	}
	json_out__end_array(j);
}

/* "first_written": [[stack in the page, bytes], ...]: --rss's pages first
 * written by each stack's code (trace.rss.maps.fault_bytes in all, folded
 * stacks' as the "other" one); null when no write fault was sampled. */
static void view_first_written(struct json_out *j, const struct view_out *o)
{
	const struct analysis_rss *rs = &replay__trace(o->r)->rss;
	uint64_t other = 0;

	json_out__key(j, "first_written");
	if (!rs->traced_maps || !rs->maps.calls[MT_MAP_FAULT]) {
		json_out__null(j);
		return;
	}
	json_out__begin_array(j, false);
	for (uint32_t s = 0; s < o->nstacks; s++) {
		uint64_t b = o->stacks[s].fault_bytes;

		if (!b)
			continue;
		if (o->stacks[s].out == VIEW_NONE) {
			other += b;
			continue;
		}
		json_out__begin_array(j, true);
		json_out__u64(j, o->stacks[s].out);
		json_out__u64(j, b);
		json_out__end_array(j);
	}
	if (other) {
		json_out__begin_array(j, true);
		json_out__u64(j, o->nkept);
		json_out__u64(j, other);
		json_out__end_array(j);
	}
	json_out__end_array(j);
}

int report_html__view(struct json_out *j, struct replay *r, const struct analysis *a,
		      const struct view_cells *v)
{
	struct view_out o = { .r = r, .a = a };
	const struct view_cell *c;
	uint64_t nbuckets = 0;
	size_t n;
	int err;

	c = view_cells__cells(v, &n);
	strtab__init(&o.strings);
	strtab__init(&o.frame_keys);
	err = view_choose(&o, c, n);
	if (!err)
		err = view_index_sites(&o);
	if (err)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (c[i].bucket + 1u > nbuckets)
			nbuckets = c[i].bucket + 1u;
	}
	json_out__key(j, "view");
	json_out__begin_object(j, false);
	json_out__key_u64(j, "bucket_ns", view_cells__bucket_ns(v));
	json_out__key_u64(j, "nbuckets", nbuckets);
	json_out__key(j, "folded");
	json_out__begin_object(j, true);
	json_out__key_u64(j, "stacks", o.nfolded);
	json_out__key_u64(j, "allocations", o.folded_allocations);
	json_out__key_u64(j, "allocated_bytes", o.folded_bytes);
	json_out__end_object(j);
	err = view_stacks(j, &o);
	if (!err)
		err = view_tables(j, &o);
	if (err)
		goto out;
	view_threads(j, r);
	err = view_cells_out(j, &o, c, n);
	view_resident(j, &o);
	view_first_written(j, &o);
	json_out__end_object(j);
out:
	strtab__free(&o.strings);
	strtab__free(&o.frame_keys);
	u64map__free(&o.site_of);
	u64map__free(&o.site_out);
	free(o.sites);
	free(o.stacks);
	return err;
}
