/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small streaming JSON writer: it places the commas, the indentation and
 * the escapes, so callers only say what comes next. Containers opened with
 * flat = true (and everything inside them) go on one line.
 */
#ifndef MEMTRACE_JSON_OUT_H
#define MEMTRACE_JSON_OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_OUT_MAX_DEPTH 32

struct json_out {
	FILE *f;
	int depth;
	int flat_from;                         /* depth from which output is flat; -1: none */
	bool has_items[JSON_OUT_MAX_DEPTH + 1]; /* the container at each depth is not empty */
	bool after_key;                        /* a key was written; its value comes next */
};

void json_out__init(struct json_out *j, FILE *f);

/* The version of the JSON that report --json, diff --json and top --batch
 * --json write, their first key "format". Additions keep it; a change that
 * is not an addition bumps it and is listed in docs/contract.md. */
#define MEMTRACE_JSON_FORMAT 2

/* A key inside an object; the next call writes its value. */
void json_out__key(struct json_out *j, const char *key);

void json_out__begin_object(struct json_out *j, bool flat);
void json_out__end_object(struct json_out *j);
void json_out__begin_array(struct json_out *j, bool flat);
void json_out__end_array(struct json_out *j);

/* S may be NULL (written as null) and any bytes: what is not valid UTF-8
 * becomes U+FFFD, so the output is always valid JSON. */
void json_out__string(struct json_out *j, const char *s);
void json_out__u64(struct json_out *j, uint64_t v);
void json_out__i64(struct json_out *j, int64_t v);
void json_out__bool(struct json_out *j, bool v);
void json_out__null(struct json_out *j);

/* A key and its value, in one call. */
void json_out__key_u64(struct json_out *j, const char *key, uint64_t v);
void json_out__key_i64(struct json_out *j, const char *key, int64_t v);
void json_out__key_string(struct json_out *j, const char *key, const char *s);
void json_out__key_bool(struct json_out *j, const char *key, bool v);

/* After the top-level value: end the line. 0, or -EIO if writing failed. */
int json_out__finish(struct json_out *j);

#endif /* MEMTRACE_JSON_OUT_H */
