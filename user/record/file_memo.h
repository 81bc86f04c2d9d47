/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Facts about mapped files, remembered by device, inode, size,
 * modification and change time (a file deleted or replaced since is another
 * inode, one rewritten in place has another change time, whatever its
 * owner sets its modification time to) for the life of this process and of
 * every process forked from it. The --follow-children supervisor learns
 * them once per program (record_bind), and each recorder it forks for a
 * process of that program finds them instead of reading the file again:
 * the work a new child is held for.
 */
#ifndef MEMTRACE_FILE_MEMO_H
#define MEMTRACE_FILE_MEMO_H

#include <stdint.h>

enum file_fact {
	FILE_MARKS,         /* ARG 0: how many memtrace.h marks the file has */
	FILE_MAPPING_VADDR, /* ARG a file offset: elf_vaddr_of_mapping of an executable mapping from there */
	FILE_WRAPPER_SITE,  /* ARG a wrapper's index in map_wrappers.c's table: 1 + its probe's file offset, 0: none */
	FILE_NO_PYTHON,     /* ARG 0: 1 when the file exports no _PyRuntime object (no CPython there) */
};

/* The fact WHAT (with ARG) about the file PATH opens: 0 and *VALUE, or
 * -ENOENT when not known (or PATH cannot be reached). */
int file_memo__get(const char *path, enum file_fact what, uint64_t arg, uint64_t *value);
/* Remember it; a full memo forgets nothing and learns nothing more. */
void file_memo__put(const char *path, enum file_fact what, uint64_t arg, uint64_t value);

#endif /* MEMTRACE_FILE_MEMO_H */
