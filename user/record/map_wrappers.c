// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --rss's calls that map memory, at the C library's wrappers (map_wrappers.h). */
#include "map_wrappers.h"
#include "elf_util.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *base_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

static bool is_libc(const char *path)
{
	return !strncmp(base_of(path), "libc.so", 7) || !strncmp(base_of(path), "libc-", 5);
}

bool map_wrappers__none_possible(const struct procmaps *pm)
{
	for (size_t i = 0; i < pm->nr_paths; i++) {
		if (is_libc(pm->paths[i]) || !strncmp(base_of(pm->paths[i]), "ld-linux", 8))
			return false;
	}
	return true;
}

/* The wrappers of one C library, entry and return, for L's target. */
static int attach_lib(struct loader *l, const char *file, bool large_only)
{
	static const struct {
		const char *name;
		uint32_t call;
	} fns[] = {
		{ "mmap", MT_MAP_MMAP },       { "munmap", MT_MAP_MUNMAP }, { "mremap", MT_MAP_MREMAP },
		{ "madvise", MT_MAP_MADVISE }, { "sbrk", MT_MAP_BRK },
	};
	uint64_t offsets[5];
	uint32_t calls[5];
	struct elf_file *ef = elf_file__open(file);
	size_t n = 0;

	if (!ef)
		return -errno;
	for (size_t i = 0; i < (large_only ? 3 : sizeof(fns) / sizeof(fns[0])); i++) {
		struct elf_function fn;

		if (!elf_file__find_function(ef, fns[i].name, &fn) && !fn.is_ifunc) {
			offsets[n] = fn.file_offset;
			calls[n++] = fns[i].call;
		}
	}
	elf_file__close(ef);
	return n ? loader__attach_map_wrappers(l, file, offsets, calls, n) : -ESRCH;
}

int map_wrappers__attach(struct map_wrappers *w, struct loader *l, const struct procmaps *pm, int pid)
{
	for (size_t i = 0; i < pm->nr_paths; i++) {
		char *file;
		int err;

		if (!is_libc(pm->paths[i]) || strings_has(w->files, w->nr_files, pm->paths[i]))
			continue;
		if (strings_push(&w->files, &w->nr_files, pm->paths[i]))
			return -ENOMEM;
		file = procmaps__open_path(pm, pid, pm->paths[i]);
		if (!file && errno == ENOMEM)
			return -ENOMEM;
		if (!file)
			continue; /* not reached as the file mapped: nothing to attach to */
		err = attach_lib(l, file, w->large_only);
		free(file);
		if (err == -ENOMEM)
			return err;
		w->nr_libs += !err;
	}
	return 0;
}

void map_wrappers__free(struct map_wrappers *w)
{
	free_strings(w->files, w->nr_files);
	memset(w, 0, sizeof(*w));
}
