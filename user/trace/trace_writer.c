// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Trace writer: encodes records into a raw buffer, and turns the buffer into
 * a zstd-compressed chunk when it holds TRACE_CHUNK_TARGET bytes, when the
 * chunk type changes, or on flush. docs/trace-format.md is the layout.
 *
 * The per-event path does no allocation and no stdio: it reserves room in the
 * raw buffer (which only grows for unusually large records) and encodes.
 *
 * Compressing and writing a chunk takes milliseconds, which the caller (the
 * drain of per-CPU ring buffers) cannot spare, so one thread of the writer's
 * own does it. Records are still encoded by the caller, so the delta state
 * never crosses threads. There are exactly two raw buffers: the caller fills
 * one while the thread writes the other, and a caller that fills its buffer
 * before the thread is done waits. So memory stays bounded however long the
 * recording runs, and no chunk waits in a queue.
 */
#include "trace_writer.h"
#include "trace_format.h"
#include "target_file.h"
#include "varint.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

/* Room for an event record: type, size and six 10-byte varints, rounded up. */
#define EVENT_RECORD_MAX 80
/* Extra room every reservation gets so rec_close can widen the size field. */
#define RECORD_SLACK (2 * VARINT_MAX_LEN)

/* A closed chunk, as handed to the writer thread. */
struct chunk {
	uint8_t *raw;
	size_t len, cap;
	uint16_t type;
	uint32_t records, seq;
};

struct trace_writer {
	int fd;                /* -1 between writes when unheld (PATH) */
	char *path;            /* open_unheld: reopened at each write */
	uint64_t dev, ino;     /* ... and must still be this file */
	/* The caller's side: the chunk being built. */
	uint8_t *raw;		  /* records of the chunk being built */
	size_t raw_len, raw_cap;
	uint16_t chunk_type;	  /* type of the chunk being built */
	uint32_t records;	  /* records in the chunk being built */
	uint32_t seq;		  /* seq of the next chunk */
	/* Delta state; reset at every chunk so each decodes on its own. */
	uint64_t prev_ts, prev_ptr, prev_stack, prev_addr, prev_pool_ptr;
	uint32_t prev_tid;
	bool have_tid;

	/* Shared with the thread, under lock. */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;	  /* job handed over, or stop */
	pthread_cond_t idle;	  /* job written */
	struct chunk job;	  /* the thread's alone while busy; else the spare buffer */
	bool busy, stop;
	/* Set by the thread; atomic so the per-event check needs no lock. */
	int err;		  /* sticky -errno of the first I/O failure */
	uint64_t bytes;		  /* written to the file */

	/* The thread's alone. */
	ZSTD_CCtx *cctx;
	uint8_t *out;		  /* chunk header + compressed payload */
	size_t out_cap;
	bool discard;          /* open_discard: chunks are neither compressed nor written */
	size_t chunk_target;   /* raw bytes that close a chunk, TRACE_CHUNK_TARGET at most */
};

static void writer_reset_deltas(struct trace_writer *w)
{
	w->prev_ts = w->prev_ptr = w->prev_stack = w->prev_addr = w->prev_pool_ptr = 0;
	w->prev_tid = 0;
	w->have_tid = false;
}

/* The descriptor to write to: the one held, or (unheld) the file reopened
 * to append, checked to be the file created before it is opened (a FIFO
 * put at its name would block the writer for ever); -errno. Give it back
 * with writer_fd_put. */
static int writer_fd_get(const struct trace_writer *w)
{
	if (!w->path)
		return w->fd;
	return file_reopen_made(w->path, w->dev, w->ino, O_WRONLY | O_APPEND);
}

static void writer_fd_put(const struct trace_writer *w, int fd)
{
	if (w->path && fd >= 0)
		close(fd);
}

/* write(2) until done: the file is useless with a hole in a chunk. */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, sizeof(v)); }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof(v)); }

static int writer_grow_out(struct trace_writer *w, size_t need)
{
	if (need <= w->out_cap)
		return 0;
	uint8_t *p = realloc(w->out, need);
	if (!p)
		return -ENOMEM;
	w->out = p;
	w->out_cap = need;
	return 0;
}

