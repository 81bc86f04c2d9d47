// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: any bytes as a CPython location table (co_linetable),
 * which record reads from a traced Python process's memory or takes from
 * what its walk sent (user/record/python_lines.c): the line of every
 * instruction up to past its end, from any first line. The target's memory
 * is not trusted input.
 */
#include "python_lines.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int firstline;

	if (size < 4)
		return 0;
	firstline = (int)((uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24);
	for (int64_t i = -1; i < (int64_t)size * 8 + 2; i++)
		(void)python_line(data + 4, size - 4, firstline, i);
	return 0;
}
