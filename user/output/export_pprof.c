// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pprof's profile.proto (github.com/google/pprof, proto/profile.proto),
 * hand-encoded: one sample per distinct stack, thread and innermost zone
 * with the four values Go's heap profiles carry, so `go tool pprof`,
 * Pyroscope, Parca, speedscope and Perfetto read it as a heap profile. "In
 * use" is what was still live when the trace ended (leaked). Samples carry
 * labels thread_id (number), thread_name and zone (strings), which pprof's
 * -tags, -tagfocus and Pyroscope's label filters use; comments say what was
 * traced; inuse_space is the default sample type, as in Go's profiles.
 */
#include "export.h"
#include "live_sites.h"
#include "protobuf.h"
#include "strtab.h"
#include "u64map.h"

#include <errno.h>
#include <string.h>

/* Field numbers of profile.proto. */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,
	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	MAPPING_ID = 1,
	MAPPING_MEMORY_START = 2,
	MAPPING_MEMORY_LIMIT = 3,
	MAPPING_FILE_OFFSET = 4,
	MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	LINE_LINE = 2,
	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

/* The sample types, in the order Go's heap profiles use; pprof shows the
 * last (inuse_space) by default. */
static const char *const sample_types[][2] = {
	{ "alloc_objects", "count" },
	{ "alloc_space", "bytes" },
	{ "inuse_objects", "count" },
	{ "inuse_space", "bytes" },
};

struct pprof {
	const struct export_pprof_input *in;
	struct strtab strings;
	struct u64map locations; /* address -> location id */
	struct u64map functions; /* name index << 32 | filename index -> function id */
	struct pb_buf samples, mappings, locs, funcs;
	uint64_t nlocations;
	uint64_t nfunctions;
	bool resident; /* --rss: a fifth sample type, resident_space */
	const struct export_pprof_part *parts; /* the input's, or one made of A's */
	size_t nparts;
	size_t part;           /* the one being written */
	uint64_t mapping_base; /* the part's first mapping id - 1 */
	const struct analysis_trace *trace;
	int err; /* sticky, like pb_buf's */
};

/* S's string table index; a failure is kept in p->err. */
static uint64_t pprof__str(struct pprof *p, const char *s)
{
	int64_t i = strtab__intern(&p->strings, s);

	if (i < 0) {
		p->err = (int)i;
		return 0;
	}
	return (uint64_t)i;
}

static void pprof__value_type(struct pprof *p, struct pb_buf *b, uint32_t field, const char *type,
			      const char *unit)
{
	size_t m = pb_buf__begin(b, field);

	pb_buf__uint64(b, VALUE_TYPE_TYPE, pprof__str(p, type));
	pb_buf__uint64(b, VALUE_TYPE_UNIT, pprof__str(p, unit));
	pb_buf__end(b, m);
}

/* The id (index + 1) of the module holding ADDR; 0 if none does. */
static uint64_t pprof__mapping_of(const struct pprof *p, uint64_t addr)
{
	const struct export_pprof_part *pt = &p->parts[p->part];

	for (size_t i = 0; i < pt->nmodules; i++) {
		if (addr >= pt->modules[i].start && addr < pt->modules[i].end)
			return p->mapping_base + i + 1;
	}
	return 0;
}

static uint64_t pprof__function(struct pprof *p, const struct analysis_frame *f)
{
	char buf[64];
	const char *name = export_frame_name(f, buf, sizeof(buf));
	uint64_t name_i = pprof__str(p, name), file_i = pprof__str(p, f->file);
	struct u64map_entry *e;
	bool existed;
	size_t m;

	e = u64map__insert(&p->functions, name_i << 32 | file_i, &existed);
	if (!e) {
		p->err = -ENOMEM;
		return 0;
	}
	if (existed)
		return e->val;
	e->val = ++p->nfunctions;
	m = pb_buf__begin(&p->funcs, PROFILE_FUNCTION);
	pb_buf__uint64(&p->funcs, FUNCTION_ID, e->val);
	pb_buf__uint64(&p->funcs, FUNCTION_NAME, name_i);
	/* the trace keeps demangled names only */
	pb_buf__uint64(&p->funcs, FUNCTION_SYSTEM_NAME, name_i);
	pb_buf__uint64(&p->funcs, FUNCTION_FILENAME, file_i);
	pb_buf__end(&p->funcs, m);
	return e->val;
}

/* The frames of one address: F[0], the innermost, up to and including the
 * first that is not inlined into the next. */
