/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * String interning for exporters: each distinct string gets a dense index
 * in order of first appearance (pprof's string table). The table keeps its
 * own copies.
 */
#ifndef MEMTRACE_STRTAB_H
#define MEMTRACE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab {
	const char **strs; /* by index */
	size_t nr;
	size_t cap;
	uint32_t *slots;   /* hash slots: index + 1, 0 empty */
	size_t mask;
};

void strtab__init(struct strtab *t);
void strtab__free(struct strtab *t);

/* The index of S (NULL counts as ""), added if new. 0..nr-1, or -ENOMEM. */
int64_t strtab__intern(struct strtab *t, const char *s);

#endif /* MEMTRACE_STRTAB_H */
