/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A process's file-backed mappings from /proc/PID/maps: the executable ones
 * as trace modules (with build-ids), and every mapped file once, for the
 * loader to look for allocator symbols in.
 */
#ifndef MEMTRACE_PROCMAPS_H
#define MEMTRACE_PROCMAPS_H

#include "trace.h"
#include <stddef.h>
#include <stdint.h>

struct procmaps {
	struct trace_module *mods; /* executable file mappings, ascending addresses */
	size_t nr;
	char **paths;              /* every mapped file once, in maps order; owned */
	size_t nr_paths;           /* mods[i].path points into paths[] */
	char **files;              /* where memtrace reads paths[i]: see procmaps__file */
};

/* Fill PM from /proc/PID/maps. Paths are as the target sees them, with a
 * " (deleted)" suffix removed; build-ids are read through /proc/PID/root (or
 * /proc/PID/map_files for deleted files), then the plain path; a module
 * whose file cannot be read has build_id_len 0. 0 or -errno; PM is empty on
 * failure. */
int procmaps__read(struct procmaps *pm, int pid);

/* A hash of PID's file-backed lines of /proc/PID/maps (addresses, offsets,
 * inodes, paths): what procmaps__read would see differently if it changed.
 * Cheap next to procmaps__read, which opens every module for its build-id;
 * anonymous mappings, which a busy allocator changes all the time, are not
 * in it. 0 or -errno. */
int procmaps__files_hash(int pid, uint64_t *hash);

/* Where memtrace opens the mapped file the target knows as PATH (probes,
 * unwind tables, marks, symbols): the path under the target's root while it
 * is still the file mapped, else /proc/PID/map_files/START-END, which
 * reaches a file deleted or replaced since it was mapped. NULL if PM maps no
 * PATH. */
const char *procmaps__file(const struct procmaps *pm, const char *path);
/* procmaps__file, or PATH under the target's root when PM does not map it;
 * malloc'd, NULL when out of memory. */
char *procmaps__open_path(const struct procmaps *pm, int pid, const char *path);

/* The same over PID's executable file mappings only: what its allocator
 * functions, its modules and its stacks depend on, unchanged by the data
 * files and shared memory a process maps and unmaps as it works. */
int procmaps__code_hash(int pid, uint64_t *hash);

/* The executable mapping containing ADDR, or NULL. */
const struct trace_module *procmaps__find(const struct procmaps *pm, uint64_t addr);

void procmaps__free(struct procmaps *pm);

/* readlink /proc/PID/exe into BUF (NUL-terminated). 0, -ENAMETOOLONG, or -errno. */
int proc_exe_path(int pid, char *buf, size_t cap);

#endif /* MEMTRACE_PROCMAPS_H */
