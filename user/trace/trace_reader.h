/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_TRACE_READER_H
#define MEMTRACE_TRACE_READER_H

#include "trace.h"
#include <stdbool.h>

/* Callbacks for each record kind; any may be NULL. A callback returning
 * non-zero stops the read, and trace_reader__read returns that value. */
struct trace_reader_ops {
	int (*meta)(void *ctx, const struct trace_meta *m);
	int (*module)(void *ctx, const struct trace_module *m);
	int (*stack)(void *ctx, const struct trace_stack *s);
	int (*event)(void *ctx, const struct trace_event *e);
	int (*thread)(void *ctx, const struct trace_thread *t);
	int (*symbol)(void *ctx, const struct trace_symbol *s);
	int (*drops)(void *ctx, const struct trace_drops *d);
	int (*end)(void *ctx, const struct trace_end *e);
	int (*string)(void *ctx, const struct trace_string *s);
	int (*mark)(void *ctx, const struct trace_mark *m);
	int (*rss)(void *ctx, const struct trace_rss *s);
	int (*rollup)(void *ctx, const struct trace_rollup *r);
	int (*map)(void *ctx, const struct trace_map *m);
	int (*resident)(void *ctx, const struct trace_resident *r);
};

struct trace_reader;

/* Open PATH and check the file header. NULL with errno set: ENOENT etc.
 * from open, EINVAL (not a memtrace trace), ENOTSUP (newer version). */
struct trace_reader *trace_reader__open(const char *path);

/* Read every record from the start, in file order, calling OPS. Can be
 * called again for another pass. 0 on success, including a trace cut short
 * after its last complete chunk (see trace_reader__partial); -EBADMSG for a
 * damaged chunk before the end; -errno for I/O. */
int trace_reader__read(struct trace_reader *r, const struct trace_reader_ops *ops, void *ctx);

/* After a read: true if the trace has no END chunk (recorder killed) or
 * ended in a truncated or damaged chunk; its records up to there were read. */
bool trace_reader__partial(const struct trace_reader *r);

/* After a complete read: damage past the END record (bytes appended to the
 * file), one phrase with offset and length; NULL if there is none. */
const char *trace_reader__damage(const struct trace_reader *r);

/* After a failed or partial read: one phrase saying what was wrong. */
const char *trace_reader__problem(const struct trace_reader *r);

void trace_reader__close(struct trace_reader *r);

#endif /* MEMTRACE_TRACE_READER_H */
