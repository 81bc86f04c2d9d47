// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The replay engine; the rules are in replay.h.
 *
 * The hot path is replay__add_event: one probe of the live-block table,
 * array indexing and one call per observer, no allocation except when a
 * table doubles. Consecutive events usually share a thread and a stack, so
 * both lookups are cached.
 */
#include "replay.h"
#include "arena.h"
#include "live_table.h"
#include "recent.h"
#include "resident.h"
#include "strtab.h"
#include "trace_reader.h"
#include "u64map.h"
#include "util.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOC_FNS 32

struct observer {
	const struct replay_ops *ops;
	void *ctx;
};

/* The observers that have one callback, so an event costs nothing for
 * the observers that do not want it. */
struct hook {
	size_t n;
	const struct observer *obs[REPLAY_MAX_OBSERVERS];
};

struct hooks {
	struct hook meta, alloc, free, event_done, zone_begin, zone_end, zone_unmatched_end, frame,
		pool, finish;
};

struct thread {
	uint32_t tid;
	uint32_t name;           /* REPLAY_NONE: none */
	uint64_t last_seq;       /* seq of its latest allocation */
	struct replay_zone *open; /* outermost first */
	size_t depth, cap;
};

struct symbol {
	int32_t module;
	uint32_t nframes;
	uint32_t language; /* enum trace_language */
	uint64_t module_offset;
	size_t first; /* index into sym_frames */
};

struct sym_frame {
	const char *function;
	const char *file;
	uint32_t line;
};

/* --rss: anonymous mappings as the MAP records leave them; one rule
 * (apply_map) for the end's accounting and for each resident snapshot. */
struct map_table {
	struct analysis_mapping *v;
	size_t n, cap;
	struct analysis_maps *counts; /* the figures it keeps; NULL: none */
};

struct replay {
	struct arena arena;
	struct observer obs[REPLAY_MAX_OBSERVERS];
	size_t nobs;
	struct hooks hooks;
	const char *alloc_fns[MAX_ALLOC_FNS];
	size_t nr_alloc_fns;

	struct analysis_trace trace;
	struct analysis_totals totals;
	uint64_t start_mono_ns, start_real_ns, end_mono_ns;
	uint64_t last_event_ts; /* the last event's time: a partial trace's end */
	uint64_t max_ts;        /* the latest time of any event or mark */
	uint64_t drops_sum, end_dropped;
	uint64_t marks;
	uint64_t frames;
	double sample_mean;     /* 0: every allocation was recorded */
	double weight;          /* --budget: the current window's; else 1 */
	double weight_unscaled; /* ... and by the price unscaled (WINDOW_END's): the model's error */
	uint64_t window_begin, window_end; /* the current window's marks */
	uint64_t lifetime_buckets[64]; /* --budget: frees seen, by log2 of lifetime in ns */
	struct analysis_rss_point *rss; /* --rss: trace.rss.points */
	size_t rss_cap;
	struct map_table maps_end;  /* --rss: trace.rss.maps, made at the end */
	struct map_table maps_now;  /* --rss: as of the record being replayed, unnamed */
	struct analysis_map_site *map_sites; /* --rss: trace.rss.maps.sites */
	uint64_t first_brk, brk;
	struct resident_snapshot res_last, res_peak, res_new; /* --rss: RESIDENT records laid over the heap */
	struct analysis_map_site *res_sites[2]; /* trace.rss.end's and peak's */
	struct res_point {                      /* --rss: each snapshot kept, added up at the end */
		uint64_t ts, resident_anon, heap_live, heap_live_not_resident;
		bool heap_known;
		size_t group, ngroups;          /* its groups in res_groups */
	} *res_points;
	size_t nres_points, res_points_cap, res_points_peak; /* _peak: res_peak's point */
	struct resident_group *res_groups;
	size_t nres_groups, res_groups_cap;
	struct analysis_reconcile *reconciled;  /* trace.rss.reconciled */
	struct analysis_map_site *fault_sites;  /* trace.rss.maps.fault_sites */
	size_t fault_sites_cap;
	struct analysis_map_site *recent_fault_sites; /* trace.rss.maps.recent_fault_sites */
	size_t recent_fault_sites_cap;
	struct analysis_map_site *arena_sites;  /* trace.rss.maps.glibc.arena_sites */
	size_t arena_sites_cap;
	struct glibc_heap {                     /* glibc's non-main heaps: their size now */
		uint64_t heap, size;
	} *glibc_heaps;
	size_t nglibc_heaps, glibc_heaps_cap;
	struct map_log { struct trace_map m; uint32_t stack; } *map_log; /* --rss: MAP records, kept to the end */
	size_t nmap_log, map_log_cap;

	uint64_t meta_flags;    /* TRACE_META_* */
	/* --budget: the large blocks live (the rules in replay.h) */
	struct large_block {
		uint64_t start, len, size;       /* its mapping, and its usable size */
		uint64_t moved_start, moved_len; /* the range an mremap moved it from; 0: none */
		uint64_t seq;
		uint32_t stack, thread, zone;
	} *large;
	size_t nlarge, large_cap, nmoved; /* nmoved: of them, moved by an mremap */
	struct u64map past_libc;  /* stack index + 1 -> its stack past the C library's frames */
	/* --budget: the window in progress's stacks and figures, for the error */
	uint32_t *win_stacks;
	size_t nwin_stacks, win_stacks_cap;
	uint64_t win_bytes, win_count;
	double model_bytes, model_count; /* the totals' estimate less the one by the unscaled weights */

	struct live_table live;
	uint64_t live_bytes, live_count;
	uint64_t alloc_seq;
	uint64_t peak_epoch, peak_ts;

	struct replay_stack *stacks;
	size_t nstacks, stacks_cap;
	struct u64map stack_ids;  /* stack id -> index */
	uint32_t cached_stack_id, cached_stack;

	struct thread *threads;
	size_t nthreads, threads_cap;
	struct u64map tids;       /* tid + 1 -> index */
	uint32_t cached_tid[2], cached_thread[2]; /* the last two threads: most traces alternate few */
	bool have_cached_thread;

	struct strtab names;      /* interned by text */
	struct u64map string_ids; /* STRING id -> name index */

	struct symbol *symbols;
	size_t nsymbols, symbols_cap;
	struct sym_frame *sym_frames;
	size_t nsym_frames, sym_frames_cap;
	struct u64map sym_addrs;  /* address -> symbol index */

	struct trace_module *modules; /* paths in the arena */
	size_t nmodules, modules_cap;
	struct trace_module *sorted;  /* by start, made at the first lookup */
	bool finished;
};

/* Call HOOK of every observer that has one, with ARGS; return the first
 * error from the calling function. */
#define NOTIFY(r, hook, ...)                                                   \
	do {                                                                    \
		for (size_t i_ = 0; i_ < (r)->hooks.hook.n; i_++) {             \
			const struct observer *o_ = (r)->hooks.hook.obs[i_];    \
			int e_ = o_->ops->hook(o_->ctx, (r), __VA_ARGS__);      \
			if (e_)                                                 \
				return e_;                                      \
		}                                                               \
	} while (0)

/* ---- lifetime ---- */

static int stack__new(struct replay *r, uint32_t id, uint32_t *idx)
{
	struct u64map_entry *e;
	bool existed;
	int err;

	err = array_reserve((void **)&r->stacks, &r->stacks_cap, r->nstacks + 1, sizeof(*r->stacks));
	if (err)
		return err;
	if (id != 0) {
		e = u64map__insert(&r->stack_ids, id, &existed);
		if (!e)
			return -ENOMEM;
		e->val = r->nstacks;
	}
	r->stacks[r->nstacks] = (struct replay_stack){ .id = id };
	*idx = (uint32_t)r->nstacks++;
	return 0;
}

struct replay *replay__new(void)
{
	struct replay *r = calloc(1, sizeof(*r));
	uint32_t idx;

	if (!r)
		return NULL;
	r->trace.pid = -1;
	r->maps_end.counts = &r->trace.rss.maps;
	strtab__init(&r->names);
	if (live_table__init(&r->live) || stack__new(r, 0, &idx)) {
		replay__free(r);
		errno = ENOMEM;
		return NULL;
	}
	r->cached_stack_id = 0;
	r->cached_stack = 0;
	return r;
}

void replay__free(struct replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nthreads; i++)
		free(r->threads[i].open);
	arena__free(&r->arena);
	free(r->rss);
	free(r->maps_end.v);
	resident_snapshot__free(&r->res_last);
	resident_snapshot__free(&r->res_peak);
	resident_snapshot__free(&r->res_new);
	free(r->fault_sites);
	free(r->recent_fault_sites);
	free(r->arena_sites);
	free(r->glibc_heaps);
	free(r->res_sites[0]);
	free(r->res_sites[1]);
	free(r->res_points);
	free(r->res_groups);
	free(r->reconciled);
	free(r->maps_now.v);
	free(r->map_log);
	free(r->map_sites);
	free(r->large);
	u64map__free(&r->past_libc);
	free(r->win_stacks);
	live_table__free(&r->live);
	free(r->stacks);
	u64map__free(&r->stack_ids);
	free(r->threads);
	u64map__free(&r->tids);
	strtab__free(&r->names);
	u64map__free(&r->string_ids);
	free(r->symbols);
	free(r->sym_frames);
	u64map__free(&r->sym_addrs);
	free(r->modules);
	free(r->sorted);
	free(r);
}

int replay__observe(struct replay *r, const struct replay_ops *ops, void *ctx)
{
	const struct observer *o;

	if (r->nobs == REPLAY_MAX_OBSERVERS)
		return -E2BIG;
	r->obs[r->nobs] = (struct observer){ ops, ctx };
	o = &r->obs[r->nobs++];
#define HOOK(name)                                                  \
	if (ops->name)                                              \
		r->hooks.name.obs[r->hooks.name.n++] = o
	HOOK(meta);
	HOOK(alloc);
	HOOK(free);
	HOOK(event_done);
	HOOK(zone_begin);
	HOOK(zone_end);
	HOOK(zone_unmatched_end);
	HOOK(frame);
	HOOK(pool);
	HOOK(finish);
#undef HOOK
	return 0;
}

int replay__add_alloc_fn(struct replay *r, const char *glob)
{
	int err = 0;

	if (r->nr_alloc_fns == MAX_ALLOC_FNS)
		return -E2BIG;
	r->alloc_fns[r->nr_alloc_fns] = arena__strdup(&r->arena, glob, &err);
	if (!err)
		r->nr_alloc_fns++;
	return err;
}

bool replay__is_alloc_fn(const struct replay *r, const char *function)
{
	for (size_t i = 0; function && i < r->nr_alloc_fns; i++) {
		if (!fnmatch(r->alloc_fns[i], function, 0))
			return true;
	}
	return false;
}

