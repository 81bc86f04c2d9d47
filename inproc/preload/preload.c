// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libmemtrace_preload.so: the in-process capture of `memtrace record
 * --preload -- CMD`. memtrace puts it first in the command's LD_PRELOAD, so
 * the program's calls of the malloc family and of C++'s operator new and
 * delete come here first; each is passed to the allocator that comes next
 * (dlsym(RTLD_NEXT): glibc's, or a jemalloc, tcmalloc or mimalloc the
 * program links), and what it did is written, as the same records the BPF
 * probes write (bpf/memtrace_abi.h), into the calling thread's ring in the
 * shared memory file memtrace made. memtrace reads them into the same drain,
 * trace and replay as the probes' records. No trap per call: a call costs
 * the clock, a frame-pointer walk and a few stores.
 *
 * Rules (each pinned by tests/e2e/preload.sh):
 * - What counts is what the probes count (DESIGN.md's semantics): a call
 *   made inside another of ours (libstdc++'s operator new calling malloc)
 *   is not counted again (the thread's guard); realloc(p, n) that returns
 *   a block is REALLOC of p, realloc(p, 0) that returns NULL is a FREE.
 * - Frees are stamped before the block is given back, allocations after
 *   they return, so another thread's reuse of an address comes later.
 * - A signal handler may interrupt the writing of a record and write its
 *   own: space is taken with one instruction (xadd, atomic against the
 *   thread's own handlers) and a record is committed by its type, stored
 *   last; the recorder stops at a record not yet committed.
 * - Nothing here takes a lock or makes a system call on the way of a call,
 *   except the first call of a thread (its slot) and a full ring (wait).
 * - Calls made before the next allocator is known (dlsym allocates) are
 *   served from a small static arena and never given back.
 * - A forked child writes nothing (its parent's slots are not its own),
 *   except under --follow-children: then a forked child, and a program a
 *   recorded process execs, makes shared memory of its own (the same
 *   geometry, under the same descriptor number, so that an exec finds it)
 *   and waits until its recorder has it before it goes on.
 */
#include <linux/types.h>
#include "memtrace_abi.h"
#include <stdbool.h>
#include "unwind_rule.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define FRAME() ((uint64_t *)__builtin_frame_address(0))

/* The allocator after us, found once. */
static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*reallocarray)(void *, size_t, size_t);
} next;

enum { INIT_NONE, INIT_RUNNING, INIT_DONE };
static int init_state;
static pthread_t init_thread;         /* the thread running init(): its calls go to the arena */
static struct mt_preload_header *hdr; /* NULL: not recording (no memtrace, a forked child) */
static int shared_fd = -1;            /* MEMTRACE_PRELOAD_FD: where memtrace and a recorder find it */
static pid_t my_pid;                  /* this process (a fork's child sets it anew) */
static int tables_waited;             /* --follow-children: its first stack waited for its tables (once) */
static char *slots;                   /* slot 0 */
/* A thread's slot, as its value of this key: no TLS here (see the ABI's
 * mt_preload_slot), and pthread_getspecific of an early key is one load. */
static pthread_key_t slot_key;
#define SLOT_TAKING ((void *)1) /* the thread is taking a slot: what that calls is ours */
#define SLOT_NONE ((void *)2)   /* none was free: its calls are lost (counted) */

/* --- the bootstrap arena: calls made while dlsym looks for the next allocator */

#define ARENA_BYTES (64 * 1024)
static char arena[ARENA_BYTES] __attribute__((aligned(64)));
static size_t arena_used;

static bool in_arena(const void *p)
{
	return (const char *)p >= arena && (const char *)p < arena + ARENA_BYTES;
}

static void *arena_alloc(size_t size, size_t align)
{
	size_t at;

	if (align < 16)
		align = 16;
	at = (__atomic_load_n(&arena_used, __ATOMIC_RELAXED) + 16 + align - 1) & ~(align - 1);
	if (size > ARENA_BYTES || at + size > ARENA_BYTES)
		return NULL;
	__atomic_store_n(&arena_used, at + size, __ATOMIC_RELAXED);
	((size_t *)(arena + at))[-1] = size; /* realloc copies this much */
	return arena + at;
}

/* --- start-up */

static void on_thread_exit(void *slot);

/* The unwind area's bytes (memtrace's user/record/preload.c says the same). */
static uint64_t unwind_bytes(const struct mt_preload_header *h)
{
	uint64_t n = sizeof(struct mt_preload_unwind) + (uint64_t)h->unwind_rows * sizeof(struct mt_unwind_row);

	return h->unwind_rows ? (n + 4095) & ~4095ULL : 0;
}

static uint64_t map_bytes(const struct mt_preload_header *h)
{
	return h->header_bytes + (uint64_t)h->nr_slots * h->slot_bytes + unwind_bytes(h);
}

/*
 * --follow-children: memory of this process's own, shaped as H, at
 * shared_fd (so that a program it execs finds it there), its header new.
 * Only system calls (this runs in a fork's child). The mapping, or NULL.
 */
static struct mt_preload_header *make_own(const struct mt_preload_header *h)
{
	struct mt_preload_header *m;
	uint64_t bytes = map_bytes(h);
	int fd = (int)syscall(SYS_memfd_create, "memtrace-preload", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)bytes) || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) ||
	    (m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*m = (struct mt_preload_header){
		.magic = MT_PRELOAD_MAGIC, .version = MT_PRELOAD_VERSION, .nr_slots = h->nr_slots,
		.slot_bytes = h->slot_bytes, .ring_bytes = h->ring_bytes, .header_bytes = h->header_bytes,
		.pid = (uint32_t)getpid(), .recorder_pid = h->recorder_pid, .stack_depth = h->stack_depth,
		.clock = h->clock, .follow = 1, .started = 1, .unwind_rows = h->unwind_rows,
	};
	if (dup2(fd, shared_fd) < 0) {
		munmap(m, bytes);
		close(fd);
		return NULL;
	}
	close(fd);
	return m;
}

/* Until a recorder has M (it looks every millisecond): what this process
 * does before that would wait in its rings, and be lost if it ended first.
 * A recorder that never comes (the supervisor could not start one): no
 * recording, after 2 s. */
static bool wait_adopted(struct mt_preload_header *m)
{
	struct timespec pause = { 0, 100 * 1000 };

	for (int i = 0; i < 20000; i++) {
		if (__atomic_load_n(&m->adopted, __ATOMIC_ACQUIRE))
			return true;
		syscall(SYS_nanosleep, &pause, NULL); /* not a cancellation point */
	}
	return false;
}

static void use(struct mt_preload_header *m)
{
	slots = (char *)m + m->header_bytes;
	__atomic_store_n(&hdr, m, __ATOMIC_RELEASE);
}

static void after_fork_child(void)
{
	struct mt_preload_header *parent = hdr, *m;

	/* the parent's slots are its own: a child writes nothing, unless it
	 * is followed, into memory of its own */
	hdr = NULL;
	my_pid = getpid();
	tables_waited = 0; /* its own memory's tables are still to come */
	pthread_setspecific(slot_key, NULL);
	if (!parent || !parent->follow || !(m = make_own(parent)))
		return;
	munmap(parent, map_bytes(parent));
	if (wait_adopted(m))
		use(m);
}

/* The shared memory memtrace passed: MEMTRACE_PRELOAD_FD names the
 * descriptor. Anything amiss and the program runs untraced. */
static void map_shared(void)
{
	const char *s = getenv("MEMTRACE_PRELOAD_FD");
	struct mt_preload_header h, *m;
	char *end;
	long fd;

	if (!s)
		return;
	fd = strtol(s, &end, 10);
	if (*end || fd < 0 || fd > INT32_MAX || pread((int)fd, &h, sizeof(h), 0) != sizeof(h) ||
	    h.magic != MT_PRELOAD_MAGIC || h.version != MT_PRELOAD_VERSION)
		return; /* not ours */
	shared_fd = (int)fd;
	if (h.follow && (h.pid != (uint32_t)getpid() || h.started)) {
		/* followed: a program exec'd (by this process, or by a child
		 * that shared its parent's memory: vfork) records on its own.
		 * It does not wait for its recorder here: held at its entry
		 * point (the launcher's fallback), it runs this before its
		 * recorder starts; it waits at its exit instead (preload_end) */
		m = make_own(&h);
		if (m)
			use(m);
		return;
	}
	if (h.pid != (uint32_t)getpid())
		return; /* another process's (an exec'd child keeps the variable) */
	m = mmap(NULL, map_bytes(&h), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	if (m == MAP_FAILED)
		return;
	__atomic_store_n(&m->started, 1, __ATOMIC_RELEASE);
	use(m);
}

static void init(void)
{
	int expected = INIT_NONE;

	if (!__atomic_compare_exchange_n(&init_state, &expected, INIT_RUNNING, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		if (expected == INIT_RUNNING && pthread_equal(init_thread, pthread_self()))
			return; /* dlsym's own calls: the arena */
		while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
			sched_yield();
		return;
	}
	init_thread = pthread_self();
	next.malloc = dlsym(RTLD_NEXT, "malloc");
	next.calloc = dlsym(RTLD_NEXT, "calloc");
	next.realloc = dlsym(RTLD_NEXT, "realloc");
	next.free = dlsym(RTLD_NEXT, "free");
	next.posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	next.aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	next.memalign = dlsym(RTLD_NEXT, "memalign");
	next.valloc = dlsym(RTLD_NEXT, "valloc");
	next.pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	next.reallocarray = dlsym(RTLD_NEXT, "reallocarray");
	if (!next.malloc || !next.free || !next.calloc || !next.realloc)
		abort(); /* no allocator after us: nothing could run */
	/* from here on the next allocator serves us: the key (an early one,
	 * so that its value is in the thread's first block), the fork hook */
	__atomic_store_n(&init_state, INIT_DONE, __ATOMIC_RELEASE);
	if (pthread_key_create(&slot_key, on_thread_exit))
		return;
	pthread_atfork(NULL, NULL, after_fork_child);
	my_pid = getpid();
	map_shared();
}

__attribute__((constructor)) static void preload_start(void)
{
	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != INIT_DONE)
		init();
}

/* A followed program ending before its recorder found its memory (a
 * short one) would take its records with it: it waits (2 s at most). Not
 * on _exit, which runs no destructor. */
__attribute__((destructor)) static void preload_end(void)
{
	struct mt_preload_header *h = __atomic_load_n(&hdr, __ATOMIC_ACQUIRE);

	if (h && h->follow && !__atomic_load_n(&h->adopted, __ATOMIC_ACQUIRE))
		wait_adopted(h);
}

/* Whether init is done; else it runs now, and a call made inside it (by
 * dlsym) is served from the arena. */
static inline bool ready(void)
{
	if (likely(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_DONE))
		return true;
	init();
	return __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == INIT_DONE;
}

/* --- slots */

/* This thread's stack, for the walk's checks; a thread whose bounds are
 * unknown keeps only the site. */
static void find_stack(struct mt_preload_slot *s)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	s->w_stack_lo = s->w_stack_hi = 0;
	if (pthread_getattr_np(pthread_self(), &a))
		return;
	if (!pthread_attr_getstack(&a, &addr, &size)) {
		s->w_stack_lo = (uint64_t)addr;
		s->w_stack_hi = (uint64_t)addr + size;
	}
	pthread_attr_destroy(&a);
}

/* Take a free slot for this thread: it, or NULL. What the bookkeeping
 * calls (pthread_getattr_np allocates) finds SLOT_TAKING and passes. */
static struct mt_preload_slot *take_slot(struct mt_preload_header *h)
{
	int saved_errno = errno; /* free and a successful malloc leave errno be */
	uint32_t n = h->nr_slots, tid;

	pthread_setspecific(slot_key, SLOT_TAKING);
	tid = (uint32_t)syscall(SYS_gettid);
	for (uint32_t i = 0; i < n; i++) {
		struct mt_preload_slot *s = (void *)(slots + (uint64_t)((tid + i) % n) * h->slot_bytes);
		uint64_t free_state = MT_SLOT_FREE;

		if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != MT_SLOT_FREE ||
		    !__atomic_compare_exchange_n(&s->state, &free_state, MT_SLOT_OWNED, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		s->tid = tid;
		/* a slot is free once read to its end: the next record goes there */
		s->w_reserved = s->w_tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
		s->w_guard = s->w_depth = 0;
		find_stack(s);
		__atomic_fetch_add(&h->threads, 1, __ATOMIC_RELAXED);
		pthread_setspecific(slot_key, s);
		errno = saved_errno;
		return s;
	}
	pthread_setspecific(slot_key, SLOT_NONE);
	errno = saved_errno;
	return NULL;
}

/* The calling thread's slot while recording; NULL: nothing to write (not
 * recording, or inside the taking of its slot). */
static inline struct mt_preload_slot *my_slot(struct mt_preload_header *h)
{
	void *v = pthread_getspecific(slot_key);

	if (likely(v > SLOT_NONE))
		return v;
	if (v == SLOT_TAKING)
		return NULL;
	if (v == SLOT_NONE) {
		__atomic_fetch_add(&h->lost, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	return take_slot(h);
}

/* The key's destructor at thread exit: the slot is read to its end, then
 * free. A later call on this thread (another destructor freeing) takes
 * one again. */
static void on_thread_exit(void *slot)
{
	struct mt_preload_slot *s = slot;

	if (slot > SLOT_NONE)
		__atomic_store_n(&s->state, MT_SLOT_RETIRED, __ATOMIC_RELEASE);
}

/* What a call is about to be: S, the thread's slot, when it is to be
 * written (recording, and not inside another of our calls); NULL: just
 * pass it on. */
static inline struct mt_preload_slot *recorded(struct mt_preload_header **hp)
{
	struct mt_preload_header *h = __atomic_load_n(&hdr, __ATOMIC_ACQUIRE);
	struct mt_preload_slot *s;

	*hp = h;
	if (likely(!h) || unlikely(__atomic_load_n(&h->stopped, __ATOMIC_RELAXED)))
		return NULL; /* not recording, or no longer */
	s = my_slot(h);
	return s && !s->w_guard ? s : NULL;
}

/* --- writing records */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * A record's time. Where the kernel keeps time by the TSC (memtrace says so
 * in the header), the TSC itself, which memtrace turns into CLOCK_MONOTONIC
 * ns: clock_gettime was half of what a call cost here (22 ns, twice a
 * pair). A free is stamped before it gives its block back, and rdtsc
 * retires before the stores that do; an allocation after it returned, so
 * its rdtsc waits (lfence) for what came before, as clock_gettime's does.
 */
static inline uint64_t stamp_free(const struct mt_preload_header *h)
{
	uint32_t lo, hi;

	if (!h->clock)
		return now_ns();
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t stamp_alloc(const struct mt_preload_header *h)
{
	uint32_t lo, hi;

	if (!h->clock)
		return now_ns();
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (uint64_t)hi << 32 | lo;
}

/* POS = *AT; *AT += N, in one instruction: a signal handler on this thread
 * runs either before or after it (no lock: no other thread writes AT). */
static inline uint64_t take_bytes(__u64 *at, uint64_t n)
{
	__asm__ volatile("xaddq %0, %1" : "+r"(n), "+m"(*at) : : "memory");
	return n;
}

/* Whether memtrace is gone (SIGKILL'd): a writer never waits on it then. */
static bool recorder_gone(struct mt_preload_header *h)
{
	return __atomic_load_n(&h->stopped, __ATOMIC_RELAXED) ||
	       (kill((pid_t)h->recorder_pid, 0) && errno == ESRCH);
}

/* Room for SIZE bytes in S's ring: the record's place, or NULL (lost). A
 * signal handler's record inside the thread's own (depth > 1) does not
 * wait: the recorder may be stopped at the interrupted record. */
static void *reserve(struct mt_preload_header *h, struct mt_preload_slot *s, uint32_t size)
{
	uint64_t ring = h->ring_bytes, pos;
	int saved_errno;

	/* the recorder's tail only grows: a stale one is a cautious one, and
	 * reading the line it writes at every record cost a miss a call */
	if (unlikely(s->w_reserved + size - s->w_tail > ring) &&
	    s->w_reserved + size - (s->w_tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE)) > ring && s->w_depth > 1)
		goto lost;
	pos = take_bytes(&s->w_reserved, size);
	if (unlikely(pos + size - s->w_tail > ring) &&
	    pos + size - (s->w_tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE)) > ring) {
		saved_errno = errno;
		__atomic_fetch_add(&h->waits, 1, __ATOMIC_RELAXED);
		for (unsigned i = 1; pos + size - (s->w_tail = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE)) > ring; i++) {
			if (!(i & 1023) && recorder_gone(h)) {
				hdr = NULL; /* nobody reads: the program goes on untraced */
				errno = saved_errno;
				return NULL;
			}
			sched_yield();
		}
		errno = saved_errno;
	}
	return (char *)s + MT_PRELOAD_RING_AT + (pos & (ring - 1));
lost:
	__atomic_fetch_add(&h->lost, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* The header last: its type commits the record. */
static inline void commit(struct mt_preload_slot *s, struct mt_event_header *e, uint16_t type, uint16_t size,
			  uint64_t ts)
{
	e->size = size;
	e->tid = s->tid;
	e->ts = ts;
	__atomic_store_n(&e->type, type, __ATOMIC_RELEASE);
}

static void write_free(struct mt_preload_header *h, struct mt_preload_slot *s, void *ptr)
{
	struct mt_free_event *e;
	uint64_t ts = stamp_free(h);

	s->w_depth++;
	e = reserve(h, s, sizeof(*e));
	if (e) {
		e->ptr = (uint64_t)ptr;
		commit(s, &e->hdr, MT_EVENT_FREE, sizeof(*e), ts);
	}
	s->w_depth--;
}

/* The caller's stack from FP (the frame of our exported function, whose
 * return address is the allocation's site), by frame pointers, checked to
 * stay in this thread's stack and to go up it. */
static uint32_t walk(const struct mt_preload_slot *s, const uint64_t *fp, uint64_t *frames, uint32_t max)
{
	uint64_t lo = s->w_stack_lo, hi = s->w_stack_hi;
	uint32_t n = 0;

	if (!max)
		return 0;
	frames[n++] = fp[1];
	if ((uint64_t)fp < lo || (uint64_t)fp >= hi)
		return n; /* another stack (sigaltstack, a coroutine's): the site alone */
	while (n < max) {
		const uint64_t *up = (const uint64_t *)fp[0];
		uint64_t ret;

		if ((uint64_t)up <= (uint64_t)fp || (uint64_t)up + 16 > hi || ((uint64_t)up & 7))
			break;
		ret = up[1];
		if (ret < 4096 || ret >= 0x800000000000ULL)
			break;
		frames[n++] = ret;
		fp = up;
	}
	return n;
}

/*
 * By the unwind tables memtrace copied in (struct mt_preload_unwind), the
 * rules of bpf/unwind_rule.h: code without frame pointers too. Every word
 * read is in this thread's stack, and the code before a return address is
 * read only inside a mapping with a table (executable, mapped).
 */
struct unwind_ctx {
	const struct mt_preload_unwind *u;
	const struct mt_unwind_row *rows;
	uint32_t rows_cap, gen, nmaps;
};

static const struct mt_unwind_map *find_map(const struct unwind_ctx *c, uint64_t pc)
{
	const struct mt_unwind_map *maps = c->u->maps[c->gen & 1];
	uint32_t lo = 0, hi = c->nmaps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < maps[lo - 1].end ? &maps[lo - 1] : NULL;
}

/* The row for PC (EXACT: not a return address) into *ROW: true, or false
 * where the walk stops; by S's cache, whose entry is written key last (a
 * signal handler's walk may take the same one). */
static bool find_row(const struct unwind_ctx *c, struct mt_preload_slot *s, uint64_t pc, bool exact,
		     struct mt_unwind_row *row)
{
	uint64_t key = pc | (exact ? 1ULL << 63 : 0);
	struct mt_preload_row_cache *e = &s->rows_seen[((pc * 0x9e3779b97f4a7c15ULL) >> 54) & (MT_PRELOAD_ROW_CACHE - 1)];
	const struct mt_unwind_map *m;
	uint32_t lo, hi, first;
	bool found = false;
	uint64_t vaddr;

	if (e->pc == key && e->gen == c->gen) {
		struct mt_preload_row_cache copy = *e;

		__asm__ volatile("" ::: "memory");
		if (e->pc == key) {
			*row = copy.row;
			return copy.found;
		}
	}
	m = find_map(c, pc);
	if (m && m->nr_rows && m->first_row < c->rows_cap && m->nr_rows <= c->rows_cap - m->first_row) {
		vaddr = mt_unwind_lookup_addr(pc, m->bias, exact);
		first = lo = m->first_row;
		hi = first + m->nr_rows;
		while (vaddr <= 0xffffffffULL && lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (c->rows[mid].pc <= vaddr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (vaddr <= 0xffffffffULL && lo > first) {
			*row = c->rows[lo - 1];
			found = true;
		}
	}
	e->pc = 0;
	__asm__ volatile("" ::: "memory");
	e->gen = c->gen;
	e->found = found;
	if (found)
		e->row = *row;
	__asm__ volatile("" ::: "memory");
	e->pc = key;
	return found;
}

/* The word at ADDR: read directly in this thread's stack; elsewhere (a
 * sigaltstack, a coroutine's stack, a value that is no address at all)
 * through process_vm_readv, which says EFAULT where a load would crash. */
static bool word_at(const struct mt_preload_slot *s, uint64_t addr, uint64_t *val)
{
	struct iovec local = { val, 8 }, remote = { (void *)addr, 8 };

	if (addr & 7)
		return false;
	if (addr >= s->w_stack_lo && addr + 8 <= s->w_stack_hi) {
		*val = *(const uint64_t *)addr;
		return true;
	}
	return syscall(SYS_process_vm_readv, my_pid, &local, 1, &remote, 1, 0) == 8;
}

static uint32_t walk_tables(const struct unwind_ctx *c, struct mt_preload_slot *s, const uint64_t *fp,
			    uint64_t *frames, uint32_t max)
{
	uint64_t pc = fp[1], sp = (uint64_t)(fp + 2), bp = fp[0], cut = 0;
	bool exact = false, bp_ok = true;
	int saved_errno = errno;
	uint32_t n = 0;

	frames[n++] = pc;
	for (;;) {
		struct mt_unwind_row row;
		__u64 cfa;
		uint64_t ra;

		if (n >= max) {
			cut = MT_STACK_DEPTH_CUT;
			break;
		}
		if (!find_row(c, s, pc, exact, &row)) {
			if (n > 1 && !find_map(c, pc))
				n--; /* code without a table (the vdso, JIT): mt_unwind_keep_unmapped */
			cut = MT_STACK_TRUNCATED;
			break;
		}
		if (mt_unwind_needs_bp(&row) && !bp_ok) {
			cut = MT_STACK_TRUNCATED;
			break;
		}
		switch (mt_unwind_cfa(&row, pc, sp, bp, &cfa)) {
		case MT_NEXT_CALLER:
			break;
		case MT_NEXT_SIGNAL: {
			/* the interrupted registers, in the signal frame */
			uint64_t rbp, rip, rsp;

			if (!word_at(s, sp + MT_SIGCONTEXT_RBP, &rbp) || !word_at(s, sp + MT_SIGCONTEXT_RIP, &rip) ||
			    !word_at(s, sp + MT_SIGCONTEXT_RSP, &rsp) || !rip)
				goto out;
			bp = rbp;
			pc = rip;
			sp = rsp;
			frames[n++] = pc;
			exact = true;
			bp_ok = true;
			continue;
		}
		case MT_NEXT_END:
			goto out; /* the outermost frame: whole */
		default:
			cut = MT_STACK_TRUNCATED;
			goto out;
		}
		if (!word_at(s, cfa - 8, &ra) || !mt_unwind_caller_ok(ra, cfa, sp))
			break;
		if (row.flags & MT_ROW_CHECK_RA) {
			const struct mt_unwind_map *m = find_map(c, ra);

			if (!m || ra - 8 < m->start || !mt_unwind_after_call((const __u8 *)(ra - 8))) {
				cut = MT_STACK_TRUNCATED;
				break;
			}
		}
		frames[n++] = ra;
		if (row.rbp_rule == MT_RBP_AT_CFA)
			bp_ok = word_at(s, cfa + (int64_t)row.rbp_off, &bp);
		sp = cfa;
		pc = ra;
		exact = false;
	}
out:
	if (cut && n < MT_MAX_STACK_DEPTH)
		frames[n++] = cut;
	errno = saved_errno;
	return n;
}

/*
 * --follow-children: a process's memory gets its tables once its recorder
 * has it, which may be just after its first allocation (a program exec'd
 * did not wait for it at start-up). Its first stack waits for them, 50 ms
 * at most, once: where the launcher held the program at its entry point,
 * library initializers allocate before any recorder exists, and those
 * keep what frame pointers give.
 */
static void wait_tables(const struct mt_preload_unwind *u)
{
	struct timespec pause = { 0, 100 * 1000 };
	int saved_errno = errno;

	if (__atomic_exchange_n(&tables_waited, 1, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < 500 && !__atomic_load_n(&u->gen, __ATOMIC_ACQUIRE); i++)
		syscall(SYS_nanosleep, &pause, NULL);
	errno = saved_errno;
}

static uint64_t hash_frames(const uint64_t *frames, uint32_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (uint32_t i = 0; i < n; i++) {
		h ^= frames[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	return h ? h : 1;
}

/* The stack's id, its STACK record written the first time this slot sees
 * it (another slot's copy is harmless: the drain keeps the first). */
static uint64_t take_stack(struct mt_preload_header *h, struct mt_preload_slot *s, const uint64_t *fp)
{
	uint32_t depth = h->stack_depth < MT_MAX_STACK_DEPTH ? h->stack_depth : MT_MAX_STACK_DEPTH;
	uint64_t frames[MT_MAX_STACK_DEPTH], id;
	const struct mt_preload_unwind *u = h->unwind_rows ? (const void *)((const char *)h + h->header_bytes +
									    (uint64_t)h->nr_slots * h->slot_bytes)
							   : NULL;
	struct unwind_ctx c;
	uint32_t n;

	if (unlikely(u && h->follow && !__atomic_load_n(&u->gen, __ATOMIC_ACQUIRE)))
		wait_tables(u);
	if (u && (c.gen = __atomic_load_n(&u->gen, __ATOMIC_ACQUIRE)) && (c.nmaps = u->nr[c.gen & 1]) <= MT_UNWIND_MAPS) {
		c.u = u;
		c.rows = (const struct mt_unwind_row *)(u + 1);
		c.rows_cap = h->unwind_rows;
		n = depth ? walk_tables(&c, s, fp, frames, depth) : 0;
	} else {
		n = walk(s, fp, frames, depth); /* no tables (yet, or --unwind-rows 0): frame pointers */
	}
	struct mt_stack_event *e;
	__u64 *seen;
	uint32_t size;

	if (!n)
		return 0;
	id = hash_frames(frames, n);
	seen = &s->seen[id & (MT_PRELOAD_SEEN - 1)];
	if (likely(*seen == id))
		return id;
	size = offsetof(struct mt_stack_event, frames) + n * 8;
	e = reserve(h, s, size);
	if (!e)
		return id;
	e->stack_id = id;
	e->nr = n;
	e->pad = 0;
	memcpy(e->frames, frames, n * 8);
	commit(s, &e->hdr, MT_EVENT_STACK, (uint16_t)size, 0);
	*seen = id;
	return id;
}

static void write_alloc(struct mt_preload_header *h, struct mt_preload_slot *s, uint16_t type, void *ptr, void *old,
			uint64_t size, const uint64_t *fp)
{
	struct mt_alloc_event *e;
	uint64_t ts, stack;

	if (!ptr)
		return;
	ts = stamp_alloc(h);
	s->w_depth++;
	stack = h->stack_depth ? take_stack(h, s, fp) : 0;
	e = reserve(h, s, sizeof(*e));
	if (e) {
		e->ptr = (uint64_t)ptr;
		e->size = size;
		e->old_ptr = (uint64_t)old;
		e->stack_id = stack;
		commit(s, &e->hdr, type, sizeof(*e), ts);
	}
	s->w_depth--;
}

/* --- the C allocator */

/* Around a call of the next allocator: what it calls of ours is its own. */
#define CALL_NEXT(s, expr)                                                                                             \
	({                                                                                                             \
		if (s)                                                                                                 \
			s->w_guard++;                                                                                  \
		__typeof__(expr) r_ = (expr);                                                                          \
		if (s)                                                                                                 \
			s->w_guard--;                                                                                  \
		r_;                                                                                                    \
	})

EXPORT void *malloc(size_t size)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;
	void *p;

	if (unlikely(!ready()))
		return arena_alloc(size, 16);
	s = recorded(&h);
	p = CALL_NEXT(s, next.malloc(size));
	if (s)
		write_alloc(h, s, MT_EVENT_ALLOC, p, NULL, size, FRAME());
	return p;
}

EXPORT void free(void *ptr)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;

	if (unlikely(in_arena(ptr)) || !ptr || unlikely(!next.free))
		return;
	s = recorded(&h);
	if (s)
		write_free(h, s, ptr);
	CALL_NEXT(s, (next.free(ptr), 0));
}

EXPORT void *calloc(size_t n, size_t size)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;
	void *p;

	if (unlikely(!ready())) {
		if (size && n > SIZE_MAX / size)
			return NULL;
		return arena_alloc(n * size, 16); /* static: zeroed */
	}
	s = recorded(&h);
	p = CALL_NEXT(s, next.calloc(n, size));
	if (s)
		write_alloc(h, s, MT_EVENT_ALLOC, p, NULL, (uint64_t)n * size, FRAME());
	return p;
}

/* realloc's outcome, as the probes tell it (DESIGN.md's semantics). */
static void after_realloc(struct mt_preload_header *h, struct mt_preload_slot *s, void *p, void *old, uint64_t size,
			  const uint64_t *fp)
{
	if (p)
		write_alloc(h, s, old ? MT_EVENT_REALLOC : MT_EVENT_ALLOC, p, old, size, fp);
	else if (old && size == 0)
		write_free(h, s, old); /* glibc's realloc(p, 0) */
}

/* A block from the arena moves to the real allocator. */
static void *arena_realloc(void *old, size_t size)
{
	size_t had = ((size_t *)old)[-1];
	void *p = malloc(size);

	if (p)
		memcpy(p, old, had < size ? had : size);
	return p;
}

EXPORT void *realloc(void *old, size_t size)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;
	void *p;

	if (unlikely(!ready()))
		return old ? NULL : arena_alloc(size, 16);
	if (unlikely(in_arena(old)))
		return arena_realloc(old, size);
	s = recorded(&h);
	p = CALL_NEXT(s, next.realloc(old, size));
	if (s)
		after_realloc(h, s, p, old, size, FRAME());
	return p;
}

EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;
	void *p;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(!ready()) || unlikely(in_arena(old)) || !next.reallocarray)
		return realloc(old, n * size);
	s = recorded(&h);
	p = CALL_NEXT(s, next.reallocarray(old, n, size));
	if (s)
		after_realloc(h, s, p, old, (uint64_t)n * size, FRAME());
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	struct mt_preload_header *h;
	struct mt_preload_slot *s;
	int err;

	if (unlikely(!ready())) {
		*out = arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	s = recorded(&h);
	err = CALL_NEXT(s, next.posix_memalign(out, align, size));
	if (s && !err)
		write_alloc(h, s, MT_EVENT_ALLOC, *out, NULL, size, FRAME());
	return err;
}

#define ALLOC_FN(name, params, args, size_expr, arena_expr)                                                            \
	EXPORT void *name params                                                                                       \
	{                                                                                                              \
		struct mt_preload_header *h;                                                                           \
		struct mt_preload_slot *s;                                                                             \
		void *p;                                                                                               \
		if (unlikely(!ready()))                                                                                \
			return arena_expr;                                                                             \
		s = recorded(&h);                                                                                      \
		p = CALL_NEXT(s, next.name args);                                                                      \
		if (s)                                                                                                 \
			write_alloc(h, s, MT_EVENT_ALLOC, p, NULL, size_expr, FRAME());                                \
		return p;                                                                                              \
	}
ALLOC_FN(aligned_alloc, (size_t align, size_t size), (align, size), size, arena_alloc(size, align))
ALLOC_FN(memalign, (size_t align, size_t size), (align, size), size, arena_alloc(size, align))
ALLOC_FN(valloc, (size_t size), (size), size, arena_alloc(size, 4096))
ALLOC_FN(pvalloc, (size_t size), (size), size, arena_alloc((size + 4095) & ~(size_t)4095, 4096))

/* --- C++: operator new and delete, every variant of C++17. new is what
 * libstdc++'s is, the next allocator's malloc (aligned_alloc), under the
 * guard; only when that fails does the library's own run (its new_handler
 * loop, its bad_alloc), unguarded, so that no exception ever leaves a
 * guard set (nor needs this library to unwind: no libgcc_s, which the
 * program would find loaded, as its figures would show). delete is the
 * library's own (a tcmalloc's, a mimalloc's), its free inside under the
 * guard. */

/* The library's own function SYM, found the first time. */
#define NEXT_CXX(fn, sym)                                                                                              \
	static __typeof__(fn) fn##_next;                                                                               \
	if (unlikely(!fn##_next)) {                                                                                    \
		fn##_next = (__typeof__(fn))dlsym(RTLD_NEXT, sym);                                                     \
		if (!fn##_next)                                                                                        \
			abort();                                                                                       \
	}

/* operator new's size for malloc (0 is 1), and aligned_alloc's (a multiple of A). */
#define NEW_SIZE(n) ((n) ? (n) : 1)
static inline size_t NEW_ALIGNED_SIZE(size_t n, size_t a)
{
	size_t up = a ? (n + a - 1) / a * a : n;

	return up ? up : a;
}

#define NEW(name, sym, params, args, first_try)                                                                        \
	EXPORT void *name params                                                                                       \
	{                                                                                                              \
		struct mt_preload_header *h;                                                                           \
		struct mt_preload_slot *s;                                                                             \
		void *p;                                                                                               \
		if (unlikely(!ready()))                                                                                \
			abort(); /* nothing calls new from inside dlsym */                                             \
		s = recorded(&h);                                                                                      \
		p = CALL_NEXT(s, first_try);                                                                           \
		if (likely(p)) {                                                                                       \
			if (s)                                                                                         \
				write_alloc(h, s, MT_EVENT_ALLOC, p, NULL, n, FRAME());                                \
			return p;                                                                                      \
		}                                                                                                      \
		void *(*fn) params = NULL;                                                                             \
		NEXT_CXX(fn, sym);                                                                                     \
		return fn_next args; /* its malloc inside is counted, at our malloc */                                 \
	}

#define DELETE(name, sym, params, args)                                                                                \
	EXPORT void name params                                                                                        \
	{                                                                                                              \
		void (*fn) params = NULL;                                                                              \
		struct mt_preload_header *h;                                                                           \
		struct mt_preload_slot *s;                                                                             \
		NEXT_CXX(fn, sym);                                                                                     \
		s = recorded(&h);                                                                                      \
		if (s && p)                                                                                            \
			write_free(h, s, p);                                                                           \
		CALL_NEXT(s, (fn_next args, 0));                                                                       \
	}

typedef struct nothrow nothrow_t; /* std::nothrow_t, passed by reference */

NEW(_Znwm, "_Znwm", (size_t n), (n), next.malloc(NEW_SIZE(n)))
NEW(_Znam, "_Znam", (size_t n), (n), next.malloc(NEW_SIZE(n)))
NEW(_ZnwmRKSt9nothrow_t, "_ZnwmRKSt9nothrow_t", (size_t n, const nothrow_t *t), (n, t), next.malloc(NEW_SIZE(n)))
NEW(_ZnamRKSt9nothrow_t, "_ZnamRKSt9nothrow_t", (size_t n, const nothrow_t *t), (n, t), next.malloc(NEW_SIZE(n)))
NEW(_ZnwmSt11align_val_t, "_ZnwmSt11align_val_t", (size_t n, size_t a), (n, a),
    next.aligned_alloc(a, NEW_ALIGNED_SIZE(n, a)))
NEW(_ZnamSt11align_val_t, "_ZnamSt11align_val_t", (size_t n, size_t a), (n, a),
    next.aligned_alloc(a, NEW_ALIGNED_SIZE(n, a)))
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t n, size_t a, const nothrow_t *t),
    (n, a, t), next.aligned_alloc(a, NEW_ALIGNED_SIZE(n, a)))
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, "_ZnamSt11align_val_tRKSt9nothrow_t", (size_t n, size_t a, const nothrow_t *t),
    (n, a, t), next.aligned_alloc(a, NEW_ALIGNED_SIZE(n, a)))

DELETE(_ZdlPv, "_ZdlPv", (void *p), (p))
DELETE(_ZdaPv, "_ZdaPv", (void *p), (p))
DELETE(_ZdlPvm, "_ZdlPvm", (void *p, size_t n), (p, n))
DELETE(_ZdaPvm, "_ZdaPvm", (void *p, size_t n), (p, n))
DELETE(_ZdlPvRKSt9nothrow_t, "_ZdlPvRKSt9nothrow_t", (void *p, const nothrow_t *t), (p, t))
DELETE(_ZdaPvRKSt9nothrow_t, "_ZdaPvRKSt9nothrow_t", (void *p, const nothrow_t *t), (p, t))
DELETE(_ZdlPvSt11align_val_t, "_ZdlPvSt11align_val_t", (void *p, size_t a), (p, a))
DELETE(_ZdaPvSt11align_val_t, "_ZdaPvSt11align_val_t", (void *p, size_t a), (p, a))
DELETE(_ZdlPvmSt11align_val_t, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t a), (p, n, a))
DELETE(_ZdaPvmSt11align_val_t, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t a), (p, n, a))
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, "_ZdlPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t a, const nothrow_t *t), (p, a, t))
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, "_ZdaPvSt11align_val_tRKSt9nothrow_t",
       (void *p, size_t a, const nothrow_t *t), (p, a, t))
