// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness for the record decoders, the analyses and the writers.
 * The input is a list of chunks before compression:
 *
 *     { u8 type; u16 length (little-endian); u8 records[length]; } ...
 *
 * and the harness wraps it into a well-formed trace (docs/trace-format.md:
 * file header, chunk headers with the right sequence numbers, record
 * counts and checksums, zstd frames), so every mutation reaches the record
 * decoders instead of failing a checksum. A chunk's record count is what a
 * walk of its {type, size} varints finds, plus one if the type byte's top
 * bit is set (to reach the count-mismatch path too).
 * tests/fuzz/trace_to_records.py turns real traces into this form.
 */
#include "fuzz_consume.h"
#include "trace_format.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

struct out {
	uint8_t *p;
	size_t n, cap;
};

static int put(struct out *o, const void *p, size_t n)
{
	if (o->n + n > o->cap) {
		size_t cap = (o->n + n) * 2;
		uint8_t *v = realloc(o->p, cap);

		if (!v)
			return -1;
		o->p = v;
		o->cap = cap;
	}
	memcpy(o->p + o->n, p, n);
	o->n += n;
	return 0;
}

static void le16(uint8_t *p, uint16_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		uint8_t b = *(*p)++;

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return 0;
	}
	return -1;
}

static uint32_t count_records(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	uint32_t count = 0;
	uint64_t type, len;

	while (p < end && !varint(&p, end, &type) && !varint(&p, end, &len) &&
	       len <= (uint64_t)(end - p)) {
		p += len;
		count++;
	}
	return count;
}

static int put_chunk(struct out *o, uint8_t type_byte, uint32_t seq, const uint8_t *raw,
		     size_t n, void *zbuf, size_t zcap)
{
	uint8_t h[TRACE_CHUNK_HEADER_SIZE] = { 0 };
	size_t z = ZSTD_compress(zbuf, zcap, raw, n, 1);

	if (ZSTD_isError(z))
		return -1;
	memcpy(h, TRACE_CHUNK_MAGIC, TRACE_CHUNK_MAGIC_LEN);
	/* types 1-4 mostly, sometimes one the reader must skip */
	le16(h + TRACE_CHK_OFF_TYPE, (type_byte & 0x7f) % 6);
	le32(h + TRACE_CHK_OFF_SEQ, seq);
	le32(h + TRACE_CHK_OFF_SIZE, (uint32_t)z);
	le32(h + TRACE_CHK_OFF_RAW_SIZE, (uint32_t)n);
	le32(h + TRACE_CHK_OFF_CRC, (uint32_t)crc32(0, zbuf, (uInt)z));
	le32(h + TRACE_CHK_OFF_RECORDS, count_records(raw, n) + (type_byte >> 7));
	le32(h + TRACE_CHK_OFF_HEADER_CRC, (uint32_t)crc32(0, h, TRACE_CHK_OFF_HEADER_CRC));
	return put(o, h, sizeof(h)) || put(o, zbuf, z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[TRACE_HEADER_SIZE] = { 0 };
	struct out o = { 0 };
	size_t zcap = ZSTD_compressBound(65535);
	void *zbuf = malloc(zcap);
	uint32_t seq = 0;
	char path[64];
	int fd;

	memcpy(hdr, TRACE_MAGIC, TRACE_MAGIC_LEN);
	le16(hdr + TRACE_HDR_OFF_BOM, TRACE_BYTE_ORDER);
	le32(hdr + TRACE_HDR_OFF_VERSION, TRACE_VERSION);
	le32(hdr + TRACE_HDR_OFF_SIZE, TRACE_HEADER_SIZE);
	if (!zbuf || put(&o, hdr, sizeof(hdr)))
		goto out;
	while (size >= 3) {
		uint8_t type = data[0];
		size_t len = (size_t)data[1] | (size_t)data[2] << 8;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (put_chunk(&o, type, seq++, data, len, zbuf, zcap))
			goto out;
		data += len;
		size -= len;
	}
	fd = fuzz_memfd(o.p, o.n, path, sizeof(path));
	if (fd >= 0) {
		fuzz_consume_trace(path);
		close(fd);
	}
out:
	free(zbuf);
	free(o.p);
	return 0;
}
