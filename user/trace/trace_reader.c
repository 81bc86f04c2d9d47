// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace reader: walks the chunks of docs/trace-format.md, checks each one,
 * decompresses it into a reused buffer and decodes its records into structs
 * on the stack, calling the caller's callbacks.
 *
 * Any input must be safe: every length is checked against what remains,
 * buffers grow only up to TRACE_CHUNK_RAW_MAX, and damage stops the read
 * with a phrase in r->problem instead of a crash. Reads use pread rather
 * than mmap so a file cut short under us is a short read, not a SIGBUS.
 */
#include "trace_reader.h"
#include "trace_format.h"
#include "varint.h"

#include <byteswap.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

/* How the last read stopped. */
enum read_state {
	READ_RUNNING,
	READ_END,	/* END chunk read: complete */
	READ_TRUNCATED, /* file ends early: partial */
	READ_DAMAGED,	/* bad chunk: partial, or EBADMSG before META */
	READ_STOPPED,	/* a callback returned non-zero */
	READ_FAILED,	/* I/O or memory error */
};

struct trace_reader {
	int fd;
	bool swap;		/* file written in the other byte order */
	uint32_t header_size;
	ZSTD_DCtx *dctx;
	uint8_t *cbuf;		/* compressed payload of the current chunk */
	size_t ccap;
	uint8_t *rbuf;		/* its records */
	size_t rcap;
	char *sbuf;		/* NUL-terminated copies of the current record's strings */
	size_t scap, slen;
	enum read_state state;
	int rc;			/* what trace_reader__read returns */
	bool meta_seen;
	char problem[160];
	char damage[160];      /* damage after the END record; the read itself succeeded */
	uint64_t frames[TRACE_STACK_MAX_FRAMES];
	struct trace_frame sym_frames[TRACE_SYMBOL_MAX_FRAMES];
	struct trace_vma *vmas;	/* the current RESIDENT record's */
	size_t vmas_cap;
	struct trace_page_run *runs;
	size_t runs_cap;
};

struct chunk {
	uint64_t off;
	uint16_t type;
	uint32_t seq, size, raw_size, crc, records;
};

/* Delta state of docs/trace-format.md; zero at each chunk. */
struct delta_state {
	uint64_t ts, ptr, stack, addr, pool_ptr;
	uint32_t tid;
	bool have_tid;
};

/* Decoders return 0 to go on, 1 when a callback stopped the read (its value
 * in r->rc), -EBADMSG for damage, or another -errno. */
#define DECODE_STOP 1

static int deliver(struct trace_reader *r, int cb_rc)
{
	if (!cb_rc)
		return 0;
	r->rc = cb_rc;
	r->state = READ_STOPPED;
	return DECODE_STOP;
}

__attribute__((format(printf, 3, 4)))
static void reader_stop(struct trace_reader *r, enum read_state state, const char *fmt, ...)
{
	va_list ap;

	r->state = state;
	va_start(ap, fmt);
	vsnprintf(r->problem, sizeof(r->problem), fmt, ap);
	va_end(ap);
}

static int reader_io_error(struct trace_reader *r, int err)
{
	r->rc = err;
	reader_stop(r, READ_FAILED, "cannot read the trace: %s", strerror(-err));
	return err;
}

