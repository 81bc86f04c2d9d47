/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * On-disk constants of the trace file, shared by the writer and the reader.
 * docs/trace-format.md is the specification; this only names its numbers.
 */
#ifndef MEMTRACE_TRACE_FORMAT_H
#define MEMTRACE_TRACE_FORMAT_H

#include "trace.h"

#define TRACE_MAGIC "MTRACE" /* 6 bytes, no NUL on disk */
#define TRACE_MAGIC_LEN 6
#define TRACE_BYTE_ORDER 0x0102 /* u16 in the writer's order */
#define TRACE_HEADER_SIZE 24
#define TRACE_HEADER_SIZE_MAX 4096 /* larger header_size: not a trace */

/* File header field offsets. */
#define TRACE_HDR_OFF_BOM 6
#define TRACE_HDR_OFF_VERSION 8
#define TRACE_HDR_OFF_FLAGS 12
#define TRACE_HDR_OFF_SIZE 16

#define TRACE_CHUNK_MAGIC "MTCK"
#define TRACE_CHUNK_MAGIC_LEN 4
#define TRACE_CHUNK_HEADER_SIZE 32

/* Chunk header field offsets. */
#define TRACE_CHK_OFF_TYPE 4
#define TRACE_CHK_OFF_FLAGS 6
#define TRACE_CHK_OFF_SEQ 8
#define TRACE_CHK_OFF_SIZE 12
#define TRACE_CHK_OFF_RAW_SIZE 16
#define TRACE_CHK_OFF_CRC 20
#define TRACE_CHK_OFF_RECORDS 24
#define TRACE_CHK_OFF_HEADER_CRC 28

enum trace_chunk_type {
	TRACE_CHUNK_META = 1,
	TRACE_CHUNK_DATA = 2,
	TRACE_CHUNK_SYMBOLS = 3,
	TRACE_CHUNK_END = 4,
};

enum trace_record_type {
	TRACE_REC_META = 1,
	TRACE_REC_MODULE = 2,
	TRACE_REC_THREAD = 3,
	TRACE_REC_STACK = 4,
	TRACE_REC_ALLOC = 5,
	TRACE_REC_FREE = 6,
	TRACE_REC_REALLOC = 7,
	TRACE_REC_DROPS = 8,
	TRACE_REC_SYMBOL = 9,
	TRACE_REC_END = 10,
	TRACE_REC_STRING = 11,
	TRACE_REC_MARK = 12,
	TRACE_REC_RSS = 13,
	TRACE_REC_ROLLUP = 14,
	TRACE_REC_MAP = 15,
	TRACE_REC_RESIDENT = 16,
};

#define TRACE_CHUNK_TARGET (1u << 20)     /* raw bytes at which the writer closes a chunk */
#define TRACE_CHUNK_RAW_MAX (256u << 20)  /* larger raw_size: damaged */
#define TRACE_STRING_MAX (64u << 10)      /* the writer truncates longer strings */
#define TRACE_STACK_MAX_FRAMES 1024
#define TRACE_SYMBOL_MAX_FRAMES 256
#define TRACE_BUILD_ID_MAX 32
/* zstd's level 1 ("fast"): level 3's doubleFast match finder was 40% of
 * the recorder's profile under malloc_bench. In runs alternated on the
 * same host, level 1 took 58-130 ns of the recorder's CPU an event against
 * level 3's 103-156 (always less in the same rep), for traces 0.5% larger
 * on malloc_bench and 8-14% larger on many_stacks and heap_workload. Level
 * -1 made 25% larger traces and was no faster. Readers do not care which. */
#define TRACE_ZSTD_LEVEL 1

#endif /* MEMTRACE_TRACE_FORMAT_H */
