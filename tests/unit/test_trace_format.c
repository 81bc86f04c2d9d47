// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The trace format (docs/trace-format.md): varints, writer -> reader round
 * trips of every record kind, file creation rules, and a reader that holds
 * up against truncated, damaged and random input.
 *
 * Records are compared as text: each record written is formatted into an
 * "expected" line, each record read into an "actual" line, with the same
 * functions, so every field is compared exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "trace_format.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "varint.h"

static char tmpdir[] = "/tmp/test_trace_format.XXXXXX";

static const char *tmp_path(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	unlink(buf[i]);
	return buf[i];
}

/* ---- record lines ---- */

struct lines {
	char **v;
	size_t n, cap;
};

__attribute__((format(printf, 2, 3)))
static void lines_add(struct lines *l, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	assert_true(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n++] = s;
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* A got the first N lines of WANT, exactly. */
static void lines_expect_prefix(const struct lines *got, const struct lines *want, size_t n)
{
	assert_int_equal(got->n, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(got->v[i], want->v[i]);
}

static const char *s_or(const char *s)
{
	return s ? s : "(null)";
}

static int fmt_meta(void *ctx, const struct trace_meta *m)
{
	lines_add(ctx, "meta cmd=[%s] comm=[%s] kernel=[%s] host=[%s] pid=%d depth=%u sample=%" PRIu64
		       " mono=%" PRIu64 " real=%" PRIu64,
		  s_or(m->command_line), s_or(m->comm), s_or(m->kernel), s_or(m->hostname), m->pid,
		  m->stack_depth, m->sample_bytes, m->start_mono_ns, m->start_real_ns);
	return 0;
}

static int fmt_module(void *ctx, const struct trace_module *m)
{
	char bid[2 * TRACE_BUILD_ID_MAX + 1] = "";

	for (uint32_t i = 0; i < m->build_id_len; i++)
		sprintf(bid + 2 * i, "%02x", m->build_id[i]);
	lines_add(ctx, "module %" PRIx64 "-%" PRIx64 " off=%" PRIx64 " path=[%s] bid=%u:%s",
		  m->start, m->end, m->file_offset, s_or(m->path), m->build_id_len, bid);
	return 0;
}

static int fmt_stack(void *ctx, const struct trace_stack *s)
{
	char buf[8192];
	size_t n = 0;

	for (uint32_t i = 0; i < s->nr && n < sizeof(buf) - 24; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %" PRIx64, s->frames[i]);
	buf[n] = '\0';
	lines_add(ctx, "stack %u nr=%u:%s", s->id, s->nr, buf);
	return 0;
}

static int fmt_event(void *ctx, const struct trace_event *e)
{
	lines_add(ctx, "event %u tid=%u ts=%" PRIu64 " ptr=%" PRIx64 " old=%" PRIx64 " size=%" PRIu64
		       " stack=%u",
		  e->type, e->tid, e->ts, e->ptr, e->old_ptr, e->size, e->stack_id);
	return 0;
}

static int fmt_thread(void *ctx, const struct trace_thread *t)
{
	lines_add(ctx, "thread %u [%s]", t->tid, s_or(t->name));
	return 0;
}

static int fmt_symbol(void *ctx, const struct trace_symbol *s)
{
	char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < s->nframes && n < sizeof(buf) - 512; i++) {
		const struct trace_frame *f = &s->frames[i];

		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " {%s %s:%u:%u}", s_or(f->function),
				      s_or(f->file), f->line, f->column);
	}
	lines_add(ctx, "symbol %" PRIx64 " module=%d off=%" PRIx64 " n=%u lang=%u:%s", s->addr, s->module,
		  s->module_offset, s->nframes, s->language, buf);
	return 0;
}

static int fmt_drops(void *ctx, const struct trace_drops *d)
{
	lines_add(ctx, "drops cpu=%u count=%" PRIu64, d->cpu, d->count);
	return 0;
}

static int fmt_end(void *ctx, const struct trace_end *e)
{
	lines_add(ctx, "end mono=%" PRIu64 " events=%" PRIu64 " dropped=%" PRIu64 " exit=%d flags=%u reason=[%s] limit=%" PRIu64 " of=[%s]",
		  e->end_mono_ns, e->events, e->dropped, e->exit_status, e->flags, s_or(e->stop_reason), e->memory_limit,
		  s_or(e->memory_limit_of));
	return 0;
}

static int fmt_string(void *ctx, const struct trace_string *s)
{
	lines_add(ctx, "string %u [%s]", s->id, s_or(s->str));
	return 0;
}

static int fmt_mark(void *ctx, const struct trace_mark *m)
{
	lines_add(ctx, "mark %u tid=%u ts=%" PRIu64 " name=%u ptr=%" PRIx64 " size=%" PRIu64,
		  m->kind, m->tid, m->ts, m->name, m->ptr, m->size);
	return 0;
}

static int fmt_rss(void *ctx, const struct trace_rss *r)
{
	lines_add(ctx, "rss ts=%" PRIu64 " anon=%" PRIu64 " file=%" PRIu64 " shmem=%" PRIu64, r->ts, r->anon,
		  r->file, r->shmem);
	return 0;
}

static int fmt_rollup(void *ctx, const struct trace_rollup *r)
{
	char buf[512] = "";
	size_t len = 0;

	for (uint32_t i = 0; i < r->n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %s=%" PRIu64, r->name[i], r->bytes[i]);
	lines_add(ctx, "rollup ts=%" PRIu64 " n=%u%s", r->ts, r->n, buf);
	return 0;
}

static int fmt_map(void *ctx, const struct trace_map *m)
{
	lines_add(ctx, "map ts=%" PRIu64 " tid=%u call=%u flags=%u stack=%u ret=%" PRIx64 " a=%" PRIx64 ",%" PRIx64
		       ",%" PRIx64 ",%" PRIx64, m->ts, m->tid, m->call, m->flags, m->stack_id, m->ret, m->a0, m->a1,
		  m->a2, m->a3);
	return 0;
}

static int fmt_resident(void *ctx, const struct trace_resident *r)
{
	char buf[512] = "";
	size_t len = 0, run = 0;

	for (uint32_t i = 0; i < r->nvmas; i++) {
		const struct trace_vma *v = &r->vmas[i];

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " [%" PRIx64 "-%" PRIx64 " k%u", v->start, v->end, v->kind);
		for (uint32_t j = 0; j < v->nruns; j++, run++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %" PRIx64 "-%" PRIx64, r->runs[run].start,
						r->runs[run].end);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "]");
	}
	lines_add(ctx, "resident ts=%" PRIu64 " ps=%u vmas=%u runs=%u%s", r->ts, r->page_size, r->nvmas, r->nruns, buf);
	return 0;
}

static const struct trace_reader_ops fmt_ops = {
	.resident = fmt_resident,
	.map = fmt_map,
	.rss = fmt_rss,
	.rollup = fmt_rollup,
	.meta = fmt_meta,
	.module = fmt_module,
	.stack = fmt_stack,
	.event = fmt_event,
	.thread = fmt_thread,
	.symbol = fmt_symbol,
	.drops = fmt_drops,
	.end = fmt_end,
	.string = fmt_string,
	.mark = fmt_mark,
};

struct result {
	int rc;
	bool partial;
	char problem[200];
	struct lines lines;
};

/* Open and read PATH once; rc is -errno if open failed. */
static void read_trace(const char *path, struct result *res)
{
	struct trace_reader *r = trace_reader__open(path);

	memset(res, 0, sizeof(*res));
	if (!r) {
		res->rc = -errno;
		return;
	}
	res->rc = trace_reader__read(r, &fmt_ops, &res->lines);
	res->partial = trace_reader__partial(r);
	snprintf(res->problem, sizeof(res->problem), "%s", trace_reader__problem(r));
	trace_reader__close(r);
}

/* ---- the sample trace: every record kind, edge values, five chunks ---- */

struct sample {
	struct lines want;
	size_t chunk_lines[8]; /* lines delivered once chunk i is read */
	size_t nchunks;
};