static size_t frames_of_address(const struct analysis_frame *f, size_t n)
{
	size_t k = 1;

	while (k < n && f[k - 1].inlined && f[k].address == f[0].address)
		k++;
	return k;
}

/* The location id of the address of F[0..K), added with its lines (the
 * innermost first, as pprof expects) if new. */
static uint64_t pprof__location(struct pprof *p, const struct analysis_frame *f, size_t k)
{
	struct u64map_entry *e;
	uint64_t mapping;
	bool existed;
	size_t m, lm;

	/* u64map keys must be non-zero; no return address is 0; the processes'
	 * addresses (below 2^48) apart */
	e = u64map__insert(&p->locations, (f[0].address ? f[0].address : 1) ^ (uint64_t)p->part << 48, &existed);
	if (!e) {
		p->err = -ENOMEM;
		return 0;
	}
	if (existed)
		return e->val;
	e->val = ++p->nlocations;
	m = pb_buf__begin(&p->locs, PROFILE_LOCATION);
	pb_buf__uint64(&p->locs, LOCATION_ID, e->val);
	mapping = pprof__mapping_of(p, f[0].address);
	if (mapping)
		pb_buf__uint64(&p->locs, LOCATION_MAPPING_ID, mapping);
	pb_buf__uint64(&p->locs, LOCATION_ADDRESS, f[0].address);
	for (size_t i = 0; i < k; i++) {
		uint64_t fn = pprof__function(p, &f[i]);

		lm = pb_buf__begin(&p->locs, LOCATION_LINE);
		pb_buf__uint64(&p->locs, LINE_FUNCTION_ID, fn);
		pb_buf__uint64(&p->locs, LINE_LINE, f[i].line);
		pb_buf__end(&p->locs, lm);
	}
	pb_buf__end(&p->locs, m);
	return e->val;
}

static void pprof__label(struct pprof *p, const char *key, const char *str, uint64_t num)
{
	struct pb_buf *b = &p->samples;
	size_t m = pb_buf__begin(b, SAMPLE_LABEL);

	pb_buf__uint64(b, LABEL_KEY, pprof__str(p, key));
	if (str)
		pb_buf__uint64(b, LABEL_STR, pprof__str(p, str));
	else
		pb_buf__uint64(b, LABEL_NUM, num);
	pb_buf__end(b, m);
}

/* One sample of stack S; ROW (NULL: none) gives its labels. */
/* RESIDENT_ONLY: the stack's resident bytes alone (a sample of its own:
 * the thread and zone rows do not split them). */
static void pprof__sample(struct pprof *p, const struct analysis_stack *s, const struct live_row *row,
			  bool resident_only)
{
	const struct analysis_figures *fig = &s->figures;
	struct pb_buf *b = &p->samples;
	size_t m, lm, k;

	m = pb_buf__begin(b, PROFILE_SAMPLE);
	lm = pb_buf__begin(b, SAMPLE_LOCATION_ID);
	for (size_t i = 0; i < s->nframes; i += k) {
		k = frames_of_address(&s->frames[i], s->nframes - i);
		pb_buf__varint(b, pprof__location(p, &s->frames[i], k));
	}
	pb_buf__end(b, lm);
	lm = pb_buf__begin(b, SAMPLE_VALUE);
	pb_buf__varint(b, resident_only ? 0 : fig->allocations);
	pb_buf__varint(b, resident_only ? 0 : fig->allocated_bytes);
	pb_buf__varint(b, resident_only ? 0 : fig->leaked_allocations);
	pb_buf__varint(b, resident_only ? 0 : fig->leaked_bytes);
	if (p->resident)
		pb_buf__varint(b, resident_only ? fig->resident_bytes : 0);
	pb_buf__end(b, lm);
	if (p->parts[p->part].pid > 0) {
		pprof__label(p, "pid", NULL, (uint64_t)p->parts[p->part].pid);
		if (p->parts[p->part].comm)
			pprof__label(p, "comm", p->parts[p->part].comm, 0);
	}
	if (row) {
		pprof__label(p, "thread_id", NULL, row->tid);
		if (row->thread_name)
			pprof__label(p, "thread_name", row->thread_name, 0);
		if (row->zone)
			pprof__label(p, "zone", row->zone, 0);
	}
	pb_buf__end(b, m);
}

static int pprof__row(void *ctx, const struct live_row *row)
{
	struct pprof *p = ctx;

	if (p->in->adjust) {
		struct live_row copy = *row;
		int rc = p->in->adjust(p->in->adjust_ctx, p->parts[p->part].pid, &copy);

		if (rc < 0)
			return rc;
		if (!rc)
			pprof__sample(p, &copy.stack, &copy, false);
		return p->err;
	}
	pprof__sample(p, &row->stack, row, false);
	return p->err;
}

