// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as a trace file, read and reported on. The
 * chunk checksums stop most mutations at the chunk level; this harness
 * covers the file header, chunk headers, checksums and zstd frames, and
 * fuzz_trace_records.c what lies inside valid chunks.
 */
#include "fuzz_consume.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	fuzz_consume_trace(path);
	close(fd);
	return 0;
}