static int grow(void *pbuf, size_t *cap, size_t need)
{
	void **buf = pbuf;

	if (need <= *cap)
		return 0;
	void *p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

/* ---- field decoding ---- */

static inline int get_u32(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint64_t v;

	if (get_varint(p, end, &v) || v > UINT32_MAX)
		return -EBADMSG;
	*out = (uint32_t)v;
	return 0;
}

static inline int get_s32(const uint8_t **p, const uint8_t *end, int32_t *out)
{
	uint64_t v;

	if (get_varint(p, end, &v))
		return -EBADMSG;
	int64_t s = decode_zigzag(v);
	if (s < INT32_MIN || s > INT32_MAX)
		return -EBADMSG;
	*out = (int32_t)s;
	return 0;
}

/* delta(x, prev): *PREV becomes x. */
static inline int get_delta(const uint8_t **p, const uint8_t *end, uint64_t *prev)
{
	uint64_t v;

	if (get_varint(p, end, &v))
		return -EBADMSG;
	*prev += (uint64_t)decode_zigzag(v);
	return 0;
}

/* A str field, copied NUL-terminated into sbuf. sbuf was sized to the
 * record's payload, and a string of n bytes takes at least n + 1 of it. */
static int get_str(struct trace_reader *r, const uint8_t **p, const uint8_t *end, const char **out)
{
	uint64_t n;

	if (get_varint(p, end, &n))
		return -EBADMSG;
	if (n == 0) {
		*out = NULL;
		return 0;
	}
	n--;
	if (n > (uint64_t)(end - *p))
		return -EBADMSG;
	char *s = r->sbuf + r->slen;
	memcpy(s, *p, n);
	s[n] = '\0';
	r->slen += n + 1;
	*p += n;
	*out = s;
	return 0;
}

static int sbuf_reset(struct trace_reader *r, size_t payload)
{
	r->slen = 0;
	return grow(&r->sbuf, &r->scap, payload + 1);
}

/* ---- records ---- */

static int rec_meta(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		    const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_meta m;
	int err = sbuf_reset(r, (size_t)(end - p));
	if (err)
		return err;

	if (get_str(r, &p, end, &m.command_line) || get_str(r, &p, end, &m.comm) ||
	    get_str(r, &p, end, &m.kernel) || get_str(r, &p, end, &m.hostname) ||
	    get_s32(&p, end, &m.pid) || get_u32(&p, end, &m.stack_depth) ||
	    get_varint(&p, end, &m.sample_bytes) || get_varint(&p, end, &m.start_mono_ns) ||
	    get_varint(&p, end, &m.start_real_ns))
		return -EBADMSG;
	/* added later: absent from older traces */
	m.budget_ppm = m.hit_entry_ns = m.hit_return_ns = m.flags = 0;
	if (p < end && (get_varint(&p, end, &m.budget_ppm) || get_varint(&p, end, &m.hit_entry_ns) ||
			get_varint(&p, end, &m.hit_return_ns)))
		return -EBADMSG;
	if (p < end && get_varint(&p, end, &m.flags))
		return -EBADMSG;
	m.large_bytes = 0;
	if (p < end && get_varint(&p, end, &m.large_bytes))
		return -EBADMSG;
	r->meta_seen = true;
	return ops->meta ? deliver(r, ops->meta(ctx, &m)) : 0;
}

static int rec_module(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		      const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_module m;
	uint64_t len;
	int err = sbuf_reset(r, (size_t)(end - p));
	if (err)
		return err;

	memset(m.build_id, 0, sizeof(m.build_id));
	if (get_varint(&p, end, &m.start) || get_varint(&p, end, &len) ||
	    get_varint(&p, end, &m.file_offset) || get_str(r, &p, end, &m.path) ||
	    get_u32(&p, end, &m.build_id_len))
		return -EBADMSG;
	if (m.build_id_len > TRACE_BUILD_ID_MAX || m.build_id_len > (size_t)(end - p))
		return -EBADMSG;
	memcpy(m.build_id, p, m.build_id_len);
	m.end = m.start + len;
	return ops->module ? deliver(r, ops->module(ctx, &m)) : 0;
}

static int rec_thread(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		      const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_thread t;
	int err = sbuf_reset(r, (size_t)(end - p));
	if (err)
		return err;

	if (get_u32(&p, end, &t.tid) || get_str(r, &p, end, &t.name))
		return -EBADMSG;
	return ops->thread ? deliver(r, ops->thread(ctx, &t)) : 0;
}

static int rec_stack(struct trace_reader *r, struct delta_state *st, const uint8_t *p,
		     const uint8_t *end, const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_stack s;
	uint64_t prev = 0;

	if (get_delta(&p, end, &st->stack) || st->stack == 0 || st->stack > UINT32_MAX)
		return -EBADMSG;
	if (get_u32(&p, end, &s.nr) || s.nr > TRACE_STACK_MAX_FRAMES)
		return -EBADMSG;
	for (uint32_t i = 0; i < s.nr; i++) {
		if (get_delta(&p, end, &prev))
			return -EBADMSG;
		r->frames[i] = prev;
	}
	s.id = (uint32_t)st->stack;
	s.frames = r->frames;
	return ops->stack ? deliver(r, ops->stack(ctx, &s)) : 0;
}

/* The ts and tid fields that events and marks share. */
static inline int get_ts_tid(struct delta_state *st, const uint8_t **p, const uint8_t *end)
{
	uint64_t tid;

	if (get_delta(p, end, &st->ts) || get_varint(p, end, &tid))
		return -EBADMSG;
	if (tid) {
		if (tid > (uint64_t)UINT32_MAX + 1)
			return -EBADMSG;
		st->tid = (uint32_t)(tid - 1);
		st->have_tid = true;
	} else if (!st->have_tid) {
		return -EBADMSG;
	}
	return 0;
}

/* The hot path: most records are events. */
static inline int rec_event(struct trace_reader *r, struct delta_state *st, uint64_t type,
			    const uint8_t *p, const uint8_t *end,
			    const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_event e = { 0 };

	if (get_ts_tid(st, &p, end))
		return -EBADMSG;
	if (type == TRACE_REC_REALLOC) {
		if (get_delta(&p, end, &st->ptr))
			return -EBADMSG;
		e.old_ptr = st->ptr;
	}
	if (get_delta(&p, end, &st->ptr))
		return -EBADMSG;
	if (type != TRACE_REC_FREE &&
	    (get_varint(&p, end, &e.size) || get_u32(&p, end, &e.stack_id)))
		return -EBADMSG;
	e.type = type == TRACE_REC_ALLOC ? MT_EVENT_ALLOC :
		 type == TRACE_REC_FREE	 ? MT_EVENT_FREE :
					   MT_EVENT_REALLOC;
	e.tid = st->tid;
	e.ts = st->ts;
	e.ptr = st->ptr;
	return ops->event ? deliver(r, ops->event(ctx, &e)) : 0;
}

static int rec_string(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		      const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_string s;
	int err = sbuf_reset(r, (size_t)(end - p));
	if (err)
		return err;

	if (get_u32(&p, end, &s.id) || s.id == 0 || get_str(r, &p, end, &s.str))
		return -EBADMSG;
	return ops->string ? deliver(r, ops->string(ctx, &s)) : 0;
}

/* A kind this reader does not know is delivered with its common fields;
 * its own fields (after them) cannot touch the delta state, by the spec. */
static int rec_mark(struct trace_reader *r, struct delta_state *st, const uint8_t *p,
		    const uint8_t *end, const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_mark m = { 0 };

	if (get_u32(&p, end, &m.kind) || m.kind == 0 || get_ts_tid(st, &p, end) ||
	    get_u32(&p, end, &m.name))
		return -EBADMSG;
	if (m.kind == MT_MARK_POOL_ALLOC || m.kind == MT_MARK_POOL_FREE) {
		if (get_delta(&p, end, &st->pool_ptr))
			return -EBADMSG;
		m.ptr = st->pool_ptr;
	}
	if ((m.kind == MT_MARK_POOL_ALLOC || m.kind == MT_MARK_WINDOW_BEGIN) && get_varint(&p, end, &m.size))
		return -EBADMSG;
	/* added later: a WINDOW_END of an earlier writer ends here (size 0) */
	if (m.kind == MT_MARK_WINDOW_END && p < end && get_varint(&p, end, &m.size))
		return -EBADMSG;
	m.tid = st->tid;
	m.ts = st->ts;
	return ops->mark ? deliver(r, ops->mark(ctx, &m)) : 0;
}

static int rec_drops(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		     const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_drops d;

	if (get_u32(&p, end, &d.cpu) || get_varint(&p, end, &d.count))
		return -EBADMSG;
	return ops->drops ? deliver(r, ops->drops(ctx, &d)) : 0;
}

static int symbol_frame(struct trace_reader *r, const uint8_t **p, const uint8_t *end,
			struct trace_frame *f)
{
	if (get_str(r, p, end, &f->function) || get_str(r, p, end, &f->file) ||
	    get_u32(p, end, &f->line) || get_u32(p, end, &f->column))
		return -EBADMSG;
	return 0;
}

static int rec_symbol(struct trace_reader *r, struct delta_state *st, const uint8_t *p,
		      const uint8_t *end, const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_symbol s;
	uint64_t module;
	int err = sbuf_reset(r, (size_t)(end - p));
	if (err)
		return err;

	if (get_delta(&p, end, &st->addr) || get_varint(&p, end, &module) ||
	    get_varint(&p, end, &s.module_offset) || get_u32(&p, end, &s.nframes))
		return -EBADMSG;
	if (module > (uint64_t)INT32_MAX + 1 || s.nframes > TRACE_SYMBOL_MAX_FRAMES)
		return -EBADMSG;
	for (uint32_t i = 0; i < s.nframes; i++)
		if (symbol_frame(r, &p, end, &r->sym_frames[i]))
			return -EBADMSG;
	s.language = TRACE_LANG_NATIVE;
	if (p < end && get_u32(&p, end, &s.language))
		return -EBADMSG;
	s.addr = st->addr;
	s.module = (int32_t)((int64_t)module - 1);
	s.frames = r->sym_frames;
	return ops->symbol ? deliver(r, ops->symbol(ctx, &s)) : 0;
}

static int rec_end(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		   const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_end e;
	int err = sbuf_reset(r, (size_t)(end - p));

	if (err)
		return err;
	if (get_varint(&p, end, &e.end_mono_ns) || get_varint(&p, end, &e.events) ||
	    get_varint(&p, end, &e.dropped) || get_s32(&p, end, &e.exit_status) ||
	    get_u32(&p, end, &e.flags))
		return -EBADMSG;
	e.stop_reason = NULL; /* absent in traces of earlier writers, as the limit */
	e.memory_limit = 0;
	e.memory_limit_of = NULL;
	if (p < end && get_str(r, &p, end, &e.stop_reason))
		return -EBADMSG;
	if (p < end && (get_varint(&p, end, &e.memory_limit) || get_str(r, &p, end, &e.memory_limit_of)))
		return -EBADMSG;
	return ops->end ? deliver(r, ops->end(ctx, &e)) : 0;
}

static int rec_rss(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		   const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_rss s;

	if (get_varint(&p, end, &s.ts) || get_varint(&p, end, &s.anon) || get_varint(&p, end, &s.file) ||
	    get_varint(&p, end, &s.shmem))
		return -EBADMSG;
	return ops->rss ? deliver(r, ops->rss(ctx, &s)) : 0;
}

static int rec_map(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		   const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_map m;

	if (get_varint(&p, end, &m.ts) || get_u32(&p, end, &m.tid) || get_u32(&p, end, &m.call) ||
	    get_u32(&p, end, &m.flags) || get_u32(&p, end, &m.stack_id) || get_varint(&p, end, &m.ret) ||
	    get_varint(&p, end, &m.a0) || get_varint(&p, end, &m.a1) || get_varint(&p, end, &m.a2) ||
	    get_varint(&p, end, &m.a3))
		return -EBADMSG;
	return ops->map ? deliver(r, ops->map(ctx, &m)) : 0;
}

static int rec_rollup(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
		      const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_rollup ro;
	uint64_t n;

	if (sbuf_reset(r, (size_t)(end - p)))
		return -ENOMEM;
	if (get_varint(&p, end, &ro.ts) || get_varint(&p, end, &n) || n > TRACE_ROLLUP_MAX)
		return -EBADMSG;
	ro.n = (uint32_t)n;
	for (uint32_t i = 0; i < ro.n; i++)
		if (get_str(r, &p, end, &ro.name[i]) || !ro.name[i] || get_varint(&p, end, &ro.bytes[i]))
			return -EBADMSG;
	return ops->rollup ? deliver(r, ops->rollup(ctx, &ro)) : 0;
}

/* Pages of PS bytes as a byte count, or false past 64 bits. */
static bool pages_bytes(uint64_t pages, uint64_t ps, uint64_t *bytes)
{
	return !__builtin_mul_overflow(pages, ps, bytes);
}

static int rec_resident(struct trace_reader *r, const uint8_t *p, const uint8_t *end,
			const struct trace_reader_ops *ops, void *ctx)
{
	struct trace_resident res;
	uint64_t ps, nvmas, at = 0;
	size_t nruns = 0;

	if (get_varint(&p, end, &res.ts) || get_varint(&p, end, &ps) || ps < 1024 || ps > (1u << 30) ||
	    (ps & (ps - 1)) || get_varint(&p, end, &nvmas) || nvmas > (uint64_t)(end - p) / 4)
		return -EBADMSG;
	if (grow(&r->vmas, &r->vmas_cap, (nvmas ? nvmas : 1) * sizeof(*r->vmas)))
		return -ENOMEM;
	res.page_size = (uint32_t)ps;
	res.nvmas = (uint32_t)nvmas;
	for (uint64_t i = 0; i < nvmas; i++) {
		struct trace_vma *v = &r->vmas[i];
		uint64_t gap, len, kind, n, gb, lb;

		if (get_varint(&p, end, &gap) || get_varint(&p, end, &len) || get_varint(&p, end, &kind) ||
		    get_varint(&p, end, &n) || kind >= TRACE_VMA_KINDS || !len || n > (uint64_t)(end - p) / 2 ||
		    !pages_bytes(gap, ps, &gb) || !pages_bytes(len, ps, &lb) || __builtin_add_overflow(at, gb, &v->start) ||
		    __builtin_add_overflow(v->start, lb, &v->end))
			return -EBADMSG;
		v->kind = (uint32_t)kind;
		v->nruns = (uint32_t)n;
		if (grow(&r->runs, &r->runs_cap, (nruns + n + 1) * sizeof(*r->runs)))
			return -ENOMEM;
		at = v->start;
		for (uint64_t j = 0; j < n; j++, nruns++) {
			struct trace_page_run *run = &r->runs[nruns];

			if (get_varint(&p, end, &gap) || get_varint(&p, end, &len) || !len ||
			    !pages_bytes(gap, ps, &gb) || !pages_bytes(len, ps, &lb) ||
			    __builtin_add_overflow(at, gb, &run->start) || __builtin_add_overflow(run->start, lb, &run->end) ||
			    run->end > v->end)
				return -EBADMSG;
			at = run->end;
		}
		at = v->end;
	}
	res.nruns = (uint32_t)nruns;
	res.vmas = r->vmas;
	res.runs = r->runs;
	return ops->resident ? deliver(r, ops->resident(ctx, &res)) : 0;
}

static int record_decode(struct trace_reader *r, struct delta_state *st, uint64_t type,
			 const uint8_t *p, const uint8_t *end,
			 const struct trace_reader_ops *ops, void *ctx)
{
	switch (type) {
	case TRACE_REC_ALLOC:
	case TRACE_REC_FREE:
	case TRACE_REC_REALLOC:
		return rec_event(r, st, type, p, end, ops, ctx);
	case TRACE_REC_STACK:
		return rec_stack(r, st, p, end, ops, ctx);
	case TRACE_REC_META:
		return rec_meta(r, p, end, ops, ctx);
	case TRACE_REC_MODULE:
		return rec_module(r, p, end, ops, ctx);
	case TRACE_REC_THREAD:
		return rec_thread(r, p, end, ops, ctx);
	case TRACE_REC_DROPS:
		return rec_drops(r, p, end, ops, ctx);
	case TRACE_REC_SYMBOL:
		return rec_symbol(r, st, p, end, ops, ctx);
	case TRACE_REC_END:
		return rec_end(r, p, end, ops, ctx);
	case TRACE_REC_STRING:
		return rec_string(r, p, end, ops, ctx);
	case TRACE_REC_MARK:
		return rec_mark(r, st, p, end, ops, ctx);
	case TRACE_REC_RSS:
		return rec_rss(r, p, end, ops, ctx);
	case TRACE_REC_ROLLUP:
		return rec_rollup(r, p, end, ops, ctx);
	case TRACE_REC_MAP:
		return rec_map(r, p, end, ops, ctx);
	case TRACE_REC_RESIDENT:
		return rec_resident(r, p, end, ops, ctx);
	case 0:
		return -EBADMSG; /* never written */
	}
	return 0; /* a later writer's record: skip it */
}

static int chunk_records(struct trace_reader *r, const struct chunk *c,
			 const struct trace_reader_ops *ops, void *ctx)
{
	const uint8_t *p = r->rbuf, *end = r->rbuf + c->raw_size;
	struct delta_state st = { 0 };
	uint32_t n = 0;
	int rc;

	while (p < end) {
		const uint8_t *start = p;
		uint64_t type, len;

		if (get_varint(&p, end, &type) || get_varint(&p, end, &len) ||
		    len > (uint64_t)(end - p))
			rc = -EBADMSG;
		else
			rc = record_decode(r, &st, type, p, p + len, ops, ctx);
		if (rc == -EBADMSG)
			reader_stop(r, READ_DAMAGED, "chunk %u is damaged (bad record at byte %zu)",
				    c->seq, (size_t)(start - r->rbuf));
		else if (rc < 0)
			reader_io_error(r, rc);
		if (rc)
			return rc;
		p += len;
		n++;
	}
	if (n != c->records) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (%u records, header says %u)",
			    c->seq, n, c->records);
		return -EBADMSG;
	}
	return 0;
}

