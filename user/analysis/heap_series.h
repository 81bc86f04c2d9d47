/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Live heap bytes over time, for the charts of `export --format chrome` and
 * `report --html`: an observer of the replay engine (replay.h), it takes the
 * engine's live bytes after each event and thins them to a bounded number
 * of points. Pure: it reads no file and prints nothing.
 *
 * Thinning: time is cut into buckets of equal width, starting at 1 ns and
 * doubling whenever more buckets than fit have events, so a short trace
 * keeps every change and a long one its shape. Each bucket keeps its
 * largest value (at the first moment it was reached) and its last one, so a
 * spike is never smoothed away and the global peak is kept exactly, at the
 * analysis's peak_time_ns. The series starts with (0, 0) and ends with the
 * live bytes at the trace's end (DURATION_NS, or the last event).
 */
#ifndef MEMTRACE_HEAP_SERIES_H
#define MEMTRACE_HEAP_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct heap_point {
	uint64_t t_ns;  /* after the trace's start_mono_ns */
	uint64_t bytes; /* live heap bytes (estimated, in a sampled trace) */
};

struct heap_series;
struct replay;

/* A new empty series observing R, that will hold at most MAX_POINTS (>= 4)
 * points; NULL with errno set. */
struct heap_series *heap_series__new(struct replay *r, size_t max_points);
void heap_series__free(struct heap_series *s);

/* End the series at DURATION_NS after the start (the trace's duration, or
 * the last event if later); call once after the last event. 0 or -ENOMEM. */
int heap_series__finish(struct heap_series *s, uint64_t duration_ns);

/* The points in time order, valid until heap_series__free. */
const struct heap_point *heap_series__points(const struct heap_series *s, size_t *n);

#endif /* MEMTRACE_HEAP_SERIES_H */