static void pprof__samples(struct pprof *p)
{
	const struct analysis_site *sites;
	size_t nsites;

	for (p->part = 0; p->part < p->nparts; p->part++) {
		const struct export_pprof_part *pt = &p->parts[p->part];
		int err = pt->live ? live_sites__for_each(pt->live, pprof__row, p) : 0;

		for (size_t i = 0; !pt->live && !err && i < pt->nrows; i++)
			err = pprof__row(p, &pt->rows[i]);

		if (err && !p->err)
			p->err = err;
		p->mapping_base += p->parts[p->part].nmodules;
	}
	p->part = 0;
	p->mapping_base = 0;
	if (!p->in->a)
		return;
	sites = analysis__sites(p->in->a, &nsites);
	for (size_t i = 0; i < nsites; i++) {
		for (size_t j = 0; j < sites[i].nstacks; j++) {
			const struct analysis_stack *s = sites[i].stacks[j];

			if (!p->in->live && s->figures.allocations)
				pprof__sample(p, s, NULL, false);
			if (p->resident && s->figures.resident_bytes)
				pprof__sample(p, s, NULL, true);
		}
	}
}

static void pprof__mapping(struct pprof *p, uint64_t id, const struct trace_module *mod)
{
	struct pb_buf *b = &p->mappings;
	char hex[2 * sizeof(mod->build_id) + 1] = "";
	size_t m;

	for (uint32_t i = 0; i < mod->build_id_len && i < sizeof(mod->build_id); i++)
		snprintf(hex + 2 * i, 3, "%02x", mod->build_id[i]);
	m = pb_buf__begin(b, PROFILE_MAPPING);
	pb_buf__uint64(b, MAPPING_ID, id);
	pb_buf__uint64(b, MAPPING_MEMORY_START, mod->start);
	pb_buf__uint64(b, MAPPING_MEMORY_LIMIT, mod->end);
	pb_buf__uint64(b, MAPPING_FILE_OFFSET, mod->file_offset);
	pb_buf__uint64(b, MAPPING_FILENAME, pprof__str(p, mod->path));
	pb_buf__uint64(b, MAPPING_BUILD_ID, pprof__str(p, hex));
	/* symbolized when recording ended: pprof need not look for the files */
	pb_buf__uint64(b, MAPPING_HAS_FUNCTIONS, 1);
	pb_buf__uint64(b, MAPPING_HAS_FILENAMES, 1);
	pb_buf__uint64(b, MAPPING_HAS_LINE_NUMBERS, 1);
	pb_buf__uint64(b, MAPPING_HAS_INLINE_FRAMES, 1);
	pb_buf__end(b, m);
}

/* The fields in field-number order, each repeated field in one run. */
static void pprof__assemble(struct pprof *p, struct pb_buf *out, const uint64_t *comments,
			    size_t ncomments, uint64_t default_type)
{
	const struct analysis_trace *t = p->trace;

	pb_buf__raw(out, p->samples.data, p->samples.len);
	pb_buf__raw(out, p->mappings.data, p->mappings.len);
	pb_buf__raw(out, p->locs.data, p->locs.len);
	pb_buf__raw(out, p->funcs.data, p->funcs.len);
	for (size_t i = 0; i < p->strings.nr; i++)
		pb_buf__string(out, PROFILE_STRING_TABLE, p->strings.strs[i]);
	if (p->in->time_ns)
		pb_buf__uint64(out, PROFILE_TIME_NANOS, p->in->time_ns);
	pb_buf__uint64(out, PROFILE_DURATION_NANOS, p->in->duration_ns ? p->in->duration_ns : t->duration_ns);
	pprof__value_type(p, out, PROFILE_PERIOD_TYPE, "space", "bytes");
	/* a sampled trace's figures are already scaled up to estimates */
	pb_buf__uint64(out, PROFILE_PERIOD, t->sample_bytes ? t->sample_bytes : 1);
	for (size_t i = 0; i < ncomments; i++)
		pb_buf__uint64(out, PROFILE_COMMENT, comments[i]);
	pb_buf__uint64(out, PROFILE_DEFAULT_SAMPLE_TYPE, default_type);
}

