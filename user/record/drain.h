/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_DRAIN_H
#define MEMTRACE_DRAIN_H

#include "trace_reader.h"
#include "trace_writer.h"
#include <stddef.h>
#include <stdint.h>

/*
 * Between the rings and the writer: interns the stacks the probes send by
 * hash into small ids, and puts the events of all CPUs back in time order
 * (each ring is in order; together they are not) before they are written.
 */
struct drain;

/* W may be NULL until drain__set_writer; nothing is taken before then. */
struct drain *drain__new(struct trace_writer *w);
void drain__set_writer(struct drain *d, struct trace_writer *w);
/* Go on in W, a new file of a rotated trace: it first gets every stack
 * and name given so far, so that it stands alone. 0 or -errno. */
int drain__rewrite(struct drain *d, struct trace_writer *w);

/* TAP's stack, event, string and mark callbacks (with CTX) see every record
 * the writer gets, just before it does, in the same order: a live view
 * (memtrace top) feeds its replay engine from them. */
void drain__set_tap(struct drain *d, const struct trace_reader_ops *tap, void *ctx);

/* Who reads a name the probe could not (its page was not in memory yet):
 * fill BUF (CAP bytes, NUL-terminated) with the string at ADDR; 0 or -errno. */
typedef int (*drain_read_string_fn)(void *ctx, uint64_t addr, char *buf, size_t cap);
void drain__set_string_reader(struct drain *d, drain_read_string_fn fn, void *ctx);

/* Who hears of a fork of the target that nothing records (MT_EVENT_FORK):
 * called with the child's pid as the record is read; its result is not an
 * error of the drain. Without one such records are dropped. */
typedef void (*drain_fork_fn)(void *ctx, uint32_t child);
void drain__set_fork(struct drain *d, drain_fork_fn fn, void *ctx);

/* Code of an allocator function left without a probe because it only
 * forwards to a probed one (operator new calling malloc): a return address
 * just past a call in [START, END) belongs to the allocator, so a stack's leading frames there
 * are dropped and its first frame stays the allocation's site, the caller of
 * operator new, as if operator new itself had been probed. 0 or -ENOMEM. */
/* The target's Python interpreter (python.h): stacks with Python frames
 * are composed with it. PY stays the caller's. */
struct python;
void drain__set_python(struct drain *d, struct python *py);

int drain__add_allocator_code(struct drain *d, uint64_t start, uint64_t end);

/* Take one ring record (ABI of bpf/memtrace_abi.h). 0 or -errno. */
int drain__record(struct drain *d, const void *data, size_t size);

/* A mark the recorder makes itself (--budget's windows), put among the
 * events by its time like a probe's. 0 or -ENOMEM. */
int drain__add_mark(struct drain *d, const struct trace_mark *m);
/* A --rss sample, put among the events by its time likewise. 0 or -ENOMEM. */
int drain__add_rss(struct drain *d, const struct trace_rss *s);
/* Keep at most MAX stacks (0: all): past them a new stack is folded into
 * one whose frame is TRACE_FRAME_OTHER (memtrace agent, over hours). */
void drain__set_max_stacks(struct drain *d, size_t max);
/* Stack sightings folded so far. */
uint64_t drain__folded(const struct drain *d);
/* A --rss resident snapshot (copied), likewise. 0 or -ENOMEM. */
int drain__add_resident(struct drain *d, const struct trace_resident *r);

/* How late a CPU's event may reach the drain: record flushes what is older
 * than this (session.c; bench/drain_bench.c does as it does). */
#define REORDER_NS (20 * 1000 * 1000ULL)

/* Write, in time order, the pending events stamped before WATERMARK_NS
 * (UINT64_MAX: all of them). 0 or -errno from the writer. */
int drain__flush(struct drain *d, uint64_t watermark_ns);

/* Events written so far. */
uint64_t drain__events(const struct drain *d);

/* Call FN once for every distinct address in the stacks seen, in order. */
int drain__for_each_address(struct drain *d, int (*fn)(void *ctx, uint64_t addr), void *ctx);

void drain__free(struct drain *d);

#endif /* MEMTRACE_DRAIN_H */