static const struct trace_meta sample_meta = {
	.command_line = "./server --port 8080 'a b'",
	.comm = "server",
	.kernel = "6.18.0-test",
	.hostname = "build-07",
	.pid = 4242,
	.stack_depth = 64,
	.sample_bytes = 0,
	.start_mono_ns = 123456789012345ull,
	.start_real_ns = 1700000000123456789ull,
};

static void sample_chunk_done(struct trace_writer *w, struct sample *s)
{
	assert_int_equal(trace_writer__flush(w), 0);
	s->chunk_lines[s->nchunks++] = s->want.n;
}

static void add_module(struct trace_writer *w, struct sample *s, const struct trace_module *m)
{
	assert_int_equal(trace_writer__add_module(w, m), 0);
	fmt_module(&s->want, m);
}

static void add_event(struct trace_writer *w, struct sample *s, uint32_t type, uint32_t tid,
		      uint64_t ts, uint64_t ptr, uint64_t old_ptr, uint64_t size, uint32_t stack)
{
	struct trace_event e = { type, tid, ts, ptr, old_ptr, size, stack };

	assert_int_equal(trace_writer__add_event(w, &e), 0);
	fmt_event(&s->want, &e);
}

static void add_stack(struct trace_writer *w, struct sample *s, uint32_t id, uint32_t nr,
		      const uint64_t *frames)
{
	struct trace_stack st = { id, nr, frames };

	assert_int_equal(trace_writer__add_stack(w, &st), 0);
	fmt_stack(&s->want, &st);
}

static void add_thread(struct trace_writer *w, struct sample *s, uint32_t tid, const char *name)
{
	struct trace_thread t = { tid, name };

	assert_int_equal(trace_writer__add_thread(w, &t), 0);
	fmt_thread(&s->want, &t);
}

static void add_string(struct trace_writer *w, struct sample *s, uint32_t id, const char *str)
{
	struct trace_string st = { id, str };

	assert_int_equal(trace_writer__add_string(w, &st), 0);
	fmt_string(&s->want, &st);
}

static void add_mark(struct trace_writer *w, struct sample *s, uint32_t kind, uint32_t tid,
		     uint64_t ts, uint32_t name, uint64_t ptr, uint64_t size)
{
	struct trace_mark m = { kind, tid, ts, name, ptr, size };

	assert_int_equal(trace_writer__add_mark(w, &m), 0);
	fmt_mark(&s->want, &m);
}

static void sample_meta_chunk(struct trace_writer *w, struct sample *s)
{
	struct trace_module m0 = { 0x555555554000, 0x555555580000, 0x1000, "/usr/bin/server",
				   { 0xde, 0xad, 0xbe, 0xef }, 20 };
	struct trace_module m1 = { 0x7ffff7dd0000, 0x7ffff7df5000, 0, NULL, { 0 }, 0 };

	fmt_meta(&s->want, &sample_meta);
	add_module(w, s, &m0);
	add_module(w, s, &m1);
	sample_chunk_done(w, s);
}

static void sample_data_chunk(struct trace_writer *w, struct sample *s)
{
	static const uint64_t f1[] = { 0x555555555123, 0x555555555400, 0x7ffff7dd1234 };
	static const uint64_t f3[] = { 0, UINT64_MAX, 1, 0x7fffffffffffffff, 0x8000000000000000 };
	struct trace_drops d = { 3, 17 };

	add_thread(w, s, 1, "main");
	add_thread(w, s, UINT32_MAX, "");
	add_thread(w, s, 0, NULL);
	add_stack(w, s, 1, 3, f1);
	add_stack(w, s, 5, 0, NULL);
	add_stack(w, s, UINT32_MAX, 5, f3);
	add_stack(w, s, 2, 1, f1);
	add_event(w, s, MT_EVENT_ALLOC, 7, 1000, 0x5555555592a0, 0, 32, 1);
	add_event(w, s, MT_EVENT_ALLOC, 7, 2500, 0x5555555592d0, 0, 100, 1);
	add_string(w, s, 1, "update");
	add_string(w, s, UINT32_MAX, "");
	add_string(w, s, 2, NULL);
	add_mark(w, s, MT_MARK_ZONE_BEGIN, 7, 2550, 1, 0, 0); /* same tid as the event before */
	add_event(w, s, MT_EVENT_FREE, 7, 2600, 0x5555555592a0, 0, 0, 0);
	add_mark(w, s, MT_MARK_POOL_ALLOC, 7, 2610, 2, 0x7fff00001000, 64);
	add_mark(w, s, MT_MARK_POOL_ALLOC, 9, 2620, 2, 0x7fff00001040, UINT64_MAX);
	add_mark(w, s, MT_MARK_POOL_FREE, 9, 2630, 2, 0x7fff00001000, 0);
	add_mark(w, s, MT_MARK_POOL_RESET, 9, 2640, 2, 0, 0);
	add_mark(w, s, MT_MARK_FRAME, 9, 2650, 0, 0, 0);
	add_mark(w, s, MT_MARK_THREAD_NAME, UINT32_MAX, 2660, UINT32_MAX, 0, 0);
	add_mark(w, s, MT_MARK_ZONE_END, 7, 2500, 1, 0, 0); /* time going back */
	add_event(w, s, MT_EVENT_REALLOC, 8, 2700, 0x555555559400, 0x5555555592d0, 400, 5);
	add_event(w, s, MT_EVENT_ALLOC, 8, 100, 0, 0, 0, 0); /* time going back */
	add_event(w, s, MT_EVENT_ALLOC, 0, UINT64_MAX, UINT64_MAX, 0, UINT64_MAX, UINT32_MAX);
	add_event(w, s, MT_EVENT_FREE, UINT32_MAX, 0, 0, 0, 0, 0);
	add_event(w, s, MT_EVENT_REALLOC, UINT32_MAX, 5, 1, UINT64_MAX, 1, 2);
	assert_int_equal(trace_writer__add_drops(w, &d), 0);
	fmt_drops(&s->want, &d);
	/* --rss: a sample (extremes too) and a rollup of three lines, one of them empty-valued */
	struct trace_rss rs[] = { { 2700, 114688, 876544, 0 }, { UINT64_MAX, UINT64_MAX, 0, 1 } };
	struct trace_rollup ro = { .ts = 2800, .n = 3, .name = { "Rss", "Pss_Anon", "Swap" },
				   .bytes = { 991232, 114688, 0 } };

	for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
		assert_int_equal(trace_writer__add_rss(w, &rs[i]), 0);
		fmt_rss(&s->want, &rs[i]);
	}
	assert_int_equal(trace_writer__add_rollup(w, &ro), 0);
	fmt_rollup(&s->want, &ro);
	struct trace_map mp[] = {
		{ 2900, 7, MT_MAP_MMAP, 0, 1, 0x7f0000000000, 0, 1 << 25, 3, 0x22 },
		{ UINT64_MAX, UINT32_MAX, MT_MAP_MADVISE, MT_MAP_IN_ALLOC, 0, 0, UINT64_MAX, UINT64_MAX, 4, 0 },
	};

	for (size_t i = 0; i < sizeof(mp) / sizeof(mp[0]); i++) {
		assert_int_equal(trace_writer__add_map(w, &mp[i]), 0);
		fmt_map(&s->want, &mp[i]);
	}
	ro.n = TRACE_ROLLUP_MAX + 1;
	assert_int_equal(trace_writer__add_rollup(w, &ro), -EINVAL); /* more lines than a reader takes */
	/* --rss: a resident snapshot: a heap with two runs, a thread's stack with one to its end, high addresses */
	struct trace_vma vm[] = { { 0x555555559000, 0x555555600000, TRACE_VMA_HEAP, 2 },
				  { 0x7f0000000000, 0x7f0000800000, TRACE_VMA_THREAD_STACK, 1 },
				  { 0x7ffffffde000, 0x7ffffffff000, TRACE_VMA_STACK, 1 } };
	struct trace_page_run rn[] = { { 0x555555559000, 0x55555555b000 }, { 0x5555555f0000, 0x555555600000 },
				       { 0x7f00007fe000, 0x7f0000800000 }, { 0x7fffffffd000, 0x7ffffffff000 } };
	struct trace_resident res = { .ts = 3000, .page_size = 4096, .nvmas = 3, .nruns = 4, .vmas = vm, .runs = rn };

	assert_int_equal(trace_writer__add_resident(w, &res), 0);
	fmt_resident(&s->want, &res);
	res.nvmas = res.nruns = 0;
	assert_int_equal(trace_writer__add_resident(w, &res), 0); /* nothing resident: still a snapshot */
	fmt_resident(&s->want, &res);
	res.nvmas = 3, res.nruns = 4;
	rn[1].end = 0x555555601000; /* a run past its mapping's end */
	assert_int_equal(trace_writer__add_resident(w, &res), -EINVAL);
	rn[1].end = 0x555555600000;
	vm[1].start = 0x555555500000; /* mappings out of order */
	assert_int_equal(trace_writer__add_resident(w, &res), -EINVAL);
	vm[1].start = 0x7f0000000000;
	res.page_size = 3000;
	assert_int_equal(trace_writer__add_resident(w, &res), -EINVAL);
	sample_chunk_done(w, s);
}

