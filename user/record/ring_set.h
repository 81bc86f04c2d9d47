/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_RING_SET_H
#define MEMTRACE_RING_SET_H

#include <stddef.h>

/*
 * The BPF ring buffers of one recording, read as libbpf's ring_buffer reads
 * them (its API, its order), but each ring's data mapped once where libbpf
 * maps it twice (so that a record running past the end
 * reads on): the kernel puts every page of a mapping in the page tables at
 * once, and the second copy was half of the agent's resident memory (64
 * targets' rings on 2 CPUs: 148 of 219 MB). A record that runs past the
 * end is copied whole before it is handed over. No epoll set: the probes
 * never wake a reader (BPF_RB_NO_WAKEUP), the reader's timer is its clock,
 * and a set was one more descriptor for each of the agent's targets.
 */
struct ring_set;

/* Called for each record in order; a negative return stops the pass. */
typedef int (*ring_set_fn)(void *ctx, void *data, size_t size);

/* A set with the ring buffer map FD in it (the fd may be closed after: the
 * mapping holds the map). NULL with errno set. */
struct ring_set *ring_set__new(int fd, ring_set_fn fn, void *ctx);
/* Add ring FD (one already in the set, as several CPUs' ring: nothing to
 * do); 0 or -errno. */
int ring_set__add(struct ring_set *rs, int fd, ring_set_fn fn, void *ctx);
/* Hand over every whole record of every ring: how many, or the callback's
 * -errno. */
int ring_set__consume(struct ring_set *rs);
void ring_set__free(struct ring_set *rs);

#endif /* MEMTRACE_RING_SET_H */