/* ---- chunks ---- */

static uint16_t rd16(const struct trace_reader *r, const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return r->swap ? bswap_16(v) : v;
}

static uint32_t rd32(const struct trace_reader *r, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return r->swap ? bswap_32(v) : v;
}

/* pread all of LEN, or fewer bytes only at end of file. */
static ssize_t read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static void truncated(struct trace_reader *r, uint32_t seq)
{
	reader_stop(r, READ_TRUNCATED, "trace ends inside chunk %u; the recorder was probably killed",
		    seq);
}

/* Read and check the header of chunk SEQ at C->off; FILE_SIZE bytes exist. */
static int chunk_header(struct trace_reader *r, struct chunk *c, uint32_t seq, uint64_t file_size)
{
	uint8_t h[TRACE_CHUNK_HEADER_SIZE];
	ssize_t n = read_at(r->fd, h, sizeof(h), c->off);

	if (n < 0)
		return reader_io_error(r, (int)n);
	if (n < (ssize_t)sizeof(h)) {
		truncated(r, seq);
		return 1;
	}
	if (memcmp(h, TRACE_CHUNK_MAGIC, TRACE_CHUNK_MAGIC_LEN) ||
	    rd32(r, h + TRACE_CHK_OFF_HEADER_CRC) != crc32(0, h, TRACE_CHK_OFF_HEADER_CRC)) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (bad chunk header)", seq);
		return 1;
	}
	c->type = rd16(r, h + TRACE_CHK_OFF_TYPE);
	c->seq = rd32(r, h + TRACE_CHK_OFF_SEQ);
	c->size = rd32(r, h + TRACE_CHK_OFF_SIZE);
	c->raw_size = rd32(r, h + TRACE_CHK_OFF_RAW_SIZE);
	c->crc = rd32(r, h + TRACE_CHK_OFF_CRC);
	c->records = rd32(r, h + TRACE_CHK_OFF_RECORDS);
	if (c->seq != seq || c->raw_size > TRACE_CHUNK_RAW_MAX ||
	    c->size > ZSTD_COMPRESSBOUND(c->raw_size)) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (impossible chunk header)", seq);
		return 1;
	}
	uint64_t left = file_size - c->off; /* > 0: the caller checked */
	if (left < TRACE_CHUNK_HEADER_SIZE || c->size > left - TRACE_CHUNK_HEADER_SIZE) {
		truncated(r, seq);
		return 1;
	}
	return 0;
}

