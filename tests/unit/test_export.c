// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The protobuf encoder byte for byte (varint edges, nesting whose length
 * needs two bytes, packed fields), the string table, and both exports of a
 * tiny synthetic trace: the whole pprof Profile message exactly, and the
 * folded lines with inline frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "export.h"
#include "protobuf.h"
#include "strtab.h"

static void assert_bytes(const struct pb_buf *b, const uint8_t *want, size_t n)
{
	assert_int_equal(pb_buf__error(b), 0);
	assert_int_equal(b->len, n);
	assert_memory_equal(b->data, want, n);
}

static void test_varint_edges(void **state)
{
	static const struct {
		uint64_t v;
		uint8_t bytes[10];
		size_t n;
	} cases[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 }, /* the protobuf spec's example */
		{ 16383, { 0xff, 0x7f }, 2 },
		{ 16384, { 0x80, 0x80, 0x01 }, 3 },
		{ UINT32_MAX, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
		{ 1ULL << 63, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 10 },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
		/* int64 -1 as protobuf encodes it: two's complement, 10 bytes */
		{ (uint64_t)-1, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};
	struct pb_buf b;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pb_buf__init(&b);
		pb_buf__varint(&b, cases[i].v);
		assert_bytes(&b, cases[i].bytes, cases[i].n);
		assert_int_equal(pb_varint_size(cases[i].v), cases[i].n);
		pb_buf__free(&b);
	}
	printf("# %zu varints checked\n", sizeof(cases) / sizeof(cases[0]));
}

static void test_fields(void **state)
{
	/* field 1 = 150 and field 2 = "testing": the spec's examples */
	static const uint8_t want[] = { 0x08, 0x96, 0x01, 0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',
					/* field 6 = "" and field 16 = 1 (a two-byte key) */
					0x32, 0x00, 0x80, 0x01, 0x01 };
	struct pb_buf b;

	pb_buf__init(&b);
	pb_buf__uint64(&b, 1, 150);
	pb_buf__string(&b, 2, "testing");
	pb_buf__string(&b, 6, "");
	pb_buf__uint64(&b, 16, 1);
	assert_bytes(&b, want, sizeof(want));
	pb_buf__free(&b);
}

static void test_nested_and_packed(void **state)
{
	/* field 3 { field 1 = 150 }, then field 4 packed [3, 270, 86942] (the spec's) */
	static const uint8_t want[] = { 0x1a, 0x03, 0x08, 0x96, 0x01,
					0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05 };
	struct pb_buf b;
	size_t m;

	pb_buf__init(&b);
	m = pb_buf__begin(&b, 3);
	pb_buf__uint64(&b, 1, 150);
	pb_buf__end(&b, m);
	m = pb_buf__begin(&b, 4);
	pb_buf__varint(&b, 3);
	pb_buf__varint(&b, 270);
	pb_buf__varint(&b, 86942);
	pb_buf__end(&b, m);
	assert_bytes(&b, want, sizeof(want));
	pb_buf__free(&b);
}

/* Messages of 200 and 203 bytes need two-byte lengths: the content moves
 * up, twice for the inner one. */
static void test_nested_long(void **state)
{
	uint8_t payload[197], want[3 + 3 + 3 + 197];
	struct pb_buf b;
	size_t m, inner, k = 0;

	memset(payload, 'x', sizeof(payload));
	want[k++] = 0x0a; /* field 1, LEN */
	want[k++] = 0xcb; /* 203 = 0xcb 0x01: field 2's key, length, content */
	want[k++] = 0x01;
	want[k++] = 0x12; /* field 2, LEN: a nested message of 200 bytes */
	want[k++] = 0xc8; /* 200 */
	want[k++] = 0x01;
	want[k++] = 0x1a; /* field 3, LEN 197 */
	want[k++] = 0xc5;
	want[k++] = 0x01;
	memcpy(want + k, payload, sizeof(payload));
	k += sizeof(payload);
	assert_int_equal(k, 3 + 3 + 3 + 197);

	pb_buf__init(&b);
	m = pb_buf__begin(&b, 1);
	inner = pb_buf__begin(&b, 2);
	pb_buf__bytes(&b, 3, payload, sizeof(payload));
	pb_buf__end(&b, inner);
	pb_buf__end(&b, m);
	assert_bytes(&b, want, k);
	pb_buf__free(&b);
}