/* What was traced, in words pprof shows with -comments. */
static size_t pprof__comments(struct pprof *p, uint64_t *out)
{
	const struct analysis_trace *t = p->trace;
	uint64_t duration = p->in->duration_ns ? p->in->duration_ns : t->duration_ns;
	char line[4096];
	size_t n = 0;

	if (p->in->nparts > 1) {
		snprintf(line, sizeof(line), "memtrace agent: %zu processes, labelled pid and comm", p->in->nparts);
		out[n++] = pprof__str(p, line);
	} else if (t->command) {
		snprintf(line, sizeof(line), "memtrace: %s", t->command);
		out[n++] = pprof__str(p, line);
	}
	snprintf(line, sizeof(line), "pid %d (%s), %.3f s%s", t->pid, t->comm ? t->comm : "?",
		 duration / 1e9, t->partial ? ", partial trace" : "");
	out[n++] = pprof__str(p, line);
	if (t->sample_bytes) {
		snprintf(line, sizeof(line), "sampled: one per %llu bytes on average; values are estimates",
			 (unsigned long long)t->sample_bytes);
		out[n++] = pprof__str(p, line);
	}
	if (t->budget.budget_ppm) {
		snprintf(line, sizeof(line),
			 "--budget %g%%: probes lived in %llu windows, allocations traced %.2f%% of the time; "
			 "values are estimates (each recorded allocation stands for %.1f to %.1f); inuse is what "
			 "outlived its window's tail, not the live heap",
			 (double)t->budget.budget_ppm / 1e4, (unsigned long long)t->budget.windows,
			 t->duration_ns ? 100.0 * (double)t->budget.live_ns / (double)t->duration_ns : 0.0,
			 t->budget.min_weight, t->budget.max_weight);
		out[n++] = pprof__str(p, line);
		if (t->budget.large_bytes) {
			snprintf(line, sizeof(line),
				 "--budget: large blocks (the allocator's own mappings of %llu bytes or more) are exact, "
				 "windows or not: %llu of %llu bytes, %llu freed",
				 (unsigned long long)t->budget.large_bytes, (unsigned long long)t->budget.large_allocations,
				 (unsigned long long)t->budget.large_allocated_bytes, (unsigned long long)t->budget.large_frees);
			out[n++] = pprof__str(p, line);
		}
	}
	return n;
}

static void pprof__free(struct pprof *p)
{
	strtab__free(&p->strings);
	u64map__free(&p->locations);
	u64map__free(&p->functions);
	pb_buf__free(&p->samples);
	pb_buf__free(&p->mappings);
	pb_buf__free(&p->locs);
	pb_buf__free(&p->funcs);
}

int export_pprof__encode(const struct export_pprof_input *in, struct pb_buf *out)
{
	struct export_pprof_part one = { .live = in->live, .modules = in->modules, .nmodules = in->nmodules };
	struct pprof p = { .in = in, .parts = in->nparts ? in->parts : &one, .nparts = in->nparts ? in->nparts : 1 };
	uint64_t comments[5], default_type, base = 0; /* pprof__comments: at most 5 lines */
	size_t ncomments;
	int err;

	p.trace = in->trace ? in->trace : analysis__trace(in->a);
	strtab__init(&p.strings);
	pprof__str(&p, ""); /* profile.proto: string_table[0] must be "" */
	p.resident = in->a && p.trace->rss.at_end.heap_known;
	for (size_t i = 0; i < sizeof(sample_types) / sizeof(sample_types[0]); i++)
		pprof__value_type(&p, out, PROFILE_SAMPLE_TYPE, sample_types[i][0], sample_types[i][1]);
	if (p.resident) /* live blocks on resident pages at --rss's last snapshot */
		pprof__value_type(&p, out, PROFILE_SAMPLE_TYPE, "resident_space", "bytes");
	/* period_type comes after the string table: its strings must be in it */
	pprof__str(&p, "space");
	pprof__samples(&p);
	for (size_t k = 0; k < p.nparts; k++) {
		for (size_t i = 0; i < p.parts[k].nmodules; i++)
			pprof__mapping(&p, base + i + 1, &p.parts[k].modules[i]);
		base += p.parts[k].nmodules;
	}
	ncomments = pprof__comments(&p, comments);
	default_type = pprof__str(&p, in->default_type ? in->default_type : "inuse_space");
	if (!p.err)
		pprof__assemble(&p, out, comments, ncomments, default_type);

	err = p.err;
	if (!err)
		err = pb_buf__error(&p.samples) ?: pb_buf__error(&p.mappings) ?:
		      pb_buf__error(&p.locs) ?: pb_buf__error(&p.funcs) ?: pb_buf__error(out);
	pprof__free(&p);
	return err;
}
