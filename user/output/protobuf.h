/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal protocol buffers encoder: enough wire format (varints,
 * length-delimited fields, packed repeated varints, nested messages) to
 * write pprof's profile.proto without a protobuf library.
 *
 * The buffer grows as needed; a failed allocation is sticky (pb_buf__error
 * says so once at the end), so callers can encode a whole message and check
 * once instead of after every field.
 */
#ifndef MEMTRACE_PROTOBUF_H
#define MEMTRACE_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

struct pb_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	int err; /* 0, or -ENOMEM once any write failed */
};

/* Wire types of the field keys (protobuf encoding spec). */
enum pb_wire {
	PB_WIRE_VARINT = 0,
	PB_WIRE_LEN = 2,
};

void pb_buf__init(struct pb_buf *b);
void pb_buf__free(struct pb_buf *b);
/* 0, or -ENOMEM if any write since init failed (the content is then cut). */
int pb_buf__error(const struct pb_buf *b);

/* Bytes V takes as a varint: 1 to 10. */
size_t pb_varint_size(uint64_t v);
/* V as a bare varint (no key). */
void pb_buf__varint(struct pb_buf *b, uint64_t v);

/* N bytes as they are: an encoded message's fields joined to another's. */
void pb_buf__raw(struct pb_buf *b, const void *p, size_t n);

/* Field FIELD as a varint; int64 fields pass their two's complement. */
void pb_buf__uint64(struct pb_buf *b, uint32_t field, uint64_t v);
/* Field FIELD as length-delimited bytes (strings: no terminating NUL). */
void pb_buf__bytes(struct pb_buf *b, uint32_t field, const void *p, size_t n);
void pb_buf__string(struct pb_buf *b, uint32_t field, const char *s);

/* A nested message or a packed repeated field: write the key, then the
 * content with the calls above (or pb_buf__varint for packed values), then
 * pb_buf__end with what pb_buf__begin returned, which puts the length in
 * front of the content. Nests to any depth. */
size_t pb_buf__begin(struct pb_buf *b, uint32_t field);
void pb_buf__end(struct pb_buf *b, size_t mark);

#endif /* MEMTRACE_PROTOBUF_H */
