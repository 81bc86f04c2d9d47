/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A replay engine fed live from a recording (record_view's tap), for the
 * views that ride on one: `memtrace top` and `memtrace agent`. Every record
 * the trace gets goes to the engine; a new stack's addresses are named at
 * once (the host's files, else a debuginfod server asked once per
 * build-id), so the live figures show names. With a lock, each record is
 * fed under it, so another thread may read the engine under it too.
 */
#ifndef MEMTRACE_LIVE_FEED_H
#define MEMTRACE_LIVE_FEED_H

#include "live_sites.h"
#include "replay.h"
#include "trace_load.h"
#include "trace_reader.h"
#include "u64map.h"
#include <pthread.h>

struct symbolizer;

struct live_feed {
	struct replay *r;
	struct live_sites *live;
	struct symbolizer *sym;
	struct u64map named;           /* addresses symbolized so far */
	struct debuginfod_tries tries; /* with DEBUGINFOD_URLS: modules asked */
	int pid;
	bool held;                     /* procmaps__hold(pid) made: released at free */
	pthread_mutex_t *lock;         /* NULL: no other thread reads it */
};

/* A new engine and its live figures; 0 or -ENOMEM. */
int live_feed__init(struct live_feed *f, pthread_mutex_t *lock);
void live_feed__free(struct live_feed *f);

/* The tap: its context is the live_feed. */
extern const struct trace_reader_ops live_feed_tap;

#endif /* MEMTRACE_LIVE_FEED_H */
