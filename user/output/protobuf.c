// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The protobuf wire format, as https://protobuf.dev/programming-guides/encoding/ gives it. */
#include "protobuf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void pb_buf__init(struct pb_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void pb_buf__free(struct pb_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int pb_buf__error(const struct pb_buf *b)
{
	return b->err;
}

/* Room for N more bytes; false (and the sticky error) if there is none. */
static bool pb_buf__reserve(struct pb_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return false;
	if (b->cap - b->len >= n)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* V's varint at P, which has room; returns the bytes written. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void pb_buf__varint(struct pb_buf *b, uint64_t v)
{
	if (pb_buf__reserve(b, 10))
		b->len += put_varint(b->data + b->len, v);
}

static void pb_buf__key(struct pb_buf *b, uint32_t field, enum pb_wire wire)
{
	pb_buf__varint(b, (uint64_t)field << 3 | wire);
}

void pb_buf__uint64(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_buf__key(b, field, PB_WIRE_VARINT);
	pb_buf__varint(b, v);
}

void pb_buf__raw(struct pb_buf *b, const void *p, size_t n)
{
	if (n && pb_buf__reserve(b, n)) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
	}
}

void pb_buf__bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_buf__key(b, field, PB_WIRE_LEN);
	pb_buf__varint(b, n);
	pb_buf__raw(b, p, n);
}

void pb_buf__string(struct pb_buf *b, uint32_t field, const char *s)
{
	pb_buf__bytes(b, field, s, strlen(s));
}

size_t pb_buf__begin(struct pb_buf *b, uint32_t field)
{
	pb_buf__key(b, field, PB_WIRE_LEN);
	return b->len;
}

/* The length is known only once the content is written: shift the content
 * up by the length's size rather than encode every message twice. */
void pb_buf__end(struct pb_buf *b, size_t mark)
{
	size_t n, size;

	if (b->err)
		return;
	n = b->len - mark;
	size = pb_varint_size(n);
	if (!pb_buf__reserve(b, size))
		return;
	memmove(b->data + mark + size, b->data + mark, n);
	put_varint(b->data + mark, n);
	b->len += size;
}
