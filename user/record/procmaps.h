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
	int pid;                   /* whose maps they are */
};

/* Fill PM from /proc/PID/maps. Paths are as the target sees them, with a
 * " (deleted)" suffix removed. Each mapped ELF file is opened once through
 * its mapping (target_file.h) and held for PID's recordings; a module whose
 * file cannot be reached has build_id_len 0 and no file. 0 or -errno; PM is
 * empty on failure. */
int procmaps__read(struct procmaps *pm, int pid);

/* A recording of PID begins and ends: the files held for it are closed
 * when the last one has ended and no procmaps names them. Calls pair. */
void procmaps__hold(int pid);
void procmaps__release(int pid);
/* The held file PID mapped at PATH with that build-id (any, if LEN is 0):
 * its "/proc/self/fd/N" path, malloc'd, or NULL. What the symbolizer of a
 * module the recording saw opens; valid while PID's recording holds it. */
char *procmaps__held_file(int pid, const char *path, const uint8_t *build_id, uint32_t build_id_len);
/* The build-id of FILE, a held file's path (procmaps__file): 0 with *LEN
 * (0: it has none), or -ENOENT when FILE is not one. */
int procmaps__file_build_id(const char *file, uint8_t *id, size_t cap, uint32_t *len);
/* The path the target knows a held FILE by (FILE itself if it is not one),
 * into BUF: what messages name. Returns BUF. */
const char *procmaps__name(const char *file, char *buf, size_t cap);
/* How many files are held for PID now. */
size_t procmaps__nr_held(int pid);
/* How many pids the holding knows (a released one with no file left is
 * forgotten). */
size_t procmaps__nr_pids(void);

/* A hash of PID's file-backed lines of /proc/PID/maps (addresses, offsets,
 * inodes, paths): what procmaps__read would see differently if it changed.
 * Cheap next to procmaps__read, which opens every module for its build-id;
 * anonymous mappings, which a busy allocator changes all the time, are not
 * in it. 0 or -errno. */
int procmaps__files_hash(int pid, uint64_t *hash);

/* Where memtrace opens the mapped file the target knows as PATH (probes,
 * unwind tables, marks, symbols): its held descriptor, "/proc/self/fd/N",
 * the file mapped whatever the path is now. NULL if PM maps no PATH, or the
 * file could not be reached. */
const char *procmaps__file(const struct procmaps *pm, const char *path);
/* procmaps__file, malloc'd; NULL with errno ENOENT (not mapped, not
 * reached) or ENOMEM. A target's path is never opened by name. */
char *procmaps__open_path(const struct procmaps *pm, int pid, const char *path);

/* The same over PID's executable file mappings only: what its allocator
 * functions, its modules and its stacks depend on, unchanged by the data
 * files and shared memory a process maps and unmaps as it works. Read by
 * PROCMAP_QUERY where the kernel has it (no text made), so a hash is
 * compared only with one made in this process or a fork of it. */
int procmaps__code_hash(int pid, uint64_t *hash);

/* The executable mapping containing ADDR, or NULL. */
const struct trace_module *procmaps__find(const struct procmaps *pm, uint64_t addr);

void procmaps__free(struct procmaps *pm);

/* readlink /proc/PID/exe into BUF (NUL-terminated). 0, -ENAMETOOLONG, or -errno. */
int proc_exe_path(int pid, char *buf, size_t cap);

#endif /* MEMTRACE_PROCMAPS_H */