/* ---- records other than events and marks ---- */

int replay__set_meta(struct replay *r, const struct trace_meta *m)
{
	int err = 0;

	r->trace.command = arena__strdup(&r->arena, m->command_line, &err);
	r->trace.comm = arena__strdup(&r->arena, m->comm, &err);
	r->trace.pid = m->pid;
	r->trace.sample_bytes = m->sample_bytes;
	r->trace.no_heap = m->flags & TRACE_META_NO_HEAP;
	r->trace.rss.traced_maps = m->flags & TRACE_META_MAPS;
	r->trace.attached = m->flags & TRACE_META_ATTACHED;
	r->trace.preload = m->flags & TRACE_META_PRELOAD;
	r->trace.rss.maps.glibc_probed = m->flags & TRACE_META_GLIBC_PROBES;
	r->sample_mean = (double)m->sample_bytes;
	r->trace.budget.budget_ppm = m->budget_ppm;
	r->trace.budget.hit_entry_ns = m->hit_entry_ns;
	r->trace.budget.hit_return_ns = m->hit_return_ns;
	r->trace.budget.large_bytes = m->budget_ppm ? m->large_bytes : 0;
	r->meta_flags = m->flags;
	r->start_mono_ns = m->start_mono_ns;
	r->trace.start_mono_ns = m->start_mono_ns;
	r->start_real_ns = m->start_real_ns;
	if (err)
		return err;
	NOTIFY(r, meta, m);
	return 0;
}

int replay__add_module(struct replay *r, const struct trace_module *m)
{
	struct trace_module *mod;
	int err;

	err = array_reserve((void **)&r->modules, &r->modules_cap, r->nmodules + 1, sizeof(*r->modules));
	if (err)
		return err;
	mod = &r->modules[r->nmodules];
	*mod = *m;
	if (mod->build_id_len > sizeof(mod->build_id))
		mod->build_id_len = 0;
	mod->path = arena__strdup(&r->arena, m->path, &err);
	if (err)
		return err;
	r->nmodules++;
	free(r->sorted); /* rebuilt at the next lookup */
	r->sorted = NULL;
	return 0;
}

