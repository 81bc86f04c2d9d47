/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * LEB128 unsigned varints and zigzag signed mapping, as the trace format
 * (docs/trace-format.md, "Field encodings") defines them. Decoding checks
 * every byte against the end of the buffer and accepts only the shortest
 * encoding, so damaged input is refused instead of misread.
 */
#ifndef MEMTRACE_VARINT_H
#define MEMTRACE_VARINT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX_LEN 10 /* bytes of a 64-bit value */

/* Write V at DST (room for VARINT_MAX_LEN bytes); returns bytes written. */
static inline size_t put_varint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		dst[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

/* Bytes put_varint would write for V. */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint64_t encode_zigzag(int64_t v)
{
	/* Unsigned shifts: a left shift of a negative int is undefined. */
	return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63));
}

static inline int64_t decode_zigzag(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

/* The multi-byte case, out of the inline fast path's way. */
static inline int get_varint_slow(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	for (unsigned int i = 0; i < VARINT_MAX_LEN; i++) {
		if (p >= end)
			return -EBADMSG;
		uint8_t b = *p++;
		/* The 10th byte holds bit 63 only; anything more overflows. */
		if (i == VARINT_MAX_LEN - 1 && b > 1)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			/* A zero last byte means a shorter encoding existed. */
			if (b == 0 && i > 0)
				return -EBADMSG;
			*out = v;
			*pp = p;
			return 0;
		}
	}
	return -EBADMSG;
}

/* Read a varint at *PP, never past END; advance *PP. 0 or -EBADMSG
 * (truncated or overlong), leaving *PP and *OUT alone on failure. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;

	if (p < end && *p < 0x80) {
		*out = *p;
		*pp = p + 1;
		return 0;
	}
	return get_varint_slow(pp, end, out);
}

#endif /* MEMTRACE_VARINT_H */