static void test_strtab(void **state)
{
	struct strtab t;
	char name[16];

	strtab__init(&t);
	assert_int_equal(strtab__intern(&t, ""), 0);
	assert_int_equal(strtab__intern(&t, NULL), 0);
	assert_int_equal(strtab__intern(&t, "a"), 1);
	assert_int_equal(strtab__intern(&t, "b"), 2);
	assert_int_equal(strtab__intern(&t, "a"), 1);
	/* through several growths; the table keeps its own copies */
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		assert_int_equal(strtab__intern(&t, name), 3 + i);
	}
	snprintf(name, sizeof(name), "s%d", 500);
	assert_int_equal(strtab__intern(&t, name), 503);
	assert_string_equal(t.strs[503], "s500");
	assert_int_equal(t.nr, 1003);
	strtab__free(&t);
}

/* One module, one stack of one address that resolves to an inlined call
 * ("inl", a.c:7) inside "outer" (a.c:3), and a second stack that calls
 * through an unsymbolized address of the module; 16 bytes leaked, 8 freed. */
static struct analysis *tiny_trace(void)
{
	static const uint64_t frames1[] = { 0x1010 };
	static const uint64_t frames2[] = { 0x1010, 0x1800 };
	static const struct trace_frame sym[] = {
		{ .function = "inl", .file = "a.c", .line = 7 },
		{ .function = "outer", .file = "a.c", .line = 3 },
	};
	struct trace_meta meta = { .command_line = "p", .comm = "p", .pid = 1, .start_mono_ns = 1000 };
	struct trace_module mod = { .start = 0x1000, .end = 0x2000, .path = "/bin/p",
				    .build_id = { 0xab, 0xcd }, .build_id_len = 2 };
	struct trace_stack s1 = { .id = 1, .nr = 1, .frames = frames1 };
	struct trace_stack s2 = { .id = 2, .nr = 2, .frames = frames2 };
	struct trace_symbol y1 = { .addr = 0x1010, .module = 0, .module_offset = 0x10, .nframes = 2,
				   .frames = sym };
	struct trace_symbol y2 = { .addr = 0x1800, .module = 0, .module_offset = 0x800 };
	struct trace_event e1 = { .type = MT_EVENT_ALLOC, .tid = 1, .ts = 1100, .ptr = 0x5000,
				  .size = 16, .stack_id = 1 };
	struct trace_event e2 = { .type = MT_EVENT_ALLOC, .tid = 1, .ts = 1200, .ptr = 0x6000,
				  .size = 8, .stack_id = 2 };
	struct trace_event e3 = { .type = MT_EVENT_FREE, .tid = 1, .ts = 1300, .ptr = 0x6000 };
	struct trace_end end = { .end_mono_ns = 2000, .exit_status = -1 };
	struct analysis *a = analysis__new();

	assert_non_null(a);
	assert_int_equal(analysis__set_meta(a, &meta), 0);
	assert_int_equal(analysis__add_module(a, &mod), 0);
	assert_int_equal(analysis__add_stack(a, &s1), 0);
	assert_int_equal(analysis__add_stack(a, &s2), 0);
	assert_int_equal(analysis__add_event(a, &e1), 0);
	assert_int_equal(analysis__add_event(a, &e2), 0);
	assert_int_equal(analysis__add_event(a, &e3), 0);
	assert_int_equal(analysis__add_symbol(a, &y1), 0);
	assert_int_equal(analysis__add_symbol(a, &y2), 0);
	assert_int_equal(analysis__set_end(a, &end), 0);
	assert_int_equal(analysis__finish(a), 0);
	return a;
}