static int chunk_payload(struct trace_reader *r, const struct chunk *c)
{
	ssize_t n;

	if (grow(&r->cbuf, &r->ccap, c->size + 1))
		return reader_io_error(r, -ENOMEM);
	n = read_at(r->fd, r->cbuf, c->size, c->off + TRACE_CHUNK_HEADER_SIZE);
	if (n < 0)
		return reader_io_error(r, (int)n);
	if ((size_t)n < c->size) {
		truncated(r, c->seq); /* the file shrank under us */
		return 1;
	}
	if (crc32(0, r->cbuf, c->size) != c->crc) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (checksum mismatch)", c->seq);
		return 1;
	}
	return 0;
}

static int chunk_decompress(struct trace_reader *r, const struct chunk *c)
{
	unsigned long long declared = ZSTD_getFrameContentSize(r->cbuf, c->size);
	size_t n;

	/* A frame that says it holds something else is refused before we
	 * allocate for it. */
	if (declared == ZSTD_CONTENTSIZE_ERROR ||
	    (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != c->raw_size)) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (bad zstd frame)", c->seq);
		return 1;
	}
	if (grow(&r->rbuf, &r->rcap, (size_t)c->raw_size + 1))
		return reader_io_error(r, -ENOMEM);
	n = ZSTD_decompressDCtx(r->dctx, r->rbuf, c->raw_size, r->cbuf, c->size);
	if (ZSTD_isError(n) || n != c->raw_size) {
		reader_stop(r, READ_DAMAGED, "chunk %u is damaged (zstd: %s)", c->seq,
			    ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size");
		return 1;
	}
	return 0;
}

