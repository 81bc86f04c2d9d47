// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Folded stacks, the input format of flamegraph.pl that speedscope and
 * inferno read too: "outer;middle;inner VALUE" per line. Inline frames are
 * frames of their own, as they are in the source.
 */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

const char export_metric_names[] = "allocated, leaked, peak, allocations, leaked-allocations";

static const char *const metric_names[] = {
	[EXPORT_METRIC_ALLOCATED] = "allocated",
	[EXPORT_METRIC_LEAKED] = "leaked",
	[EXPORT_METRIC_PEAK] = "peak",
	[EXPORT_METRIC_ALLOCATIONS] = "allocations",
	[EXPORT_METRIC_LEAKED_ALLOCATIONS] = "leaked-allocations",
};

int export_metric__parse(const char *name, enum export_metric *m)
{
	for (size_t i = 0; i < sizeof(metric_names) / sizeof(metric_names[0]); i++) {
		if (!strcmp(name, metric_names[i])) {
			*m = (enum export_metric)i;
			return 0;
		}
	}
	return -EINVAL;
}

static uint64_t metric_value(const struct analysis_figures *f, enum export_metric m)
{
	switch (m) {
	case EXPORT_METRIC_LEAKED:
		return f->leaked_bytes;
	case EXPORT_METRIC_PEAK:
		return f->peak_bytes;
	case EXPORT_METRIC_ALLOCATIONS:
		return f->allocations;
	case EXPORT_METRIC_LEAKED_ALLOCATIONS:
		return f->leaked_allocations;
	case EXPORT_METRIC_ALLOCATED:
	default:
		return f->allocated_bytes;
	}
}

const char *export_frame_name(const struct analysis_frame *f, char *buf, size_t cap)
{
	const char *base;

	if (f->function)
		return f->function;
	if (f->module) {
		base = strrchr(f->module, '/');
		snprintf(buf, cap, "%s+0x%" PRIx64, base ? base + 1 : f->module, f->module_offset);
	} else {
		snprintf(buf, cap, "0x%" PRIx64, f->address);
	}
	return buf;
}

/* A name as one folded frame: ';' separates frames and a line ends the
 * record, so neither may appear inside one (C++ names have spaces, which the
 * format allows: the value is after the last one). */
static void folded_put_name(FILE *f, const char *name)
{
	for (; *name; name++)
		fputc(*name == ';' ? ':' : *name == '\n' ? ' ' : *name, f);
}

/* S's frames, outermost first; malloc'ed, NULL if out of memory. */
static char *folded_stack(const struct analysis_stack *s)
{
	char buf[64], *line = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&line, &len);
	if (!f)
		return NULL;
	if (!s->nframes)
		fputs("[no stack]", f);
	for (size_t i = s->nframes; i-- > 0;) {
		folded_put_name(f, export_frame_name(&s->frames[i], buf, sizeof(buf)));
		if (i)
			fputc(';', f);
	}
	if (fclose(f)) {
		free(line);
		return NULL;
	}
	return line;
}

struct folded_line {
	char *stack;
	uint64_t value;
};

static int folded_line_cmp(const void *x, const void *y)
{
	return strcmp(((const struct folded_line *)x)->stack, ((const struct folded_line *)y)->stack);
}

/* Every stack with a non-zero value into *OUT (*N of them). 0 or -ENOMEM. */
static int folded_collect(const struct analysis *a, enum export_metric m, struct folded_line **out,
			  size_t *n)
{
	const struct analysis_site *sites;
	struct folded_line *lines = NULL, *grown;
	size_t nsites, nr = 0, cap = 0;
	uint64_t v;

	sites = analysis__sites(a, &nsites);
	for (size_t i = 0; i < nsites; i++) {
		for (size_t j = 0; j < sites[i].nstacks; j++) {
			v = metric_value(&sites[i].stacks[j]->figures, m);
			if (!v)
				continue;
			if (nr == cap) {
				cap = cap ? cap * 2 : 64;
				grown = realloc(lines, cap * sizeof(*lines));
				if (!grown)
					goto out_nomem;
				lines = grown;
			}
			lines[nr].stack = folded_stack(sites[i].stacks[j]);
			if (!lines[nr].stack)
				goto out_nomem;
			lines[nr++].value = v;
		}
	}
	*out = lines;
	*n = nr;
	return 0;

out_nomem:
	for (size_t i = 0; i < nr; i++)
		free(lines[i].stack);
	free(lines);
	return -ENOMEM;
}

/* Sorted like stackcollapse's output; stacks that differ only in return
 * addresses on the same functions (one function calling the same callee
 * from two lines) read the same, so they become one line. */
int export_folded__write(FILE *f, const struct analysis *a, enum export_metric m)
{
	struct folded_line *lines;
	size_t n, i, j;
	uint64_t sum;
	int err;

	err = folded_collect(a, m, &lines, &n);
	if (err)
		return err;
	if (n)
		qsort(lines, n, sizeof(*lines), folded_line_cmp);
	for (i = 0; i < n; i = j) {
		sum = 0;
		for (j = i; j < n && !strcmp(lines[i].stack, lines[j].stack); j++)
			sum += lines[j].value;
		fprintf(f, "%s %" PRIu64 "\n", lines[i].stack, sum);
	}
	for (i = 0; i < n; i++)
		free(lines[i].stack);
	free(lines);
	return fflush(f) || ferror(f) ? -EIO : 0;
}
