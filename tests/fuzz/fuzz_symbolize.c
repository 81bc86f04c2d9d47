// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as a mapped file that record names stacks in
 * (user/symbols/symbolizer.c): libdwfl loads it, its symbol table is sorted,
 * its DWARF's CUs, line tables and inline scopes are read for addresses
 * spread over the whole file, as record does at its end for every module.
 * Two mappings of it (text at its offset 0, and one from its second page)
 * and an address in neither. Beyond not crashing: no address has more
 * frames than the symbolizer keeps, every name and file is a string, and an
 * address outside both mappings has no module.
 */
#include "fuzz_consume.h"
#include "symbolizer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BASE 0x7f0000000000ULL
#define ADDRS 96 /* resolved per input */
#define MAX_FRAMES_OUT 65 /* symbolizer.c: an address's inline depth, and its function */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_module m = { .start = BASE, .file_offset = 0 };
	struct trace_symbol sym;
	struct symbolizer *s;
	char path[64];
	uint64_t step;
	volatile size_t names = 0;
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	s = symbolizer__new(NULL);
	if (!s)
		goto out;
	m.path = path;
	m.end = BASE + ((size + 4095) & ~4095ULL) + 4096;
	/* No build-id given: a file whose own build-id names one of this
	 * machine's debug files would make results depend on the machine. */
	if (symbolizer__add_mapped_module(s, &m, path))
		goto out_free;
	m.start = BASE + 0x10000000;
	m.end = m.start + 0x100000;
	m.file_offset = 4096;
	if (symbolizer__add_mapped_module(s, &m, path))
		goto out_free;
	symbolizer__preload(s, &m, path);
	step = size / ADDRS + 1;
	for (uint64_t off = 1; off <= size + 1; off += step) {
		uint64_t addrs[2] = { BASE + off, BASE + 0x10000000 + off };

		for (int k = 0; k < 2; k++) {
			if (symbolizer__resolve(s, addrs[k], &sym))
				continue;
			if (sym.nframes > MAX_FRAMES_OUT || (sym.nframes && !sym.frames))
				abort();
			/* strings ASan can read to their end */
			for (uint32_t i = 0; i < sym.nframes; i++)
				names += (sym.frames[i].function ? strlen(sym.frames[i].function) : 0) +
					 (sym.frames[i].file ? strlen(sym.frames[i].file) : 0);
		}
	}
	if (symbolizer__resolve(s, 0x1000, &sym) == 0 && (sym.module != -1 || sym.nframes))
		abort();
out_free:
	symbolizer__free(s);
out:
	close(fd);
	return 0;
}