int replay__add_stack(struct replay *r, const struct trace_stack *s)
{
	struct u64map_entry *e;
	uint64_t *addrs;
	uint32_t idx;
	int err;

	if (s->id == 0)
		return 0;
	e = u64map__get(&r->stack_ids, s->id);
	if (e) {
		idx = (uint32_t)e->val;
	} else {
		err = stack__new(r, s->id, &idx);
		if (err)
			return err;
	}
	addrs = arena__alloc(&r->arena, (s->nr ? s->nr : 1) * sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	memcpy(addrs, s->frames, s->nr * sizeof(*addrs));
	r->stacks[idx].addrs = addrs;
	r->stacks[idx].nr = s->nr;
	return 0;
}

int replay__add_symbol(struct replay *r, const struct trace_symbol *s)
{
	struct u64map_entry *e;
	struct symbol *sym;
	bool existed;
	int err;

	if (!s->addr)
		return 0; /* no stack holds address 0 */
	err = array_reserve((void **)&r->symbols, &r->symbols_cap, r->nsymbols + 1, sizeof(*r->symbols));
	if (!err)
		err = array_reserve((void **)&r->sym_frames, &r->sym_frames_cap,
				    r->nsym_frames + s->nframes, sizeof(*r->sym_frames));
	if (err)
		return err;
	sym = &r->symbols[r->nsymbols];
	sym->module = s->module;
	sym->module_offset = s->module_offset;
	sym->nframes = s->nframes;
	sym->language = s->language;
	sym->first = r->nsym_frames;
	for (uint32_t i = 0; i < s->nframes; i++) {
		struct sym_frame *f = &r->sym_frames[r->nsym_frames + i];

		f->function = arena__strdup(&r->arena, s->frames[i].function, &err);
		f->file = arena__strdup(&r->arena, s->frames[i].file, &err);
		f->line = s->frames[i].line;
	}
	if (err)
		return err;
	e = u64map__insert(&r->sym_addrs, s->addr, &existed);
	if (!e)
		return -ENOMEM;
	e->val = r->nsymbols; /* a later symbol of the same address wins */
	r->nsym_frames += s->nframes;
	r->nsymbols++;
	return 0;
}

int replay__add_drops(struct replay *r, const struct trace_drops *d)
{
	r->drops_sum += d->count;
	return 0;
}

int replay__add_rss(struct replay *r, const struct trace_rss *s)
{
	struct analysis_rss *rs = &r->trace.rss;
	struct analysis_rss_point *p;

	if (rs->npoints == r->rss_cap) {
		size_t cap = r->rss_cap ? 2 * r->rss_cap : 256;

		p = realloc(r->rss, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->rss = p;
		r->rss_cap = cap;
		rs->points = p;
	}
	p = &r->rss[rs->npoints];
	*p = (struct analysis_rss_point){
		.time_ns = s->ts > r->start_mono_ns ? s->ts - r->start_mono_ns : 0,
		.anon = s->anon,
		.file = s->file,
		.shmem = s->shmem,
		.heap_bytes = r->live_bytes,
	};
	if (!rs->npoints || p->anon + p->file + p->shmem >
				    r->rss[rs->peak].anon + r->rss[rs->peak].file + r->rss[rs->peak].shmem)
		rs->peak = rs->npoints;
	rs->npoints++;
	return 0;
}

int replay__add_rollup(struct replay *r, const struct trace_rollup *ro)
{
	struct analysis_rollup *to = r->trace.rss.start.seen ? &r->trace.rss.end : &r->trace.rss.start;
	int err = 0;

	to->seen = true;
	to->time_ns = ro->ts > r->start_mono_ns ? ro->ts - r->start_mono_ns : 0;
	to->n = ro->n < TRACE_ROLLUP_MAX ? ro->n : TRACE_ROLLUP_MAX;
	for (uint32_t i = 0; i < to->n && !err; i++) {
		to->name[i] = arena__strdup(&r->arena, ro->name[i], &err);
		to->bytes[i] = ro->bytes[i];
	}
	return err;
}

#define MAP_ANONYMOUS_FLAG 0x20 /* mmap's MAP_ANONYMOUS */
#define MAP_STACK_FLAG 0x20000  /* mmap's MAP_STACK */

static inline int stack__index(struct replay *r, uint32_t id, uint32_t *idx);
/* LEN bytes of M's in (IN) or out of its side's total: the program's or
 * the allocator's. */
static void map_count(struct map_table *t, const struct analysis_mapping *m, uint64_t len, bool in)
{
	struct analysis_maps *mp = t->counts;
	uint64_t *total;

	if (!mp)
		return;
	total = m->allocator ? &mp->allocator_bytes : &mp->outside_bytes;
	*total = in ? *total + len : *total - len;
	if (mp->outside_bytes > mp->outside_peak_bytes)
		mp->outside_peak_bytes = mp->outside_bytes;
}

static int map_add(struct map_table *t, const struct analysis_mapping *m)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct analysis_mapping *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = *m;
	if (t->counts) {
		t->counts->mappings = t->v;
		t->counts->nmappings = t->n;
	}
	map_count(t, m, m->len, true);
	return 0;
}

static int map_new(struct replay *r, struct map_table *t, uint64_t start, uint64_t len, uint32_t stack,
		   const struct analysis_frame *site, uint64_t ts, bool allocator, bool stack_call)
{
	struct analysis_mapping m = {
		.start = start, .len = len, .stack = stack, .site = site, .allocator = allocator, .stack_call = stack_call,
		.time_ns = ts > r->start_mono_ns ? ts - r->start_mono_ns : 0,
	};

	return map_add(t, &m);
}

/* Take [START, START + LEN) out of the mappings: what munmap did, or the
 * old range of a moved mremap. */
static int unmap_range(struct map_table *t, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;

	for (size_t i = 0; i < t->n; i++) {
		struct analysis_mapping *m = &t->v[i];
		uint64_t ms = m->start, me = m->start + m->len;

		if (me <= start || ms >= end)
			continue;
		map_count(t, m, (me < end ? me : end) - (ms > start ? ms : start), false);
		if (ms >= start && me <= end) { /* all of it: the table keeps its order */
			memmove(m, m + 1, (t->n - i - 1) * sizeof(*m));
			t->n--;
			if (t->counts)
				t->counts->nmappings = t->n;
			i--;
		} else if (ms < start && me > end) { /* a hole: the tail becomes a mapping of its own */
			struct analysis_mapping tail = *m;

			tail.start = end;
			tail.len = me - end;
			m->len = start - ms;
			map_count(t, &tail, tail.len, false); /* map_add counts it again */
			if (map_add(t, &tail))
				return -ENOMEM;
		} else if (ms < start) { /* its head stays */
			m->len = start - ms;
		} else { /* its tail stays */
			m->start = end;
			m->len = me - end;
		}
	}
	return 0;
}

/* Page-rounded, as the kernel maps. */
static inline uint64_t page_len(uint64_t len)
{
	return (len + 4095) & ~(uint64_t)4095;
}

/* The allocator's own code, by name, for mappings made while no allocator
 * probe could say so (--rss=only): glibc's malloc internals (malloc/malloc.c
 * and arena.c: sysmalloc, _int_malloc, new_heap, ...), jemalloc (je_),
 * mimalloc (mi_, _mi_) and tcmalloc (tcmalloc::). */
bool replay_is_allocator_frame(const struct analysis_frame *f)
{
	static const char *const prefixes[] = { "malloc", "calloc", "realloc", "__libc_malloc", "__libc_calloc",
						"__libc_realloc", "sysmalloc", "_int_", "new_heap", "alloc_new_heap",
						"grow_heap", "je_", "mi_", "_mi_", "tcmalloc::" };
	const char *file = f ? f->file : NULL;
	size_t n = file ? strlen(file) : 0;

	if (!f)
		return false;
	if (n >= 15 && (!strcmp(file + n - 15, "malloc/malloc.c") || !strcmp(file + n - 14, "malloc/arena.c")))
		return true;
	for (size_t i = 0; f->function && i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(f->function, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

static int apply_map(struct replay *r, struct map_table *t, const struct trace_map *m, uint32_t stack, bool named);

/* A mapping is the allocator's when it was made while an allocator call was
 * open on the thread (IN_ALLOC) or by the allocator's own code (SITE). */
static bool mapped_by_allocator(bool in_alloc, const struct analysis_frame *site)
{
	return in_alloc || replay_is_allocator_frame(site);
}

static bool same_site(const struct analysis_frame *a, const struct analysis_frame *b);

/* The site of STACK past the C library's own frames (its memset, memcpy and
 * malloc write for their caller; its arenas are made for theirs), as a
 * site is chosen: where a write fault or a glibc probe is charged. */
static const struct analysis_frame *site_past_libc(struct replay *r, uint32_t stack)
{
	const struct analysis_frame *f;
	size_t n, i = 0;

	if (!stack || !(f = replay__stack_frames(r, stack, &n)) || !n)
		return NULL;
	while (i + 1 < n && f[i].module && strstr(f[i].module, "/libc.so"))
		i++;
	return &f[i + replay_site_frame(f + i, n - i)];
}

/* BYTES more, and one more (mapping, sample, arena), at SITE among the N
 * sites of SITES, a new one appended: the caller has room for it. */
static void site_add(struct analysis_map_site *sites, size_t *n, const struct analysis_frame *site, uint64_t bytes)
{
	size_t j = 0;

	while (j < *n && !same_site(sites[j].site, site))
		j++;
	if (j == *n)
		sites[(*n)++] = (struct analysis_map_site){ .site = site };
	sites[j].bytes += bytes;
	sites[j].mappings++;
}

/* ... into a list *V that grows (room for *CAP). */
static int site_add_grow(struct analysis_map_site **v, size_t *n, size_t *cap, const struct analysis_frame *site,
			 uint64_t bytes)
{
	int err = array_reserve((void **)v, cap, *n + 1, sizeof(**v));

	if (!err)
		site_add(*v, n, site, bytes);
	return err;
}

/* One sampled write fault of BYTES by STACK's site at TS; in the last
 * minute's list too when it was in it. */
static int fault_add(struct replay *r, uint32_t stack, uint64_t bytes, uint64_t ts)
{
	struct analysis_maps *mp = &r->trace.rss.maps;
	const struct analysis_frame *site = site_past_libc(r, stack);
	int err = site_add_grow(&r->fault_sites, &mp->nfault_sites, &r->fault_sites_cap, site, bytes);

	mp->fault_bytes += bytes;
	mp->fault_sites = r->fault_sites;
	if (stack < r->nstacks)
		r->stacks[stack].fault_bytes += bytes;
	if (!err && ts >= r->start_mono_ns + r->trace.recent_from_ns) {
		err = site_add_grow(&r->recent_fault_sites, &mp->nrecent_fault_sites, &r->recent_fault_sites_cap, site,
				    bytes);
		mp->recent_fault_bytes += bytes;
		mp->recent_fault_sites = r->recent_fault_sites;
	}
	return err;
}

/* A glibc heap's size before this record, and now SIZE (0: unmapped). */
static int glibc_heap_size(struct replay *r, uint64_t heap, uint64_t size, uint64_t *before)
{
	size_t i = 0;

	while (i < r->nglibc_heaps && r->glibc_heaps[i].heap != heap)
		i++;
	*before = i < r->nglibc_heaps ? r->glibc_heaps[i].size : 0;
	if (i == r->nglibc_heaps) {
		if (array_reserve((void **)&r->glibc_heaps, &r->glibc_heaps_cap, i + 1, sizeof(*r->glibc_heaps)))
			return -ENOMEM;
		r->glibc_heaps[r->nglibc_heaps++].heap = heap;
	}
	r->glibc_heaps[i].size = size;
	return 0;
}

/* One record of glibc's probes (MT_MAP_ARENA_NEW ... MT_MAP_RETRY) into G;
 * an arena made is charged to STACK's site, past the C library's frames. */
static int glibc_add(struct replay *r, struct analysis_glibc *g, const struct trace_map *m, uint32_t stack)
{
	uint64_t before = 0;
	int err = 0;

	switch (m->call) {
	case MT_MAP_ARENA_NEW:
		g->arenas_new++;
		g->arena_new_bytes += m->a1;
		err = site_add_grow(&r->arena_sites, &g->narena_sites, &r->arena_sites_cap, site_past_libc(r, stack), m->a1);
		g->arena_sites = r->arena_sites;
		return err;
	case MT_MAP_ARENA_REUSE:
		g->arenas_reused++;
		return 0;
	case MT_MAP_HEAP_NEW:
		g->heaps_new++;
		g->heap_new_bytes += m->a1;
		return glibc_heap_size(r, m->a0, m->a1, &before);
	case MT_MAP_HEAP_MORE:
	case MT_MAP_HEAP_LESS:
		if ((err = glibc_heap_size(r, m->a0, m->a1, &before)))
			return err;
		if (m->a1 >= before) {
			g->heaps_grown++;
			g->heap_grown_bytes += before ? m->a1 - before : 0; /* a heap from before: its growth unknown */
		} else {
			g->heaps_shrunk++;
			g->heap_shrunk_bytes += before - m->a1;
		}
		return 0;
	case MT_MAP_HEAP_FREE:
		g->heaps_freed++;
		g->heap_freed_bytes += m->a1;
		return glibc_heap_size(r, m->a0, 0, &before);
	case MT_MAP_SBRK_MORE:
		g->sbrk_more++;
		g->sbrk_more_bytes += m->a1;
		return 0;
	case MT_MAP_SBRK_LESS:
		g->sbrk_less++;
		g->sbrk_less_bytes += m->a1;
		return 0;
	case MT_MAP_MALLOPT:
		if (g->nmallopt < ANALYSIS_MALLOPT_MAX) {
			g->mallopt[g->nmallopt].param = (int64_t)m->a0;
			g->mallopt[g->nmallopt].value = (int64_t)m->a1;
		}
		g->nmallopt++;
		return 0;
	case MT_MAP_RETRY:
		g->retries++;
		return 0;
	}
	return 0;
}

/* Halve the snapshots kept for the series: every other one goes, never
 * the peak's nor the last. */
static void res_points_thin(struct replay *r)
{
	size_t out = 0, g = 0, peak = 0;

	for (size_t i = 0; i < r->nres_points; i++) {
		struct res_point p = r->res_points[i];

		if (i % 2 && i != r->res_points_peak && i + 1 != r->nres_points)
			continue;
		/* G never passes P.group: the groups move down, in order */
		memmove(&r->res_groups[g], &r->res_groups[p.group], p.ngroups * sizeof(*r->res_groups));
		if (i == r->res_points_peak)
			peak = out;
		p.group = g;
		r->res_points[out++] = p;
		g += p.ngroups;
	}
	r->nres_points = out;
	r->nres_groups = g;
	r->res_points_peak = peak;
}

/* Keep snapshot S (its sums and its groups) for the series; PEAK: it is
 * the peak's now. */
static int res_points_add(struct replay *r, const struct resident_snapshot *s, bool peak)
{
	if (r->nres_points >= REPLAY_RECONCILED_MAX || r->nres_groups + s->ngroups > REPLAY_RECONCILED_GROUPS_MAX)
		res_points_thin(r);
	if (array_reserve((void **)&r->res_points, &r->res_points_cap, r->nres_points + 1, sizeof(*r->res_points)) ||
	    array_reserve((void **)&r->res_groups, &r->res_groups_cap, r->nres_groups + s->ngroups + 1,
			  sizeof(*r->res_groups)))
		return -ENOMEM;
	if (s->ngroups)
		memcpy(&r->res_groups[r->nres_groups], s->groups, s->ngroups * sizeof(*s->groups));
	if (peak)
		r->res_points_peak = r->nres_points;
	r->res_points[r->nres_points++] = (struct res_point){
		.ts = s->ts, .resident_anon = s->resident_anon, .heap_live = s->heap_live,
		.heap_live_not_resident = s->heap_live_not_resident, .heap_known = s->heap_known,
		.group = r->nres_groups, .ngroups = s->ngroups,
	};
	r->nres_groups += s->ngroups;
	return 0;
}

int replay__add_resident(struct replay *r, const struct trace_resident *res)
{
	/* the blocks of a process recorded since it ran are not all known;
	 * those seen still tell the allocator's mappings */
	bool known = analysis_heap_known(&r->trace) && !r->trace.attached;
	struct resident_snapshot t;
	bool peak;
	int err;

	err = resident_snapshot__take(&r->res_new, res, r->maps_now.v, r->maps_now.n,
				      r->trace.no_heap ? NULL : &r->live, known, r->nstacks);
	if (err)
		return err;
	r->trace.rss.nresident++;
	peak = !r->res_peak.ts || r->res_new.resident_anon > r->res_peak.resident_anon;
	if (peak)
		err = resident_snapshot__copy(&r->res_peak, &r->res_new);
	if (!err)
		err = res_points_add(r, &r->res_new, peak);
	t = r->res_last;
	r->res_last = r->res_new;
	r->res_new = t;
	return err;
}

/* glibc's pthread maps thread stacks in allocate_stack (nptl/allocatestack.c)
 * and keeps those of threads that ended for the next ones. */
bool replay_is_thread_stack_frame(const struct analysis_frame *f)
{
	size_t n = f && f->file ? strlen(f->file) : 0;

	return f && ((f->function && !strcmp(f->function, "allocate_stack")) ||
		     (n >= 21 && !strcmp(f->file + n - 21, "nptl/allocatestack.c")));
}

static int large_map(struct replay *r, const struct trace_map *m, uint32_t stack);

int replay__add_map(struct replay *r, const struct trace_map *m)
{
	struct map_log *e;
	uint32_t stack = 0;
	int err;

	if (m->stack_id && (err = stack__index(r, m->stack_id, &stack)))
		return err;
	if (r->trace.budget.large_bytes) {
		if ((err = large_map(r, m, stack)))
			return err;
		if (!(r->meta_flags & TRACE_META_MAPS))
			return 0; /* sent for the large blocks alone, not --rss */
	}
	r->trace.rss.traced_maps = true;
	if (r->nmap_log == r->map_log_cap) {
		size_t cap = r->map_log_cap ? 2 * r->map_log_cap : 256;

		e = realloc(r->map_log, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->map_log = e;
		r->map_log_cap = cap;
	}
	r->map_log[r->nmap_log++] = (struct map_log){ *m, stack };
	/* as of now, for the resident snapshots to come: no names yet */
	return apply_map(r, &r->maps_now, m, stack, false);
}

/* One MAP record into T. NAMED (at the end, its stack named): with its
 * site, and in_alloc when an allocator call was open or when its site is
 * the allocator's own code; else (as the records come) the allocator's
 * only when an allocator call was open, and no site. */
static int apply_map(struct replay *r, struct map_table *t, const struct trace_map *m, uint32_t stack, bool named)
{
	struct analysis_maps *mp = t->counts;
	const struct analysis_frame *site = NULL, *f;
	bool in_alloc = m->flags & MT_MAP_IN_ALLOC;
	size_t n;
	int err = 0;

	if (mp && m->call < sizeof(mp->calls) / sizeof(mp->calls[0]))
		mp->calls[m->call]++;
	if (named && stack && (f = replay__stack_frames(r, stack, &n)) && n)
		site = &f[replay_site_frame(f, n)];
	in_alloc = mapped_by_allocator(in_alloc, site);
	switch (m->call) {
	case MT_MAP_MMAP:
		if (!(m->a3 & MAP_ANONYMOUS_FLAG))
			return 0; /* a file's mapping: its pages are the file's */
		if ((err = unmap_range(t, m->ret, page_len(m->a1)))) /* MAP_FIXED over an older one */
			return err;
		return map_new(r, t, m->ret, page_len(m->a1), stack, site, m->ts, in_alloc, m->a3 & MAP_STACK_FLAG);
	case MT_MAP_MUNMAP:
		return unmap_range(t, m->a0, page_len(m->a1));
	case MT_MAP_MREMAP:
		/* the mapping that held the old range moves and resizes */
		for (size_t i = 0; i < t->n; i++) {
			struct analysis_mapping moved = t->v[i];

			if (m->a0 >= moved.start && m->a0 < moved.start + moved.len) {
				if ((err = unmap_range(t, m->a0, page_len(m->a1))))
					return err;
				return map_new(r, t, m->ret, page_len(m->a2), moved.stack, moved.site, m->ts,
					       moved.allocator, moved.stack_call);
			}
		}
		return 0; /* a mapping made before we watched */
	case MT_MAP_BRK:
		if (!mp)
			return 0;
		if (!r->first_brk)
			r->first_brk = m->ret;
		r->brk = m->ret;
		mp->brk_bytes = r->brk > r->first_brk ? r->brk - r->first_brk : 0;
		return 0;
	case MT_MAP_MADVISE:
		if (mp)
			mp->madvised_bytes += page_len(m->a1);
		return 0;
	case MT_MAP_FAULT:
		if (mp && named)
			return fault_add(r, stack, m->a1, m->ts);
		return 0;
	default:
		if (mp && named && m->call >= MT_MAP_ARENA_NEW && m->call < MT_MAP_NR_CALLS)
			return glibc_add(r, &mp->glibc, m, stack);
		return 0;
	}
}

int replay__set_end(struct replay *r, const struct trace_end *e)
{
	int err = 0;

	r->trace.ended = true;
	r->trace.target_exited = e->flags & TRACE_END_TARGET_EXITED;
	r->trace.end_flags = e->flags;
	r->trace.memory_limit = e->memory_limit;
	if (e->memory_limit_of)
		r->trace.memory_limit_of = arena__strdup(&r->arena, e->memory_limit_of, &err);
	r->end_mono_ns = e->end_mono_ns;
	r->end_dropped = e->dropped;
	if (!err && e->stop_reason)
		r->trace.stop_reason = arena__strdup(&r->arena, e->stop_reason, &err);
	return err;
}

int replay__set_partial(struct replay *r, const char *problem)
{
	int err = 0;

	r->trace.partial = true;
	r->trace.problem = arena__strdup(&r->arena, problem ? problem : "trace cut short", &err);
	return err;
}

/* ---- threads and names ---- */

static int thread__lookup(struct replay *r, uint32_t tid, uint32_t *idx)
{
	struct u64map_entry *e;
	bool existed;

	e = u64map__insert(&r->tids, (uint64_t)tid + 1, &existed);
	if (!e)
		return -ENOMEM;
	if (!existed) {
		if (array_reserve((void **)&r->threads, &r->threads_cap, r->nthreads + 1,
				  sizeof(*r->threads))) {
			u64map__remove(&r->tids, e);
			return -ENOMEM;
		}
		r->threads[r->nthreads] = (struct thread){ .tid = tid, .name = REPLAY_NONE };
		e->val = r->nthreads++;
	}
	*idx = (uint32_t)e->val;
	if (r->have_cached_thread) {
		r->cached_tid[1] = r->cached_tid[0];
		r->cached_thread[1] = r->cached_thread[0];
	} else {
		r->cached_tid[1] = tid;
		r->cached_thread[1] = *idx;
	}
	r->have_cached_thread = true;
	r->cached_tid[0] = tid;
	r->cached_thread[0] = *idx;
	return 0;
}

/* The thread index of TID, made if new; the last two are cached. */
static inline int thread__index(struct replay *r, uint32_t tid, uint32_t *idx)
{
	if (r->have_cached_thread) {
		if (tid == r->cached_tid[0]) {
			*idx = r->cached_thread[0];
			return 0;
		}
		if (tid == r->cached_tid[1]) {
			*idx = r->cached_thread[1];
			r->cached_tid[1] = r->cached_tid[0];
			r->cached_thread[1] = r->cached_thread[0];
			r->cached_tid[0] = tid;
			r->cached_thread[0] = *idx;
			return 0;
		}
	}
	return thread__lookup(r, tid, idx);
}

static int name__intern(struct replay *r, const char *text, uint32_t *name)
{
	int64_t i = strtab__intern(&r->names, text);

	if (i < 0)
		return (int)i;
	*name = (uint32_t)i;
	return 0;
}

/* The name a mark's string ID stands for. */
static int name__of_id(struct replay *r, uint32_t id, uint32_t *name)
{
	struct u64map_entry *e;
	char buf[32];
	bool existed;
	int err;

	if (!id)
		return name__intern(r, "[unnamed]", name);
	e = u64map__get(&r->string_ids, id);
	if (e) {
		*name = (uint32_t)e->val;
		return 0;
	}
	/* Its STRING was lost: name it by id, the same way every time. */
	snprintf(buf, sizeof(buf), "[string %u]", id);
	err = name__intern(r, buf, name);
	if (err)
		return err;
	e = u64map__insert(&r->string_ids, id, &existed);
	if (!e)
		return -ENOMEM;
	e->val = *name;
	return 0;
}

int replay__add_string(struct replay *r, const struct trace_string *s)
{
	struct u64map_entry *e;
	uint32_t name = 0;
	bool existed;
	int err;

	if (!s->id)
		return 0; /* id 0 is "none", never defined */
	err = name__intern(r, s->str ? s->str : "", &name);
	if (err)
		return err;
	e = u64map__insert(&r->string_ids, s->id, &existed);
	if (!e)
		return -ENOMEM;
	e->val = name;
	return 0;
}

int replay__add_thread(struct replay *r, const struct trace_thread *t)
{
	uint32_t name = 0, th = 0;
	int err;

	if (!t->name)
		return 0;
	err = name__intern(r, t->name, &name);
	if (!err)
		err = thread__index(r, t->tid, &th);
	if (!err)
		r->threads[th].name = name;
	return err;
}

/* ---- marks ---- */

static int zone_begin(struct replay *r, uint32_t th, uint32_t name, uint64_t ts)
{
	struct thread *t = &r->threads[th];
	struct replay_zone *z;

	if (array_reserve((void **)&t->open, &t->cap, t->depth + 1, sizeof(*t->open)))
		return -ENOMEM;
	z = &t->open[t->depth++];
	*z = (struct replay_zone){ .name = name, .begin_ts = ts, .outer = true };
	for (size_t i = 0; i + 1 < t->depth; i++)
		if (t->open[i].name == name)
			z->outer = false;
	NOTIFY(r, zone_begin, th, z);
	return 0;
}

/* Close the innermost open zone of thread TH at TS. */
static int zone_close(struct replay *r, uint32_t th, uint64_t ts, bool at_end)
{
	struct thread *t = &r->threads[th];
	struct replay_zone z = t->open[--t->depth];

	NOTIFY(r, zone_end, th, &z, ts, at_end);
	return 0;
}

/* Close the innermost open NAME, and the zones opened inside it first. */
static int zone_end(struct replay *r, uint32_t th, uint32_t name, uint64_t ts)
{
	size_t i = r->threads[th].depth;
	int err = 0;

	while (i > 0 && r->threads[th].open[i - 1].name != name)
		i--;
	if (!i) {
		NOTIFY(r, zone_unmatched_end, th, name);
		return 0;
	}
	while (!err && r->threads[th].depth >= i)
		err = zone_close(r, th, ts, false);
	return err;
}

static void window_mark(struct replay *r, const struct trace_mark *m);

int replay__add_mark(struct replay *r, const struct trace_mark *m)
{
	uint32_t name = REPLAY_NONE, th;
	int err;

	r->marks++;
	if (m->ts > r->max_ts)
		r->max_ts = m->ts;
	if (m->kind >= MT_MARK_WINDOW_BEGIN && m->kind <= MT_MARK_TAIL_END && r->trace.budget.budget_ppm) {
		window_mark(r, m);
		return 0;
	}
	if (m->kind == MT_MARK_LARGE_END && r->trace.budget.large_bytes) {
		/* from here the large blocks' munmap is not seen: a block still
		 * mapped ends when a window sees its free, or its address taken
		 * again (event_halves) */
		r->trace.budget.large_until_ns = m->ts > r->start_mono_ns ? m->ts - r->start_mono_ns : 1;
		return 0;
	}
	if (m->kind < MT_MARK_ZONE_BEGIN || m->kind > MT_MARK_THREAD_NAME)
		return 0; /* a kind this version does not know */
	if (m->kind != MT_MARK_FRAME || m->name) {
		err = name__of_id(r, m->name, &name);
		if (err)
			return err;
	}
	switch (m->kind) {
	case MT_MARK_FRAME:
		NOTIFY(r, frame, r->frames, name, m);
		r->frames++;
		return 0;
	case MT_MARK_POOL_ALLOC:
	case MT_MARK_POOL_FREE:
	case MT_MARK_POOL_RESET:
		NOTIFY(r, pool, m, name);
		return 0;
	}
	err = thread__index(r, m->tid, &th);
	if (err)
		return err;
	if (m->kind == MT_MARK_ZONE_BEGIN)
		return zone_begin(r, th, name, m->ts);
	if (m->kind == MT_MARK_ZONE_END)
		return zone_end(r, th, name, m->ts);
	r->threads[th].name = name;
	return 0;
}

/* ---- events ---- */

static inline int stack__index(struct replay *r, uint32_t id, uint32_t *idx)
{
	struct u64map_entry *e;

	if (id == r->cached_stack_id) {
		*idx = r->cached_stack;
		return 0;
	}
	e = u64map__get(&r->stack_ids, id);
	if (e) {
		*idx = (uint32_t)e->val;
	} else {
		/* An event may name a stack whose record was lost; count it anyway. */
		int err = stack__new(r, id, idx);

		if (err)
			return err;
	}
	r->cached_stack_id = id;
	r->cached_stack = *idx;
	return 0;
}

/* The block SIZE allocation number SEQ stands for (the rules above). */
static inline uint64_t weigh(const struct replay *r, uint64_t size, uint64_t seq, uint64_t *count)
{
	double w;

	if (r->weight > 1) {
		double whole = floor(r->weight);
		/* a fixed pseudo-random draw per allocation: the same at its free */
		double u = (double)((seq * 0x9E3779B97F4A7C15ULL) >> 11) / 9007199254740992.0;

		*count = (uint64_t)whole + (u < r->weight - whole);
		return (uint64_t)llround((double)size * r->weight);
	}
	if (!r->sample_mean) {
		*count = 1;
		return size;
	}
	/* SIZE was recorded with probability p = 1 - exp(-SIZE / mean). */
	w = 1.0 / -expm1(-(double)(size ? size : 1) / r->sample_mean);
	*count = (uint64_t)llround(w);
	return (uint64_t)llround((double)size * w);
}

uint64_t replay__weigh(const struct replay *r, uint64_t size, uint64_t *count)
{
	return weigh(r, size, r->alloc_seq, count);
}

static inline struct replay_block block_of(const struct replay *r, const struct live_entry *e, uint64_t ts)
{
	struct replay_block b = {
		.ptr = e->ptr,
		.size = e->size,
		.ts = ts,
		.stack = e->stack,
		.stack_id = r->stacks[e->stack].id,
		.thread = e->thread,
		.zone = e->zone,
		.peak_epoch = r->peak_epoch,
	};

	b.bytes = weigh(r, e->size, e->seq, &b.count);
	return b;
}

/* --budget: the lifetime of a block freed in sight, by log2 of ns. */
static void note_lifetime(struct replay *r, const struct live_entry *e, uint64_t ts)
{
	uint32_t now_us = (uint32_t)((ts - r->start_mono_ns) / 1000);
	uint64_t ns = (uint64_t)(uint32_t)(now_us - e->born_us) * 1000 + 1;

	r->lifetime_buckets[63 - __builtin_clzll(ns)]++;
	r->trace.budget.lifetimes_seen++;
}

/* --budget: the blocks still live at a tail's end outlived it. They stay
 * counted live; their pointers are forgotten (the rules above). */
static void retire_live(struct replay *r)
{
	for (size_t i = 0; i <= r->live.mask; i++) {
		struct live_entry *e = &r->live.slots[i];
		uint64_t count, bytes;

		if (!e->ptr || live_entry__is_freed(e))
			continue;
		bytes = weigh(r, e->size, e->seq, &count);
		r->trace.budget.long_lived_allocations += count;
		r->trace.budget.long_lived_bytes += bytes;
		live_table__mark_freed(&r->live, e);
	}
}

/* --budget: the window that ends adds its figures' variance (replay.h):
 * W x (W - 1) x Y^2 per stack and for the totals. */
static void window_flush(struct replay *r)
{
	double k = r->weight > 1 ? r->weight * (r->weight - 1) : 0;
	/* half the way to the unscaled weight: one standard error of the
	 * model (the fitted and the unscaled totals are about its two ends:
	 * 0.77 to 1.35 and 0.71 to 0.78 times the truth of budget_truth) */
	double d = r->weight_unscaled > 0 ? (r->weight - r->weight_unscaled) / 2 : 0;

	for (size_t i = 0; i < r->nwin_stacks; i++) {
		struct replay_stack *s = &r->stacks[r->win_stacks[i]];

		s->var_bytes += k * (double)s->win_bytes * (double)s->win_bytes;
		s->var_count += k * (double)s->win_count * (double)s->win_count;
		s->model_bytes += d * (double)s->win_bytes;
		s->model_count += d * (double)s->win_count;
		s->win_bytes = s->win_count = 0;
		s->in_window = false;
	}
	r->nwin_stacks = 0;
	r->trace.budget.var_bytes += k * (double)r->win_bytes * (double)r->win_bytes;
	r->trace.budget.var_allocations += k * (double)r->win_count * (double)r->win_count;
	r->model_bytes += d * (double)r->win_bytes;
	r->model_count += d * (double)r->win_count;
	r->win_bytes = r->win_count = 0;
	r->weight_unscaled = 0;
}

/* --budget: an allocation of SIZE at STACK in the window in progress. */
static int window_note(struct replay *r, uint32_t stack, uint64_t size)
{
	struct replay_stack *s = &r->stacks[stack];

	if (!s->in_window) {
		if (array_reserve((void **)&r->win_stacks, &r->win_stacks_cap, r->nwin_stacks + 1, sizeof(*r->win_stacks)))
			return -ENOMEM;
		r->win_stacks[r->nwin_stacks++] = stack;
		s->in_window = true;
	}
	s->win_bytes += size;
	s->win_count++;
	r->win_bytes += size;
	r->win_count++;
	return 0;
}

static void window_mark(struct replay *r, const struct trace_mark *m)
{
	struct analysis_budget *b = &r->trace.budget;

	if (m->kind == MT_MARK_WINDOW_END)
		r->weight_unscaled = (double)m->size / 1e6;
	if (m->kind == MT_MARK_WINDOW_BEGIN || m->kind == MT_MARK_WINDOW_END)
		window_flush(r);
	switch (m->kind) {
	case MT_MARK_WINDOW_BEGIN:
		r->weight = m->size > 1000000 ? (double)m->size / 1e6 : 1.0;
		r->window_begin = r->window_end = m->ts;
		if (!b->windows || r->weight < b->min_weight)
			b->min_weight = r->weight;
		if (r->weight > b->max_weight)
			b->max_weight = r->weight;
		b->windows++;
		break;
	case MT_MARK_WINDOW_END:
		if (m->ts > r->window_begin)
			b->live_ns += m->ts - r->window_begin;
		r->window_end = m->ts;
		break;
	case MT_MARK_TAIL_END:
		if (m->ts > r->window_end)
			b->tail_ns += m->ts - r->window_end;
		if (m->ts > r->window_begin && (!b->min_tail_ns || m->ts - r->window_end < b->min_tail_ns))
			b->min_tail_ns = m->ts - r->window_end;
		retire_live(r);
		break;
	}
}

/* Take E out of the live figures. */
static void live__forget(struct replay *r, const struct replay_block *b)
{
	r->live_bytes -= b->bytes;
	r->live_count -= b->count;
}

static int free_ptr(struct replay *r, uint64_t ptr, uint64_t ts)
{
	struct live_entry *e = live_table__find(&r->live, ptr);
	struct replay_block b;
	bool temporary;

	if (!e) {
		r->totals.unmatched_frees++;
		return 0;
	}
	if (live_entry__is_freed(e)) {
		r->totals.internal_frees++;
		return 0;
	}
	b = block_of(r, e, ts);
	if (r->trace.budget.budget_ppm)
		note_lifetime(r, e, ts);
	temporary = r->threads[e->thread].last_seq == e->seq;
	if (temporary)
		r->totals.temporary_allocations += b.count;
	r->totals.frees += b.count;
	live__forget(r, &b);
	live_table__mark_freed(&r->live, e);
	NOTIFY(r, free, &b, temporary, false);
	return 0;
}

static int alloc(struct replay *r, const struct trace_event *ev)
{
	struct replay_block b = { .ptr = ev->ptr, .size = ev->size, .ts = ev->ts, .zone = REPLAY_NONE,
				  .peak_epoch = r->peak_epoch };
	struct live_entry *e;
	struct thread *t;
	bool existed;
	int err;

	b.stack_id = ev->stack_id;
	err = stack__index(r, ev->stack_id, &b.stack);
	if (!err)
		err = thread__index(r, ev->tid, &b.thread);
	if (err)
		return err;
	e = live_table__insert(&r->live, ev->ptr, &existed);
	if (!e)
		return -ENOMEM;
	if (existed && live_entry__is_freed(e)) {
		r->live.nfreed--;
	} else if (existed) {
		struct replay_block old = block_of(r, e, ev->ts);

		live__forget(r, &old);
		NOTIFY(r, free, &old, false, true);
	}
	t = &r->threads[b.thread];
	if (t->depth) {
		struct replay_zone *z = &t->open[t->depth - 1];

		b.zone = z->name;
	}
	e->size = ev->size;
	e->seq = t->last_seq = ++r->alloc_seq;
	e->born_us = (uint32_t)((ev->ts - r->start_mono_ns) / 1000);
	b.bytes = weigh(r, ev->size, e->seq, &b.count);
	e->stack = b.stack;
	e->thread = b.thread;
	e->zone = b.zone;
	if (t->depth) {
		t->open[t->depth - 1].allocations += b.count;
		t->open[t->depth - 1].allocated_bytes += b.bytes;
	}
	r->totals.allocations += b.count;
	r->totals.allocated_bytes += b.bytes;
	r->live_bytes += b.bytes;
	r->live_count += b.count;
	if (r->trace.budget.budget_ppm && (err = window_note(r, b.stack, ev->size)))
		return err;
	NOTIFY(r, alloc, &b);
	return 0;
}

/* ---- --budget: the large blocks (replay.h) ---- */

static int32_t module_of(const struct replay *r, uint64_t addr);

/* ADDR lies in the C library's code. */
static bool in_libc(const struct replay *r, uint64_t addr)
{
	int32_t m = module_of(r, addr);
	const char *path = m >= 0 ? r->modules[m].path : NULL;

	return path && (strstr(path, "/libc.so") || strstr(path, "/libc-"));
}

/* STACK past its leading frames in the C library (malloc's own, under the
 * mmap it made), as a stack of its own, made once. */
static int stack_past_libc(struct replay *r, uint32_t stack, uint32_t *out)
{
	const struct replay_stack *s = &r->stacks[stack];
	struct u64map_entry *e;
	uint32_t skip = 0, idx;
	bool existed;
	int err;

	while (skip + 1 < s->nr && in_libc(r, s->addrs[skip]))
		skip++;
	*out = stack;
	if (!skip)
		return 0;
	if ((e = u64map__get(&r->past_libc, (uint64_t)stack + 1))) {
		*out = (uint32_t)e->val;
		return 0;
	}
	if ((err = stack__new(r, 0, &idx)))
		return err;
	s = &r->stacks[stack]; /* the array may have moved */
	r->stacks[idx].id = s->id;
	r->stacks[idx].addrs = s->addrs + skip;
	r->stacks[idx].nr = s->nr - skip;
	if (!(e = u64map__insert(&r->past_libc, (uint64_t)stack + 1, &existed)))
		return -ENOMEM;
	e->val = idx;
	*out = idx;
	return 0;
}

/* How many live large blocks start at or before ADDR: they are kept in
 * the order of their starts (mappings do not overlap), so that every
 * event's lookup is a binary search, not a walk of thousands of a
 * service's large buffers. */
static size_t large_upto(const struct replay *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nlarge;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->large[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The live large block whose mapping holds PTR (or held it before an
 * mremap moved it: a few blocks at most, walked), or -1. */
static ssize_t large_find(const struct replay *r, uint64_t ptr)
{
	size_t i = large_upto(r, ptr);

	if (i && ptr < r->large[i - 1].start + r->large[i - 1].len)
		return (ssize_t)(i - 1);
	for (i = 0; r->nmoved && i < r->nlarge; i++) {
		const struct large_block *lb = &r->large[i];

		if (ptr >= lb->moved_start && ptr < lb->moved_start + lb->moved_len)
			return (ssize_t)i;
	}
	return -1;
}

/* glibc's header before a mapped chunk's memory: prev_size and size */
#define LARGE_HEADER 16

/* A large block at [START, START + LEN), made by M at STACK. */
static int large_new(struct replay *r, const struct trace_map *m, uint32_t stack, uint64_t start, uint64_t len,
		     struct large_block **out)
{
	struct replay_block b = { .ptr = start + LARGE_HEADER, .size = len > LARGE_HEADER ? len - LARGE_HEADER : len,
				  .count = 1, .ts = m->ts, .stack = stack, .zone = REPLAY_NONE,
				  .peak_epoch = r->peak_epoch, .exact = true };
	struct thread *t;
	int err = thread__index(r, m->tid, &b.thread);

	if (!err)
		err = array_reserve((void **)&r->large, &r->large_cap, r->nlarge + 1, sizeof(*r->large));
	if (err)
		return err;
	b.bytes = b.size;
	b.stack_id = r->stacks[stack].id;
	t = &r->threads[b.thread];
	if (t->depth) {
		b.zone = t->open[t->depth - 1].name;
		t->open[t->depth - 1].allocations++;
		t->open[t->depth - 1].allocated_bytes += b.bytes;
	}
	t->last_seq = ++r->alloc_seq;
	*out = &r->large[large_upto(r, start)];
	memmove(*out + 1, *out, (size_t)(r->large + r->nlarge - *out) * sizeof(**out));
	r->nlarge++;
	**out = (struct large_block){ .start = start, .len = len, .size = b.size, .seq = r->alloc_seq,
				      .stack = stack, .thread = b.thread, .zone = b.zone };
	r->totals.allocations++;
	r->totals.allocated_bytes += b.bytes;
	r->live_bytes += b.bytes;
	r->live_count++;
	r->trace.budget.large_allocations++;
	r->trace.budget.large_allocated_bytes += b.bytes;
	NOTIFY(r, alloc, &b);
	return 0;
}

/* Large block I is freed at TS. */
static int large_free(struct replay *r, size_t i, uint64_t ts)
{
	struct large_block lb = r->large[i];
	struct replay_block b = { .ptr = lb.start + LARGE_HEADER, .size = lb.size, .count = 1, .bytes = lb.size,
				  .ts = ts, .stack = lb.stack, .stack_id = r->stacks[lb.stack].id, .thread = lb.thread,
				  .zone = lb.zone, .peak_epoch = r->peak_epoch, .exact = true };
	bool temporary = r->threads[lb.thread].last_seq == lb.seq;

	r->nmoved -= lb.moved_len != 0;
	memmove(&r->large[i], &r->large[i + 1], (--r->nlarge - i) * sizeof(*r->large));
	r->totals.temporary_allocations += temporary;
	r->totals.frees++;
	r->live_bytes -= lb.size;
	r->live_count--;
	r->trace.budget.large_frees++;
	NOTIFY(r, free, &b, temporary, false);
	return 0;
}

#define LARGE_MMAP_FLAGS (0x02 | 0x20 | 0x10 | 0x4000 | 0x20000) /* PRIVATE, ANONYMOUS; FIXED, NORESERVE, STACK */

/* One MAP record M (its stack STACK) for the large blocks. */
static int large_map(struct replay *r, const struct trace_map *m, uint32_t stack)
{
	const struct replay_stack *s = &r->stacks[stack];
	bool by_allocator = (m->flags & MT_MAP_IN_ALLOC) || (stack && s->addrs && s->nr && in_libc(r, s->addrs[0]));
	struct large_block *lb;
	ssize_t i;
	int err = 0;

	if (!(m->flags & MT_MAP_IN_ALLOC) && by_allocator && (err = stack_past_libc(r, stack, &stack)))
		return err;
	switch (m->call) {
	case MT_MAP_MMAP:
		if (m->a1 < r->trace.budget.large_bytes || m->a2 != 3 || (m->a3 & LARGE_MMAP_FLAGS) != 0x22 || !by_allocator)
			return 0; /* not malloc's: the program's own mapping, a stack, a reservation */
		return large_new(r, m, stack, m->ret, page_len(m->a1), &lb);
	case MT_MAP_MUNMAP:
		for (size_t j = 0; j < r->nlarge && !err;) {
			const struct large_block *b = &r->large[j];

			if (b->start < m->a0 + page_len(m->a1) && m->a0 < b->start + b->len)
				err = large_free(r, j, m->ts); /* J now holds the next block */
			else
				j++;
		}
		return err;
	case MT_MAP_MREMAP:
		/* realloc of a mapped chunk: a free and a new block */
		if ((i = large_find(r, m->a0)) < 0 || r->large[i].start != m->a0)
			return 0;
		if (!by_allocator)
			stack = r->large[i].stack;
		if ((err = large_free(r, (size_t)i, m->ts)) || (err = large_new(r, m, stack, m->ret, page_len(m->a2), &lb)))
			return err;
		lb->moved_start = m->a0;
		lb->moved_len = page_len(m->a1);
		r->nmoved++;
		return 0;
	}
	return 0;
}

/* PTR lies in a large block, whose ALLOC, FREE or REALLOC half it is. */
static inline bool in_large(const struct replay *r, uint64_t ptr)
{
	return r->nlarge && large_find(r, ptr) >= 0;
}

/* After the large blocks' probes were detached (MT_MARK_LARGE_END), PTR in
 * a block still mapped: its munmap will not be seen, so a window's free of
 * it, or an allocation at its address (the mapping went and the address
 * came back), ends it there. 1: it did, and PTR is the window's as any
 * other; 0: PTR is in no such block. */
static int large_gone(struct replay *r, uint64_t ptr, uint64_t ts)
{
	ssize_t i;
	int err;

	if (!r->trace.budget.large_until_ns || !r->nlarge || (i = large_find(r, ptr)) < 0)
		return 0;
	err = large_free(r, (size_t)i, ts);
	return err ? err : 1;
}

static int event_halves(struct replay *r, const struct trace_event *e)
{
	int err;

	/* the large blocks' end no longer seen: the window's own view of them */
	if (r->trace.budget.large_until_ns && r->nlarge && e->ptr) {
		if ((err = large_gone(r, e->ptr, e->ts)) < 0 ||
		    (e->type == MT_EVENT_REALLOC && e->old_ptr && (err = large_gone(r, e->old_ptr, e->ts)) < 0))
			return err;
		if (e->type == MT_EVENT_FREE && err == 1)
			return 0; /* its free, counted by large_free */
	}
	switch (e->type) {
	case MT_EVENT_ALLOC:
		return e->ptr && !in_large(r, e->ptr) ? alloc(r, e) : 0;
	case MT_EVENT_FREE:
		/* free(NULL) does nothing, so it is not an unmatched free. */
		return e->ptr && !in_large(r, e->ptr) ? free_ptr(r, e->ptr, e->ts) : 0;
	case MT_EVENT_REALLOC:
		if (!e->ptr && e->size)
			return 0; /* failed: the old block stays */
		err = e->old_ptr && !in_large(r, e->old_ptr) ? free_ptr(r, e->old_ptr, e->ts) : 0;
		return !err && e->ptr && !in_large(r, e->ptr) ? alloc(r, e) : err;
	default:
		return 1; /* a kind this version does not know: skipped */
	}
}

int replay__add_event(struct replay *r, const struct trace_event *e)
{
	int err;

	r->last_event_ts = e->ts;
	if (e->ts > r->max_ts)
		r->max_ts = e->ts;
	err = event_halves(r, e);
	if (r->live_bytes > r->totals.peak_bytes) {
		r->totals.peak_bytes = r->live_bytes;
		r->peak_ts = e->ts;
		r->peak_epoch++;
	}
	if (err)
		return err > 0 ? 0 : err;
	NOTIFY(r, event_done, e);
	return 0;
}

/* ---- finishing ---- */

uint64_t replay__end_ns(const struct replay *r)
{
	return r->trace.ended ? r->end_mono_ns : r->max_ts;
}

/* The lifetime percentiles the tails saw (each the top of its log2
 * bucket), and the last window's blocks: long-lived as the others are. */
static void budget_finish(struct replay *r)
{
	struct analysis_budget *b = &r->trace.budget;
	static const double q[3] = { 0.5, 0.9, 0.99 };

	for (int k = 0; k < 3 && b->lifetimes_seen; k++) {
		uint64_t want = (uint64_t)ceil(q[k] * (double)b->lifetimes_seen), seen = 0;

		for (int i = 0; i < 64; i++) {
			seen += r->lifetime_buckets[i];
			if (seen >= want) {
				b->lifetime_ns[k] = i >= 63 ? UINT64_MAX : (2ULL << i) - 1;
				break;
			}
		}
	}
	b->long_lived_allocations = r->totals.leaked_allocations;
	b->long_lived_bytes = r->totals.leaked_bytes;
}

static bool same_site(const struct analysis_frame *a, const struct analysis_frame *b)
{
	if (!a || !b)
		return a == b;
	if (!a->function || !b->function) /* unnamed: by address */
		return !a->function && !b->function && a->address == b->address;
	return !strcmp(a->function, b->function) && a->line == b->line &&
	       !strcmp(a->file ? a->file : "", b->file ? b->file : "") &&
	       !strcmp(a->module ? a->module : "", b->module ? b->module : "");
}

static int by_map_bytes(const void *x, const void *y)
{
	const struct analysis_map_site *a = x, *b = y;

	return a->bytes != b->bytes ? (a->bytes < b->bytes ? 1 : -1) : (a->mappings < b->mappings) - (a->mappings > b->mappings);
}

/* --rss: the outside mappings still mapped, by site. */
static int group_map_sites(struct replay *r)
{
	struct analysis_maps *mp = &r->trace.rss.maps;
	size_t n = 0;

	if (!mp->nmappings)
		return 0;
	r->map_sites = calloc(mp->nmappings, sizeof(*r->map_sites));
	if (!r->map_sites)
		return -ENOMEM;
	for (size_t i = 0; i < mp->nmappings; i++) {
		const struct analysis_mapping *m = &r->maps_end.v[i];

		if (!m->allocator)
			site_add(r->map_sites, &n, m->site, m->len);
	}
	qsort(r->map_sites, n, sizeof(*r->map_sites), by_map_bytes);
	mp->sites = r->map_sites;
	mp->nsites = n;
	return 0;
}

/* One line of advice when the allocator holds much free memory resident:
 * at least 16 MiB and a quarter of the anonymous memory. */
static int reconcile_advice(struct replay *r, struct analysis_reconcile *out)
{
	char line[320];
	const char *lib = "glibc";
	size_t arenas = 0;
	int err = 0;

	if (!out->heap_known || out->allocator_free_resident < (16u << 20) ||
	    out->allocator_free_resident * 4 < out->resident_anon)
		return 0;
	for (size_t i = 0; i < r->nmodules; i++) {
		const char *path = r->modules[i].path ? r->modules[i].path : "";

		if (strstr(path, "jemalloc"))
			lib = "jemalloc";
		else if (strstr(path, "tcmalloc"))
			lib = "tcmalloc";
		else if (strstr(path, "mimalloc"))
			lib = "mimalloc";
	}
	for (size_t i = 0; i < r->maps_end.n; i++) /* glibc's thread arenas: 64 MiB heaps it maps */
		arenas += r->maps_end.v[i].allocator && r->maps_end.v[i].len == (64u << 20);
	if (!strcmp(lib, "jemalloc"))
		snprintf(line, sizeof(line), "jemalloc keeps freed pages until its decay: lower dirty_decay_ms and "
					     "muzzy_decay_ms in MALLOC_CONF to give them back sooner");
	else if (!strcmp(lib, "glibc") && arenas >= 2)
		snprintf(line, sizeof(line), "glibc: %zu thread arenas hold freed memory; MALLOC_ARENA_MAX=2 caps the "
					     "arenas, and malloc_trim(0) gives their free pages back", arenas);
	else if (!strcmp(lib, "glibc"))
		snprintf(line, sizeof(line), "glibc keeps freed chunks among live ones resident: malloc_trim(0) gives "
					     "their whole free pages back (M_TRIM_THRESHOLD only trims the heap's top)");
	else
		return 0;
	out->advice = arena__strdup(&r->arena, line, &err);
	return err;
}

/* Who holds resident anonymous pages, in the reconciliation. */
enum holder { HOLD_ALLOCATOR, HOLD_PROGRAM, HOLD_THREAD_STACK, HOLD_FILE, HOLD_OTHER };

/* Whose the pages of group G not under a live block are, by the --rss rule
 * of replay.h, SITE its mmap's site: the call that mapped the range
 * decides (RG_MAPPED), the kernel's mapping only where no seen call did. */
static enum holder range_holder(const struct resident_group *g, const struct analysis_frame *site)
{
	if (g->flags & RG_MAPPED) {
		if (mapped_by_allocator(g->flags & RG_IN_ALLOC, site))
			return HOLD_ALLOCATOR;
		if ((g->flags & RG_STACK_CALL) || replay_is_thread_stack_frame(site))
			return HOLD_THREAD_STACK;
		return HOLD_PROGRAM;
	}
	if ((g->flags & RG_BLOCKS) || g->kind == TRACE_VMA_HEAP)
		return HOLD_ALLOCATOR;
	if (g->kind == TRACE_VMA_STACK || g->kind == TRACE_VMA_THREAD_STACK)
		return HOLD_THREAD_STACK;
	return g->kind == TRACE_VMA_FILE ? HOLD_FILE : HOLD_OTHER;
}

/* A resident snapshot added up (analysis_reconcile), its mappings named;
 * with SITES, the program's part by site into *SITES and the advice. */
static int reconcile(struct replay *r, const struct resident_snapshot *s, struct analysis_reconcile *out,
		     struct analysis_map_site **sites)
{
	const struct analysis_rss *rs = &r->trace.rss;
	uint64_t best = UINT64_MAX;

	if (!s->ts)
		return 0;
	*out = (struct analysis_reconcile){
		.seen = true,
		.time_ns = s->ts > r->start_mono_ns ? s->ts - r->start_mono_ns : 0,
		.resident_anon = s->resident_anon,
		.heap_known = s->heap_known,
		.heap_live = s->heap_live,
		.heap_live_not_resident = s->heap_live_not_resident,
	};
	for (size_t i = 0; i < rs->npoints; i++) { /* the kernel's count nearest in time */
		uint64_t t = rs->points[i].time_ns, d = t > out->time_ns ? t - out->time_ns : out->time_ns - t;

		if (d < best)
			best = d, out->rss_anon = rs->points[i].anon, out->rss_file = rs->points[i].file,
			out->rss_shmem = rs->points[i].shmem;
	}
	if (sites) {
		*sites = s->ngroups ? calloc(s->ngroups, sizeof(**sites)) : NULL;
		if (s->ngroups && !*sites)
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct resident_group *g = &s->groups[i];
		const struct analysis_frame *site = NULL, *f;
		uint64_t rest = g->resident - g->live;
		size_t n;

		out->heap_live_resident += g->live;
		if (g->stack && (f = replay__stack_frames(r, g->stack, &n)) && n)
			site = &f[replay_site_frame(f, n)];
		switch (range_holder(g, site)) {
		case HOLD_ALLOCATOR:
			out->allocator_free_resident += rest;
			break;
		case HOLD_PROGRAM:
			out->outside_resident += rest;
			if (rest && sites)
				site_add(*sites, &out->nsites, site, rest);
			break;
		case HOLD_THREAD_STACK:
			out->thread_stacks += rest;
			break;
		case HOLD_FILE:
			out->file_private += rest;
			break;
		case HOLD_OTHER:
			out->other += rest;
			break;
		}
	}
	out->allocator_resident = out->heap_live_resident + out->allocator_free_resident;
	if (!out->heap_known) /* the allocator's part is not split without every live block */
		out->heap_live_resident = out->allocator_free_resident = out->heap_live = out->heap_live_not_resident = 0;
	if (!sites)
		return 0;
	if (out->nsites) /* none: *sites is NULL, which qsort may not be given */
		qsort(*sites, out->nsites, sizeof(**sites), by_map_bytes);
	out->sites = *sites;
	return reconcile_advice(r, out);
}

/* Every snapshot kept, added up by the same rule (trace.rss.reconciled). */
static int reconcile_series(struct replay *r)
{
	int err = 0;

	if (!r->nres_points)
		return 0;
	r->reconciled = calloc(r->nres_points, sizeof(*r->reconciled));
	if (!r->reconciled)
		return -ENOMEM;
	for (size_t i = 0; i < r->nres_points && !err; i++) {
		const struct res_point *p = &r->res_points[i];
		struct resident_snapshot s = {
			.ts = p->ts, .resident_anon = p->resident_anon, .heap_live = p->heap_live,
			.heap_live_not_resident = p->heap_live_not_resident, .heap_known = p->heap_known,
			.groups = &r->res_groups[p->group], .ngroups = p->ngroups,
		};

		err = reconcile(r, &s, &r->reconciled[i], NULL);
	}
	r->trace.rss.reconciled = r->reconciled;
	r->trace.rss.nreconciled = r->nres_points;
	return err;
}

int replay__finish(struct replay *r)
{
	struct analysis_totals *t = &r->totals;
	uint64_t start = r->start_mono_ns;
	uint64_t end = r->trace.ended ? r->end_mono_ns : r->last_event_ts;
	int err = 0;

	if (r->finished)
		return 0;
	r->finished = true;
	r->trace.duration_ns = start && end > start ? end - start : 0;
	r->trace.recent_from_ns = recent_window_from(r->trace.duration_ns);
	/* --rss: the calls that map memory are accounted now, their stacks
	 * named (the symbols come last in a trace) */
	for (size_t i = 0; i < r->nmap_log && !err; i++)
		err = apply_map(r, &r->maps_end, &r->map_log[i].m, r->map_log[i].stack, true);
	if (!err)
		err = group_map_sites(r);
	if (!err && r->trace.rss.maps.nfault_sites)
		qsort(r->fault_sites, r->trace.rss.maps.nfault_sites, sizeof(*r->fault_sites), by_map_bytes);
	if (!err && r->trace.rss.maps.nrecent_fault_sites)
		qsort(r->recent_fault_sites, r->trace.rss.maps.nrecent_fault_sites, sizeof(*r->recent_fault_sites),
		      by_map_bytes);
	if (!err && r->trace.rss.maps.glibc.narena_sites)
		qsort(r->arena_sites, r->trace.rss.maps.glibc.narena_sites, sizeof(*r->arena_sites), by_map_bytes);
	if (!err)
		err = reconcile(r, &r->res_last, &r->trace.rss.at_end, &r->res_sites[0]);
	if (!err)
		err = reconcile(r, &r->res_peak, &r->trace.rss.at_peak, &r->res_sites[1]);
	if (!err)
		err = reconcile_series(r);
	for (size_t th = 0; th < r->nthreads && !err; th++) {
		while (!err && r->threads[th].depth)
			err = zone_close(r, (uint32_t)th, replay__end_ns(r), true);
	}
	if (err)
		return err;
	t->leaked_allocations = r->live_count;
	t->leaked_bytes = r->live_bytes;
	if (r->trace.budget.budget_ppm) {
		window_flush(r);
		budget_finish(r);
		/* the model's part of the error, systematic: added in quadrature */
		r->trace.budget.var_bytes += r->model_bytes * r->model_bytes;
		r->trace.budget.var_allocations += r->model_count * r->model_count;
		for (size_t i = 0; i < r->nstacks; i++) {
			r->stacks[i].var_bytes += r->stacks[i].model_bytes * r->stacks[i].model_bytes;
			r->stacks[i].var_count += r->stacks[i].model_count * r->stacks[i].model_count;
		}
	}
	t->peak_unknown = r->trace.budget.budget_ppm != 0;
	t->peak_time_ns = t->peak_bytes && r->peak_ts > start ? r->peak_ts - start : 0;
	t->dropped_events = r->drops_sum > r->end_dropped ? r->drops_sum : r->end_dropped;
	r->trace.duration_ns = start && end > start ? end - start : 0;
	for (size_t i = 0; i < r->hooks.finish.n && !err; i++)
		err = r->hooks.finish.obs[i]->ops->finish(r->hooks.finish.obs[i]->ctx, r);
	return err;
}

/* ---- state ---- */

const struct analysis_trace *replay__trace(const struct replay *r) { return &r->trace; }
uint64_t replay__resident_bytes(const struct replay *r, uint32_t stack)
{
	return stack < r->res_last.nby_stack ? r->res_last.by_stack[stack] : 0;
}
uint64_t replay__fault_bytes(const struct replay *r, uint32_t stack)
{
	return stack < r->nstacks ? r->stacks[stack].fault_bytes : 0;
}
const struct analysis_totals *replay__totals(const struct replay *r) { return &r->totals; }
uint64_t replay__start_ns(const struct replay *r) { return r->start_mono_ns; }
uint64_t replay__start_real_ns(const struct replay *r) { return r->start_real_ns; }
uint64_t replay__live_bytes(const struct replay *r) { return r->live_bytes; }
uint64_t replay__live_allocations(const struct replay *r) { return r->live_count; }
uint64_t replay__peak_epoch(const struct replay *r) { return r->peak_epoch; }
uint64_t replay__marks(const struct replay *r) { return r->marks; }
size_t replay__nnames(const struct replay *r) { return r->names.nr; }
size_t replay__nthreads(const struct replay *r) { return r->nthreads; }
size_t replay__nstacks(const struct replay *r) { return r->nstacks; }
size_t replay__nmodules(const struct replay *r) { return r->nmodules; }

const char *replay__name(const struct replay *r, uint32_t name)
{
	return name < r->names.nr ? r->names.strs[name] : NULL;
}

uint32_t replay__thread_tid(const struct replay *r, uint32_t thread)
{
	return r->threads[thread].tid;
}

uint32_t replay__thread_name(const struct replay *r, uint32_t thread)
{
	return r->threads[thread].name;
}

const struct replay_zone *replay__thread_zones(const struct replay *r, uint32_t thread, size_t *n)
{
	*n = r->threads[thread].depth;
	return r->threads[thread].open;
}

const struct replay_stack *replay__stack(const struct replay *r, uint32_t stack)
{
	return &r->stacks[stack];
}

int replay__module(const struct replay *r, size_t i, struct trace_module *out)
{
	if (i >= r->nmodules)
		return -ENOENT;
	*out = r->modules[i];
	return 0;
}

/* ---- frames and modules ---- */

static int module_cmp(const void *x, const void *y)
{
	const struct trace_module *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* The module mapping ADDR (for addresses no symbol record places). */
static const struct trace_module *module__lookup(struct replay *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nmodules;

	if (!r->sorted && r->nmodules) {
		r->sorted = malloc(r->nmodules * sizeof(*r->sorted));
		if (!r->sorted)
			return NULL;
		memcpy(r->sorted, r->modules, r->nmodules * sizeof(*r->sorted));
		qsort(r->sorted, r->nmodules, sizeof(*r->sorted), module_cmp);
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < r->sorted[mid].start)
			hi = mid;
		else if (addr >= r->sorted[mid].end)
			lo = mid + 1;
		else
			return &r->sorted[mid];
	}
	return NULL;
}

static const struct symbol *symbol__of(const struct replay *r, uint64_t addr)
{
	const struct u64map_entry *e = addr ? u64map__get(&r->sym_addrs, addr) : NULL;

	return e ? &r->symbols[e->val] : NULL;
}

int replay__symbol(const struct replay *r, uint64_t addr, struct trace_symbol *out, struct trace_frame *frames,
		   uint32_t cap)
{
	const struct symbol *sym = symbol__of(r, addr);
	uint32_t n;

	if (!sym)
		return -ENOENT;
	n = sym->nframes < cap ? sym->nframes : cap;
	for (uint32_t i = 0; i < n; i++)
		frames[i] = (struct trace_frame){ .function = r->sym_frames[sym->first + i].function,
						  .file = r->sym_frames[sym->first + i].file,
						  .line = r->sym_frames[sym->first + i].line };
	*out = (struct trace_symbol){ .addr = addr, .module = sym->module, .module_offset = sym->module_offset,
				      .nframes = n, .frames = frames, .language = sym->language };
	return 0;
}

/* Fill F (room for the symbol's frames, at least 1) for ADDR; returns how
 * many frames it wrote. */
static size_t frames__resolve(struct replay *r, uint64_t addr, struct analysis_frame *f)
{
	const struct symbol *sym = symbol__of(r, addr);
	const char *module = NULL;
	uint64_t offset = addr;
	size_t i, n;

	if (addr >= TRACE_FRAME_TRUNCATED && addr <= TRACE_FRAME_PY_CUT) {
		f[0] = (struct analysis_frame){
			.address = addr,
			.function = addr == TRACE_FRAME_TRUNCATED ? "[truncated: no unwind table]" :
				    addr == TRACE_FRAME_DEPTH_CUT ? "[truncated: --stack-depth reached]" :
				    addr == TRACE_FRAME_PY_CUT	  ? "[truncated: more than 64 Python frames]" :
								    "[other stacks: past the cap on stacks kept]",
		};
		return 1;
	}
	if (sym && sym->module >= 0 && (size_t)sym->module < r->nmodules) {
		module = r->modules[sym->module].path;
		offset = sym->module_offset;
	} else {
		const struct trace_module *m = module__lookup(r, addr);

		if (m) {
			module = m->path;
			offset = addr - m->start + m->file_offset;
		}
	}
	n = sym && sym->nframes ? sym->nframes : 1;
	for (i = 0; i < n; i++) {
		const struct sym_frame *sf = sym && sym->nframes ? &r->sym_frames[sym->first + i] : NULL;

		f[i] = (struct analysis_frame){
			.address = addr,
			.function = sf ? sf->function : NULL,
			.file = sf ? sf->file : NULL,
			.line = sf ? sf->line : 0,
			.inlined = i + 1 < n,
			.module = module,
			.module_offset = offset,
			.language = sym ? sym->language : TRACE_LANG_NATIVE,
		};
	}
	return n;
}

/* How many innermost frames belong to the allocator under --alloc-fn. In a
 * stack with Python frames, the interpreter's native frames inside the
 * innermost one do not end the search: --alloc-fn names Python functions. */
static size_t alloc_fn_frames(const struct replay *r, const struct analysis_frame *f, size_t n)
{
	size_t skip = 0, first_py = n;

	if (!r->nr_alloc_fns)
		return 0;
	for (size_t i = 0; i < n && first_py == n; i++)
		if (f[i].language == TRACE_LANG_PYTHON)
			first_py = i;
	for (size_t i = 0; i < n; i++) {
		if (replay__is_alloc_fn(r, f[i].function))
			skip = i + 1;
		else if (f[i].function && (first_py == n || i >= first_py))
			break;
	}
	return skip < n ? skip : n ? n - 1 : 0;
}

const struct analysis_frame *replay__stack_frames(struct replay *r, uint32_t s, size_t *nout)
{
	const struct replay_stack *st = &r->stacks[s];
	struct analysis_frame *frames;
	size_t n = 0, skip;

	*nout = 0;
	for (uint32_t i = 0; i < st->nr; i++) {
		const struct symbol *sym = symbol__of(r, st->addrs[i]);

		n += sym && sym->nframes ? sym->nframes : 1;
	}
	frames = arena__alloc(&r->arena, (n ? n : 1) * sizeof(*frames));
	if (!frames) {
		errno = ENOMEM;
		return NULL;
	}
	n = 0;
	for (uint32_t i = 0; i < st->nr; i++)
		n += frames__resolve(r, st->addrs[i], frames + n);
	skip = alloc_fn_frames(r, frames, n);
	*nout = n - skip;
	return frames + skip;
}

static bool rust_plumbing(const struct analysis_frame *f)
{
	static const char *const shims[] = { "__rust_", "__rdl_", "__rg_" };

	for (size_t i = 0; f->function && i < sizeof(shims) / sizeof(shims[0]); i++)
		if (!strncmp(f->function, shims[i], strlen(shims[i])))
			return true;
	/* where rustc records the standard library's sources (its own build:
	 * /rustc/HASH/library/..., std's crates under /rust/deps/; a
	 * distribution's: .../library/alloc/src/...) and hashbrown's, whoever
	 * built it */
	return f->file && (!strncmp(f->file, "/rustc/", 7) || !strncmp(f->file, "/rust/deps/", 11) ||
			   strstr(f->file, "/library/alloc/src/") || strstr(f->file, "/library/std/src/") ||
			   strstr(f->file, "/library/core/src/") || strstr(f->file, "/hashbrown-"));
}

size_t replay_site_frame(const struct analysis_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].language == TRACE_LANG_PYTHON)
			return i;
	for (size_t i = 0; i < n; i++)
		if (!rust_plumbing(&f[i]))
			return i;
	return 0;
}

/* The module (index into the trace's modules) whose mapping holds ADDR, or -1. */
static int32_t module_of(const struct replay *r, uint64_t addr)
{
	for (size_t i = r->nmodules; i-- > 0;) { /* newest first: a range can be reused */
		if (addr >= r->modules[i].start && addr < r->modules[i].end)
			return (int32_t)i;
	}
	return -1;
}

int replay__for_each_unresolved(struct replay *r, replay_unresolved_fn fn, void *ctx)
{
	struct u64map seen = { 0 };
	int err = 0;

	for (size_t i = 0; i < r->nstacks && !err; i++) {
		const struct replay_stack *s = &r->stacks[i];

		for (uint32_t j = 0; j < s->nr && !err; j++) {
			uint64_t addr = s->addrs[j];
			const struct symbol *sym = symbol__of(r, addr);
			bool existed;
			int32_t m;

			if (sym && sym->nframes && r->sym_frames[sym->first].function)
				continue; /* named already */
			if (!addr || u64map__get(&seen, addr) || (m = module_of(r, addr)) < 0 ||
			    !r->modules[m].build_id_len)
				continue;
			if (!u64map__insert(&seen, addr, &existed))
				err = -ENOMEM;
			else
				err = fn(ctx, addr, &r->modules[m], m);
		}
	}
	u64map__free(&seen);
	return err;
}

/* ---- reader glue ---- */

static int on_meta(void *ctx, const struct trace_meta *m) { return replay__set_meta(ctx, m); }
static int on_module(void *ctx, const struct trace_module *m) { return replay__add_module(ctx, m); }
static int on_stack(void *ctx, const struct trace_stack *s) { return replay__add_stack(ctx, s); }
static int on_event(void *ctx, const struct trace_event *e) { return replay__add_event(ctx, e); }
static int on_symbol(void *ctx, const struct trace_symbol *s) { return replay__add_symbol(ctx, s); }
static int on_drops(void *ctx, const struct trace_drops *d) { return replay__add_drops(ctx, d); }
static int on_end(void *ctx, const struct trace_end *e) { return replay__set_end(ctx, e); }
static int on_string(void *ctx, const struct trace_string *s) { return replay__add_string(ctx, s); }
static int on_mark(void *ctx, const struct trace_mark *m) { return replay__add_mark(ctx, m); }
static int on_thread(void *ctx, const struct trace_thread *t) { return replay__add_thread(ctx, t); }
static int on_rss(void *ctx, const struct trace_rss *s) { return replay__add_rss(ctx, s); }
static int on_rollup(void *ctx, const struct trace_rollup *ro) { return replay__add_rollup(ctx, ro); }
static int on_map(void *ctx, const struct trace_map *m) { return replay__add_map(ctx, m); }
static int on_resident(void *ctx, const struct trace_resident *res) { return replay__add_resident(ctx, res); }

const struct trace_reader_ops replay_reader_ops = {
	.meta = on_meta,
	.module = on_module,
	.stack = on_stack,
	.event = on_event,
	.symbol = on_symbol,
	.drops = on_drops,
	.end = on_end,
	.string = on_string,
	.mark = on_mark,
	.thread = on_thread,
	.rss = on_rss,
	.rollup = on_rollup,
	.map = on_map,
	.resident = on_resident,
};
