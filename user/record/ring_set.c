// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* BPF ring buffers read with their data mapped once (ring_set.h). */
#include "ring_set.h"

#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

struct ring {
	uint32_t id;        /* the map's: a ring added again (one for several CPUs) is read once */
	ring_set_fn fn;
	void *ctx;
	uint64_t *consumer; /* the consumer page, read-write */
	uint64_t *producer; /* the producer page, then the data: read-only */
	char *data;
	uint64_t size;      /* of the data, a power of two */
};

struct ring_set {
	struct ring *rings;
	size_t nr;
	long page;
	char *bounce;       /* a record that runs past the end, made whole */
	size_t bounce_cap;
};

struct ring_set *ring_set__new(int fd, ring_set_fn fn, void *ctx)
{
	struct ring_set *rs = calloc(1, sizeof(*rs));
	int err;

	if (!rs)
		return NULL;
	rs->page = sysconf(_SC_PAGESIZE);
	err = ring_set__add(rs, fd, fn, ctx);
	if (err) {
		ring_set__free(rs);
		errno = -err;
		return NULL;
	}
	return rs;
}

int ring_set__add(struct ring_set *rs, int fd, ring_set_fn fn, void *ctx)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);
	struct ring *v, *r;
	void *p;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries || (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	for (size_t i = 0; i < rs->nr; i++)
		if (rs->rings[i].id == info.id)
			return 0;
	v = realloc(rs->rings, (rs->nr + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rs->rings = v;
	r = &v[rs->nr];
	*r = (struct ring){ .id = info.id, .fn = fn, .ctx = ctx, .size = info.max_entries };
	p = mmap(NULL, rs->page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->consumer = p;
	/* the producer page and the data once (libbpf maps the data twice) */
	p = mmap(NULL, rs->page + r->size, PROT_READ, MAP_SHARED, fd, rs->page);
	if (p == MAP_FAILED) {
		int err = -errno;

		munmap(r->consumer, rs->page);
		return err;
	}
	r->producer = p;
	r->data = (char *)p + rs->page;
	rs->nr++;
	return 0;
}

/* The record of SIZE bytes at data offset OFF, whole: in place, or copied
 * into the bounce buffer when it runs past the end. NULL if out of memory. */
static void *record_at(struct ring_set *rs, const struct ring *r, uint64_t off, size_t size)
{
	uint64_t first;

	if (off + size <= r->size)
		return r->data + off;
	if (size > rs->bounce_cap) {
		char *b = realloc(rs->bounce, size);

		if (!b)
			return NULL;
		rs->bounce = b;
		rs->bounce_cap = size;
	}
	first = r->size - off;
	memcpy(rs->bounce, r->data + off, first);
	memcpy(rs->bounce + first, r->data, size - first);
	return rs->bounce;
}

/* As libbpf's ringbuf_process_ring: every record committed so far, in
 * order, the consumer position published after each. */
static int consume_ring(struct ring_set *rs, struct ring *r)
{
	uint64_t cons = __atomic_load_n(r->consumer, __ATOMIC_ACQUIRE), prod;
	int n = 0;
	bool more;

	do {
		more = false;
		prod = __atomic_load_n(r->producer, __ATOMIC_ACQUIRE);
		while (cons < prod) {
			uint64_t off = cons & (r->size - 1);
			uint32_t len = __atomic_load_n((uint32_t *)(r->data + off), __ATOMIC_ACQUIRE), size;

			if (len & BPF_RINGBUF_BUSY_BIT)
				return n;
			more = true;
			size = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
			cons += (size + BPF_RINGBUF_HDR_SZ + 7) / 8 * 8;
			if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
				void *rec = record_at(rs, r, (off + BPF_RINGBUF_HDR_SZ) & (r->size - 1), size);
				int err = rec ? r->fn(r->ctx, rec, size) : -ENOMEM;

				if (err < 0) {
					__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
					return err;
				}
				n++;
			}
			__atomic_store_n(r->consumer, cons, __ATOMIC_RELEASE);
		}
	} while (more);
	return n;
}

int ring_set__consume(struct ring_set *rs)
{
	int total = 0;

	for (size_t i = 0; i < rs->nr; i++) {
		int n = consume_ring(rs, &rs->rings[i]);

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

void ring_set__free(struct ring_set *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->nr; i++) {
		munmap(rs->rings[i].consumer, rs->page);
		munmap(rs->rings[i].producer, rs->page + rs->rings[i].size);
	}
	free(rs->rings);
	free(rs->bounce);
	free(rs);
}
