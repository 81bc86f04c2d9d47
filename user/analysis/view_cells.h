/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The HTML viewer's figures (report --html): an observer of the replay
 * engine that keeps the report's figures per cell, a cell being the blocks
 * of one stack, thread and innermost zone, made in one time bucket, of one
 * log2 size class. A selection of threads, a zone and a time range in the
 * page is then a sum of cells: the page adds up what this file computed and
 * applies no heap rule of its own. Pure: no file, no output.
 *
 * Rules (tests/unit/test_view_cells.c pins each one):
 * - A block belongs, for its whole life, to the cell of its allocation: its
 *   stack, thread, zone (block.zone), the time bucket of its allocation and
 *   the size class of the size asked for.
 * - Size class k holds sizes [2^k, 2^(k+1)); class 0 holds 0 and 1.
 * - Time bucket i holds allocations made in [i, i+1) x bucket_ns after the
 *   trace's start. bucket_ns starts at 1 ms and doubles (merging bucket
 *   pairs) whenever an allocation falls past VIEW_CELLS_BUCKETS buckets.
 * - Figures are the report's (analysis.h): allocations, allocated bytes,
 *   leaked (live at the end), temporary (the engine's rule) and peak bytes
 *   (live at the moment of the global peak, by the epoch rule of
 *   peak_share.h), so summing every cell gives the report's totals.
 */
#ifndef MEMTRACE_VIEW_CELLS_H
#define MEMTRACE_VIEW_CELLS_H

#include "analysis.h"
#include <stddef.h>
#include <stdint.h>

#define VIEW_CELLS_BUCKETS 64
#define VIEW_CELLS_FIRST_BUCKET_NS 1000000ull

struct replay;
struct view_cells;

struct view_cell {
	uint32_t stack;  /* the engine's stack index */
	uint32_t thread; /* the engine's thread index */
	uint32_t zone;   /* name index of the innermost zone; REPLAY_NONE: none */
	uint16_t bucket; /* time bucket */
	uint16_t size_class;
	struct analysis_figures figures;
};

/* A new one observing R; NULL with errno set. */
struct view_cells *view_cells__new(struct replay *r);
void view_cells__free(struct view_cells *v);

/* After the replay finished: the cells, in order of first sighting, and
 * the width of a time bucket in ns. */
const struct view_cell *view_cells__cells(const struct view_cells *v, size_t *n);
uint64_t view_cells__bucket_ns(const struct view_cells *v);

#endif /* MEMTRACE_VIEW_CELLS_H */
