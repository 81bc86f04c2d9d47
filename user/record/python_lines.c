// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython's location table, decoded (python_lines.h). Every read is
 * bounded by the table's end: a table cut short or made up gives 0.
 */
#include "python_lines.h"

#include <stdbool.h>

struct table_cursor {
	const uint8_t *p, *end;
};

static bool cursor_byte(struct table_cursor *c, uint8_t *b)
{
	if (c->p >= c->end)
		return false;
	*b = *c->p++;
	return true;
}

/* Six bits a byte, bit 6 says another follows. */
static bool cursor_varint(struct table_cursor *c, uint64_t *v)
{
	uint8_t b;
	unsigned shift = 0;

	*v = 0;
	do {
		if (shift > 60 || !cursor_byte(c, &b))
			return false;
		*v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return true;
}

static bool cursor_svarint(struct table_cursor *c, int64_t *v)
{
	uint64_t u;

	if (!cursor_varint(c, &u))
		return false;
	*v = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

uint32_t python_line(const uint8_t *table, size_t len, int firstline, int64_t index)
{
	struct table_cursor c = { table, table + len };
	int64_t line = firstline, addr = 0;
	uint8_t first, b;

	if (index < 0)
		return firstline > 0 ? (uint32_t)firstline : 0;
	while (cursor_byte(&c, &first)) {
		int code = (first >> 3) & 15, units = (first & 7) + 1;
		int64_t delta = 0, no_line = 0;
		uint64_t skip;

		if (!(first & 0x80))
			return 0; /* not the start of an entry: damaged */
		switch (code) {
		case 15: /* no location */
			no_line = 1;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			if (!cursor_svarint(&c, &delta) || !cursor_varint(&c, &skip) || !cursor_varint(&c, &skip) ||
			    !cursor_varint(&c, &skip))
				return 0;
			break;
		case 13: /* no column */
			if (!cursor_svarint(&c, &delta))
				return 0;
			break;
		case 10: case 11: case 12: /* one line, two column bytes */
			delta = code - 10;
			if (!cursor_byte(&c, &b) || !cursor_byte(&c, &b))
				return 0;
			break;
		default: /* short form: same line, one column byte */
			if (!cursor_byte(&c, &b))
				return 0;
			break;
		}
		/* a line moves by less than 2^31 an entry: more is damage (and
		 * would overflow the sum) */
		if (delta > INT32_MAX || delta < -(int64_t)INT32_MAX)
			return 0;
		line += delta;
		if (index < addr + units)
			return no_line || line <= 0 || line > UINT32_MAX ? 0 : (uint32_t)line;
		addr += units;
	}
	return 0;
}

