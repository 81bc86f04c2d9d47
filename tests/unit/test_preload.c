// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/record/preload.c, the recorder's side of record --preload, against
 * records written by hand as the interposer writes them (preload.h's rules):
 * - a record is taken once committed, in order, and zeroed once read; the
 *   reading stops at one not yet committed;
 * - a record that starts near the ring's end is read whole from the slack;
 * - a record of an impossible size breaks its slot: counted as lost, the
 *   slot never read again, the others still are;
 * - a retired slot read to its end is free again, one still owned is not;
 * - the geometry the target may rewrite in the header is not what we read
 *   by: ours is kept;
 * - a followed process's memory is adopted once, only when it is sealed,
 *   its own (its pid) and shaped as we would have made it;
 * - the command's environment has the interposer first in LD_PRELOAD, what
 *   was there after it, and the descriptor; a path LD_PRELOAD cannot hold
 *   is refused.
 */
#include "preload.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define RING 4096

struct sink {
	uint16_t types[256];
	uint64_t ptrs[256];
	size_t n;
};

static int take(void *ctx, const void *data, size_t size)
{
	const struct mt_free_event *e = data; /* ALLOC and FREE: ptr at the same place */
	struct sink *s = ctx;

	assert_true(size >= sizeof(*e));
	assert_true(s->n < 256);
	s->types[s->n] = e->hdr.type;
	s->ptrs[s->n++] = e->ptr;
	return 0;
}

static struct mt_preload_slot *slot(struct preload *p, uint32_t i)
{
	return (void *)((char *)p->hdr + p->geom.header_bytes + i * p->geom.slot_bytes);
}

/* A record of TYPE (0: not committed yet) and SIZE at byte POS of slot I's ring. */
static struct mt_free_event *put(struct preload *p, uint32_t i, uint64_t pos, uint16_t type, uint16_t size,
				 uint64_t ptr)
{
	struct mt_free_event *e = (void *)((char *)slot(p, i) + MT_PRELOAD_RING_AT + (pos & (RING - 1)));

	e->hdr.size = size;
	e->hdr.tid = 7;
	e->hdr.ts = 100 + pos;
	e->ptr = ptr;
	e->hdr.type = type;
	return e;
}

static int setup(void **state)
{
	struct preload *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	assert_int_equal(preload__open(p, 2, RING, 16, false, 0), 0);
	slot(p, 0)->state = MT_SLOT_OWNED;
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	preload__close(*state);
	free(*state);
	return 0;
}

static void test_committed_in_order_zeroed(void **state)
{
	struct preload *p = *state;
	struct sink s = { 0 };
	struct mt_free_event *a, *b;

	a = put(p, 0, 0, MT_EVENT_FREE, sizeof(*a), 0x1000);
	b = put(p, 0, 24, 0, sizeof(*b), 0x2000); /* its writer is midway */
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ptrs[0], 0x1000);
	assert_int_equal(slot(p, 0)->tail, 24);
	assert_int_equal(a->hdr.type, 0);
	assert_int_equal(a->ptr, 0); /* zeroed: a type of 0 is "not yet" on the next lap */
	b->hdr.type = MT_EVENT_FREE;
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.ptrs[1], 0x2000);
	assert_int_equal(slot(p, 0)->tail, 48);
	assert_int_equal(preload__lost(p), 0);
}

static void test_wraps_into_slack(void **state)
{
	struct preload *p = *state;
	struct sink s = { 0 };
	uint64_t at = 24 * (RING / 24); /* the ALLOC ends 32 bytes into the slack */
	struct mt_alloc_event *e;

	/* read up to AT: what came before, one FREE record a time */
	for (uint64_t pos = 0; pos < at; pos += 24)
		put(p, 0, pos, MT_EVENT_FREE, 24, pos);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(slot(p, 0)->tail, at);
	s.n = 0;
	e = (void *)put(p, 0, at, 0, sizeof(*e), 0xabc);
	e->size = 77;
	e->stack_id = 5;
	e->hdr.type = MT_EVENT_ALLOC;
	put(p, 0, at + sizeof(*e), MT_EVENT_FREE, 24, 0xdef); /* the next lap's start */
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(slot(p, 0)->tail, at + sizeof(*e) + 24);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.types[0], MT_EVENT_ALLOC);
	assert_int_equal(s.ptrs[0], 0xabc);
	assert_int_equal(s.ptrs[1], 0xdef);
}

static void test_bad_size_breaks_slot(void **state)
{
	struct preload *p = *state;
	struct sink s = { 0 };

	slot(p, 1)->state = MT_SLOT_OWNED;
	put(p, 0, 0, MT_EVENT_FREE, 12, 0x1); /* under a header */
	put(p, 1, 0, MT_EVENT_FREE, 24, 0x2);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ptrs[0], 0x2);
	assert_int_equal(preload__lost(p), 1);
	/* never read again, whatever it says now */
	put(p, 0, 0, MT_EVENT_FREE, 24, 0x3);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 1);
	put(p, 1, 24, MT_EVENT_FREE, MT_PRELOAD_SLACK + 8, 0x4); /* over the slack */
	put(p, 1, 48, MT_EVENT_FREE, 24, 0x5);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(preload__lost(p), 2);
}