static void test_pprof_tiny(void **state)
{
	static const uint8_t want[] = {
		/* sample_type x4: {alloc_objects, count} {alloc_space, bytes}
		 * {inuse_objects, count} {inuse_space, bytes} */
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x0a, 0x04, 0x08, 0x03, 0x10, 0x04,
		0x0a, 0x04, 0x08, 0x05, 0x10, 0x02, 0x0a, 0x04, 0x08, 0x06, 0x10, 0x04,
		/* sample: location_id [1], value [1 alloc, 16 B, 1 live, 16 B] */
		0x12, 0x09, 0x0a, 0x01, 0x01, 0x12, 0x04, 0x01, 0x10, 0x01, 0x10,
		/* sample: location_id [1, 2] (leaf first), value [1, 8 B, 0, 0] */
		0x12, 0x0a, 0x0a, 0x02, 0x01, 0x02, 0x12, 0x04, 0x01, 0x08, 0x00, 0x00,
		/* mapping: id 1, 0x1000-0x2000, offset 0, filename 12 "/bin/p",
		 * build_id 13 "abcd", has_functions/filenames/line_numbers/inline_frames */
		0x1a, 0x16, 0x08, 0x01, 0x10, 0x80, 0x20, 0x18, 0x80, 0x40, 0x20, 0x00,
		0x28, 0x0c, 0x30, 0x0d, 0x38, 0x01, 0x40, 0x01, 0x48, 0x01, 0x50, 0x01,
		/* location 1: mapping 1, address 0x1010, line {function 1 "inl", 7}
		 * then line {function 2 "outer", 3}: the innermost first */
		0x22, 0x13, 0x08, 0x01, 0x10, 0x01, 0x18, 0x90, 0x20,
		0x22, 0x04, 0x08, 0x01, 0x10, 0x07, 0x22, 0x04, 0x08, 0x02, 0x10, 0x03,
		/* location 2: mapping 1, address 0x1800, line {function 3 "p+0x800", 0} */
		0x22, 0x0d, 0x08, 0x02, 0x10, 0x01, 0x18, 0x80, 0x30, 0x22, 0x04, 0x08, 0x03, 0x10, 0x00,
		/* functions {id, name, system_name, filename}: inl/a.c, outer/a.c, p+0x800/"" */
		0x2a, 0x08, 0x08, 0x01, 0x10, 0x08, 0x18, 0x08, 0x20, 0x09,
		0x2a, 0x08, 0x08, 0x02, 0x10, 0x0a, 0x18, 0x0a, 0x20, 0x09,
		0x2a, 0x08, 0x08, 0x03, 0x10, 0x0b, 0x18, 0x0b, 0x20, 0x00,
		/* string_table */
		0x32, 0x00,
		0x32, 0x0d, 'a', 'l', 'l', 'o', 'c', '_', 'o', 'b', 'j', 'e', 'c', 't', 's',
		0x32, 0x05, 'c', 'o', 'u', 'n', 't',
		0x32, 0x0b, 'a', 'l', 'l', 'o', 'c', '_', 's', 'p', 'a', 'c', 'e',
		0x32, 0x05, 'b', 'y', 't', 'e', 's',
		0x32, 0x0d, 'i', 'n', 'u', 's', 'e', '_', 'o', 'b', 'j', 'e', 'c', 't', 's',
		0x32, 0x0b, 'i', 'n', 'u', 's', 'e', '_', 's', 'p', 'a', 'c', 'e',
		0x32, 0x05, 's', 'p', 'a', 'c', 'e',
		0x32, 0x03, 'i', 'n', 'l',
		0x32, 0x03, 'a', '.', 'c',
		0x32, 0x05, 'o', 'u', 't', 'e', 'r',
		0x32, 0x07, 'p', '+', '0', 'x', '8', '0', '0',
		0x32, 0x06, '/', 'b', 'i', 'n', '/', 'p',
		0x32, 0x04, 'a', 'b', 'c', 'd',
		0x32, 0x0b, 'm', 'e', 'm', 't', 'r', 'a', 'c', 'e', ':', ' ', 'p',
		0x32, 0x12, 'p', 'i', 'd', ' ', '1', ' ', '(', 'p', ')', ',', ' ', '0', '.', '0', '0', '0', ' ', 's',
		/* duration_nanos 1000, period_type {space, bytes}, period 1 */
		0x50, 0xe8, 0x07, 0x5a, 0x04, 0x08, 0x07, 0x10, 0x04, 0x60, 0x01,
		/* comment 14 "memtrace: p", comment 15 "pid 1 (p), ...", default_sample_type 6 "inuse_space" */
		0x68, 0x0e, 0x68, 0x0f, 0x70, 0x06,
	};
	struct trace_module mod = { .start = 0x1000, .end = 0x2000, .path = "/bin/p",
				    .build_id = { 0xab, 0xcd }, .build_id_len = 2 };
	struct analysis *a = tiny_trace();
	struct export_pprof_input in = { .a = a, .modules = &mod, .nmodules = 1 };
	struct pb_buf b;

	pb_buf__init(&b);
	assert_int_equal(export_pprof__encode(&in, &b), 0);
	if (b.len != sizeof(want) || memcmp(b.data, want, b.len)) {
		for (size_t i = 0; i < b.len; i++)
			printf("%s0x%02x,", i % 12 ? " " : "\n# ", b.data[i]);
		printf("\n");
	}
	assert_bytes(&b, want, sizeof(want));
	pb_buf__free(&b);
	analysis__free(a);
}

