// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* --rss's calls that map memory, at the C library's wrappers (map_wrappers.h). */
#include "map_wrappers.h"
#include "elf_util.h"
#include "file_memo.h"
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

static const struct {
	const char *name;
	uint32_t call;
	unsigned nargs; /* the arguments map_wrap_enter reads */
} wrapper_fns[] = {
	{ "mmap", MT_MAP_MMAP, 4 },       { "munmap", MT_MAP_MUNMAP, 2 }, { "mremap", MT_MAP_MREMAP, 4 },
	{ "madvise", MT_MAP_MADVISE, 3 }, { "sbrk", MT_MAP_BRK, 1 },
};
#define NR_WRAPPERS (sizeof(wrapper_fns) / sizeof(wrapper_fns[0]))

/*
 * Where each wrapper of the C library FILE is probed: SITES[i] is 1 + the
 * file offset of wrapper_fns[i]'s probe, 0 where it has none (absent, an
 * ifunc). Remembered per file (file_memo.h): finding them indexes the
 * library's symbols, 0.6 ms of every followed process's recorder under
 * --budget here, which a recorder forked after the supervisor learned them
 * (map_wrappers_learn) finds in its memory instead. 0 or -errno.
 */
static int wrapper_sites(const char *file, uint64_t sites[NR_WRAPPERS])
{
	struct elf_file *ef;
	size_t i;

	for (i = 0; i < NR_WRAPPERS && !file_memo__get(file, FILE_WRAPPER_SITE, i, &sites[i]); i++)
		;
	if (i == NR_WRAPPERS)
		return 0;
	ef = elf_file__open(file);
	if (!ef)
		return -errno;
	for (i = 0; i < NR_WRAPPERS; i++) {
		struct elf_function fn;

		sites[i] = 0;
		if (!elf_file__find_function(ef, wrapper_fns[i].name, &fn) && !fn.is_ifunc)
			sites[i] = 1 + fn.file_offset + wrapper_site(ef, &fn, wrapper_fns[i].nargs);
		file_memo__put(file, FILE_WRAPPER_SITE, i, sites[i]);
	}
	elf_file__close(ef);
	return 0;
}

/* The wrappers of one C library, entry and return, for L's target. */
static int attach_lib(struct loader *l, const char *file, bool large_only)
{
	uint64_t sites[NR_WRAPPERS], offsets[NR_WRAPPERS];
	uint32_t calls[NR_WRAPPERS];
	size_t n = 0;
	int err = wrapper_sites(file, sites);

	if (err)
		return err;
	for (size_t i = 0; i < (large_only ? 3 : NR_WRAPPERS); i++) {
		if (sites[i]) {
			offsets[n] = sites[i] - 1;
			calls[n++] = wrapper_fns[i].call;
		}
	}
	return n ? loader__attach_map_wrappers(l, file, offsets, calls, n) : -ESRCH;
}

void map_wrappers_learn(int pid, const struct procmaps *pm)
{
	uint64_t sites[NR_WRAPPERS];

	for (size_t i = 0; i < pm->nr_paths; i++) {
		char *file;

		if (!is_libc(pm->paths[i]) || !(file = procmaps__open_path(pm, pid, pm->paths[i])))
			continue;
		wrapper_sites(file, sites);
		free(file);
	}
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