static void chunk_header_fill(uint8_t *h, const struct chunk *c, size_t csize)
{
	memcpy(h, TRACE_CHUNK_MAGIC, TRACE_CHUNK_MAGIC_LEN);
	put_u16(h + TRACE_CHK_OFF_TYPE, c->type);
	put_u16(h + TRACE_CHK_OFF_FLAGS, 0);
	put_u32(h + TRACE_CHK_OFF_SEQ, c->seq);
	put_u32(h + TRACE_CHK_OFF_SIZE, (uint32_t)csize);
	put_u32(h + TRACE_CHK_OFF_RAW_SIZE, (uint32_t)c->len);
	put_u32(h + TRACE_CHK_OFF_CRC, (uint32_t)crc32(0, h + TRACE_CHUNK_HEADER_SIZE, (uInt)csize));
	put_u32(h + TRACE_CHK_OFF_RECORDS, c->records);
	put_u32(h + TRACE_CHK_OFF_HEADER_CRC, (uint32_t)crc32(0, h, TRACE_CHK_OFF_HEADER_CRC));
}

/* On the thread: compress C into one chunk and write it. */
static int chunk_write(struct trace_writer *w, const struct chunk *c)
{
	size_t bound = ZSTD_compressBound(c->len);
	size_t csize;
	int err, fd;

	if (w->discard)
		return 0;
	err = writer_grow_out(w, TRACE_CHUNK_HEADER_SIZE + bound);
	if (err)
		return err;
	csize = ZSTD_compressCCtx(w->cctx, w->out + TRACE_CHUNK_HEADER_SIZE, bound, c->raw, c->len,
				  TRACE_ZSTD_LEVEL);
	if (ZSTD_isError(csize))
		return -EIO;
	chunk_header_fill(w->out, c, csize);
	fd = writer_fd_get(w);
	err = fd < 0 ? fd : write_full(fd, w->out, TRACE_CHUNK_HEADER_SIZE + csize);
	writer_fd_put(w, fd);
	if (err)
		return err;
	__atomic_fetch_add(&w->bytes, TRACE_CHUNK_HEADER_SIZE + csize, __ATOMIC_RELAXED);
	return 0;
}

