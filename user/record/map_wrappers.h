/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_MAP_WRAPPERS_H
#define MEMTRACE_MAP_WRAPPERS_H

#include "loader.h"
#include "procmaps.h"
#include <stdbool.h>
#include <stddef.h>

/*
 * --rss on a kernel without kprobes (loader__maps_by_wrappers): the calls
 * that map memory are caught at the target's C library, uprobes on its
 * mmap, munmap, mremap, madvise and sbrk (bpf/maps.bpf.h's map_wrap_*),
 * instead of at the sys_exit tracepoint, which would send every syscall of
 * every process on the host down the kernel's slow path (+200 to 340 ns a
 * syscall on a host of ours). What a raw syscall maps (a static binary, a
 * Go program) is not seen then: map_wrappers__none_possible says when a
 * target has no C library that will serve.
 */
struct map_wrappers {
	char **files; /* paths (as the target sees them) looked at */
	size_t nr_files;
	size_t nr_libs; /* C libraries probed */
	bool large_only; /* --budget's large blocks alone (no --rss): mmap, munmap and mremap */
};

/* Probe the C libraries (libc.so.*) among PM's files not looked at yet.
 * 0 or -errno. */
int map_wrappers__attach(struct map_wrappers *w, struct loader *l, const struct procmaps *pm, int pid);

/* Find where the wrappers of PM's C libraries are probed and remember it
 * (file_memo.h), probing nothing: the --follow-children supervisor learns
 * it once per program, for every recorder it forks. */
void map_wrappers_learn(int pid, const struct procmaps *pm);

/* Whether PM has neither a C library nor a dynamic linker that will map
 * one: a static program, whose calls only the sys_exit tracepoint sees. */
bool map_wrappers__none_possible(const struct procmaps *pm);

void map_wrappers__free(struct map_wrappers *w);

#endif /* MEMTRACE_MAP_WRAPPERS_H */
