// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "unwinder.h"
#include "elf_util.h"
#include "file_memo.h"
#include "unwind_table.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A module's rows in the BPF array, or that it has none. */
struct unwind_module {
	char *path;
	uint8_t build_id[32];
	uint32_t build_id_len;
	uint32_t first_row;
	uint32_t nr_rows; /* 0: no table */
	uint32_t flags;
};

struct unwinder {
	int pid;
	char *cache_dir;
	unwinder_warn_fn warn;
	struct unwind_module *mods;
	size_t nr_mods, cap_mods;
	size_t rows_used;
	bool full_warned;
};

struct unwinder *unwinder__new(int pid, const char *cache_dir, unwinder_warn_fn warn)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
	u->warn = warn;
	if (cache_dir && !(u->cache_dir = strdup(cache_dir))) {
		free(u);
		return NULL;
	}
	return u;
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_mods; i++)
		free(u->mods[i].path);
	free(u->mods);
	free(u->cache_dir);
	free(u);
}

size_t unwinder__modules(const struct unwinder *u)
{
	size_t n = 0;

	for (size_t i = 0; u && i < u->nr_mods; i++)
		n += u->mods[i].nr_rows > 0;
	return n;
}

size_t unwinder__rows(const struct unwinder *u)
{
	return u ? u->rows_used : 0;
}

static struct unwind_module *find_module(struct unwinder *u, const struct trace_module *m)
{
	for (size_t i = 0; i < u->nr_mods; i++) {
		struct unwind_module *um = &u->mods[i];

		if (!strcmp(um->path, m->path) && um->build_id_len == m->build_id_len &&
		    !memcmp(um->build_id, m->build_id, m->build_id_len))
			return um;
	}
	return NULL;
}

/* Build M's table and copy its rows into the BPF array. */
static struct unwind_module *add_module(struct unwinder *u, struct loader *l, const struct procmaps *pm,
					const struct trace_module *m)
{
	struct loader_unwind_rows found;
	struct unwind_module *um;
	struct unwind_table t;
	size_t nr_rows;
	char *file;
	int err;

	if (array_reserve((void **)&u->mods, &u->cap_mods, u->nr_mods + 1, sizeof(*u->mods)))
		return NULL;
	um = &u->mods[u->nr_mods];
	memset(um, 0, sizeof(*um));
	um->path = strdup(m->path);
	if (!um->path)
		return NULL;
	memcpy(um->build_id, m->build_id, sizeof(um->build_id));
	um->build_id_len = m->build_id_len;
	u->nr_mods++;
	/* Another recorder on the same object (a followed process) may have
	 * written this module's rows already. */
	if (!loader__unwind_module_find(l, m->build_id, m->build_id_len, &found)) {
		um->first_row = found.first_row;
		um->nr_rows = found.nr_rows;
		um->flags = found.flags;
		u->rows_used += found.nr_rows;
		return um;
	}
	file = procmaps__open_path(pm, u->pid, m->path);
	err = file ? unwind_table__load(file, u->cache_dir, &t) : -errno;
	free(file);
	if (err) {
		/* No table: stacks stop in this module, marked. A module without
		 * CFI at all is common (hand-written code); one we could not read
		 * is said. */
		if (err != -ENODATA && u->warn) {
			char msg[PATH_MAX + 128];

			snprintf(msg, sizeof(msg), "skipped the unwind table of %s: %s; its stacks stop there",
				 m->path, strerror(-err));
			u->warn(msg);
		}
		return um;
	}
	found = (struct loader_unwind_rows){ .nr_rows = (uint32_t)t.nr,
					     .flags = t.frame_pointers ? MT_UNWIND_FRAME_POINTERS : 0 };
	nr_rows = t.nr;
	err = t.nr > UINT32_MAX ? -ENOSPC : loader__unwind_module_add(l, m->build_id, m->build_id_len, t.rows, &found);
	unwind_table__free(&t);
	if (err) {
		if (u->warn && !u->full_warned) {
			char msg[PATH_MAX + 128];

			snprintf(msg, sizeof(msg), "no room for the unwind table of %s (%zu rows); stacks stop there: give a larger --unwind-rows",
				 m->path, nr_rows);
			u->warn(msg);
		}
		u->full_warned = true;
		return um;
	}
	um->first_row = found.first_row;
	um->nr_rows = found.nr_rows;
	um->flags = found.flags;
	u->rows_used += found.nr_rows;
	return um;
}

/* Runtime address - ELF vaddr for the mapping M (its file offset's vaddr). */
static int mapping_vaddr(const char *file, uint64_t file_offset, uint64_t *vaddr)
{
	struct elf_file *f;
	int err;

	if (!file_memo__get(file, FILE_MAPPING_VADDR, file_offset, vaddr))
		return 0;
	f = elf_file__open(file);
	if (!f)
		return -ENOENT;
	err = elf_vaddr_of_mapping(elf_file__elf(f), file_offset, true, vaddr);
	elf_file__close(f);
	if (!err)
		file_memo__put(file, FILE_MAPPING_VADDR, file_offset, *vaddr);
	return err;
}

static int mapping_bias(struct unwinder *u, const struct procmaps *pm, const struct trace_module *m,
			uint64_t *bias)
{
	char *file = procmaps__open_path(pm, u->pid, m->path);
	uint64_t vaddr;
	int err = file ? mapping_vaddr(file, m->file_offset, &vaddr) : -ENOMEM;

	free(file);
	if (!err)
		*bias = m->start - vaddr;
	return err;
}

void unwinder_learn(int pid, const struct procmaps *pm)
{
	for (size_t i = 0; i < pm->nr; i++) {
		char *file = procmaps__open_path(pm, pid, pm->mods[i].path);
		uint64_t vaddr;

		if (file)
			mapping_vaddr(file, pm->mods[i].file_offset, &vaddr);
		free(file);
	}
}

int unwinder__update(struct unwinder *u, struct loader *l, const struct procmaps *pm)
{
	uint32_t half = loader__unwind_gen(l) ^ 1, nr = 0;
	struct mt_unwind_map *maps = loader__unwind_maps(l, half);

	if (!maps)
		return -errno;
	for (size_t i = 0; i < pm->nr && nr < MT_UNWIND_MAPS; i++) {
		const struct trace_module *m = &pm->mods[i];
		struct unwind_module *um = find_module(u, m);
		uint64_t bias;

		if (!um && !(um = add_module(u, l, pm, m)))
			return -ENOMEM;
		if (!um->nr_rows || mapping_bias(u, pm, m, &bias))
			continue;
		maps[nr++] = (struct mt_unwind_map){
			.start = m->start,
			.end = m->end,
			.bias = bias,
			.first_row = um->first_row,
			.nr_rows = um->nr_rows,
			.flags = um->flags,
		};
	}
	loader__unwind_publish(l, half, nr);
	return 0;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

const char *unwinder_default_cache(char *buf, size_t cap)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg && *xdg)
		snprintf(buf, cap, "%s/memtrace/unwind", xdg);
	else if (home && *home)
		snprintf(buf, cap, "%s/.cache/memtrace/unwind", home);
	else
		return NULL;
	return mkdirs(buf) ? NULL : buf;
}
