// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "module_set.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool same_mapping(const struct trace_module *a, const struct trace_module *b)
{
	return a->start == b->start && a->end == b->end && a->file_offset == b->file_offset &&
	       strcmp(a->path, b->path) == 0;
}

static bool contains(const struct module_set *set, const struct trace_module *m)
{
	for (size_t i = 0; i < set->nr; i++) {
		if (same_mapping(&set->mods[i], m))
			return true;
	}
	return false;
}

static int add(struct module_set *set, const struct trace_module *m)
{
	struct trace_module *copy;

	if (set->nr == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct trace_module *v = realloc(set->mods, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		set->mods = v;
		set->cap = cap;
	}
	copy = &set->mods[set->nr];
	*copy = *m;
	copy->path = strdup(m->path);
	if (!copy->path)
		return -ENOMEM;
	set->nr++;
	return 0;
}

int module_set__merge(struct module_set *set, const struct procmaps *pm,
		      int (*fn)(void *ctx, const struct trace_module *m), void *ctx)
{
	int err = 0;

	for (size_t i = 0; i < pm->nr && !err; i++) {
		if (contains(set, &pm->mods[i]))
			continue;
		err = add(set, &pm->mods[i]);
		if (!err && fn)
			err = fn(ctx, &set->mods[set->nr - 1]);
	}
	return err;
}

void module_set__free(struct module_set *set)
{
	for (size_t i = 0; i < set->nr; i++)
		free((char *)set->mods[i].path);
	free(set->mods);
	memset(set, 0, sizeof(*set));
}
