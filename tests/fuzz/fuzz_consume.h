/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every trace harness does with a file: read it the way `memtrace
 * report`, `diff` and `export` do, and run every writer on the result, so
 * the analyses and writers see whatever the reader lets through.
 */
#ifndef MEMTRACE_FUZZ_CONSUME_H
#define MEMTRACE_FUZZ_CONSUME_H

#include <stddef.h>
#include <stdint.h>

/* DATA as a file: a memfd named by its /proc/self/fd path in PATH (at
 * least 64 bytes). The fd, or -1. */
int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t cap);

/* Read the trace at PATH into an analysis, then write the text and JSON
 * reports, every folded metric, a pprof profile and a diff of the trace
 * with itself, all to /dev/null. Never fails: errors are outcomes. */
void fuzz_consume_trace(const char *path);

#endif /* MEMTRACE_FUZZ_CONSUME_H */