/* Starts with the same tid the last chunk ended with: the reader must not
 * need the previous chunk to know it. */
static void sample_second_data_chunk(struct trace_writer *w, struct sample *s)
{
	struct trace_module late = { 0x7ffff7a00000, 0x7ffff7a80000, 0x2000, "/usr/lib/libplugin.so",
				     { 0 }, 32 };

	for (int i = 0; i < 32; i++)
		late.build_id[i] = (uint8_t)(0xa0 + i);
	add_event(w, s, MT_EVENT_ALLOC, UINT32_MAX, 3000, 0x5555555592a0, 0, 64, 2);
	add_module(w, s, &late);
	add_event(w, s, MT_EVENT_FREE, UINT32_MAX, 3100, 0x5555555592a0, 0, 0, 0);
	/* A pool pointer's delta base starts afresh in each chunk, too. */
	add_mark(w, s, MT_MARK_POOL_FREE, UINT32_MAX, 3200, 1, 0x7fff00001040, 0);
	static const uint64_t f[] = { 0x7ffff7a01000, 0x7ffff7a00ff0, 0x555555555123 };

	add_stack(w, s, 3, 3, f);
	sample_chunk_done(w, s);
}

static void add_symbol(struct trace_writer *w, struct sample *s, const struct trace_symbol *sym)
{
	assert_int_equal(trace_writer__add_symbol(w, sym), 0);
	fmt_symbol(&s->want, sym);
}

static void sample_symbols_chunk(struct trace_writer *w, struct sample *s)
{
	static const struct trace_frame inl[] = {
		{ "std::vector<int>::push_back(int const&)", "/usr/include/c++/12/bits/stl_vector.h",
		  1287, 9 },
		{ "handle_request(conn*)", "src/server.c", 42, 0 },
	};
	static const struct trace_frame unknown_file[] = { { "main", NULL, 0, 0 } };
	static const struct trace_frame no_function[] = { { NULL, "src/x.c", 7, 3 } };
	static const struct trace_frame python[] = { { "Handler.make_buffers", "/srv/app.py", 15, 0 } };
	const struct trace_symbol syms[] = {
		{ .addr = 0x555555555123, .module = 0, .module_offset = 0x1123, .nframes = 2, .frames = inl },
		{ .addr = 0x555555555400, .module = 0, .module_offset = 0x1400, .nframes = 1, .frames = unknown_file },
		{ .addr = 0x7ffff7dd1234, .module = 1, .module_offset = 0x1234, .nframes = 1, .frames = no_function },
		{ .addr = 0x1000, .module = -1 },
		{ .addr = UINT64_MAX, .module = 2, .module_offset = UINT64_MAX },
		/* a Python frame: the language goes after the frames, read as native when absent */
		{ .addr = 0xfe0000000100000f, .module = -1, .nframes = 1, .frames = python,
		  .language = TRACE_LANG_PYTHON },
	};

	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		add_symbol(w, s, &syms[i]);
	sample_chunk_done(w, s);
}

static const struct trace_end sample_end = {
	.end_mono_ns = 987654321,
	.events = 11,
	.dropped = 17,
	.exit_status = 256,
	.flags = TRACE_END_TARGET_EXITED | TRACE_END_CREDS_CHANGED,
	.stop_reason = "stopped recording PID 42: it changed credentials (setuid exec of passwd)",
	.memory_limit = 67108864,
	.memory_limit_of = "v1 /memtrace-oom.1",
};

/* Write the sample trace with W; S gets what a reader must see. */
static void sample_write_with(struct trace_writer *w, struct sample *s, bool with_end)
{
	memset(s, 0, sizeof(*s));
	assert_non_null(w);
	sample_meta_chunk(w, s);
	sample_data_chunk(w, s);
	sample_second_data_chunk(w, s);
	sample_symbols_chunk(w, s);
	if (!with_end) {
		trace_writer__abort(w);
		return;
	}
	assert_int_equal(trace_writer__close(w, &sample_end), 0);
	fmt_end(&s->want, &sample_end);
	s->chunk_lines[s->nchunks++] = s->want.n;
}

/* ... to PATH. */
static void sample_write(const char *path, struct sample *s, bool with_end)
{
	sample_write_with(trace_writer__open(path, &sample_meta), s, with_end);
}

/* ---- file helpers ---- */

