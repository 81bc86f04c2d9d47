/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CPython 3.11+'s location table (co_linetable, Objects/locations.md in
 * CPython): which source line an instruction of a code object is on. A
 * pure function of bytes the target supplies, fuzzed
 * (tests/fuzz/fuzz_python_lines.c) and checked against CPython's own
 * co_lines() (tests/unit/test_python_lines.c).
 */
#ifndef MEMTRACE_PYTHON_LINES_H
#define MEMTRACE_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of instruction INDEX (code units from the first; -1: none run
 * yet, the first line) in the location table TABLE (LEN bytes) of a code
 * object starting at FIRSTLINE; 0 if it has none or the table is damaged. */
uint32_t python_line(const uint8_t *table, size_t len, int firstline, int64_t index);

#endif /* MEMTRACE_PYTHON_LINES_H */
