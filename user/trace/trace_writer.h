/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_TRACE_WRITER_H
#define MEMTRACE_TRACE_WRITER_H

#include "trace.h"
#include <stddef.h>
#include <stdint.h>

struct trace_writer;

/* Create PATH (0600, O_EXCL|O_NOFOLLOW) and write the file header and META
 * chunk. NULL with errno set on failure; nothing is left behind then. */
struct trace_writer *trace_writer__open(const char *path, const struct trace_meta *meta);

/* The same, but PATH is not held open: each chunk reopens it to append
 * and closes it again, opening only the file created (file_reopen_made:
 * its device and inode, else -ESTALE; a symlink, FIFO or device put at
 * PATH is never opened). For the agent, where a held trace was one
 * more descriptor for each of its targets. */
struct trace_writer *trace_writer__open_unheld(const char *path, const struct trace_meta *meta);

/* The same on FD (a pipe, stdout), which it then owns: the format is
 * written front to back, never seeked. NULL with errno set, FD closed. */
struct trace_writer *trace_writer__open_fd(int fd, const struct trace_meta *meta);

/* Each adds one record to the current chunk; a chunk is compressed and
 * written when it holds enough. 0 or -errno (I/O errors are sticky). */
int trace_writer__add_module(struct trace_writer *w, const struct trace_module *m);
int trace_writer__add_stack(struct trace_writer *w, const struct trace_stack *s);
int trace_writer__add_event(struct trace_writer *w, const struct trace_event *e);
int trace_writer__add_thread(struct trace_writer *w, const struct trace_thread *t);
int trace_writer__add_symbol(struct trace_writer *w, const struct trace_symbol *s);
int trace_writer__add_drops(struct trace_writer *w, const struct trace_drops *d);
/* A string before the first mark that names it; id 0 is -EINVAL. */
int trace_writer__add_string(struct trace_writer *w, const struct trace_string *s);
/* A mark, in time order with the events; an unknown kind is -EINVAL. */
int trace_writer__add_mark(struct trace_writer *w, const struct trace_mark *m);
/* A writer whose records go nowhere (the header to /dev/null, no chunk
 * compressed or written): a live view's recording without a trace. */
struct trace_writer *trace_writer__open_discard(const struct trace_meta *meta);
int trace_writer__add_rss(struct trace_writer *w, const struct trace_rss *s);
int trace_writer__add_rollup(struct trace_writer *w, const struct trace_rollup *r);
int trace_writer__add_map(struct trace_writer *w, const struct trace_map *m);
int trace_writer__add_resident(struct trace_writer *w, const struct trace_resident *r);

/* Compress and write what is pending, so a reader sees it even if we die. */
int trace_writer__flush(struct trace_writer *w);

/* Close chunks at BYTES raw bytes instead of TRACE_CHUNK_TARGET (at most
 * that): a writer kept for each of many targets (the agent's traces in
 * memory) then holds buffers and a compressor sized for small chunks, and
 * its pages past them are never touched. */
void trace_writer__set_chunk_target(struct trace_writer *w, size_t bytes);
/* Bytes written to the file so far (compressed). */
uint64_t trace_writer__bytes(const struct trace_writer *w);
/* The first I/O failure's -errno (it is sticky), or 0. */
int trace_writer__error(const struct trace_writer *w);

/* Flush, write the END chunk, fsync and close. Frees W in every case. */
int trace_writer__close(struct trace_writer *w, const struct trace_end *end);

/* trace_writer__close, and the bytes the trace came to into *BYTES (if
 * not NULL): the size of the file, or of what went down the pipe. */
int trace_writer__close_sized(struct trace_writer *w, const struct trace_end *end, uint64_t *bytes);

/* Close and free without an END chunk (the trace reads as partial). */
void trace_writer__abort(struct trace_writer *w);

#endif /* MEMTRACE_TRACE_WRITER_H */