static uint8_t *file_load(const char *path, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	uint8_t *buf;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

static void file_store(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

struct chunk_info {
	size_t off;	 /* of the chunk header */
	uint32_t size, raw_size, records;
	uint16_t type;
};

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* Chunks of a well-formed trace in native byte order. */
static size_t chunks_list(const uint8_t *buf, size_t len, struct chunk_info *out, size_t max)
{
	size_t off = TRACE_HEADER_SIZE, n = 0;

	while (off + TRACE_CHUNK_HEADER_SIZE <= len && n < max) {
		struct chunk_info *c = &out[n++];
		const uint8_t *h = buf + off;

		assert_memory_equal(h, TRACE_CHUNK_MAGIC, 4);
		c->off = off;
		memcpy(&c->type, h + TRACE_CHK_OFF_TYPE, 2);
		c->size = ld32(h + TRACE_CHK_OFF_SIZE);
		c->raw_size = ld32(h + TRACE_CHK_OFF_RAW_SIZE);
		c->records = ld32(h + TRACE_CHK_OFF_RECORDS);
		off += TRACE_CHUNK_HEADER_SIZE + c->size;
	}
	return n;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- varints ---- */

static void test_varint_round_trip(void **state)
{
	static const uint64_t vals[] = { 0, 1, 127, 128, 255, 300, 16383, 16384, UINT32_MAX,
					 (uint64_t)UINT32_MAX + 1, 1ull << 56, (1ull << 63) - 1,
					 1ull << 63, UINT64_MAX - 1, UINT64_MAX };
	static const size_t lens[] = { 1, 1, 1, 2, 2, 2, 2, 3, 5, 5, 9, 9, 10, 10, 10 };
	static const int64_t svals[] = { 0, 1, -1, 63, -64, 64, -65, INT32_MIN, INT32_MAX,
					 INT64_MIN, INT64_MAX, INT64_MIN + 1 };

	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t buf[VARINT_MAX_LEN + 4];
		const uint8_t *p = buf;
		uint64_t v = 0;
		size_t n = put_varint(buf, vals[i]);

		assert_int_equal(n, lens[i]);
		assert_int_equal(varint_len(vals[i]), n);
		assert_int_equal(get_varint(&p, buf + n, &v), 0);
		assert_true(v == vals[i]);
		assert_ptr_equal(p, buf + n);
		/* Every shorter prefix is truncated input. */
		for (size_t cut = 0; cut < n; cut++) {
			p = buf;
			assert_int_equal(get_varint(&p, buf + cut, &v), -EBADMSG);
			assert_ptr_equal(p, buf);
		}
	}
	for (size_t i = 0; i < sizeof(svals) / sizeof(svals[0]); i++)
		assert_true(decode_zigzag(encode_zigzag(svals[i])) == svals[i]);
	assert_true(encode_zigzag(0) == 0 && encode_zigzag(-1) == 1 && encode_zigzag(1) == 2);
	assert_true(encode_zigzag(INT64_MAX) == UINT64_MAX - 1);
	assert_true(encode_zigzag(INT64_MIN) == UINT64_MAX);
	print_message("varint: %zu values, %zu signed values, all truncations refused\n",
		      sizeof(vals) / sizeof(vals[0]), sizeof(svals) / sizeof(svals[0]));
}

static void expect_bad(const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t v = 42;

	assert_int_equal(get_varint(&p, buf + len, &v), -EBADMSG);
	assert_ptr_equal(p, buf);
	assert_true(v == 42);
}

static void test_varint_rejects_overlong(void **state)
{
	static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x01 };
	static const uint8_t overflow[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0x02 };
	static const uint8_t padded_zero[] = { 0x80, 0x00 };
	static const uint8_t padded_one[] = { 0x81, 0x80, 0x00 };

	expect_bad(eleven, sizeof(eleven));
	expect_bad(overflow, sizeof(overflow));
	expect_bad(padded_zero, sizeof(padded_zero));
	expect_bad(padded_one, sizeof(padded_one));
	expect_bad(eleven, 0);
}

/* ---- round trips ---- */

static void test_round_trip_every_record(void **state)
{
	const char *path = tmp_path("sample.mtrace");
	struct sample s;
	struct result a, b;

	sample_write(path, &s, true);
	read_trace(path, &a);
	assert_int_equal(a.rc, 0);
	assert_false(a.partial);
	assert_string_equal(a.problem, "");
	lines_expect_prefix(&a.lines, &s.want, s.want.n);

	/* A second pass over the same reader gives the same records. */
	struct trace_reader *r = trace_reader__open(path);
	assert_non_null(r);
	for (int pass = 0; pass < 2; pass++) {
		memset(&b, 0, sizeof(b));
		assert_int_equal(trace_reader__read(r, &fmt_ops, &b.lines), 0);
		assert_false(trace_reader__partial(r));
		lines_expect_prefix(&b.lines, &s.want, s.want.n);
		lines_free(&b.lines);
	}
	trace_reader__close(r);
	print_message("round trip: %zu records in %zu chunks, every field equal, twice\n",
		      s.want.n, s.nchunks);
	lines_free(&a.lines);
	lines_free(&s.want);
}

/* Descriptors of this process open on PATH. */
static int fds_on(const char *path)
{
	char link[64], target[PATH_MAX];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len > 0) {
			target[len] = 0;
			n += !strcmp(target, path);
		}
	}
	return n;
}

/* The agent's trace (trace_writer__open_unheld) holds no descriptor on its
 * file, reopens it at each chunk, and reads back whole. Once something
 * else is put at its name, nothing is written there and nothing opened:
 * another regular file (-ESTALE), a symlink to the file made or a FIFO
 * (-EINVAL: open(2) of a FIFO with no reader waits for ever, and the
 * writer's thread would with it), the file made still holding what was
 * written before. */
static void test_unheld(void **state)
{
	static const char *const put[] = { "file", "symlink", "fifo" };
	const char *path = tmp_path("unheld.mtrace"), *moved = tmp_path("unheld.moved");
	struct trace_writer *w;
	struct sample s;
	struct result a;
	size_t n;
	int fd;

	w = trace_writer__open_unheld(path, &sample_meta);
	assert_non_null(w);
	assert_int_equal(fds_on(path), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC); /* what fds_on finds when there is one */
	assert_int_equal(fds_on(path), 1);
	close(fd);
	sample_write_with(w, &s, true);
	read_trace(path, &a);
	assert_int_equal(a.rc, 0);
	assert_false(a.partial);
	lines_expect_prefix(&a.lines, &s.want, s.want.n);
	n = s.want.n;
	lines_free(&a.lines);
	lines_free(&s.want);

	for (size_t i = 0; i < sizeof(put) / sizeof(put[0]); i++) {
		unlink(path);
		w = trace_writer__open_unheld(path, &sample_meta);
		assert_non_null(w);
		memset(&s, 0, sizeof(s));
		sample_meta_chunk(w, &s);
		assert_int_equal(rename(path, moved), 0);
		if (!strcmp(put[i], "file")) {
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
			assert_true(fd >= 0);
			close(fd);
		} else if (!strcmp(put[i], "symlink")) {
			assert_int_equal(symlink(moved, path), 0);
		} else {
			assert_int_equal(mkfifo(path, 0600), 0);
		}
		assert_int_equal(trace_writer__add_thread(w, &(struct trace_thread){ 1, "main" }), 0);
		assert_int_equal(trace_writer__flush(w), !strcmp(put[i], "file") ? -ESTALE : -EINVAL);
		assert_true(trace_writer__close(w, &sample_end) < 0);
		/* the file made: its META chunk and nothing after */
		read_trace(moved, &a);
		assert_true(a.partial);
		lines_expect_prefix(&a.lines, &s.want, s.want.n);
		lines_free(&a.lines);
		lines_free(&s.want);
		if (!strcmp(put[i], "file")) {
			struct stat st;

			assert_int_equal(stat(path, &st), 0);
			assert_int_equal(st.st_size, 0);
		}
		unlink(moved);
	}
	unlink(path);
	print_message("unheld: %zu records read back, no descriptor held; a file, a symlink and a FIFO put at its "
		      "name refused, none written\n",
		      n);
}

static int stop_at_third(void *ctx, const struct trace_event *e)
{
	return ++*(int *)ctx == 3 ? 77 : 0;
}

static void test_callback_stops_read(void **state)
{
	const char *path = tmp_path("stop.mtrace");
	struct trace_reader_ops ops = { .event = stop_at_third };
	struct sample s;
	int seen = 0;

	sample_write(path, &s, true);
	struct trace_reader *r = trace_reader__open(path);
	assert_non_null(r);
	assert_int_equal(trace_reader__read(r, &ops, &seen), 77);
	assert_int_equal(seen, 3);
	assert_false(trace_reader__partial(r));
	trace_reader__close(r);
	lines_free(&s.want);
}

struct digest {
	uint64_t events, sum;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull + (h >> 29);
}

static uint64_t event_digest(const struct trace_event *e)
{
	uint64_t h = mix(e->type, e->tid);

	h = mix(h, e->ts);
	h = mix(h, e->ptr);
	h = mix(h, e->old_ptr);
	h = mix(h, e->size);
	return mix(h, e->stack_id);
}

static int digest_event(void *ctx, const struct trace_event *e)
{
	struct digest *d = ctx;

	d->events++;
	d->sum += event_digest(e);
	return 0;
}

/* Something like a real service: threads in bursts, a bump-ish heap, most
 * allocations freed soon, a few hundred distinct stacks. */
static void many_events_make(struct trace_event *e, uint64_t *live, size_t *nlive,
			     uint64_t *heap, uint64_t *ts, uint32_t *tid)
{
	uint64_t r = rng();

	*ts += 200 + r % 2000;
	if (r % 16 == 0)
		*tid = 1000 + (uint32_t)(rng() % 8);
	memset(e, 0, sizeof(*e));
	e->tid = *tid;
	e->ts = *ts;
	if (*nlive > 64 && r % 100 < 45) {
		size_t i = rng() % *nlive;

		e->type = MT_EVENT_FREE;
		e->ptr = live[i];
		live[i] = live[--*nlive];
		return;
	}
	e->size = 16 + (rng() % 8 == 0 ? rng() % 4096 : rng() % 256);
	e->stack_id = 1 + (uint32_t)(rng() % 40 == 0 ? rng() % 300 : rng() % 30);
	*heap += (e->size + 31) & ~15ull;
	e->ptr = *heap;
	if (*nlive > 64 && r % 100 >= 95) {
		size_t i = rng() % *nlive;

		e->type = MT_EVENT_REALLOC;
		e->old_ptr = live[i];
		live[i] = e->ptr;
		return;
	}
	e->type = MT_EVENT_ALLOC;
	if (*nlive < 4096)
		live[(*nlive)++] = e->ptr;
}

