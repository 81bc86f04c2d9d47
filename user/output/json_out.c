// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "json_out.h"

#include <errno.h>
#include <inttypes.h>

void json_out__init(struct json_out *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->flat_from = -1;
	j->has_items[0] = false;
	j->after_key = false;
}

static bool json_out__flat(const struct json_out *j)
{
	return j->flat_from >= 0 && j->depth >= j->flat_from;
}

static int json_out__slot(int depth)
{
	return depth < JSON_OUT_MAX_DEPTH ? depth : JSON_OUT_MAX_DEPTH;
}

static void json_out__indent(struct json_out *j, int depth)
{
	fputc('\n', j->f);
	for (int i = 0; i < depth; i++)
		fputs("  ", j->f);
}

/* The comma and line break that go before the next item, or nothing if a
 * key has just been written. */
static void json_out__separate(struct json_out *j)
{
	bool *has = &j->has_items[json_out__slot(j->depth)];

	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (j->depth == 0)
		return;
	if (*has)
		fputc(',', j->f);
	if (json_out__flat(j)) {
		if (*has)
			fputc(' ', j->f);
	} else {
		json_out__indent(j, j->depth);
	}
	*has = true;
}

static void json_out__begin(struct json_out *j, char open, bool flat)
{
	json_out__separate(j);
	fputc(open, j->f);
	j->depth++;
	j->has_items[json_out__slot(j->depth)] = false;
	if (flat && j->flat_from < 0)
		j->flat_from = j->depth;
}

static void json_out__end(struct json_out *j, char close)
{
	bool had_items = j->has_items[json_out__slot(j->depth)];
	bool flat = json_out__flat(j);

	if (j->flat_from == j->depth)
		j->flat_from = -1;
	j->depth--;
	if (had_items && !flat)
		json_out__indent(j, j->depth);
	fputc(close, j->f);
}

void json_out__begin_object(struct json_out *j, bool flat)
{
	json_out__begin(j, '{', flat);
}

void json_out__end_object(struct json_out *j)
{
	json_out__end(j, '}');
}

void json_out__begin_array(struct json_out *j, bool flat)
{
	json_out__begin(j, '[', flat);
}

void json_out__end_array(struct json_out *j)
{
	json_out__end(j, ']');
}

/* Length of the valid UTF-8 sequence at S, or 0 if it is not one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static int utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	int n, i;

	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return n;
}

static const char *json_escape(unsigned char c)
{
	switch (c) {
	case '"':
		return "\\\"";
	case '\\':
		return "\\\\";
	case '\n':
		return "\\n";
	case '\t':
		return "\\t";
	case '\r':
		return "\\r";
	default:
		return NULL;
	}
}

static void json_out__escaped(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		const char *esc = json_escape(*s);
		int n;

		if (esc) {
			fputs(esc, f);
			s++;
		} else if (*s < 0x20) {
			fprintf(f, "\\u%04x", *s++);
		} else if (*s < 0x80) {
			fputc(*s++, f);
		} else if ((n = utf8_len(s)) > 0) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			/* Not UTF-8 (a path can hold any bytes): keep the JSON valid. */
			fputs("\\ufffd", f);
			s++;
		}
	}
	fputc('"', f);
}

void json_out__key(struct json_out *j, const char *key)
{
	json_out__separate(j);
	json_out__escaped(j->f, key);
	fputs(": ", j->f);
	j->after_key = true;
}

void json_out__string(struct json_out *j, const char *s)
{
	if (!s) {
		json_out__null(j);
		return;
	}
	json_out__separate(j);
	json_out__escaped(j->f, s);
}

void json_out__u64(struct json_out *j, uint64_t v)
{
	json_out__separate(j);
	fprintf(j->f, "%" PRIu64, v);
}

void json_out__i64(struct json_out *j, int64_t v)
{
	json_out__separate(j);
	fprintf(j->f, "%" PRId64, v);
}

void json_out__bool(struct json_out *j, bool v)
{
	json_out__separate(j);
	fputs(v ? "true" : "false", j->f);
}

void json_out__null(struct json_out *j)
{
	json_out__separate(j);
	fputs("null", j->f);
}

int json_out__finish(struct json_out *j)
{
	fputc('\n', j->f);
	if (fflush(j->f) || ferror(j->f))
		return -EIO;
	return 0;
}

void json_out__key_u64(struct json_out *j, const char *key, uint64_t v)
{
	json_out__key(j, key);
	json_out__u64(j, v);
}

void json_out__key_i64(struct json_out *j, const char *key, int64_t v)
{
	json_out__key(j, key);
	json_out__i64(j, v);
}

void json_out__key_string(struct json_out *j, const char *key, const char *s)
{
	json_out__key(j, key);
	json_out__string(j, s);
}

void json_out__key_bool(struct json_out *j, const char *key, bool v)
{
	json_out__key(j, key);
	json_out__bool(j, v);
}
