/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Live heap bytes over time, for the charts of `export --format chrome` and
 * `report --html`: fed the events of one trace (one more reader pass), it
 * keeps the live bytes by the analysis's rules (analysis.h) and thins them to
 * a bounded number of points. Pure: it reads no file and prints nothing.
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

#include "trace.h"
#include <stddef.h>
#include <stdint.h>

struct heap_point {
	uint64_t t_ns;  /* after the trace's start_mono_ns */
	uint64_t bytes; /* live heap bytes (estimated, in a sampled trace) */
};

struct heap_series;

/* A new empty series for a trace DURATION_NS long (analysis_trace's) that
 * will hold at most MAX_POINTS (>= 4) points; NULL with errno set. */
struct heap_series *heap_series__new(uint64_t duration_ns, size_t max_points);
void heap_series__free(struct heap_series *s);

/* Feeding, in file order: the META record first (its start time and
 * sampling), then every event. 0 or -ENOMEM. */
int heap_series__set_meta(struct heap_series *s, const struct trace_meta *m);
int heap_series__add_event(struct heap_series *s, const struct trace_event *e);

/* What an allocation of SIZE bytes stands for: 1 and SIZE, or the
 * analysis's unbiased estimates in a sampled trace. Returns the bytes. */
uint64_t heap_series__weigh(const struct heap_series *s, uint64_t size, uint64_t *count);

/* End the series at the trace's end; call once after the last event.
 * 0 or -ENOMEM. */
int heap_series__finish(struct heap_series *s);

/* The points in time order, valid until heap_series__free. */
const struct heap_point *heap_series__points(const struct heap_series *s, size_t *n);

/* Reader callbacks (meta, event) that feed the series given as ctx. */
extern const struct trace_reader_ops heap_series_reader_ops;

#endif /* MEMTRACE_HEAP_SERIES_H */