/* Write each job handed over; on stop, finish the one in hand first. */
static void *writer_thread(void *arg)
{
	struct trace_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->busy && !w->stop)
			pthread_cond_wait(&w->wake, &w->lock);
		if (!w->busy)
			break;
		/* The caller leaves the job alone while busy: no lock needed. */
		pthread_mutex_unlock(&w->lock);
		int err = chunk_write(w, &w->job);
		pthread_mutex_lock(&w->lock);
		if (err)
			__atomic_store_n(&w->err, err, __ATOMIC_RELAXED);
		w->busy = false;
		pthread_cond_signal(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int writer_err(const struct trace_writer *w)
{
	return __atomic_load_n(&w->err, __ATOMIC_RELAXED);
}

/* With the lock held: wait until the thread's job is written, then report
 * any error it had. After an error no job is handed over, so it sticks. */
static int writer_wait_idle(struct trace_writer *w)
{
	while (w->busy)
		pthread_cond_wait(&w->idle, &w->lock);
	return w->err;
}

/* Hand the chunk being built to the thread, and build the next one in the
 * buffer it gives back. Waits while the thread is busy with the previous
 * chunk: that back-pressure is what keeps to two buffers. */
static int writer_submit(struct trace_writer *w)
{
	int err;

	if (!w->raw_len)
		return writer_err(w);
	pthread_mutex_lock(&w->lock);
	err = writer_wait_idle(w);
	if (!err) {
		struct chunk spare = w->job;

		w->job = (struct chunk){ w->raw, w->raw_len, w->raw_cap, w->chunk_type, w->records,
					 w->seq };
		w->busy = true;
		pthread_cond_signal(&w->wake);
		w->raw = spare.raw;
		w->raw_cap = spare.cap;
	}
	pthread_mutex_unlock(&w->lock);
	if (err)
		return err;
	w->seq++;
	w->raw_len = 0;
	w->records = 0;
	writer_reset_deltas(w);
	/* Modules that come once the META chunk is out go with the data. */
	if (w->chunk_type == TRACE_CHUNK_META)
		w->chunk_type = TRACE_CHUNK_DATA;
	return 0;
}

int trace_writer__flush(struct trace_writer *w)
{
	int err = writer_submit(w);

	if (err)
		return err;
	pthread_mutex_lock(&w->lock);
	err = writer_wait_idle(w);
	pthread_mutex_unlock(&w->lock);
	return err;
}

/* Make room for NEED more raw bytes without passing TRACE_CHUNK_RAW_MAX. */
static int writer_reserve(struct trace_writer *w, size_t need)
{
	need += RECORD_SLACK;
	if (need > TRACE_CHUNK_RAW_MAX)
		return -E2BIG;
	if (w->raw_len + need > TRACE_CHUNK_RAW_MAX) {
		int err = writer_submit(w);
		if (err)
			return err;
	}
	if (w->raw_len + need <= w->raw_cap)
		return 0;

	size_t cap = w->raw_cap * 2;
	if (cap < w->raw_len + need)
		cap = w->raw_len + need;
	uint8_t *p = realloc(w->raw, cap);
	if (!p)
		return -ENOMEM;
	w->raw = p;
	w->raw_cap = cap;
	return 0;
}

/* Get ready for a record of at most NEED bytes that belongs in a chunk of
 * TYPE (0: any chunk). Must come before any delta is computed, since it may
 * close the chunk and so reset the deltas. */
static int writer_prepare(struct trace_writer *w, uint16_t type, size_t need)
{
	int err = writer_err(w);

	if (err)
		return err;
	if (type && type != w->chunk_type) {
		err = writer_submit(w);
		if (err)
			return err;
		w->chunk_type = type;
	}
	return writer_reserve(w, need);
}

static int writer_done_record(struct trace_writer *w)
{
	if (w->raw_len >= w->chunk_target)
		return writer_submit(w);
	return 0;
}

void trace_writer__set_chunk_target(struct trace_writer *w, size_t bytes)
{
	w->chunk_target = bytes < TRACE_CHUNK_TARGET ? bytes : TRACE_CHUNK_TARGET;
}

/* Start a record: its type, then one byte kept for the size. Returns where
 * the payload goes. */
static uint8_t *rec_open(struct trace_writer *w, unsigned int type)
{
	uint8_t *p = w->raw + w->raw_len;

	p += put_varint(p, type);
	return p + 1;
}

/* Finish the record whose payload is PAYLOAD..END: write its size, moving
 * the payload up when the size needs more than the one byte kept. */
static void rec_close(struct trace_writer *w, uint8_t *payload, uint8_t *end)
{
	size_t len = (size_t)(end - payload);

	if (len < 0x80) {
		payload[-1] = (uint8_t)len;
	} else {
		uint8_t tmp[VARINT_MAX_LEN];
		size_t n = put_varint(tmp, len);

		memmove(payload + n - 1, payload, len);
		memcpy(payload - 1, tmp, n);
		end += n - 1;
	}
	w->raw_len = (size_t)(end - w->raw);
	w->records++;
}

static size_t str_bytes(const char *s)
{
	size_t n;

	if (!s)
		return 1;
	n = strnlen(s, TRACE_STRING_MAX);
	return varint_len(n + 1) + n;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
	size_t n;

	if (!s) {
		*p = 0;
		return p + 1;
	}
	n = strnlen(s, TRACE_STRING_MAX);
	p += put_varint(p, n + 1);
	memcpy(p, s, n);
	return p + n;
}

static uint8_t *put_delta(uint8_t *p, uint64_t v, uint64_t prev)
{
	return p + put_varint(p, encode_zigzag((int64_t)(v - prev)));
}

static uint8_t *put_u(uint8_t *p, uint64_t v)
{
	return p + put_varint(p, v);
}

static int writer_add_meta(struct trace_writer *w, const struct trace_meta *m)
{
	size_t need = 16 + str_bytes(m->command_line) + str_bytes(m->comm) +
		      str_bytes(m->kernel) + str_bytes(m->hostname) + 10 * VARINT_MAX_LEN;
	int err = writer_prepare(w, TRACE_CHUNK_META, need);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_META), *p = payload;
	p = put_str(p, m->command_line);
	p = put_str(p, m->comm);
	p = put_str(p, m->kernel);
	p = put_str(p, m->hostname);
	p = put_u(p, encode_zigzag(m->pid));
	p = put_u(p, m->stack_depth);
	p = put_u(p, m->sample_bytes);
	p = put_u(p, m->start_mono_ns);
	p = put_u(p, m->start_real_ns);
	p = put_u(p, m->budget_ppm);
	p = put_u(p, m->hit_entry_ns);
	p = put_u(p, m->hit_return_ns);
	p = put_u(p, m->flags);
	p = put_u(p, m->large_bytes);
	rec_close(w, payload, p);
	return 0;
}

