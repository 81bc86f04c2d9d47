// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --rss's calls that map memory, at the C library's wrappers (map_wrappers.h). */
#include "map_wrappers.h"
#include "elf_util.h"
#include "placement.h"
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

/* Where in wrapper FN of EF its probe goes: the first instruction the
 * kernel emulates while its NARGS arguments are still in their ABI
 * registers, the syscall passed if need be (placement_choose_wrapper), or
 * its start (0). A probe the kernel must single-step costs several times
 * one it emulates (7 to 9 us against 0.5 here, in a VM): glibc's mmap and
 * munmap start with a mov, and a threaded server maps and unmaps a stack
 * for each thread it starts. */
static uint32_t wrapper_site(struct elf_file *ef, const struct elf_function *fn, unsigned nargs)
{
	uint8_t code[PLACEMENT_PROLOGUE_MAX + 16];
	size_t len = fn->size < sizeof(code) ? fn->size : sizeof(code);
	struct placement pl;

	if (!len || getenv("MEMTRACE_NO_PLACEMENT") || elf_file__read(ef, fn->file_offset, code, len) ||
	    placement_choose_wrapper(code, len, fn->vaddr, nargs, &pl) || !pl.emulated || pl.moved[0])
		return 0;
	return pl.offset;
}

/* The wrappers of one C library, entry and return, for L's target. */
static int attach_lib(struct loader *l, const char *file, bool large_only)
{
	static const struct {
		const char *name;
		uint32_t call;
		unsigned nargs; /* the arguments map_wrap_enter reads */
	} fns[] = {
		{ "mmap", MT_MAP_MMAP, 4 },       { "munmap", MT_MAP_MUNMAP, 2 }, { "mremap", MT_MAP_MREMAP, 4 },
		{ "madvise", MT_MAP_MADVISE, 3 }, { "sbrk", MT_MAP_BRK, 1 },
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
			offsets[n] = fn.file_offset + wrapper_site(ef, &fn, fns[i].nargs);
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