#define MANY_EVENTS 200000

static void test_many_events(void **state)
{
	const char *path = tmp_path("many.mtrace");
	static uint64_t live[4096];
	uint64_t heap = 0x55555555a000, ts = 5000000000ull;
	uint32_t tid = 1000;
	size_t nlive = 0;
	struct digest want = { 0 };
	static struct trace_event events[MANY_EVENTS];
	struct trace_writer *w = trace_writer__open(path, &sample_meta);

	assert_non_null(w);
	for (int i = 0; i < MANY_EVENTS; i++) {
		many_events_make(&events[i], live, &nlive, &heap, &ts, &tid);
		want.events++;
		want.sum += event_digest(&events[i]);
	}
	double t_write = now_s();
	for (int i = 0; i < MANY_EVENTS; i++)
		if (trace_writer__add_event(w, &events[i]))
			fail_msg("add_event %d failed", i);
	t_write = now_s() - t_write;
	uint64_t bytes = trace_writer__bytes(w);
	struct trace_end end = { .end_mono_ns = ts, .events = MANY_EVENTS, .exit_status = -1 };
	assert_int_equal(trace_writer__close(w, &end), 0);

	size_t len, raw = 0;
	uint8_t *buf = file_load(path, &len);
	struct chunk_info ch[64];
	size_t n = chunks_list(buf, len, ch, 64);
	for (size_t i = 0; i < n; i++)
		if (ch[i].type == TRACE_CHUNK_DATA)
			raw += ch[i].raw_size;
	free(buf);
	assert_true(bytes <= len);

	struct trace_reader *r = trace_reader__open(path);
	struct trace_reader_ops ops = { .event = digest_event };
	double best = 1e9;
	assert_non_null(r);
	for (int pass = 0; pass < 5; pass++) {
		struct digest got = { 0 };
		double t0 = now_s();

		assert_int_equal(trace_reader__read(r, &ops, &got), 0);
		double dt = now_s() - t0;
		best = dt < best ? dt : best;
		assert_false(trace_reader__partial(r));
		assert_true(got.events == want.events && got.sum == want.sum);
	}
	trace_reader__close(r);
	print_message("%d events in %zu chunks: %.2f bytes/event raw, %.2f bytes/event in the file "
		      "(%zu bytes)\n",
		      MANY_EVENTS, n, (double)raw / MANY_EVENTS, (double)len / MANY_EVENTS, len);
	print_message("decode rate: %.1f M events/s (best of 5 passes, %.2f ms each); "
		      "encode+compress: %.1f M events/s\n",
		      MANY_EVENTS / best / 1e6, best * 1e3, MANY_EVENTS / t_write / 1e6);
}

/* A writer told to close chunks at 64 KiB (the agent's traces in memory)
 * writes many more, none past the size asked (a record's worth aside),
 * and the trace reads back whole and the same. */
static void test_small_chunks(void **state)
{
	const char *path = tmp_path("small.mtrace");
	static uint64_t live[4096];
	uint64_t heap = 0x55555555a000, ts = 5000000000ull;
	uint32_t tid = 1000;
	size_t nlive = 0, len, n, data = 0, biggest = 0;
	struct digest want = { 0 }, got = { 0 };
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	struct trace_reader_ops ops = { .event = digest_event };
	static struct chunk_info ch[4096];
	struct trace_reader *r;
	uint8_t *buf;

	assert_non_null(w);
	trace_writer__set_chunk_target(w, 64u << 10);
	for (int i = 0; i < 100000; i++) {
		struct trace_event e;

		many_events_make(&e, live, &nlive, &heap, &ts, &tid);
		want.events++;
		want.sum += event_digest(&e);
		assert_int_equal(trace_writer__add_event(w, &e), 0);
	}
	struct trace_end end = { .end_mono_ns = ts, .events = 100000, .exit_status = -1 };
	assert_int_equal(trace_writer__close(w, &end), 0);
	buf = file_load(path, &len);
	n = chunks_list(buf, len, ch, 4096);
	for (size_t i = 0; i < n; i++) {
		if (ch[i].type != TRACE_CHUNK_DATA)
			continue;
		data++;
		biggest = ch[i].raw_size > biggest ? ch[i].raw_size : biggest;
	}
	free(buf);
	assert_true(data >= 10);
	assert_true(biggest <= (64u << 10) + 64);
	r = trace_reader__open(path);
	assert_non_null(r);
	assert_int_equal(trace_reader__read(r, &ops, &got), 0);
	assert_false(trace_reader__partial(r));
	assert_true(got.events == want.events && got.sum == want.sum);
	trace_reader__close(r);
	print_message("100000 events in %zu data chunks of at most %zu raw bytes; read back the same\n", data,
		      biggest);
}

/* ---- file creation ---- */

static void test_create_rules(void **state)
{
	const char *path = tmp_path("mode.mtrace");
	const char *link = tmp_path("link.mtrace");
	const char *target = tmp_path("link-target");
	struct trace_writer *w;
	struct stat st;

	w = trace_writer__open(path, &sample_meta);
	assert_non_null(w);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	/* An existing file is never overwritten, and is left alone. */
	errno = 0;
	assert_null(trace_writer__open(path, &sample_meta));
	assert_int_equal(errno, EEXIST);
	assert_int_equal(stat(path, &st), 0);
	trace_writer__abort(w);

	/* A symlink is refused, dangling or not, and its target not created. */
	assert_int_equal(symlink(target, link), 0);
	errno = 0;
	assert_null(trace_writer__open(link, &sample_meta));
	assert_true(errno == EEXIST || errno == ELOOP);
	assert_int_equal(access(target, F_OK), -1);

	errno = 0;
	assert_null(trace_writer__open("/nonexistent-dir/x.mtrace", &sample_meta));
	assert_int_equal(errno, ENOENT);
	print_message("created 0600; EEXIST on an existing file; symlink refused\n");
}

/* Writes that fail (here: over RLIMIT_FSIZE) make every later call fail the
 * same way, and what was written before still reads as a partial trace. */
static void test_write_error_sticky(void **state)
{
	const char *path = tmp_path("efbig.mtrace");
	struct rlimit old, lim;
	struct trace_event e = { MT_EVENT_ALLOC, 1, 0, 0, 0, 24, 1 };
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	int err = 0;

	assert_non_null(w);
	assert_int_equal(trace_writer__flush(w), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 4000000 && !err; i++) {
		e.ts += rng() % 100000;
		e.ptr = rng();
		e.size = rng();
		err = trace_writer__add_event(w, &e);
	}
	assert_int_equal(err, -EFBIG);
	assert_int_equal(trace_writer__add_event(w, &e), -EFBIG);
	assert_int_equal(trace_writer__flush(w), -EFBIG);
	assert_int_equal(trace_writer__close(w, &sample_end), -EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);

	struct result res;
	read_trace(path, &res);
	assert_int_equal(res.rc, 0);
	assert_true(res.partial);
	assert_non_null(strstr(res.problem, "recorder was probably killed"));
	print_message("EFBIG is sticky; the file reads as partial: %s\n", res.problem);
	lines_free(&res.lines);
}

/* ---- the writer's thread: order, completeness, errors ---- */

/* Event I of a stream that can be checked without storing it: random
 * pointers and sizes, so deltas are large and a chunk encoded against the
 * wrong base would show. */
static struct trace_event stream_event(uint64_t i)
{
	uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull;
	struct trace_event e = { 0 };

	h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	e.type = MT_EVENT_ALLOC + (uint32_t)(h % 3);
	e.tid = 100 + (uint32_t)(h >> 61);
	e.ts = i * 1000 + (h & 0xff);
	e.ptr = h >> 8;
	if (e.type == MT_EVENT_REALLOC)
		e.old_ptr = h * 31;
	if (e.type != MT_EVENT_FREE) {
		e.size = h % 5000;
		e.stack_id = 1 + (uint32_t)(h % 300);
	}
	return e;
}

