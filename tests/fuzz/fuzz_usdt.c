// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as an ELF file whose .note.stapsdt record
 * is parsed (user/record/usdt.c), as record does for every file the target maps,
 * and whose build-id is read (user/symbols/elf_util.c). Targets and their
 * libraries are not trusted input: a container's files belong to whoever
 * controls the container.
 */
#include "elf_util.h"
#include "fuzz_consume.h"
#include "usdt.h"

#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct usdt_site *sites = NULL;
	uint8_t id[32];
	struct elf_function fn;
	uint32_t len;
	char path[64];
	size_t n = 0;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (usdt_sites(path, "memtrace", &sites, &n) == 0)
		free(sites);
	elf_read_build_id(path, id, sizeof(id), &len);
	elf_find_function(path, "malloc", &fn);
	close(fd);
	return 0;
}
