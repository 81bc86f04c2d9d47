/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_MARK_FINDER_H
#define MEMTRACE_MARK_FINDER_H

#include "loader.h"
#include "procmaps.h"
#include <stddef.h>
#include <stdint.h>

/*
 * Finds the inproc/memtrace.h marks (USDT probes of provider "memtrace") in
 * every file a target maps, attaches them once per file, and reads the
 * names marks point to when the probe could not.
 */
struct mark_finder;

struct mark_finder *mark_finder__new(int pid);

/* Called with one sentence for each mark site skipped (a malformed note, a
 * site the kernel refused); every other site is attached. */
typedef void (*mark_finder_warn_fn)(void *ctx, const char *msg);
void mark_finder__on_warning(struct mark_finder *mf, mark_finder_warn_fn fn, void *ctx);

/* Attach the marks of the files in PM not looked at yet. 0 or -errno. */
int mark_finder__attach(struct mark_finder *mf, struct loader *l, const struct procmaps *pm);
/* --rss: attach glibc's probes of its allocator (provider libc; see
 * bpf/maps.bpf.h's glibc_probe) in the files of PM not looked at yet; a
 * malformed site or one the kernel refuses is skipped with a warning.
 * 0 or -errno. */
int mark_finder__attach_glibc(struct mark_finder *mf, struct loader *l, const struct procmaps *pm);
/* glibc's probe sites attached so far. */
size_t mark_finder__count_glibc(const struct mark_finder *mf);

/* Learn which of PM's files have no marks (file_memo.h), so a process
 * forked from this one skips reading them: the --follow-children
 * supervisor, once per program. The marks of those it reaches (a file it
 * cannot reach, no attach from PM reaches either). */
size_t mark_finder_learn(int pid, const struct procmaps *pm);

/* Mark sites attached so far. */
size_t mark_finder__count(const struct mark_finder *mf);
/* ... of them probed on their 5-byte nop (usdt_probe_nop5): a call, not a trap. */
size_t mark_finder__count_nop5(const struct mark_finder *mf);

/* A drain_read_string_fn (CTX: the mark finder): the string at ADDR in the
 * target, or in the file mapped there if the target is gone. */
int mark_finder__read_string(void *ctx, uint64_t addr, char *buf, size_t cap);

void mark_finder__free(struct mark_finder *mf);

#endif /* MEMTRACE_MARK_FINDER_H */