struct stream_check {
	uint64_t next;
	bool in_order;
};

static int stream_check_event(void *ctx, const struct trace_event *e)
{
	struct stream_check *c = ctx;
	struct trace_event want = stream_event(c->next++);

	if (e->type != want.type || e->tid != want.tid || e->ts != want.ts || e->ptr != want.ptr ||
	    e->old_ptr != want.old_ptr || e->size != want.size || e->stack_id != want.stack_id)
		c->in_order = false;
	return 0;
}

/* Read PATH as it is now: how many events, after checking they are the
 * stream's first ones in order. */
static uint64_t stream_read(const char *path, bool *partial)
{
	struct stream_check c = { 0, true };
	struct trace_reader_ops ops = { .event = stream_check_event };
	struct trace_reader *r = trace_reader__open(path);

	assert_non_null(r);
	assert_int_equal(trace_reader__read(r, &ops, &c), 0);
	*partial = trace_reader__partial(r);
	trace_reader__close(r);
	assert_true(c.in_order);
	return c.next;
}

#define STREAM_EVENTS 2000000

/* Chunks go out on the writer's thread while the caller goes on encoding;
 * a flush still means "all of it is in the file", so a reader at that
 * moment sees every event so far, in order. */
static void test_flush_interleaved(void **state)
{
	const char *path = tmp_path("stream.mtrace");
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	unsigned int flushes = 0, reads = 0;
	struct stat st;
	bool partial;

	assert_non_null(w);
	for (uint64_t i = 0; i < STREAM_EVENTS; i++) {
		struct trace_event e = stream_event(i);

		if (trace_writer__add_event(w, &e))
			fail_msg("add_event %" PRIu64 " failed", i);
		if (rng() % 20000)
			continue;
		assert_int_equal(trace_writer__flush(w), 0);
		if (rng() % 2)
			assert_int_equal(trace_writer__flush(w), 0); /* nothing new: no chunk */
		flushes++;
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal((uint64_t)st.st_size, trace_writer__bytes(w));
		if (flushes % 8)
			continue;
		assert_int_equal(stream_read(path, &partial), i + 1);
		assert_true(partial);
		reads++;
	}
	assert_int_equal(trace_writer__close(w, &sample_end), 0);
	assert_int_equal(stream_read(path, &partial), STREAM_EVENTS);
	assert_false(partial);

	size_t len;
	uint8_t *buf = file_load(path, &len);
	static struct chunk_info ch[1024];
	size_t n = chunks_list(buf, len, ch, 1024);
	free(buf);
	assert_true(n > flushes);
	print_message("%d events, %u flushes, %zu chunks: every event back in order; "
		      "%u reads right after a flush saw all events so far\n",
		      STREAM_EVENTS, flushes, n, reads);
}

/* Open PATH, write the META chunk, and let the file grow by 16 bytes more
 * only: the next chunk write fails inside the writer's thread. */
static struct trace_writer *open_nearly_full(const char *path, struct rlimit *old)
{
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	struct rlimit lim;

	assert_non_null(w);
	assert_int_equal(trace_writer__flush(w), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, old), 0);
	lim = *old;
	lim.rlim_cur = trace_writer__bytes(w) + 16;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	return w;
}

static void limit_restore(const struct rlimit *old)
{
	assert_int_equal(setrlimit(RLIMIT_FSIZE, old), 0);
	signal(SIGXFSZ, SIG_DFL);
}

/* The call that hands a chunk over cannot know the write will fail; the
 * error comes from a later call, and close reports it even when no call
 * came in between. */
static void test_write_error_in_thread(void **state)
{
	const char *path = tmp_path("stream-ref.mtrace");
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	struct rlimit old;
	struct trace_event e;
	uint64_t i, k;
	int err = 0;

	/* k: events in the first DATA chunk; the k-th call hands it over. */
	assert_non_null(w);
	assert_int_equal(trace_writer__flush(w), 0);
	for (i = 0; i < 300000; i++) {
		e = stream_event(i);
		assert_int_equal(trace_writer__add_event(w, &e), 0);
	}
	assert_int_equal(trace_writer__close(w, NULL), 0);
	size_t len;
	uint8_t *buf = file_load(path, &len);
	struct chunk_info ch[8];
	assert_true(chunks_list(buf, len, ch, 8) >= 3);
	free(buf);
	k = ch[1].records;

	/* Handed over, then closed: close reports the thread's error. */
	w = open_nearly_full(tmp_path("efbig-close.mtrace"), &old);
	for (i = 0; i < k; i++) {
		e = stream_event(i);
		assert_int_equal(trace_writer__add_event(w, &e), 0);
	}
	assert_int_equal(trace_writer__close(w, &sample_end), -EFBIG);
	limit_restore(&old);

	/* Handed over, then more events: one of them reports it, and it sticks. */
	const char *later = tmp_path("efbig-later.mtrace");
	w = open_nearly_full(later, &old);
	for (i = 0; i < 4 * k && !err; i++) {
		e = stream_event(i);
		err = trace_writer__add_event(w, &e);
	}
	limit_restore(&old);
	assert_int_equal(err, -EFBIG);
	assert_true(i > k);
	assert_int_equal(trace_writer__add_event(w, &e), -EFBIG);
	assert_int_equal(trace_writer__flush(w), -EFBIG);
	assert_int_equal(trace_writer__close(w, &sample_end), -EFBIG);

	bool partial;
	assert_int_equal(stream_read(later, &partial), 0);
	assert_true(partial);
	print_message("chunk of %" PRIu64 " events handed over fine; EFBIG from the thread came "
		      "at event %" PRIu64 " and from close\n",
		      k, i);
}

/* ---- refusing what is not a trace ---- */

static void expect_open_errno(const char *path, int want)
{
	errno = 0;
	assert_null(trace_reader__open(path));
	assert_int_equal(errno, want);
}

static void test_not_a_trace(void **state)
{
	const char *path = tmp_path("not.mtrace");
	const char *good = tmp_path("good.mtrace");
	static const char text[] = "this is not a memtrace trace, just some text\n";
	struct sample s;
	size_t len;

	file_store(path, text, sizeof(text));
	expect_open_errno(path, EINVAL);
	file_store(path, "", 0);
	expect_open_errno(path, EINVAL);
	file_store(path, "MTRACE", 6);
	expect_open_errno(path, EINVAL);
	expect_open_errno(tmp_path("missing.mtrace"), ENOENT);

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	uint32_t v = TRACE_VERSION + 1;
	memcpy(buf + TRACE_HDR_OFF_VERSION, &v, 4);
	file_store(path, buf, len);
	expect_open_errno(path, ENOTSUP);
	v = 0;
	memcpy(buf + TRACE_HDR_OFF_VERSION, &v, 4);
	file_store(path, buf, len);
	expect_open_errno(path, EINVAL);
	free(buf);
	lines_free(&s.want);
	print_message("text, empty, short: EINVAL; version %d: ENOTSUP\n", TRACE_VERSION + 1);
}

/* ---- truncation and damage ---- */

static void expect_read(const char *path, int rc, bool partial, const char *problem,
			const struct lines *want, size_t nlines)
{
	struct result res;

	read_trace(path, &res);
	assert_int_equal(res.rc, rc);
	assert_int_equal(res.partial, partial);
	if (problem)
		assert_non_null(strstr(res.problem, problem));
	lines_expect_prefix(&res.lines, want, nlines);
	lines_free(&res.lines);
}