static void test_retired_slot_freed_when_read(void **state)
{
	struct preload *p = *state;
	struct sink s = { 0 };

	put(p, 0, 0, MT_EVENT_FREE, 24, 0x1);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(slot(p, 0)->state, MT_SLOT_OWNED); /* its thread lives */
	put(p, 0, 24, MT_EVENT_FREE, 24, 0x2);
	slot(p, 0)->state = MT_SLOT_RETIRED;
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(slot(p, 0)->state, MT_SLOT_FREE);
	assert_int_equal(slot(p, 0)->tail, 48); /* where its next owner starts */
}

static void test_header_rewritten(void **state)
{
	struct preload *p = *state;
	struct sink s = { 0 };
	uint64_t lap = 24 * (RING / 24 + 1); /* past the ring's end once */

	for (uint64_t pos = 0; pos < lap; pos += 24) {
		put(p, 0, pos, MT_EVENT_FREE, 24, pos);
		assert_int_equal(preload__poll(p, take, &s), 0);
		s.n = 0;
	}
	/* a hostile target's header: slots and rings far past the mapping */
	p->hdr->nr_slots = 1u << 30;
	p->hdr->ring_bytes = 1ULL << 40;
	p->hdr->slot_bytes = 1ULL << 40;
	p->hdr->header_bytes = 1ULL << 40;
	put(p, 0, lap, MT_EVENT_FREE, 24, 0x1);
	assert_int_equal(preload__poll(p, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ptrs[0], 0x1);
}

static void test_adopt(void **state)
{
	struct preload *made = *state, got, again;
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	int plain;
	struct sink s = { 0 };

	assert_true(pidfd >= 0);
	/* not this process's yet (its parent's, inherited) */
	preload__set_pid(made, getpid() + 1);
	assert_int_equal(preload__adopt(&got, pidfd, made->fd, getpid()), -EAGAIN);
	preload__set_pid(made, getpid());
	made->hdr->ring_bytes = 8192; /* a lie about its shape */
	assert_int_equal(preload__adopt(&got, pidfd, made->fd, getpid()), -EAGAIN);
	made->hdr->ring_bytes = RING;
	assert_int_equal(preload__adopt(&got, pidfd, made->fd, getpid()), 0);
	assert_int_equal(made->hdr->adopted, 1);
	assert_int_equal(made->hdr->recorder_pid, getpid());
	/* a second recorder (the last program's, after an exec) does not */
	assert_int_equal(preload__adopt(&again, pidfd, made->fd, getpid()), -EAGAIN);
	put(made, 0, 0, MT_EVENT_FREE, 24, 0x7);
	assert_int_equal(preload__poll(&got, take, &s), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ptrs[0], 0x7);
	preload__close(&got);
	/* memory that can shrink under our reads is never mapped */
	plain = memfd_create("plain", MFD_CLOEXEC);
	assert_true(plain >= 0);
	assert_int_equal(ftruncate(plain, made->map_bytes), 0);
	assert_int_equal(pwrite(plain, made->hdr, sizeof(*made->hdr), 0), (ssize_t)sizeof(*made->hdr));
	assert_int_equal(pwrite(plain, &(uint32_t){ 0 }, 4, offsetof(struct mt_preload_header, adopted)), 4);
	assert_int_equal(preload__adopt(&got, pidfd, plain, getpid()), -EAGAIN);
	/* a descriptor with nothing there yet */
	assert_int_equal(preload__adopt(&got, pidfd, 1000, getpid()), -EAGAIN);
	close(plain);
	close(pidfd);
}

static void test_environ(void **state)
{
	struct preload *p = *state;
	char *const with[] = { "A=1", "LD_PRELOAD=/x/libmine.so", "MEMTRACE_PRELOAD_FD=99", NULL };
	char *const without[] = { "A=1", NULL };
	char want[64];
	char **env;

	snprintf(want, sizeof(want), "MEMTRACE_PRELOAD_FD=%d", p->fd);
	env = preload__environ(p, "/opt/mt/libmemtrace_preload.so", with);
	assert_non_null(env);
	assert_string_equal(env[0], "A=1");
	assert_string_equal(env[1], "LD_PRELOAD=/opt/mt/libmemtrace_preload.so:/x/libmine.so");
	assert_string_equal(env[2], want);
	assert_null(env[3]);
	preload__environ_free(env);
	env = preload__environ(p, "/opt/mt/libmemtrace_preload.so", without);
	assert_non_null(env);
	assert_string_equal(env[1], "LD_PRELOAD=/opt/mt/libmemtrace_preload.so");
	preload__environ_free(env);
	errno = 0;
	assert_null(preload__environ(p, "/opt/m t/libmemtrace_preload.so", without));
	assert_int_equal(errno, EINVAL);
	assert_null(preload__environ(p, "/opt/m:t/libmemtrace_preload.so", without));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_committed_in_order_zeroed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wraps_into_slack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_size_breaks_slot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retired_slot_freed_when_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_rewritten, setup, teardown),
		cmocka_unit_test_setup_teardown(test_adopt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_environ, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
