/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Small questions asked of ELF files on disk (libelf only): the build-id,
 * where a function symbol lives, and file offset <-> vaddr through the
 * PT_LOAD headers. Used to place uprobes and to symbolize.
 */
#ifndef MEMTRACE_ELF_UTIL_H
#define MEMTRACE_ELF_UTIL_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct elf_function {
	uint64_t vaddr;       /* st_value: the ELF virtual address */
	uint64_t size;        /* st_size */
	uint64_t file_offset; /* vaddr through its PT_LOAD: where uprobes want it */
	bool is_ifunc;        /* STT_GNU_IFUNC: vaddr is the resolver, not the function */
};

struct elf_file;

/* Open PATH and index its defined function symbols. NULL with errno set
 * (ENOENT and friends from open, EINVAL if it is not ELF). */
struct elf_file *elf_file__open(const char *path);

/* Defined function NAME, .dynsym first, then .symtab; among several versions
 * the default (non-hidden) one. 0, -ESRCH if there is none. */
int elf_file__find_function(struct elf_file *f, const char *name, struct elf_function *out);

/* Read LEN raw bytes at FILE_OFFSET. 0, -EIO on a short read, or -errno. */
int elf_file__read(struct elf_file *f, uint64_t file_offset, void *buf, size_t len);

/* The NT_GNU_BUILD_ID note. 0, -ENODATA if there is none, -ENOSPC if longer than CAP. */
int elf_file__build_id(struct elf_file *f, uint8_t *buf, size_t cap, uint32_t *len);

/* The libelf handle, owned by F, for callers that need more. */
Elf *elf_file__elf(struct elf_file *f);

void elf_file__close(struct elf_file *f);

/* One-shot wrappers around the above. -ENOENT (no file), -EINVAL (not ELF). */
int elf_read_build_id(const char *path, uint8_t *buf, size_t cap, uint32_t *len);
int elf_find_function(const char *path, const char *name, struct elf_function *out);

/* File offset <-> ELF vaddr through the PT_LOAD whose file bytes hold it.
 * 0, -ERANGE if no PT_LOAD does, -EINVAL on a broken ELF. */
int elf_vaddr_of_offset(Elf *elf, uint64_t offset, uint64_t *vaddr);
int elf_offset_of_vaddr(Elf *elf, uint64_t vaddr, uint64_t *offset);
/* The ELF vaddr at the start of a mapping of the file from OFFSET (a page
 * boundary), EXEC for an executable one: through the PT_LOAD of that kind
 * the kernel mapped from there. It differs from elf_vaddr_of_offset where a
 * linker (lld: Rust, clang) starts a segment mid-page, so the mapping's
 * first page holds the end of the segment before it. 0, -ERANGE, -EINVAL. */
int elf_vaddr_of_mapping(Elf *elf, uint64_t offset, bool exec, uint64_t *vaddr);

/* The p_flags (PF_R, PF_W, PF_X) of the PT_LOAD whose file bytes hold
 * VADDR. 0, -ERANGE if none does. */
int elf_segment_flags(Elf *elf, uint64_t vaddr, uint32_t *flags);

/* The build-id note of an open ELF, as elf_file__build_id. */
int elf_build_id(Elf *elf, uint8_t *buf, size_t cap, uint32_t *len);

#endif /* MEMTRACE_ELF_UTIL_H */