static void test_truncated(void **state)
{
	const char *good = tmp_path("trunc-good.mtrace");
	const char *path = tmp_path("trunc.mtrace");
	struct chunk_info ch[8];
	struct sample s;
	size_t len;

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	size_t n = chunks_list(buf, len, ch, 8);
	assert_int_equal(n, s.nchunks);
	assert_int_equal(ch[n - 1].type, TRACE_CHUNK_END);

	file_store(path, buf, TRACE_HEADER_SIZE);
	expect_read(path, 0, true, "after its file header", &s.want, 0);
	for (size_t i = 0; i < n; i++) {
		size_t before = i ? s.chunk_lines[i - 1] : 0;

		/* Inside the chunk header, then inside the payload. */
		file_store(path, buf, ch[i].off + 10);
		expect_read(path, 0, true, "ends inside chunk", &s.want, before);
		file_store(path, buf, ch[i].off + TRACE_CHUNK_HEADER_SIZE + ch[i].size / 2);
		expect_read(path, 0, true, "ends inside chunk", &s.want, before);
		file_store(path, buf, ch[i].off + TRACE_CHUNK_HEADER_SIZE + ch[i].size - 1);
		expect_read(path, 0, true, "ends inside chunk", &s.want, before);
	}
	/* Cut exactly before END: every record, but no end. */
	file_store(path, buf, ch[n - 1].off);
	expect_read(path, 0, true, "without an end record", &s.want, s.chunk_lines[n - 2]);
	file_store(path, buf, len);
	expect_read(path, 0, false, NULL, &s.want, s.want.n);
	free(buf);

	/* abort() leaves what was added readable, without an END. */
	lines_free(&s.want);
	unlink(path);
	sample_write(path, &s, false);
	expect_read(path, 0, true, "without an end record", &s.want, s.want.n);
	lines_free(&s.want);
	print_message("truncated at %zu offsets: partial, records up to the last whole chunk\n",
		      3 * n + 3);
}

static void test_damaged(void **state)
{
	const char *good = tmp_path("dmg-good.mtrace");
	const char *path = tmp_path("dmg.mtrace");
	struct chunk_info ch[8];
	struct sample s;
	size_t len;

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	size_t n = chunks_list(buf, len, ch, 8);

	/* A flipped payload byte in chunk 2: chunks 0 and 1 read. */
	buf[ch[2].off + TRACE_CHUNK_HEADER_SIZE + ch[2].size / 2] ^= 0x10;
	file_store(path, buf, len);
	expect_read(path, 0, true, "chunk 2 is damaged (checksum", &s.want, s.chunk_lines[1]);
	buf[ch[2].off + TRACE_CHUNK_HEADER_SIZE + ch[2].size / 2] ^= 0x10;

	/* A flipped size in a chunk header. */
	buf[ch[3].off + TRACE_CHK_OFF_SIZE] ^= 0x01;
	file_store(path, buf, len);
	expect_read(path, 0, true, "chunk 3 is damaged (bad chunk header", &s.want,
		    s.chunk_lines[2]);
	buf[ch[3].off + TRACE_CHK_OFF_SIZE] ^= 0x01;

	/* Damage in META: nothing usable. */
	buf[ch[0].off + TRACE_CHUNK_HEADER_SIZE + 3] ^= 0xff;
	file_store(path, buf, len);
	expect_read(path, -EBADMSG, true, "chunk 0 is damaged", &s.want, 0);
	buf[ch[0].off + TRACE_CHUNK_HEADER_SIZE + 3] ^= 0xff;

	/* Garbage appended after END is never looked at. */
	uint8_t *longer = malloc(len + 100);
	memcpy(longer, buf, len);
	memset(longer + len, 0xee, 100);
	file_store(path, longer, len + 100);
	expect_read(path, 0, false, NULL, &s.want, s.want.n);
	free(longer);
	free(buf);
	lines_free(&s.want);
	(void)n;
	print_message("flipped bytes found by crc; damage before META gives EBADMSG\n");
}

/* Every single-byte flip and many cuts: the reader never crashes, and what
 * it delivers is always a prefix of the true records. */
static void test_fuzz_flips(void **state)
{
	const char *good = tmp_path("fuzz-good.mtrace");
	const char *path = tmp_path("fuzz.mtrace");
	struct sample s;
	size_t len, runs = 0;

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	for (size_t i = 0; i < len; i++) {
		uint8_t bit = (uint8_t)(1u << (rng() % 8));
		struct result res;

		buf[i] ^= bit;
		file_store(path, buf, len);
		buf[i] ^= bit;
		read_trace(path, &res);
		runs++;
		assert_true(res.rc == 0 || res.rc == -EBADMSG || res.rc == -EINVAL ||
			    res.rc == -ENOTSUP);
		assert_true(res.lines.n <= s.want.n);
		lines_expect_prefix(&res.lines, &s.want, res.lines.n);
		lines_free(&res.lines);
	}
	free(buf);
	lines_free(&s.want);
	print_message("%zu single-bit flips: no crash, always a prefix of the records\n", runs);
}

/* A chunk with a valid crc but mutated records: only the record decoder
 * stands between the bytes and a crash. */
static void rewrite_chunk(uint8_t *out, size_t *out_len, const uint8_t *hdr, uint32_t seq,
			  const uint8_t *raw, size_t raw_len, uint32_t records, uint16_t type)
{
	uint8_t *h = out + *out_len;
	size_t cs = ZSTD_compress(h + TRACE_CHUNK_HEADER_SIZE, ZSTD_compressBound(raw_len), raw,
				  raw_len, 1);
	uint32_t v;

	assert_false(ZSTD_isError(cs));
	memcpy(h, hdr, TRACE_CHUNK_HEADER_SIZE);
	memcpy(h + TRACE_CHK_OFF_TYPE, &type, 2);
	memcpy(h + TRACE_CHK_OFF_SEQ, &seq, 4);
	v = (uint32_t)cs;
	memcpy(h + TRACE_CHK_OFF_SIZE, &v, 4);
	v = (uint32_t)raw_len;
	memcpy(h + TRACE_CHK_OFF_RAW_SIZE, &v, 4);
	v = (uint32_t)crc32(0, h + TRACE_CHUNK_HEADER_SIZE, (uInt)cs);
	memcpy(h + TRACE_CHK_OFF_CRC, &v, 4);
	memcpy(h + TRACE_CHK_OFF_RECORDS, &records, 4);
	v = (uint32_t)crc32(0, h, TRACE_CHK_OFF_HEADER_CRC);
	memcpy(h + TRACE_CHK_OFF_HEADER_CRC, &v, 4);
	*out_len += TRACE_CHUNK_HEADER_SIZE + cs;
}

static void test_fuzz_records(void **state)
{
	const char *good = tmp_path("fuzzr-good.mtrace");
	const char *path = tmp_path("fuzzr.mtrace");
	struct chunk_info ch[8];
	uint8_t *raw[8];
	struct sample s;
	size_t len, n, runs = 0;

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	n = chunks_list(buf, len, ch, 8);
	for (size_t i = 0; i < n; i++) {
		raw[i] = malloc(ch[i].raw_size + 64);
		assert_int_equal(ZSTD_decompress(raw[i], ch[i].raw_size,
						 buf + ch[i].off + TRACE_CHUNK_HEADER_SIZE, ch[i].size),
				 ch[i].raw_size);
	}
	uint8_t *out = malloc(len * 4 + 4096), *mut = malloc(4096);
	for (int iter = 0; iter < 5000; iter++) {
		size_t victim = rng() % n, out_len = TRACE_HEADER_SIZE, mlen = ch[victim].raw_size;
		struct result res;

		memcpy(out, buf, TRACE_HEADER_SIZE);
		memcpy(mut, raw[victim], mlen);
		for (int k = 0, flips = 1 + (int)(rng() % 4); k < flips && mlen; k++)
			mut[rng() % mlen] = (uint8_t)rng();
		if (rng() % 4 == 0)
			mlen = rng() % (mlen + 1);
		for (size_t i = 0; i < n; i++)
			rewrite_chunk(out, &out_len, buf + ch[i].off, (uint32_t)i,
				      i == victim ? mut : raw[i], i == victim ? mlen : ch[i].raw_size,
				      ch[i].records, ch[i].type);
		file_store(path, out, out_len);
		read_trace(path, &res);
		assert_true(res.rc == 0 || res.rc == -EBADMSG);
		lines_free(&res.lines);
		runs++;
	}
	for (size_t i = 0; i < n; i++)
		free(raw[i]);
	free(out);
	free(mut);
	free(buf);
	lines_free(&s.want);
	print_message("%zu chunks with mutated records and valid crcs: no crash\n", runs);
}