static int writer_write_header(struct trace_writer *w, uint32_t version)
{
	uint8_t h[TRACE_HEADER_SIZE] = { 0 };

	memcpy(h, TRACE_MAGIC, TRACE_MAGIC_LEN);
	put_u16(h + TRACE_HDR_OFF_BOM, TRACE_BYTE_ORDER);
	put_u32(h + TRACE_HDR_OFF_VERSION, version);
	put_u32(h + TRACE_HDR_OFF_FLAGS, 0);
	put_u32(h + TRACE_HDR_OFF_SIZE, TRACE_HEADER_SIZE);
	w->bytes = TRACE_HEADER_SIZE;
	return write_full(w->fd, h, sizeof(h));
}

static void writer_free(struct trace_writer *w)
{
	ZSTD_freeCCtx(w->cctx);
	free(w->raw);
	free(w->job.raw);
	free(w->out);
	free(w->path);
	pthread_cond_destroy(&w->idle);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

/* Everything that can fail without touching the file. */
static struct trace_writer *writer_alloc(void)
{
	struct trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = -1;
	w->chunk_type = TRACE_CHUNK_META;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	w->chunk_target = TRACE_CHUNK_TARGET;
	w->raw_cap = w->job.cap = TRACE_CHUNK_TARGET + (64u << 10);
	w->raw = malloc(w->raw_cap);
	w->job.raw = malloc(w->job.cap);
	w->cctx = ZSTD_createCCtx();
	if (!w->raw || !w->job.raw || !w->cctx) {
		writer_free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

static int writer_start_thread(struct trace_writer *w)
{
	sigset_t all, old;
	int err;

	/* Signals stay with the caller's threads: a stop signal must interrupt
	 * the recorder's poll, not a write here. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&w->thread, NULL, writer_thread, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

/* Once everything is handed over: the thread writes what it holds and ends. */
static void writer_stop_thread(struct trace_writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
}

/* The META chunk is written with the first record that is not a MODULE (or
 * the first flush), so the modules listed at attach travel with the meta.
 * FD is written from its current position, never seeked: a pipe will do. */
static struct trace_writer *writer_open(int fd, const struct trace_meta *meta)
{
	struct trace_writer *w;
	int err;

	w = writer_alloc();
	if (!w)
		return NULL;
	w->fd = fd;
	err = writer_add_meta(w, meta);
	if (!err)
		err = writer_write_header(w, meta->budget_ppm ? TRACE_VERSION : TRACE_VERSION_UNWEIGHTED);
	if (!err)
		err = writer_start_thread(w);
	if (err) {
		writer_free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

struct trace_writer *trace_writer__open(const char *path, const struct trace_meta *meta)
{
	struct trace_writer *w;
	int fd, err;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	w = writer_open(fd, meta);
	if (!w) {
		err = errno;
		close(fd);
		unlink(path);
		errno = err;
	}
	return w;
}

struct trace_writer *trace_writer__open_unheld(const char *path, const struct trace_meta *meta)
{
	struct trace_writer *w;
	char *own = strdup(path);
	struct stat st;
	int fd, err;

	if (!own)
		return NULL;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		err = errno;
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		free(own);
		errno = err;
		return NULL;
	}
	w = writer_open(fd, meta); /* the header written through FD */
	if (!w) {
		err = errno;
		close(fd);
		unlink(path);
		free(own);
		errno = err;
		return NULL;
	}
	/* The thread writes the first chunk: before it can, the file is let go */
	pthread_mutex_lock(&w->lock);
	w->path = own;
	w->dev = st.st_dev;
	w->ino = st.st_ino;
	close(w->fd);
	w->fd = -1;
	pthread_mutex_unlock(&w->lock);
	return w;
}

struct trace_writer *trace_writer__open_discard(const struct trace_meta *meta)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct trace_writer *w;

	if (fd < 0)
		return NULL;
	w = trace_writer__open_fd(fd, meta);
	if (w)
		w->discard = true;
	return w;
}

struct trace_writer *trace_writer__open_fd(int fd, const struct trace_meta *meta)
{
	struct trace_writer *w = writer_open(fd, meta);

	if (!w) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return w;
}

int trace_writer__add_module(struct trace_writer *w, const struct trace_module *m)
{
	if (m->build_id_len > TRACE_BUILD_ID_MAX)
		return -EINVAL;
	int err = writer_prepare(w, 0, 4 * VARINT_MAX_LEN + str_bytes(m->path) + TRACE_BUILD_ID_MAX);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_MODULE), *p = payload;
	p = put_u(p, m->start);
	p = put_u(p, m->end - m->start);
	p = put_u(p, m->file_offset);
	p = put_str(p, m->path);
	p = put_u(p, m->build_id_len);
	memcpy(p, m->build_id, m->build_id_len);
	p += m->build_id_len;
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_stack(struct trace_writer *w, const struct trace_stack *s)
{
	if (!s->id || s->nr > TRACE_STACK_MAX_FRAMES)
		return -EINVAL;
	int err = writer_prepare(w, TRACE_CHUNK_DATA, (2 + (size_t)s->nr) * VARINT_MAX_LEN);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_STACK), *p = payload;
	p = put_delta(p, s->id, w->prev_stack);
	w->prev_stack = s->id;
	p = put_u(p, s->nr);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < s->nr; i++) {
		p = put_delta(p, s->frames[i], prev);
		prev = s->frames[i];
	}
	rec_close(w, payload, p);
	return writer_done_record(w);
}

static unsigned int event_record_type(uint32_t type)
{
	switch (type) {
	case MT_EVENT_ALLOC:
		return TRACE_REC_ALLOC;
	case MT_EVENT_FREE:
		return TRACE_REC_FREE;
	case MT_EVENT_REALLOC:
		return TRACE_REC_REALLOC;
	}
	return 0;
}

/* ts and tid of an event or a mark, which share the delta state. */
static inline uint8_t *put_ts_tid(struct trace_writer *w, uint8_t *p, uint64_t ts, uint32_t tid)
{
	p = put_delta(p, ts, w->prev_ts);
	w->prev_ts = ts;
	/* Threads run in bursts, so "same as before" costs one byte. */
	if (w->have_tid && tid == w->prev_tid) {
		*p++ = 0;
	} else {
		p = put_u(p, (uint64_t)tid + 1);
		w->prev_tid = tid;
		w->have_tid = true;
	}
	return p;
}

/* The hot path: one call per heap event. */
int trace_writer__add_event(struct trace_writer *w, const struct trace_event *e)
{
	unsigned int type = event_record_type(e->type);
	int err;

	if (!type)
		return -EINVAL;
	err = writer_prepare(w, TRACE_CHUNK_DATA, EVENT_RECORD_MAX);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, type), *p = payload;
	p = put_ts_tid(w, p, e->ts, e->tid);
	if (type == TRACE_REC_REALLOC) {
		p = put_delta(p, e->old_ptr, w->prev_ptr);
		w->prev_ptr = e->old_ptr;
	}
	p = put_delta(p, e->ptr, w->prev_ptr);
	w->prev_ptr = e->ptr;
	if (type != TRACE_REC_FREE) {
		p = put_u(p, e->size);
		p = put_u(p, e->stack_id);
	}
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_thread(struct trace_writer *w, const struct trace_thread *t)
{
	int err = writer_prepare(w, TRACE_CHUNK_DATA, VARINT_MAX_LEN + str_bytes(t->name));
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_THREAD), *p = payload;
	p = put_u(p, t->tid);
	p = put_str(p, t->name);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

static size_t symbol_bytes(const struct trace_symbol *s)
{
	size_t n = 5 * VARINT_MAX_LEN;

	for (uint32_t i = 0; i < s->nframes; i++)
		n += str_bytes(s->frames[i].function) + str_bytes(s->frames[i].file) +
		     2 * VARINT_MAX_LEN;
	return n;
}

int trace_writer__add_symbol(struct trace_writer *w, const struct trace_symbol *s)
{
	if (s->nframes > TRACE_SYMBOL_MAX_FRAMES || s->module < -1)
		return -EINVAL;
	int err = writer_prepare(w, TRACE_CHUNK_SYMBOLS, symbol_bytes(s));
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_SYMBOL), *p = payload;
	p = put_delta(p, s->addr, w->prev_addr);
	w->prev_addr = s->addr;
	p = put_u(p, (uint64_t)((int64_t)s->module + 1));
	p = put_u(p, s->module_offset);
	p = put_u(p, s->nframes);
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct trace_frame *f = &s->frames[i];

		p = put_str(p, f->function);
		p = put_str(p, f->file);
		p = put_u(p, f->line);
		p = put_u(p, f->column);
	}
	if (s->language) /* native, when absent: what a trace before it meant */
		p = put_u(p, s->language);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_drops(struct trace_writer *w, const struct trace_drops *d)
{
	int err = writer_prepare(w, TRACE_CHUNK_DATA, 2 * VARINT_MAX_LEN);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_DROPS), *p = payload;
	p = put_u(p, d->cpu);
	p = put_u(p, d->count);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_string(struct trace_writer *w, const struct trace_string *s)
{
	if (!s->id)
		return -EINVAL;
	int err = writer_prepare(w, TRACE_CHUNK_DATA, VARINT_MAX_LEN + str_bytes(s->str));
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_STRING), *p = payload;
	p = put_u(p, s->id);
	p = put_str(p, s->str);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_rss(struct trace_writer *w, const struct trace_rss *s)
{
	int err = writer_prepare(w, TRACE_CHUNK_DATA, 4 * VARINT_MAX_LEN);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_RSS), *p = payload;
	p = put_u(p, s->ts);
	p = put_u(p, s->anon);
	p = put_u(p, s->file);
	p = put_u(p, s->shmem);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_map(struct trace_writer *w, const struct trace_map *m)
{
	int err = writer_prepare(w, TRACE_CHUNK_DATA, 11 * VARINT_MAX_LEN);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_MAP), *p = payload;
	p = put_u(p, m->ts);
	p = put_u(p, m->tid);
	p = put_u(p, m->call);
	p = put_u(p, m->flags);
	p = put_u(p, m->stack_id);
	p = put_u(p, m->ret);
	p = put_u(p, m->a0);
	p = put_u(p, m->a1);
	p = put_u(p, m->a2);
	p = put_u(p, m->a3);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_resident(struct trace_writer *w, const struct trace_resident *r)
{
	uint64_t ps = r->page_size, at = 0;
	size_t need = (3 + 4 * (size_t)r->nvmas + 2 * (size_t)r->nruns) * VARINT_MAX_LEN;
	uint32_t run = 0;

	if (ps < 1024 || (ps & (ps - 1)))
		return -EINVAL;
	for (uint32_t i = 0; i < r->nvmas; i++) {
		const struct trace_vma *v = &r->vmas[i];

		if (v->start < at || v->end <= v->start || v->kind >= TRACE_VMA_KINDS || (v->start | v->end) % ps ||
		    v->nruns > r->nruns - run)
			return -EINVAL;
		at = v->start;
		for (uint32_t j = run; j < run + v->nruns; j++) {
			if (r->runs[j].start < at || r->runs[j].end <= r->runs[j].start || r->runs[j].end > v->end ||
			    (r->runs[j].start | r->runs[j].end) % ps)
				return -EINVAL;
			at = r->runs[j].end;
		}
		run += v->nruns;
		at = v->end;
	}
	if (run != r->nruns)
		return -EINVAL;
	int err = writer_prepare(w, TRACE_CHUNK_DATA, need);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_RESIDENT), *p = payload;
	p = put_u(p, r->ts);
	p = put_u(p, ps);
	p = put_u(p, r->nvmas);
	at = 0;
	run = 0;
	for (uint32_t i = 0; i < r->nvmas; i++) {
		const struct trace_vma *v = &r->vmas[i];

		p = put_u(p, (v->start - at) / ps);
		p = put_u(p, (v->end - v->start) / ps);
		p = put_u(p, v->kind);
		p = put_u(p, v->nruns);
		at = v->start;
		for (uint32_t j = 0; j < v->nruns; j++, run++) {
			p = put_u(p, (r->runs[run].start - at) / ps);
			p = put_u(p, (r->runs[run].end - r->runs[run].start) / ps);
			at = r->runs[run].end;
		}
		at = v->end;
	}
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_rollup(struct trace_writer *w, const struct trace_rollup *r)
{
	size_t need = 2 * VARINT_MAX_LEN;

	if (r->n > TRACE_ROLLUP_MAX)
		return -EINVAL;
	for (uint32_t i = 0; i < r->n; i++)
		need += str_bytes(r->name[i]) + VARINT_MAX_LEN;
	int err = writer_prepare(w, TRACE_CHUNK_DATA, need);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_ROLLUP), *p = payload;
	p = put_u(p, r->ts);
	p = put_u(p, r->n);
	for (uint32_t i = 0; i < r->n; i++) {
		p = put_str(p, r->name[i]);
		p = put_u(p, r->bytes[i]);
	}
	rec_close(w, payload, p);
	return writer_done_record(w);
}