/* FILE* over a memory buffer, read back as a string. */
static char *folded_of(const struct analysis *a, enum export_metric m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	assert_int_equal(export_folded__write(f, a, m), 0);
	fclose(f);
	return text;
}

static void test_folded_tiny(void **state)
{
	struct analysis *a = tiny_trace();
	enum export_metric m;
	char *text;

	text = folded_of(a, EXPORT_METRIC_ALLOCATED);
	assert_string_equal(text, "outer;inl 16\np+0x800;outer;inl 8\n");
	free(text);
	/* the freed stack has nothing leaked: its line is left out */
	assert_int_equal(export_metric__parse("leaked", &m), 0);
	text = folded_of(a, m);
	assert_string_equal(text, "outer;inl 16\n");
	free(text);
	assert_int_equal(export_metric__parse("allocations", &m), 0);
	text = folded_of(a, m);
	assert_string_equal(text, "outer;inl 1\np+0x800;outer;inl 1\n");
	free(text);
	assert_int_equal(export_metric__parse("bytes", &m), -EINVAL);
	analysis__free(a);
}

static void test_frame_names(void **state)
{
	struct analysis_frame named = { .address = 0x1234, .function = "f", .module = "/x/lib.so" };
	struct analysis_frame bare = { .address = 0x1234, .module = "/x/lib.so", .module_offset = 0x34 };
	struct analysis_frame none = { .address = 0x1234 };
	char buf[64];

	assert_string_equal(export_frame_name(&named, buf, sizeof(buf)), "f");
	assert_string_equal(export_frame_name(&bare, buf, sizeof(buf)), "lib.so+0x34");
	assert_string_equal(export_frame_name(&none, buf, sizeof(buf)), "0x1234");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_edges),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_nested_and_packed),
		cmocka_unit_test(test_nested_long),
		cmocka_unit_test(test_strtab),
		cmocka_unit_test(test_pprof_tiny),
		cmocka_unit_test(test_folded_tiny),
		cmocka_unit_test(test_frame_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