/* ---- the spec, not the writer: a file built by hand ---- */

static size_t put_rec(uint8_t *p, unsigned int type, const uint8_t *payload, size_t len)
{
	size_t n = put_varint(p, type);

	n += put_varint(p + n, len);
	memcpy(p + n, payload, len);
	return n + len;
}

static void test_skips_unknown(void **state)
{
	const char *path = tmp_path("hand.mtrace");
	uint8_t file[4096] = { 0 }, raw[512], pl[256], hdr[TRACE_CHUNK_HEADER_SIZE] = "MTCK";
	size_t len = TRACE_HEADER_SIZE, rl = 0, pn = 0;
	uint16_t bom = TRACE_BYTE_ORDER;
	uint32_t v = TRACE_VERSION, hs = TRACE_HEADER_SIZE;
	struct lines want = { 0 };

	memcpy(file, "MTRACE", 6);
	memcpy(file + TRACE_HDR_OFF_BOM, &bom, 2);
	memcpy(file + TRACE_HDR_OFF_VERSION, &v, 4);
	memcpy(file + TRACE_HDR_OFF_SIZE, &hs, 4);

	/* META with all-NULL strings, no budget (three zero varints), no flags
	 * (a zero varint), no large blocks (a zero varint) and two extra bytes
	 * from a "later writer". */
	pl[pn++] = 0, pl[pn++] = 0, pl[pn++] = 0, pl[pn++] = 0;
	pn += put_varint(pl + pn, encode_zigzag(-7));
	pl[pn++] = 3, pl[pn++] = 0, pl[pn++] = 1, pl[pn++] = 2;
	pl[pn++] = 0, pl[pn++] = 0, pl[pn++] = 0;
	pl[pn++] = 0;
	pl[pn++] = 0;
	pl[pn++] = 0xaa, pl[pn++] = 0xbb;
	rl += put_rec(raw + rl, TRACE_REC_META, pl, pn);
	lines_add(&want, "meta cmd=[(null)] comm=[(null)] kernel=[(null)] host=[(null)] pid=-7 "
			 "depth=3 sample=0 mono=1 real=2");
	rl += put_rec(raw + rl, 99, (const uint8_t *)"unknown", 7);
	rl += put_rec(raw + rl, 1000000, (const uint8_t *)"", 0);
	pn = 0;
	/* start 3, length 1, offset 5, path "abc", no build id */
	memcpy(pl, "\x03\x01\x05\x04" "abc" "\x00", 8);
	pn = 8;
	rl += put_rec(raw + rl, TRACE_REC_MODULE, pl, pn);
	lines_add(&want, "module 3-4 off=5 path=[abc] bid=0:");
	/* A MARK of a kind from a later writer: kind 99, ts +10, tid 5, name 4,
	 * then fields of its own, which must not disturb anything. */
	memcpy(pl, "\x63\x14\x06\x04\xff\x01\x02", 7);
	rl += put_rec(raw + rl, TRACE_REC_MARK, pl, 7);
	lines_add(&want, "mark 99 tid=5 ts=10 name=4 ptr=0 size=0");
	rewrite_chunk(file, &len, hdr, 0, raw, rl, 5, TRACE_CHUNK_META);
	rewrite_chunk(file, &len, hdr, 1, (const uint8_t *)"whatever", 8, 1, 77);
	pn = 0;
	pl[pn++] = 9, pl[pn++] = 2, pl[pn++] = 0, pl[pn++] = 1, pl[pn++] = 0;
	rl = put_rec(raw, TRACE_REC_END, pl, pn);
	/* no stop_reason or limit field: an earlier writer's END reads as NULL */
	lines_add(&want, "end mono=9 events=2 dropped=0 exit=-1 flags=0 reason=[(null)] limit=0 of=[(null)]");
	rewrite_chunk(file, &len, hdr, 2, raw, rl, 1, TRACE_CHUNK_END);
	file_store(path, file, len);
	expect_read(path, 0, false, NULL, &want, want.n);
	lines_free(&want);
	print_message("hand-made file: unknown record and chunk types skipped, extra fields ignored, "
		      "unknown mark kind passed on\n");
}

/* The writer refuses what the format cannot say. */
static void test_marks_invalid(void **state)
{
	const char *path = tmp_path("marks-invalid.mtrace");
	struct trace_writer *w = trace_writer__open(path, &sample_meta);
	struct trace_string s0 = { 0, "zero" };
	struct trace_mark m0 = { 0 }, m8 = { .kind = MT_MARK_KIND_LAST + 1 };

	assert_non_null(w);
	assert_int_equal(trace_writer__add_string(w, &s0), -EINVAL);
	assert_int_equal(trace_writer__add_mark(w, &m0), -EINVAL);
	assert_int_equal(trace_writer__add_mark(w, &m8), -EINVAL);
	assert_int_equal(trace_writer__close(w, NULL), 0);
	print_message("string id 0 and mark kinds 0 and %d refused with EINVAL\n", MT_MARK_KIND_LAST + 1);
}

/* A trace written on a machine of the other byte order reads the same. */
static void test_other_byte_order(void **state)
{
	const char *good = tmp_path("bo-good.mtrace");
	const char *path = tmp_path("bo.mtrace");
	static const int off16[] = { TRACE_CHK_OFF_TYPE, TRACE_CHK_OFF_FLAGS };
	static const int off32[] = { TRACE_CHK_OFF_SEQ, TRACE_CHK_OFF_SIZE, TRACE_CHK_OFF_RAW_SIZE,
				     TRACE_CHK_OFF_CRC, TRACE_CHK_OFF_RECORDS };
	struct chunk_info ch[8];
	struct sample s;
	size_t len;

	sample_write(good, &s, true);
	uint8_t *buf = file_load(good, &len);
	size_t n = chunks_list(buf, len, ch, 8);
	uint16_t x16;
	uint32_t x32;

	memcpy(&x16, buf + TRACE_HDR_OFF_BOM, 2);
	x16 = __builtin_bswap16(x16);
	memcpy(buf + TRACE_HDR_OFF_BOM, &x16, 2);
	for (int f = TRACE_HDR_OFF_VERSION; f < TRACE_HEADER_SIZE; f += 4) {
		memcpy(&x32, buf + f, 4);
		x32 = __builtin_bswap32(x32);
		memcpy(buf + f, &x32, 4);
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t *h = buf + ch[i].off;

		for (size_t k = 0; k < 2; k++) {
			memcpy(&x16, h + off16[k], 2);
			x16 = __builtin_bswap16(x16);
			memcpy(h + off16[k], &x16, 2);
		}
		for (size_t k = 0; k < 5; k++) {
			memcpy(&x32, h + off32[k], 4);
			x32 = __builtin_bswap32(x32);
			memcpy(h + off32[k], &x32, 4);
		}
		x32 = __builtin_bswap32((uint32_t)crc32(0, h, TRACE_CHK_OFF_HEADER_CRC));
		memcpy(h + TRACE_CHK_OFF_HEADER_CRC, &x32, 4);
	}
	file_store(path, buf, len);
	expect_read(path, 0, false, NULL, &s.want, s.want.n);
	free(buf);
	lines_free(&s.want);
	print_message("byte-swapped headers: same records\n");
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[sizeof(tmpdir) + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varint_round_trip),
		cmocka_unit_test(test_varint_rejects_overlong),
		cmocka_unit_test(test_round_trip_every_record),
		cmocka_unit_test(test_callback_stops_read),
		cmocka_unit_test(test_many_events),
		cmocka_unit_test(test_small_chunks),
		cmocka_unit_test(test_create_rules),
		cmocka_unit_test(test_write_error_sticky),
		cmocka_unit_test(test_flush_interleaved),
		cmocka_unit_test(test_write_error_in_thread),
		cmocka_unit_test(test_not_a_trace),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_unheld),
		cmocka_unit_test(test_fuzz_flips),
		cmocka_unit_test(test_fuzz_records),
		cmocka_unit_test(test_skips_unknown),
		cmocka_unit_test(test_marks_invalid),
		cmocka_unit_test(test_other_byte_order),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