int trace_writer__add_mark(struct trace_writer *w, const struct trace_mark *m)
{
	if (m->kind < MT_MARK_ZONE_BEGIN || m->kind > MT_MARK_KIND_LAST)
		return -EINVAL;
	int err = writer_prepare(w, TRACE_CHUNK_DATA, EVENT_RECORD_MAX);
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_MARK), *p = payload;
	p = put_u(p, m->kind);
	p = put_ts_tid(w, p, m->ts, m->tid);
	p = put_u(p, m->name);
	/* Pool pointers have their own delta base: they live in the pool's
	 * memory, far from the heap pointers of the events around them. */
	if (m->kind == MT_MARK_POOL_ALLOC || m->kind == MT_MARK_POOL_FREE) {
		p = put_delta(p, m->ptr, w->prev_pool_ptr);
		w->prev_pool_ptr = m->ptr;
	}
	if (m->kind == MT_MARK_POOL_ALLOC || m->kind == MT_MARK_WINDOW_BEGIN || m->kind == MT_MARK_WINDOW_END)
		p = put_u(p, m->size);
	rec_close(w, payload, p);
	return writer_done_record(w);
}

/* May lag behind by the chunk the thread is writing. */
uint64_t trace_writer__bytes(const struct trace_writer *w)
{
	return __atomic_load_n(&w->bytes, __ATOMIC_RELAXED);
}

