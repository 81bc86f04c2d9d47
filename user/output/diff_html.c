// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `memtrace diff --html` (diff_html.h): the page user/output/html/diff.html
 * with its diff script. Its data: "diff", exactly what diff --json prints
 * (diff_print.c), and "flame", each trace's stacks as name paths, which
 * the page merges into one tree of both sides.
 */
#include "diff_html.h"
#include "diff_print.h"
#include "export.h"
#include "json_out.h"
#include "report.h"
#include "report_html.h"
#include "strtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_HTML_STACKS 3000 /* stacks kept per trace, by allocated bytes; the rest fold */

static int by_bytes(const void *x, const void *y)
{
	const struct analysis_stack *a = *(const struct analysis_stack *const *)x;
	const struct analysis_stack *b = *(const struct analysis_stack *const *)y;

	if (a->figures.allocated_bytes != b->figures.allocated_bytes)
		return a->figures.allocated_bytes > b->figures.allocated_bytes ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* One side: [figures (6, as the report page's cells), [name ids, outermost
 * first]] per stack; the stacks past the first DIFF_HTML_STACKS summed
 * into one path, "[other stacks]". */
static int flame_side(struct json_out *j, const struct analysis *a, struct strtab *names)
{
	const struct analysis_site *sites;
	const struct analysis_stack **by;
	struct analysis_figures other = { 0 };
	size_t nsites, n = 0;
	char buf[64];
	int64_t id;

	sites = analysis__sites(a, &nsites);
	for (size_t i = 0; i < nsites; i++)
		n += sites[i].nstacks;
	by = calloc(n ? n : 1, sizeof(*by));
	if (!by)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < nsites; i++) {
		for (size_t k = 0; k < sites[i].nstacks; k++)
			by[n++] = sites[i].stacks[k];
	}
	qsort(by, n, sizeof(*by), by_bytes);
	json_out__begin_array(j, false);
	for (size_t i = 0; i < n; i++) {
		const struct analysis_stack *s = by[i];

		if (i >= DIFF_HTML_STACKS) {
			analysis_figures__add(&other, &s->figures);
			continue;
		}
		json_out__begin_array(j, true);
		json_out__begin_array(j, true);
		report_html__figures(j, &s->figures);
		json_out__end_array(j);
		json_out__begin_array(j, true);
		for (size_t f = s->nframes; f-- > 0;) {
			id = strtab__intern(names, export_frame_name(&s->frames[f], buf, sizeof(buf)));
			if (id < 0)
				goto nomem;
			json_out__u64(j, (uint64_t)id);
		}
		if (!s->nframes) {
			if ((id = strtab__intern(names, "[no stack]")) < 0)
				goto nomem;
			json_out__u64(j, (uint64_t)id);
		}
		json_out__end_array(j);
		json_out__end_array(j);
	}
	if (n > DIFF_HTML_STACKS) {
		if ((id = strtab__intern(names, "[other stacks]")) < 0)
			goto nomem;
		json_out__begin_array(j, true);
		json_out__begin_array(j, true);
		report_html__figures(j, &other);
		json_out__end_array(j);
		json_out__begin_array(j, true);
		json_out__u64(j, (uint64_t)id);
		json_out__end_array(j);
		json_out__end_array(j);
	}
	json_out__end_array(j);
	free(by);
	return 0;
nomem:
	free(by);
	return -ENOMEM;
}

static int flame_write(FILE *f, const struct analysis *base, const struct analysis *new_)
{
	struct strtab names;
	struct json_out j;
	int err;

	strtab__init(&names);
	json_out__init(&j, f);
	json_out__begin_object(&j, false);
	json_out__key(&j, "base");
	json_out__begin_object(&j, false);
	report_json__trace(&j, analysis__trace(base));
	json_out__end_object(&j);
	json_out__key(&j, "new");
	json_out__begin_object(&j, false);
	report_json__trace(&j, analysis__trace(new_));
	json_out__end_object(&j);
	json_out__key(&j, "a");
	err = flame_side(&j, base, &names);
	if (!err) {
		json_out__key(&j, "b");
		err = flame_side(&j, new_, &names);
	}
	if (!err) {
		json_out__key(&j, "names");
		json_out__begin_array(&j, false);
		for (size_t i = 0; i < names.nr; i++)
			json_out__string(&j, names.strs[i]);
		json_out__end_array(&j);
		json_out__end_object(&j);
		err = json_out__finish(&j);
	}
	strtab__free(&names);
	return err;
}

static int data_write(FILE *f, const struct analysis *base, const struct analysis *new_,
		      const struct diff *d)
{
	int err;

	fputs("{\"diff\": ", f);
	err = diff_print__json(f, d);
	if (err)
		return err;
	fputs(", \"flame\": ", f);
	err = flame_write(f, base, new_);
	fputs("}\n", f);
	return err;
}

struct diff_page {
	const struct analysis *base, *new_;
	const struct diff *d;
};

static int diff_page_data(FILE *f, void *ctx)
{
	struct diff_page *p = ctx;

	return data_write(f, p->base, p->new_, p->d);
}

int diff_html__write(FILE *f, const struct analysis *base, const struct analysis *new_,
		     const struct diff *d)
{
	struct diff_page p = { base, new_, d };

	return report_html__page(f, "diff.html", diff_page_data, &p);
}