static bool chunk_type_known(uint16_t type)
{
	return type >= TRACE_CHUNK_META && type <= TRACE_CHUNK_END;
}

/* One chunk: 0 to go on to the next, non-zero when the read is over. */
static int chunk_read(struct trace_reader *r, struct chunk *c, uint32_t seq, uint64_t file_size,
		      const struct trace_reader_ops *ops, void *ctx)
{
	int rc;

	rc = chunk_header(r, c, seq, file_size);
	if (!rc)
		rc = chunk_payload(r, c);
	if (rc || !chunk_type_known(c->type))
		return rc;
	rc = chunk_decompress(r, c);
	if (!rc)
		rc = chunk_records(r, c, ops, ctx);
	if (!rc && c->type == TRACE_CHUNK_END)
		r->state = READ_END;
	return rc || r->state == READ_END;
}

static void reader_walk(struct trace_reader *r, const struct trace_reader_ops *ops, void *ctx)
{
	struct chunk c = { .off = r->header_size };
	struct stat st;
	uint32_t seq;

	if (fstat(r->fd, &st) < 0) {
		reader_io_error(r, -errno);
		return;
	}
	for (seq = 0;; seq++) {
		if ((uint64_t)st.st_size <= c.off)
			break;
		if (chunk_read(r, &c, seq, (uint64_t)st.st_size, ops, ctx)) {
			uint64_t after = c.off + TRACE_CHUNK_HEADER_SIZE + (uint64_t)c.size;

			/* Nothing may follow the END chunk: bytes there were
			 * appended or are damage, and are said to be. */
			if (r->state == READ_END && (uint64_t)st.st_size > after)
				snprintf(r->damage, sizeof(r->damage),
					 "%llu bytes after the end record, at offset %llu",
					 (unsigned long long)((uint64_t)st.st_size - after),
					 (unsigned long long)after);
			return;
		}
		c.off += TRACE_CHUNK_HEADER_SIZE + (uint64_t)c.size;
	}
	if (seq == 0)
		reader_stop(r, READ_TRUNCATED,
			    "trace ends after its file header; the recorder was probably killed");
	else
		reader_stop(r, READ_TRUNCATED,
			    "trace ends after chunk %u without an end record; the recorder was probably killed",
			    seq - 1);
}