int trace_writer__error(const struct trace_writer *w)
{
	return writer_err(w);
}

static int writer_add_end(struct trace_writer *w, const struct trace_end *e)
{
	int err = writer_prepare(w, TRACE_CHUNK_END,
				 6 * VARINT_MAX_LEN + str_bytes(e->stop_reason) + str_bytes(e->memory_limit_of));
	if (err)
		return err;

	uint8_t *payload = rec_open(w, TRACE_REC_END), *p = payload;
	p = put_u(p, e->end_mono_ns);
	p = put_u(p, e->events);
	p = put_u(p, e->dropped);
	p = put_u(p, encode_zigzag(e->exit_status));
	p = put_u(p, e->flags);
	p = put_str(p, e->stop_reason);
	p = put_u(p, e->memory_limit);
	p = put_str(p, e->memory_limit_of);
	rec_close(w, payload, p);
	return trace_writer__flush(w);
}

int trace_writer__close(struct trace_writer *w, const struct trace_end *end)
{
	return trace_writer__close_sized(w, end, NULL);
}

int trace_writer__close_sized(struct trace_writer *w, const struct trace_end *end, uint64_t *bytes)
{
	const struct trace_end unknown = { .exit_status = -1 };
	int err, fd;

	if (!w)
		return -EINVAL;
	err = writer_add_end(w, end ? end : &unknown);
	writer_stop_thread(w);
	if (bytes)
		*bytes = w->bytes; /* all of it: the writer thread is done */
	fd = writer_fd_get(w);
	if (!err && fd < 0)
		err = fd;
	if (!err && fsync(fd) < 0 && errno != EINVAL) /* EINVAL: a pipe, nothing to sync */
		err = -errno;
	if (fd >= 0 && close(fd) < 0 && !err)
		err = -errno;
	writer_free(w);
	return err;
}

/* Pending records are still written, best effort: a reader gets them, and
 * the missing END chunk tells it the recording did not finish. */
void trace_writer__abort(struct trace_writer *w)
{
	if (!w)
		return;
	trace_writer__flush(w);
	writer_stop_thread(w);
	if (w->fd >= 0)
		close(w->fd);
	writer_free(w);
}
