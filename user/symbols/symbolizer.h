/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Return addresses of a (possibly foreign, possibly containerized) process
 * to function, file:line and inline frames, through elfutils' libdwfl and
 * libiberty's demangler. Debug info is found the standard ways:
 * .gnu_debuglink and /usr/lib/debug/.build-id, under ROOT first.
 */
#ifndef MEMTRACE_SYMBOLIZER_H
#define MEMTRACE_SYMBOLIZER_H

#include "trace.h"
#include <stdint.h>

struct symbolizer;

/* ROOT prefixes every module path ("/proc/4242/root", a sysroot; NULL or ""
 * for none); a file missing under ROOT is looked for at its plain path.
 * NULL with errno set. */
struct symbolizer *symbolizer__new(const char *root);

/* A symbolizer for a live target, whose paths memtrace never opens: a
 * module is read from the file given with it (MAPPED: a held file,
 * procmaps.h), else from a debug file found by build-id (fetched, under
 * ROOT, the target's root, opened with target_file.h, or the host's
 * /usr/lib/debug); .gnu_debuglink names are not followed. NULL with errno. */
struct symbolizer *symbolizer__new_target(const char *root);

/* Where a live target's module file PATH of that build-id is now, as a
 * malloc'd path to open (procmaps__held_file), or NULL. */
typedef char *(*symbolizer_find_fn)(void *ctx, const char *path, const uint8_t *build_id, uint32_t build_id_len);
/* A target symbolizer asks FIND for a module's file when it first loads it,
 * before the MAPPED path it was added with. */
void symbolizer__set_finder(struct symbolizer *s, symbolizer_find_fn find, void *ctx);

/* Add one mapping of the target (M is copied). Mappings of one file (same
 * path and build-id) share its debug info, which is loaded on first use.
 * 0 or -errno. */
int symbolizer__add_module(struct symbolizer *s, const struct trace_module *m);
/* symbolizer__add_module, with MAPPED (may be NULL) the path the mapped file
 * itself is reachable at while the target runs (/proc/PID/map_files/...):
 * tried first, so a file deleted or replaced on disk since it was mapped
 * still names its frames. Its build-id is checked as any other's. */
int symbolizer__add_mapped_module(struct symbolizer *s, const struct trace_module *m, const char *mapped);

/* Load M's file (debug info, symbol table) now, without adding a mapping:
 * a symbolizer loaded so before a fork serves every forked copy without
 * loading again (the recorders of --follow-children). 0 or -errno; a file
 * that cannot be loaded is no error. */
int symbolizer__preload(struct symbolizer *s, const struct trace_module *m, const char *mapped);

/* Resolve the return address ADDR (the call at ADDR-1 is what is looked
 * up). out->module is the index of the mapping in add order (-1: none);
 * out->module_offset the ELF vaddr of ADDR (the file offset if the file
 * cannot be read). No module or no symbols: nframes 0, still 0 returned.
 * Strings and frames live until symbolizer__free. 0 or -errno. */
int symbolizer__resolve(struct symbolizer *s, uint64_t addr, struct trace_symbol *out);

void symbolizer__free(struct symbolizer *s);

/* From now on, every symbolizer takes PATH as the debug file of build-id
 * ID (one fetched from debuginfod): for DWARF and symbols when the module
 * itself is stripped, alone when the module is not on this machine. */
int symbolizer_add_debug_file(const uint8_t *id, uint32_t len, const char *path);

/* From now on, target symbolizers (of this process's threads) share the
 * debug info of a file they all map, loaded once (memtrace agent). */
void symbolizer_share_files(void);

/* C++ or Rust NAME demangled, malloc'd; NULL if it is not a mangled name. */
char *symbolizer_demangle(const char *name);

#endif /* MEMTRACE_SYMBOLIZER_H */
