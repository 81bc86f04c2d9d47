/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_UNWINDER_H
#define MEMTRACE_UNWINDER_H

/*
 * Keeps the BPF stack walker's tables (bpf/unwind.bpf.h) in step with what
 * the target maps: at attach, and each time its mappings change (dlopen,
 * exec). Each module's table is built once (user/record/unwind_table.h, cached on
 * disk by build-id) and its rows written once, however often it is mapped.
 */
#include "loader.h"
#include "procmaps.h"

struct unwinder;

/* Called with one sentence about a module whose stacks stop there. */
typedef void (*unwinder_warn_fn)(const char *msg);

/* NULL with errno set. CACHE_DIR NULL: no cache on disk. */
struct unwinder *unwinder__new(int pid, const char *cache_dir, unwinder_warn_fn warn);

/* Give the walker the tables of every executable mapping in PM. 0 or
 * -ENOMEM; a module without usable CFI simply has no table. */
int unwinder__update(struct unwinder *u, struct loader *l, const struct procmaps *pm);

/* Learn what unwinder__update will ask of PM's files (file_memo.h), so a
 * process forked from this one finds it: the --follow-children supervisor,
 * once per program. */
void unwinder_learn(int pid, const struct procmaps *pm);

/* Modules with a table, and rows written. */
size_t unwinder__modules(const struct unwinder *u);
size_t unwinder__rows(const struct unwinder *u);

void unwinder__free(struct unwinder *u);

/* $XDG_CACHE_HOME/memtrace/unwind or ~/.cache/memtrace/unwind, created;
 * NULL if neither can be. */
const char *unwinder_default_cache(char *buf, size_t cap);

#endif /* MEMTRACE_UNWINDER_H */