int trace_reader__read(struct trace_reader *r, const struct trace_reader_ops *ops, void *ctx)
{
	r->state = READ_RUNNING;
	r->rc = 0;
	r->meta_seen = false;
	r->problem[0] = '\0';
	r->damage[0] = '\0';
	reader_walk(r, ops, ctx);
	switch (r->state) {
	case READ_DAMAGED:
		return r->meta_seen ? 0 : -EBADMSG;
	case READ_STOPPED:
	case READ_FAILED:
		return r->rc;
	default:
		return 0;
	}
}

const char *trace_reader__damage(const struct trace_reader *r)
{
	return r->damage[0] ? r->damage : NULL;
}

bool trace_reader__partial(const struct trace_reader *r)
{
	return r->state == READ_TRUNCATED || r->state == READ_DAMAGED;
}

const char *trace_reader__problem(const struct trace_reader *r)
{
	return r->problem;
}

/* ---- open/close ---- */

static int reader_check_header(struct trace_reader *r)
{
	uint8_t h[TRACE_HEADER_SIZE];
	uint16_t bom;
	uint32_t version;
	ssize_t n = read_at(r->fd, h, sizeof(h), 0);

	if (n < 0)
		return (int)n;
	if (n < (ssize_t)sizeof(h) || memcmp(h, TRACE_MAGIC, TRACE_MAGIC_LEN))
		return -EINVAL;
	memcpy(&bom, h + TRACE_HDR_OFF_BOM, sizeof(bom));
	if (bom != TRACE_BYTE_ORDER && bom != bswap_16(TRACE_BYTE_ORDER))
		return -EINVAL;
	r->swap = bom != TRACE_BYTE_ORDER;
	version = rd32(r, h + TRACE_HDR_OFF_VERSION);
	r->header_size = rd32(r, h + TRACE_HDR_OFF_SIZE);
	if (version == 0 || r->header_size < TRACE_HEADER_SIZE ||
	    r->header_size > TRACE_HEADER_SIZE_MAX)
		return -EINVAL;
	if (version > TRACE_VERSION)
		return -ENOTSUP;
	return 0;
}

struct trace_reader *trace_reader__open(const char *path)
{
	struct trace_reader *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return NULL;
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		err = -errno;
		goto err_free;
	}
	err = reader_check_header(r);
	if (err)
		goto err_close;
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		err = -ENOMEM;
		goto err_close;
	}
	return r;

err_close:
	close(r->fd);
err_free:
	free(r);
	errno = -err;
	return NULL;
}

void trace_reader__close(struct trace_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->dctx);
	close(r->fd);
	free(r->cbuf);
	free(r->rbuf);
	free(r->sbuf);
	free(r->vmas);
	free(r->runs);
	free(r);
}
