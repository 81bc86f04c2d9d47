// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as an ELF file asked what record and the
 * symbolizer ask of every file a target maps (user/symbols/elf_util.c): its
 * build-id, where the allocator functions and every other function symbol it
 * names live, file offset <-> vaddr through its segments, and the bytes at a
 * function's offset. Beyond not crashing: a function found lies in a PT_LOAD
 * (its offset maps back to its vaddr), and the build-id fits the buffer.
 */
#include "elf_util.h"
#include "fuzz_consume.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NAMES 64 /* symbol names of the file itself looked up */

static const char *const allocator_names[] = {
	"malloc", "free", "calloc", "realloc", "_Znwm", "_ZdlPv", "__libc_malloc", "",
};

/* Up to MAX_NAMES names from the file's symbol tables, read with libelf
 * apart from elf_util's own index, strdup'd into NAMES. */
static size_t file_names(Elf *elf, char **names)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)) && n < MAX_NAMES) {
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		size_t nsyms = data->d_size / gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);

		for (size_t i = 0; i < nsyms && n < MAX_NAMES; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			names[n] = strdup(name);
			if (names[n])
				n++;
		}
	}
	return n;
}

static void check_function(struct elf_file *f, const char *name)
{
	struct elf_function fn;
	uint64_t off, vaddr;
	uint32_t flags;
	uint8_t code[16];

	if (elf_file__find_function(f, name, &fn) != 0)
		return;
	/* A function outside every PT_LOAD is reported absent. */
	if (elf_offset_of_vaddr(elf_file__elf(f), fn.vaddr, &off) != 0 || off != fn.file_offset)
		abort();
	if (elf_vaddr_of_offset(elf_file__elf(f), fn.file_offset, &vaddr) != 0)
		abort();
	elf_segment_flags(elf_file__elf(f), fn.vaddr, &flags);
	elf_vaddr_of_mapping(elf_file__elf(f), fn.file_offset & ~4095ULL, true, &vaddr);
	elf_vaddr_of_mapping(elf_file__elf(f), fn.file_offset & ~4095ULL, false, &vaddr);
	elf_file__read(f, fn.file_offset, code, sizeof(code));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], *names[MAX_NAMES];
	uint8_t id[32];
	uint32_t len = 0;
	struct elf_file *f;
	size_t n, i;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	f = elf_file__open(path);
	if (!f)
		goto out;
	if (elf_file__build_id(f, id, sizeof(id), &len) == 0 && (len > sizeof(id)))
		abort();
	for (i = 0; i < sizeof(allocator_names) / sizeof(*allocator_names); i++)
		check_function(f, allocator_names[i]);
	n = file_names(elf_file__elf(f), names);
	for (i = 0; i < n; i++) {
		check_function(f, names[i]);
		free(names[i]);
	}
	/* Offsets and addresses the file's own headers do not name. */
	for (uint64_t x = 0; x < size + 8192; x += 4093) {
		uint64_t y;
		uint32_t flags;

		elf_vaddr_of_offset(elf_file__elf(f), x, &y);
		elf_offset_of_vaddr(elf_file__elf(f), x, &y);
		elf_vaddr_of_mapping(elf_file__elf(f), x & ~4095ULL, x & 1, &y);
		elf_segment_flags(elf_file__elf(f), x, &flags);
	}
	elf_file__close(f);
out:
	close(fd);
	return 0;
}
