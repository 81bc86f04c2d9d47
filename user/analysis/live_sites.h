/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The live view's figures (memtrace top): an observer of the replay engine
 * that keeps, per stack, thread and innermost zone, what was allocated since
 * attach and what is live now, so that a snapshot can be taken at any
 * moment, for all threads and zones or for one of each, and grouped into
 * sites by the report's rule (sites.h). Pure: no file, no output.
 *
 * Rules (tests/unit/test_live_sites.c pins each one):
 * - A snapshot's site figures: allocations and allocated_bytes since attach,
 *   leaked_allocations and leaked_bytes = live now (as the engine counts
 *   them: frees of blocks from before attach subtract nothing).
 * - Filter by thread: blocks that thread allocated (whoever frees them).
 *   Filter by zone: blocks made while the zone was their thread's innermost
 *   open zone (the exclusive attribution of marks.h).
 * - Sites are ranked by allocated bytes as in the report; the caller sorts
 *   by what it shows.
 */
#ifndef MEMTRACE_LIVE_SITES_H
#define MEMTRACE_LIVE_SITES_H

#include "analysis.h"
#include <stddef.h>
#include <stdint.h>

struct live_sites;
struct replay;

struct live_filter {
	uint32_t tid;     /* 0: every thread */
	const char *zone; /* NULL: every zone and none */
};

/* A new one observing R; NULL with errno set. */
struct live_sites *live_sites__new(struct replay *r);
void live_sites__free(struct live_sites *l);

/* The names of the zones blocks were made in so far, in order of first
 * sighting, into NAMES (room for MAX); how many there are. */
size_t live_sites__zones(const struct live_sites *l, const char **names, size_t max);

/* One row: a stack's figures among one thread's blocks of one zone. */
struct live_row {
	uint32_t tid;
	const char *thread_name; /* NULL if unnamed */
	const char *zone;        /* the innermost zone the blocks were made in; NULL: none */
	struct analysis_stack stack; /* figures (leaked_*: live now) and frames */
};

/* Call FN for each row that allocated, in order of first sighting; 0,
 * -ENOMEM, or what FN returned. */
int live_sites__for_each(struct live_sites *l, int (*fn)(void *ctx, const struct live_row *row), void *ctx);

/* The sites now, for the blocks F lets through (NULL: all). Valid until
 * the next snapshot or live_sites__free. 0 or -ENOMEM. */
int live_sites__snapshot(struct live_sites *l, const struct live_filter *f,
			 const struct analysis_site **sites, size_t *n);

#endif /* MEMTRACE_LIVE_SITES_H */
