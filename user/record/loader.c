// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "loader.h"
#include "ring_set.h"
#include "uprobe_multi.h"
#include "fork_clean.h"
#include "util.h"
#include "memtrace.skel.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOADER_MAX_PROGS 32
#define SHARED_MODULES 4096 /* modules with rows in the unwind array, all targets */

/*
 * What every handle on one loaded object shares, in memory that stays
 * shared across fork: the recorders of a followed tree are forked from the
 * process that loaded the object, and all write into its one unwind row
 * array and its one table of USDT specs.
 */
struct loader_shared {
	pthread_mutex_t lock; /* process-shared */
	uint64_t rows_used;
	uint32_t nr_specs;    /* USDT argument specs in use */
	uint32_t maps_tier;   /* --rss: how the calls that map memory are caught (enum maps_tier) */
	uint32_t maps_wrapped; /* ... C libraries probed for it (MAPS_WRAPPERS) */
	uint32_t large_traced; /* --budget: loader__attach_large's kretprobes are live */
	uint32_t nr_mods;
	struct shared_module {
		uint8_t build_id[32];
		uint32_t build_id_len; /* 0: rows no other handle can find (a file without a build-id) */
		uint32_t first_row, nr_rows, flags;
		uint32_t refs;         /* opts.reclaim_rows: the handles that hold these rows now */
		bool used;             /* the entry holds rows; false: free for another */
	} mods[SHARED_MODULES];
};
enum maps_tier {
	MAPS_KRETPROBES, /* on the five syscalls' functions */
	MAPS_WRAPPERS,   /* no kprobes: at each target's C library (loader__attach_map_wrappers) */
	MAPS_SYS_EXIT,   /* no kprobes, a target without a C library: every syscall's return */
};

struct fd_list {
	int *v;
	size_t nr, cap;
};

#define VERIFIER_LOG_BYTES 512 /* level 4 (stats) writes three short lines */

struct loader {
	struct fork_clean *fork_clean; /* where the breakpoints placed in the target are told (NULL: nowhere) */
	struct memtrace_bpf *skel;
	bool owns_skel;          /* the handle that loaded it; others are targets on it */
	bool no_faults;          /* --rss: the kernel has no page_fault_user tracepoint */
	uint32_t slot;           /* this handle's target slot */
	struct loader_shared *shared;
	struct loader_opts opts;
	struct ring_set *rb;
	int wake_fd;             /* loader__poll_wake's (not ours; -1: none, or it woke once) */
	int nr_cpus;
	int *ring_fds;           /* a ring buffer per CPU, then a lane per CPU (-1: none) */
	uint64_t lane_bytes;     /* a lane's records (a power of two); 0: no lanes */
	void **lanes;            /* each CPU's lane, mapped (loader__poll reads them) */
	uint64_t by_lane, by_ring; /* allocation and free records taken from each */
	enum loader_mode mode;
	struct bpf_link **links; /* classic: one perf-event link per probe */
	size_t nr_links;
	struct fd_list fds;      /* multi: link fds */
	struct fd_list wrap_fds; /* multi: the C library's wrappers' link fds (loader__detach_map_wrappers) */
	/* --budget (opts.windowed): the allocator probes, attached only while a
	 * window is open; the frees' links stay a tail longer than the allocations' */
	struct probe *win_probes;
	size_t nr_win_probes;
	struct fd_list win[LOADER_NR_GROUPS];
	bool stats_on;           /* BPF_ENABLE_STATS on for its windows (loader__enable_stats) */
	int closing;             /* link closes in flight (closer threads), atomic */
	uint64_t closer_cpu_ns;  /* CPU time the closer threads used, atomic */
	bool said_inline_close;  /* a closer thread could not start: said once */
	/* rings made ahead for the next added targets (each as ring_fds), of
	 * spare_bytes each, already in the arrays of rings for their slots */
	struct {
		uint32_t slot;
		int *fds;
	} spares[LOADER_MAX_SPARES];
	int nr_spares;
	uint64_t spare_bytes;
	uint32_t *held_mods;     /* opts.reclaim_rows: the shared modules whose rows this handle holds */
	uint32_t nr_held, cap_held;
	struct mt_unwind_row *unwind_rows; /* NULL: the rows are mapped only to be written (rows_write) */
	size_t unwind_rows_len;
	struct mt_unwind_map *unwind_maps;
	size_t unwind_maps_len;
	pid_t unwind_pid;
	struct mt_unwind_map *own_maps; /* in another process (a fork): this slot's two lists, mapped when used */
	const struct mt_unwind_row *rows_view; /* ... and every row, read-only (record --preload copies them) */
	uint64_t *targets_fast;  /* the BPF array targets_fast, mapped (tgid | slot << 32 by tgid) */
	size_t targets_fast_len;
	char verifier_log[LOADER_MAX_PROGS][VERIFIER_LOG_BYTES]; /* each program's stats */
	uint64_t verify_usec;    /* the kernel's verification time, all programs */
	uint32_t verified_insns; /* instructions the verifier processed, all programs */
};

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* MEMTRACE_DEBUG_LIBBPF=1 shows libbpf's own words (verifier logs)
	 * when a BPF change does not load. */
	if (getenv("MEMTRACE_DEBUG_LIBBPF"))
		vfprintf(stderr, fmt, ap);
	return 0; /* failures are reported once, by the command */
}

void loader__quiet_libbpf(void)
{
	libbpf_set_print(silent_print);
}

/* --rss's programs on the syscalls that map memory. */
/* --rss's programs on the kernel (kretprobes, tracepoints) */
static bool is_kernel_map_prog(const struct memtrace_bpf *s, const struct bpf_program *p)
{
	return p == s->progs.map_mmap || p == s->progs.map_munmap || p == s->progs.map_brk ||
	       p == s->progs.map_mremap || p == s->progs.map_madvise || p == s->progs.map_exit ||
	       p == s->progs.map_fault;
}

/* --budget's large blocks without --rss: the kretprobes on mmap, munmap
 * and mremap, or the C library's wrappers of them */
static bool is_large_prog(const struct memtrace_bpf *s, const struct bpf_program *p)
{
	return p == s->progs.map_mmap || p == s->progs.map_munmap || p == s->progs.map_mremap ||
	       p == s->progs.map_wrap_enter || p == s->progs.map_wrap_exit;
}

/* ... and with them glibc's probes (uprobes): loaded with --rss only */
static bool is_map_prog(const struct memtrace_bpf *s, const struct bpf_program *p)
{
	return is_kernel_map_prog(s, p) || p == s->progs.glibc_probe || p == s->progs.map_wrap_enter ||
	       p == s->progs.map_wrap_exit;
}

/* Programs that run at entry and, in a session, at the return too. */
static bool is_session_prog(const struct memtrace_bpf *s, const struct bpf_program *p)
{
	return p != s->progs.free_enter && p != s->progs.least_free && p != s->progs.alloc_exit && p != s->progs.empty_enter &&
	       p != s->progs.empty_exit && p != s->progs.mark_hit && p != s->progs.link_map_hit &&
	       p != s->progs.py_code_free &&
	       p != s->progs.thread_new && p != s->progs.thread_rename && !is_map_prog(s, p);
}

/* Exponential gaps with the mean asked for: BPF has no logarithm. */
static void fill_sample_gaps(struct memtrace_bpf *s, uint64_t mean)
{
	unsigned short seed[3];

	if (getrandom(seed, sizeof(seed), 0) != sizeof(seed))
		seed[0] = getpid(), seed[1] = time(NULL), seed[2] = 0x4d54;
	exponential_gaps((int64_t *)s->rodata->sample_gaps, MT_SAMPLE_GAPS, mean, seed);
}

/* A lane's whole value: its header, its records, the slack past them. */
static uint32_t lane_value_size(uint64_t lane_bytes)
{
	return (uint32_t)(MT_LANE_DATA + lane_bytes + MT_LANE_SLACK);
}

/* A lane a quarter of the ring buffer, from 4 KiB to 2 MiB (an array's
 * value is at most 4 MiB): it holds a drain period of records at a million a
 * second, and what does not fit goes by the ring buffer. MEMTRACE_LANE_BYTES
 * sets it (tests, bench: 0 for none). */
static uint64_t lane_size_for(uint64_t ring_bytes)
{
	const char *want = getenv("MEMTRACE_LANE_BYTES");
	uint64_t want_bytes = want && *want ? strtoull(want, NULL, 0) : ring_bytes / 4, b = 4096;

	if (!want_bytes)
		return 0;
	while (b * 2 <= want_bytes && b < (2u << 20))
		b *= 2;
	return b;
}

static int open_skel(struct loader *l, enum loader_mode mode)
{
	struct bpf_program *prog;

	l->skel = memtrace_bpf__open();
	if (!l->skel)
		return -errno;
	l->mode = mode;
	int i = 0;

	bpf_object__for_each_program(prog, l->skel->obj) {
		/* The verifier's own account of its time (BPF_LOG_STATS), for
		 * record -v and make bench; MEMTRACE_DEBUG_LIBBPF wants the
		 * whole log of a failure instead. */
		if (i < LOADER_MAX_PROGS && !getenv("MEMTRACE_DEBUG_LIBBPF")) {
			l->verifier_log[i][0] = 0;
			bpf_program__set_log_buf(prog, l->verifier_log[i++], VERIFIER_LOG_BYTES);
			bpf_program__set_log_level(prog, 4);
		}
		if (is_kernel_map_prog(l->skel, prog))
			continue; /* kretprobes, as their section says */
		if (mode == LOADER_SESSION && (is_session_prog(l->skel, prog) || prog == l->skel->progs.map_wrap_enter))
			bpf_program__set_expected_attach_type(prog, MT_BPF_TRACE_UPROBE_SESSION);
		else if (mode != LOADER_CLASSIC)
			bpf_program__set_expected_attach_type(prog, MT_BPF_TRACE_UPROBE_MULTI);
	}
	l->skel->rodata->nr_cpus = l->nr_cpus;
	l->skel->rodata->max_targets = l->opts.max_targets;
	l->skel->rodata->stack_depth = l->opts.stack_depth;
	l->skel->rodata->py_walk = l->opts.python_walk && l->opts.stack_depth;
	l->skel->rodata->session_mode = mode == LOADER_SESSION;
	l->skel->rodata->sample_mean = l->opts.sample_mean;
	l->skel->rodata->report_forks = l->opts.report_forks;
	l->skel->rodata->check_creds = l->opts.check_creds;
	l->skel->rodata->allowed_uid = l->opts.allowed_uid;
	l->skel->rodata->allowed_gid = l->opts.allowed_gid;
	l->skel->rodata->allowed_caps = l->opts.allowed_caps;
	l->skel->rodata->count_hits = l->opts.windowed;
	l->skel->rodata->trace_maps = l->opts.trace_maps;
	l->skel->rodata->large_min = l->opts.large_min;
	bpf_object__for_each_program(prog, l->skel->obj)
		if (is_map_prog(l->skel, prog))
			bpf_program__set_autoload(prog, l->opts.trace_maps || (l->opts.large_min && is_large_prog(l->skel, prog)));
	/* a session runs the wrappers' entry program at their return too */
	if (mode == LOADER_SESSION)
		bpf_program__set_autoload(l->skel->progs.map_wrap_exit, false);
	/* Programs this recording cannot attach are not loaded (a millisecond
	 * each of setup): the return program is the modes' without sessions
	 * (a session runs its entry program at the return), the probe on the
	 * interpreter's code_dealloc goes with the Python walk. */
	bpf_program__set_autoload(l->skel->progs.alloc_exit, mode != LOADER_SESSION);
	bpf_program__set_autoload(l->skel->progs.py_code_free, l->skel->rodata->py_walk);
	/* The bench's row R, sessions only: their kfuncs load in no other mode. */
	bpf_program__set_autoload(l->skel->progs.least_session, l->opts.empty_probes == 4 && mode == LOADER_SESSION);
	bpf_program__set_autoload(l->skel->progs.least_free, l->opts.empty_probes == 4 && mode == LOADER_SESSION);
	if (l->opts.sample_mean)
		fill_sample_gaps(l->skel, l->opts.sample_mean);
	if (bpf_map__set_max_entries(l->skel->maps.unwind_rows,
				     l->opts.unwind_rows ? l->opts.unwind_rows : 1) ||
	    bpf_map__set_max_entries(l->skel->maps.unwind_maps, l->opts.max_targets * 2 * MT_UNWIND_MAPS) ||
	    bpf_map__set_max_entries(l->skel->maps.targets, l->opts.max_targets) ||
	    bpf_map__set_max_entries(l->skel->maps.drops, l->opts.max_targets) ||
	    bpf_map__set_max_entries(l->skel->maps.hits, l->opts.max_targets))
		return -EINVAL;
	/* Exact mode never touches the sampled-pointer set: a preallocated
	 * hash of a million entries costs 140 ms of launch for nothing. */
	if (!l->opts.sample_mean && bpf_map__set_max_entries(l->skel->maps.sampled, 1))
		return -EINVAL;
	/* Stack templates per CPU (take_stack); none without stacks walked by tables. */
	if (bpf_map__set_max_entries(l->skel->maps.stack_templates,
				     l->opts.unwind_rows && l->opts.stack_depth ? (uint32_t)l->nr_cpus << MT_TEMPLATE_BITS : 1))
		return -EINVAL;
	/* A lookup cache per CPU for the walker (bpf/unwind.bpf.h); none without tables. */
	if (bpf_map__set_max_entries(l->skel->maps.unwind_cache,
				     l->opts.unwind_rows ? (uint32_t)l->nr_cpus << MT_UNWIND_CACHE_BITS : 1))
		return -EINVAL;
	l->lane_bytes = lane_size_for(l->opts.lane_ring_bytes ? l->opts.lane_ring_bytes : l->opts.ring_bytes);
	l->skel->rodata->lane_mask = l->lane_bytes ? l->lane_bytes - 1 : 0;
	if (bpf_map__set_value_size(bpf_map__inner_map(l->skel->maps.lanes),
				    lane_value_size(l->lane_bytes ? l->lane_bytes : 4096)) ||
	    bpf_map__set_max_entries(l->skel->maps.lanes, l->nr_cpus * l->opts.max_targets))
		return -EINVAL;
	return bpf_map__set_max_entries(l->skel->maps.events, l->nr_cpus * l->opts.max_targets);
}

/* The best the kernel offers, unless MEMTRACE_ATTACH names one (tests, bench). */
static enum loader_mode first_mode(void)
{
	const char *want = getenv("MEMTRACE_ATTACH");

	if (want && !strcmp(want, "classic"))
		return LOADER_CLASSIC;
	if (want && !strcmp(want, "multi"))
		return LOADER_MULTI;
	return LOADER_SESSION;
}

int loader__open(struct loader **out, const struct loader_opts *opts)
{
	struct loader *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	loader__quiet_libbpf();
	l->opts = *opts;
	if (!l->opts.max_targets)
		l->opts.max_targets = 1;
	if (l->opts.max_targets > MT_MAX_TARGETS) {
		free(l);
		return -EINVAL;
	}
	l->owns_skel = true;
	l->wake_fd = -1;
	l->nr_cpus = libbpf_num_possible_cpus();
	err = l->nr_cpus > 0 ? open_skel(l, first_mode()) : -EINVAL;
	if (err) {
		memtrace_bpf__destroy(l->skel);
		free(l);
		return err;
	}
	*out = l;
	return 0;
}


static int ring_cb(void *ctx, void *data, size_t size)
{
	struct loader *l = ctx;
	uint16_t type = ((const struct mt_event_header *)data)->type;

	l->by_ring += type == MT_EVENT_ALLOC || type == MT_EVENT_FREE || type == MT_EVENT_REALLOC;
	return l->opts.on_record(l->opts.ctx, data, size);
}

/* One ring per CPU, created here at the size asked for, each put in its
 * slot of the outer map. */
static int map_rings(struct loader *l);

/* A ring buffer of BYTES per CPU (ONE: one for all, each CPU's fd a dup
 * of it: the ring buffer takes records from several CPUs at once), then a
 * lane of LANE_BYTES per CPU (none if 0), into FDS (2 * NR_CPUS of them,
 * -1 where none). */
static int make_rings(int nr_cpus, uint64_t bytes, bool one, uint64_t lane_bytes, int *fds)
{
	LIBBPF_OPTS(bpf_map_create_opts, mmapable, .map_flags = BPF_F_MMAPABLE);

	for (int i = 0; i < 2 * nr_cpus; i++)
		fds[i] = -1;
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		fds[cpu] = one && cpu ? fcntl(fds[0], F_DUPFD_CLOEXEC, 3) :
					bpf_map_create(BPF_MAP_TYPE_RINGBUF, "mt_ring", 0, 0, bytes, NULL);
		if (fds[cpu] < 0)
			return one && cpu ? -errno : fds[cpu];
		if (!lane_bytes)
			continue;
		fds[nr_cpus + cpu] = bpf_map_create(BPF_MAP_TYPE_ARRAY, "mt_lane", sizeof(uint32_t),
						    lane_value_size(lane_bytes), 1, &mmapable);
		if (fds[nr_cpus + cpu] < 0)
			return fds[nr_cpus + cpu];
	}
	return 0;
}

/* Put N map fds into the array of maps MAP_FD at KEYS. The kernel waits
 * for an RCU grace period after each update of an array of maps (so that no
 * program still runs with the old value), 9 ms a wait here: a batch waits
 * once. A followed process's rings and lanes took 4 waits, and a server
 * forking a process per connection (PostgreSQL) waited for them: 15 forks a
 * second instead of 6,700. Element by element where the kernel has no batch
 * for these maps. */
static int update_maps(int map_fd, const uint32_t *keys, const int *fds, uint32_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	uint32_t count = n;

	if (!bpf_map_update_batch(map_fd, keys, fds, &count, &opts))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map_update_elem(map_fd, &keys[i], &fds[i], BPF_ANY))
			return -errno;
	return 0;
}

struct update_job {
	int map_fd;
	const uint32_t *keys;
	const int *fds;
	uint32_t n;
	int err;
};

static void *update_thread(void *arg)
{
	struct update_job *j = arg;

	j->err = update_maps(j->map_fd, j->keys, j->fds, j->n);
	return NULL;
}

/* The rings and lanes of N slots (FDS[i] as make_rings' for SLOTS[i]) where
 * their probes find them: one batch for each array of maps, whatever N, the
 * lanes' from a thread of their own so that the two grace periods the
 * kernel waits for overlap (7 and 16 ms one after the other here). */
static int place_rings(int events_fd, int lanes_fd, int nr_cpus, const uint32_t *slots, int *const *fds, int n)
{
	uint32_t *keys = calloc((size_t)n * nr_cpus, sizeof(*keys));
	int *vals = calloc((size_t)n * nr_cpus, sizeof(*vals));
	int *lane_vals = calloc((size_t)n * nr_cpus, sizeof(*lane_vals));
	bool lanes = n > 0 && fds[0][nr_cpus] >= 0, threaded = false;
	struct update_job job = { .map_fd = lanes_fd, .keys = keys, .fds = lane_vals,
				  .n = (uint32_t)(n * nr_cpus) };
	pthread_t t;
	int err = keys && vals && lane_vals ? 0 : -ENOMEM;

	for (int i = 0; !err && i < n; i++) {
		for (int cpu = 0; cpu < nr_cpus; cpu++) {
			keys[i * nr_cpus + cpu] = slots[i] * nr_cpus + cpu;
			vals[i * nr_cpus + cpu] = fds[i][cpu];
			lane_vals[i * nr_cpus + cpu] = fds[i][nr_cpus + cpu];
		}
	}
	if (!err && lanes)
		threaded = !pthread_create(&t, NULL, update_thread, &job);
	if (!err)
		err = update_maps(events_fd, keys, vals, (uint32_t)(n * nr_cpus));
	if (threaded)
		pthread_join(t, NULL);
	else if (!err && lanes)
		update_thread(&job);
	if (!err && lanes)
		err = job.err;
	free(keys);
	free(vals);
	free(lane_vals);
	return err;
}

static void close_rings(int nr_cpus, int *fds)
{
	for (int i = 0; fds && i < 2 * nr_cpus; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
}

/* Where SLOT's spare rings are in BASE's spares, or -1. */
static int spare_index(const struct loader *base, uint32_t slot)
{
	for (int i = 0; i < base->nr_spares; i++)
		if (base->spares[i].slot == slot)
			return i;
	return -1;
}

/* Take spare I out of BASE's spares: its fds, now the caller's. */
static int *spare_take(struct loader *base, int i)
{
	int *fds = base->spares[i].fds;

	base->spares[i] = base->spares[--base->nr_spares];
	return fds;
}

/* The handle's rings: the spare ones BASE made ahead (loader__spare_rings)
 * when they are of its size and kind (a ring a CPU: never one_ring's),
 * else new ones. */
static int create_rings(struct loader *l, struct loader *base)
{
	int i = base && !l->opts.one_ring && base->spare_bytes == l->opts.ring_bytes ? spare_index(base, l->slot) : -1,
	    err;

	if (i >= 0) {
		/* made and put in place ahead: updating the array of rings
		 * waits for an RCU grace period, milliseconds here */
		l->ring_fds = spare_take(base, i);
		return l->opts.on_record ? map_rings(l) : 0;
	}
	l->ring_fds = calloc(2 * l->nr_cpus, sizeof(int));
	if (!l->ring_fds)
		return -ENOMEM;
	err = make_rings(l->nr_cpus, l->opts.ring_bytes, l->opts.one_ring, l->lane_bytes, l->ring_fds);
	if (err)
		return err;
	err = place_rings(bpf_map__fd(l->skel->maps.events), bpf_map__fd(l->skel->maps.lanes), l->nr_cpus, &l->slot,
			  &l->ring_fds, 1);
	if (err)
		return err;
	return l->opts.on_record ? map_rings(l) : 0;
}

/* The rings and lanes FDS (as ring_fds) mapped into this process to be
 * read (loader__poll): into *RB and *LANES, the records handed to L. */
static int map_rings_into(struct loader *l, int nr_cpus, uint64_t lane_bytes, int *fds,
			  struct ring_set **rb, void ***lanes)
{
	if (lane_bytes && !*lanes) {
		*lanes = calloc(nr_cpus, sizeof(void *));
		if (!*lanes)
			return -ENOMEM;
		for (int cpu = 0; cpu < nr_cpus; cpu++) {
			void *p = mmap(NULL, lane_value_size(lane_bytes), PROT_READ | PROT_WRITE, MAP_SHARED,
				       fds[nr_cpus + cpu], 0);

			if (p == MAP_FAILED)
				return -errno;
			(*lanes)[cpu] = p;
		}
	}
	for (int cpu = 0; cpu < nr_cpus; cpu++) {
		int fd = fds[cpu];
		int err = *rb ? ring_set__add(*rb, fd, ring_cb, l) : 0;

		if (!*rb) {
			*rb = ring_set__new(fd, ring_cb, l);
			err = *rb ? 0 : -errno;
		}
		if (err)
			return err;
	}
	/* Mapped, the rings need no descriptor: a mapping holds its map, the arrays of
	 * rings and lanes hold them for the probes, and they leave those by
	 * index (remove_target). Kept, they were 2 descriptors a CPU for every
	 * target: 256 of the agent's 1329 with 64 targets on 2 CPUs. */
	for (int i = 0; i < 2 * nr_cpus; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	return 0;
}

/* Map the rings into this process to read them (loader__poll). */
static int map_rings(struct loader *l)
{
	if (l->rb)
		return 0;
	return map_rings_into(l, l->nr_cpus, l->lane_bytes, l->ring_fds, &l->rb, &l->lanes);
}

static void *map_array(struct bpf_map *map, size_t *len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	*len = ((size_t)bpf_map__max_entries(map) * bpf_map__value_size(map) + page - 1) & ~(size_t)(page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A slot's two lists of unwind mappings, in bytes: whole pages, so that a
 * fork maps its own slot's alone. */
#define SLOT_MAPS_BYTES (2 * MT_UNWIND_MAPS * sizeof(struct mt_unwind_map))
_Static_assert(SLOT_MAPS_BYTES % 4096 == 0, "a slot's unwind mappings are whole pages");

/*
 * The unwind tables are written straight into the BPF arrays. Mapping a BPF
 * array puts every page of it in the page tables at once (26 MiB here),
 * and a fork copies page tables of that kind: every recorder
 * --follow-children forked copied them and tore them down at its exit, a
 * seventh of the CPU a fork storm cost (copy_page_range and
 * unmap_page_range). So they are not inherited (MADV_DONTFORK); a fork maps
 * the part it writes when it writes it (loader__unwind_maps, rows_write).
 * The rows (16 MiB by default) are not kept mapped at all: each module's
 * are written through a mapping of their pages alone (rows_write), made
 * and undone for it; kept, they were 16 MB of every recorder's resident
 * memory, the most of the agent's with one target.
 */
static int map_unwind(struct loader *l)
{
	l->unwind_maps = map_array(l->skel->maps.unwind_maps, &l->unwind_maps_len);
	l->targets_fast = map_array(l->skel->maps.targets_fast, &l->targets_fast_len);
	if (!l->unwind_maps || !l->targets_fast)
		return -errno;
	l->unwind_pid = getpid();
	madvise(l->unwind_maps, l->unwind_maps_len, MADV_DONTFORK);
	return 0;
}

/* The unwind arrays are mapped in this process (not a fork of the one
 * that mapped them). */
static bool unwind_here(const struct loader *l)
{
	return l->unwind_pid == getpid();
}

/* LEN bytes of array MAP from byte OFFSET (a page's), mapped; NULL with errno. */
static void *map_array_part(struct bpf_map *map, size_t offset, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), (off_t)offset);

	return p == MAP_FAILED ? NULL : p;
}

struct mt_unwind_row *loader__unwind_rows(struct loader *l, size_t *cap)
{
	*cap = l->opts.unwind_rows;
	return unwind_here(l) ? l->unwind_rows : NULL;
}

const struct mt_unwind_row *loader__unwind_rows_view(struct loader *l, size_t *cap)
{
	size_t len = (size_t)l->opts.unwind_rows * sizeof(struct mt_unwind_row);
	void *p;

	*cap = l->opts.unwind_rows;
	if (!len)
		return NULL;
	if (!l->rows_view) {
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(l->skel->maps.unwind_rows), 0);
		l->rows_view = p == MAP_FAILED ? NULL : p;
	}
	return l->rows_view;
}

struct mt_unwind_map *loader__unwind_maps(struct loader *l, uint32_t half)
{
	if (unwind_here(l))
		return l->unwind_maps + ((size_t)l->slot * 2 + (half & 1)) * MT_UNWIND_MAPS;
	if (!l->own_maps)
		l->own_maps = map_array_part(l->skel->maps.unwind_maps, (size_t)l->slot * SLOT_MAPS_BYTES, SLOT_MAPS_BYTES);
	return l->own_maps ? l->own_maps + (half & 1) * MT_UNWIND_MAPS : NULL;
}

/* NR rows at row FIRST of the array, in a fork by mapping their pages
 * for the copy. 0 or -errno. */
static int rows_write(struct loader *l, size_t first, const struct mt_unwind_row *rows, size_t nr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), from = first * sizeof(*rows), to = from + nr * sizeof(*rows);
	size_t start = from & ~(page - 1), len = ((to + page - 1) & ~(page - 1)) - start;
	char *p;

	if (l->unwind_rows && unwind_here(l)) {
		memcpy(l->unwind_rows + first, rows, nr * sizeof(*rows));
		return 0;
	}
	if (!nr)
		return 0;
	p = map_array_part(l->skel->maps.unwind_rows, start, len);
	if (!p)
		return -errno;
	memcpy(p + (from - start), rows, nr * sizeof(*rows));
	munmap(p, len);
	return 0;
}

uint32_t loader__unwind_count(struct loader *l, uint32_t half)
{
	return __atomic_load_n(&l->skel->bss->unwind_nr[l->slot][half & 1], __ATOMIC_SEQ_CST);
}

uint32_t loader__unwind_gen(struct loader *l)
{
	return __atomic_load_n(&l->skel->bss->unwind_gen[l->slot], __ATOMIC_SEQ_CST);
}

static struct loader_shared *shared_new(void)
{
	struct loader_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;

	if (sh == MAP_FAILED)
		return NULL;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->lock, &a);
	pthread_mutexattr_destroy(&a);
	return sh;
}

static struct shared_module *shared_find(struct loader_shared *sh, const uint8_t *id, uint32_t len)
{
	for (uint32_t i = 0; len && i < sh->nr_mods; i++)
		if (sh->mods[i].used && sh->mods[i].build_id_len == len && !memcmp(sh->mods[i].build_id, id, len))
			return &sh->mods[i];
	return NULL;
}

/* opts.reclaim_rows: L holds M's rows until it closes (under the lock). */
static int hold_module(struct loader *l, struct shared_module *m)
{
	uint32_t idx = (uint32_t)(m - l->shared->mods);

	if (!l->opts.reclaim_rows)
		return 0;
	for (uint32_t i = 0; i < l->nr_held; i++)
		if (l->held_mods[i] == idx)
			return 0;
	if (l->nr_held == l->cap_held) {
		uint32_t cap = l->cap_held ? 2 * l->cap_held : 16, *v = realloc(l->held_mods, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->held_mods = v;
		l->cap_held = cap;
	}
	l->held_mods[l->nr_held++] = idx;
	m->refs++;
	return 0;
}

/* What L held goes (loader__close). */
static void release_modules(struct loader *l)
{
	if (!l->nr_held)
		return;
	pthread_mutex_lock(&l->shared->lock);
	for (uint32_t i = 0; i < l->nr_held; i++)
		if (l->shared->mods[l->held_mods[i]].refs)
			l->shared->mods[l->held_mods[i]].refs--;
	pthread_mutex_unlock(&l->shared->lock);
	l->nr_held = 0;
}

static int by_first_row(const void *x, const void *y)
{
	const struct shared_module *a = *(const struct shared_module *const *)x, *b = *(const struct shared_module *const *)y;

	return a->first_row < b->first_row ? -1 : a->first_row > b->first_row;
}

/* Where NR rows go (under the lock): after the last, or, with
 * opts.reclaim_rows and no room there, where the rows of files no handle
 * holds were (those entries freed first), the first gap between the held
 * ones that fits. 0 with *FIRST, or -ENOSPC. */
static int rows_place(struct loader *l, uint32_t nr, uint64_t *first)
{
	struct loader_shared *sh = l->shared;
	static struct shared_module *live[SHARED_MODULES]; /* under the lock */
	uint32_t n = 0;
	uint64_t end = 0;

	if (nr <= l->opts.unwind_rows - sh->rows_used) {
		*first = sh->rows_used;
		return 0;
	}
	if (!l->opts.reclaim_rows)
		return -ENOSPC;
	for (uint32_t i = 0; i < sh->nr_mods; i++) {
		if (sh->mods[i].used && !sh->mods[i].refs)
			sh->mods[i].used = false; /* no handle holds its rows: they may go */
		if (sh->mods[i].used && sh->mods[i].nr_rows)
			live[n++] = &sh->mods[i];
	}
	qsort(live, n, sizeof(*live), by_first_row);
	for (uint32_t i = 0; i < n; i++) {
		if (live[i]->first_row >= end + nr) {
			*first = end;
			return 0;
		}
		if ((uint64_t)live[i]->first_row + live[i]->nr_rows > end)
			end = (uint64_t)live[i]->first_row + live[i]->nr_rows;
	}
	sh->rows_used = end; /* past the last held, all free */
	if (nr > l->opts.unwind_rows - end)
		return -ENOSPC;
	*first = end;
	return 0;
}

/* A free entry of the table, or NULL (under the lock). */
static struct shared_module *entry_new(struct loader_shared *sh)
{
	for (uint32_t i = 0; i < sh->nr_mods; i++)
		if (!sh->mods[i].used)
			return &sh->mods[i];
	return sh->nr_mods < SHARED_MODULES ? &sh->mods[sh->nr_mods++] : NULL;
}

int loader__unwind_module_find(struct loader *l, const uint8_t *id, uint32_t len, struct loader_unwind_rows *out)
{
	struct shared_module *m;
	int err;

	pthread_mutex_lock(&l->shared->lock);
	m = shared_find(l->shared, id, len);
	err = m ? hold_module(l, m) : -ENOENT;
	if (!err)
		*out = (struct loader_unwind_rows){ m->first_row, m->nr_rows, m->flags };
	pthread_mutex_unlock(&l->shared->lock);
	return err;
}

int loader__unwind_module_add(struct loader *l, const uint8_t *id, uint32_t len, const struct mt_unwind_row *rows,
			      struct loader_unwind_rows *io)
{
	struct loader_shared *sh = l->shared;
	struct shared_module *m;
	uint64_t first;
	int err = 0;

	pthread_mutex_lock(&sh->lock);
	m = shared_find(sh, id, len);
	if (m) { /* another recorder wrote it meanwhile */
		err = hold_module(l, m);
		*io = (struct loader_unwind_rows){ m->first_row, m->nr_rows, m->flags };
	} else if (l->opts.reclaim_rows && !(m = entry_new(sh))) {
		err = -ENOSPC; /* rows no entry tracks could be taken by another's */
	} else if (!(err = rows_place(l, io->nr_rows, &first)) && !(err = rows_write(l, first, rows, io->nr_rows))) {
		io->first_row = (uint32_t)first;
		if (first + io->nr_rows > sh->rows_used)
			sh->rows_used = first + io->nr_rows;
		if (!m && len <= sizeof(m->build_id) && sh->nr_mods < SHARED_MODULES)
			m = &sh->mods[sh->nr_mods++];
		if (m) {
			/* the build-id only if it fits: a longer one is no one's to find */
			m->build_id_len = len <= sizeof(m->build_id) ? len : 0;
			memcpy(m->build_id, id, m->build_id_len);
			m->first_row = io->first_row;
			m->nr_rows = io->nr_rows;
			m->flags = io->flags;
			m->refs = 0;
			m->used = true;
			err = hold_module(l, m);
		}
	} else if (m && m == &sh->mods[sh->nr_mods - 1] && !m->used) {
		sh->nr_mods--; /* the entry taken for it, not used */
	}
	pthread_mutex_unlock(&sh->lock);
	return err;
}

/* HALF is the one not in use, that of gen + 1. The count goes up at every
 * publication: the walker's lookup cache keys on it. */
void loader__unwind_publish(struct loader *l, uint32_t half, uint32_t nr)
{
	__atomic_store_n(&l->skel->bss->unwind_nr[l->slot][half & 1], nr, __ATOMIC_SEQ_CST);
	__atomic_store_n(&l->skel->bss->unwind_gen[l->slot], loader__unwind_gen(l) + 1, __ATOMIC_SEQ_CST);
}

/* Sum what the verifier said of each program it checked. */
static void verifier_totals(struct loader *l)
{
	l->verify_usec = 0;
	l->verified_insns = 0;
	for (int i = 0; i < LOADER_MAX_PROGS; i++) {
		const char *t = strstr(l->verifier_log[i], "verification time ");
		const char *n = strstr(l->verifier_log[i], "processed ");

		if (t)
			l->verify_usec += strtoull(t + strlen("verification time "), NULL, 10);
		if (n)
			l->verified_insns += strtoul(n + strlen("processed "), NULL, 10);
	}
}

/* A clean slot for this handle's process, then the process in it: from
 * here its probe hits go to this handle's rings (once recording is on). */
static int add_target(struct loader *l)
{
	uint64_t *zeros = calloc(l->nr_cpus, sizeof(uint64_t));
	struct memtrace_bpf__bss *bss = l->skel->bss;
	uint32_t tgid = (uint32_t)l->opts.pid;
	int err = 0;

	if (!zeros)
		return -ENOMEM;
	__atomic_store_n(&bss->recording[l->slot], 0, __ATOMIC_SEQ_CST);
	bss->creds_changed[l->slot] = 0;
	__atomic_fetch_add(&bss->target_epoch[l->slot], 1, __ATOMIC_SEQ_CST);
	bss->link_map_changed[l->slot] = 0;
	bss->allocs_open[l->slot] = !l->opts.windowed; /* --budget opens it per window */
	bss->unwind_nr[l->slot][0] = bss->unwind_nr[l->slot][1] = 0;
	__atomic_store_n(&bss->py_layout[l->slot].runtime, 0, __ATOMIC_SEQ_CST); /* no Python until found */
	/* unwind_gen[slot] goes on counting: the walker's cache keys on it */
	if (bpf_map_update_elem(bpf_map__fd(l->skel->maps.drops), &l->slot, zeros, BPF_ANY))
		err = -errno;
	free(zeros);
	zeros = calloc(l->nr_cpus, sizeof(struct mt_hit_count));
	if (!zeros)
		return -ENOMEM;
	if (!err && bpf_map_update_elem(bpf_map__fd(l->skel->maps.hits), &l->slot, zeros, BPF_ANY))
		err = -errno;
	free(zeros);
	if (!err && l->opts.pid > 0 && bpf_map_update_elem(bpf_map__fd(l->skel->maps.targets), &tgid, &l->slot, BPF_ANY))
		err = -errno;
	if (!err && l->opts.pid > 0) {
		/* the fast copy too, unless another process holds the entry (this
		 * one's, in an earlier slot, is replaced as the hash's was) */
		uint64_t *e = &l->targets_fast[tgid & (MT_TARGETS_FAST - 1)], old = __atomic_load_n(e, __ATOMIC_SEQ_CST);

		while ((!old || (uint32_t)old == tgid) &&
		       !__atomic_compare_exchange_n(e, &old, tgid | (uint64_t)l->slot << 32, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST))
			;
	}
	return err;
}

/* The slot is free again: the process leaves the map, the rings the outer
 * array. */
static void remove_target(struct loader *l)
{
	uint32_t tgid = (uint32_t)l->opts.pid, slot;
	int targets = bpf_map__fd(l->skel->maps.targets);

	if (l->opts.pid > 0) {
		uint64_t mine = tgid | (uint64_t)l->slot << 32;

		__atomic_compare_exchange_n(&l->targets_fast[tgid & (MT_TARGETS_FAST - 1)], &mine, 0, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	if (l->opts.pid > 0 && !bpf_map_lookup_elem(targets, &tgid, &slot) && slot == l->slot)
		bpf_map_delete_elem(targets, &tgid);
	for (int cpu = 0; l->ring_fds && cpu < l->nr_cpus; cpu++) {
		uint32_t idx = l->slot * l->nr_cpus + cpu;

		bpf_map_delete_elem(bpf_map__fd(l->skel->maps.events), &idx);
		bpf_map_delete_elem(bpf_map__fd(l->skel->maps.lanes), &idx);
	}
}

int loader__add_target(struct loader *base, const struct loader_opts *opts, uint32_t slot, struct loader **out)
{
	struct loader *l;
	int err;

	if (slot >= base->opts.max_targets)
		return -ENOSPC;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	*l = (struct loader){
		.skel = base->skel,
		.slot = slot,
		.wake_fd = -1,
		.shared = base->shared,
		.opts = base->opts,
		.nr_cpus = base->nr_cpus,
		.lane_bytes = base->lane_bytes,
		.mode = base->mode,
		.unwind_rows = base->unwind_rows,
		.unwind_maps = base->unwind_maps,
		.unwind_pid = base->unwind_pid,
		.targets_fast = base->targets_fast,
		.verify_usec = base->verify_usec,
		.verified_insns = base->verified_insns,
	};
	/* the object's own settings stay; the process and its rings are new */
	l->opts.pid = opts->pid;
	l->opts.ring_bytes = opts->ring_bytes;
	l->opts.one_ring = opts->one_ring;
	l->opts.on_record = opts->on_record;
	l->opts.ctx = opts->ctx;
	err = create_rings(l, base);
	if (!err)
		err = add_target(l);
	if (err) {
		loader__close(l);
		return err;
	}
	*out = l;
	return 0;
}

int loader__spare_rings(struct loader *base, uint64_t ring_bytes, const uint32_t *slots, int n)
{
	uint32_t fresh[LOADER_MAX_SPARES];
	int *fds[LOADER_MAX_SPARES];
	int nr = 0, err = 0;

	/* at most LOADER_SPARE_MEMORY of them: a host of many CPUs makes one
	 * at a time, as it did, rather than hold rings for 8 processes to come */
	uint64_t each = (uint64_t)base->nr_cpus * (ring_bytes + base->lane_bytes);
	int most = each ? (int)(LOADER_SPARE_MEMORY / each) : LOADER_MAX_SPARES;

	if (most < 1)
		most = 1;
	if (most > LOADER_MAX_SPARES)
		most = LOADER_MAX_SPARES;
	if (base->nr_spares && base->spare_bytes != ring_bytes)
		loader__spare_close(base);
	base->spare_bytes = ring_bytes;
	for (int i = 0; i < n && base->nr_spares + nr < most; i++) {
		if (slots[i] >= base->opts.max_targets || spare_index(base, slots[i]) >= 0)
			continue;
		fds[nr] = calloc(2 * base->nr_cpus, sizeof(int));
		if (!fds[nr]) {
			err = -ENOMEM;
			break;
		}
		fresh[nr] = slots[i];
		err = make_rings(base->nr_cpus, ring_bytes, false, base->lane_bytes, fds[nr++]);
		if (err)
			break;
	}
	if (!err)
		err = place_rings(bpf_map__fd(base->skel->maps.events), bpf_map__fd(base->skel->maps.lanes),
				  base->nr_cpus, fresh, fds, nr);
	for (int i = 0; i < nr; i++) {
		if (err) {
			close_rings(base->nr_cpus, fds[i]);
			continue;
		}
		base->spares[base->nr_spares].slot = fresh[i];
		base->spares[base->nr_spares++].fds = fds[i];
	}
	return err;
}

bool loader__spare_has(const struct loader *base, uint32_t slot)
{
	return spare_index(base, slot) >= 0;
}

void loader__spare_drop(struct loader *base, uint32_t slot)
{
	int i = spare_index(base, slot);

	if (i >= 0)
		close_rings(base->nr_cpus, spare_take(base, i));
}

void loader__spare_close(struct loader *base)
{
	for (int i = 0; i < base->nr_spares; i++)
		close_rings(base->nr_cpus, base->spares[i].fds);
	base->nr_spares = 0;
}

int loader__set_sink(struct loader *l, int (*on_record)(void *ctx, const void *data, size_t size), void *ctx)
{
	l->opts.on_record = on_record;
	l->opts.ctx = ctx;
	return map_rings(l);
}

static void fd_list__close_to(struct fd_list *f, size_t keep);
static void stats_release(struct loader *l);

/* What a handle holds in this process alone: its rings (fds and mappings)
 * and its memory; its links are closed or detached by the caller. */
static void release_handle(struct loader *l)
{
	ring_set__free(l->rb);
	for (int cpu = 0; l->lanes && cpu < l->nr_cpus; cpu++)
		if (l->lanes[cpu])
			munmap(l->lanes[cpu], lane_value_size(l->lane_bytes));
	free(l->lanes);
	for (int i = 0; l->ring_fds && i < 2 * l->nr_cpus; i++)
		if (l->ring_fds[i] > 0)
			close(l->ring_fds[i]);
	free(l->ring_fds);
	free(l->links);
	free(l->fds.v);
	for (int g = 0; g < LOADER_NR_GROUPS; g++)
		free(l->win[g].v);
	for (size_t i = 0; i < l->nr_win_probes; i++)
		free(l->win_probes[i].path);
	free(l->win_probes);
	stats_release(l);
	if (l->own_maps)
		munmap(l->own_maps, SLOT_MAPS_BYTES);
	if (l->rows_view)
		munmap((void *)l->rows_view, (size_t)l->opts.unwind_rows * sizeof(struct mt_unwind_row));
}

int loader__forget(struct loader *l)
{
	if (!l)
		return 0;
	if (l->nr_links || l->owns_skel)
		return -EBUSY;
	fd_list__close_to(&l->fds, 0);
	fd_list__close_to(&l->wrap_fds, 0);
	for (int g = 0; g < LOADER_NR_GROUPS; g++)
		fd_list__close_to(&l->win[g], 0);
	release_handle(l);
	free(l);
	return 0;
}

void loader__unwind_copy(struct loader *l, uint32_t from_slot)
{
	struct memtrace_bpf__bss *bss = l->skel->bss;
	uint32_t from_half = __atomic_load_n(&bss->unwind_gen[from_slot], __ATOMIC_SEQ_CST) & 1;
	uint32_t nr = __atomic_load_n(&bss->unwind_nr[from_slot][from_half], __ATOMIC_SEQ_CST);
	uint32_t half = loader__unwind_gen(l) ^ 1;

	if (from_slot >= l->opts.max_targets || from_slot == l->slot || nr > MT_UNWIND_MAPS || !unwind_here(l))
		return; /* (the supervisor copies; a fork has not its parent's slot mapped) */
	memcpy(loader__unwind_maps(l, half), l->unwind_maps + ((size_t)from_slot * 2 + from_half) * MT_UNWIND_MAPS,
	       nr * sizeof(struct mt_unwind_map));
	loader__unwind_publish(l, half, nr);
}

/*
 * The loading handle's rings, made and put in their arrays of maps while
 * the programs load rather than after: the two arrays are made here first
 * and the object takes them (bpf_map__reuse_fd), the rings from a thread,
 * whose RCU grace periods (place_rings: two, overlapping) and page
 * clearing pass while the verifier works (10-20 ms of setup here, on the
 * clock of -p to "attached" and of every -- CMD), and which maps them to
 * be read as well (2 ms more).
 */
struct early_rings {
	int events_fd, lanes_fd; /* the arrays of rings and of lanes; -1: none */
	int *fds;                /* as ring_fds */
	struct loader *reader;   /* whose records they are, mapped here too; NULL: not mapped */
	struct ring_set *rb;  /* ... as the loader's rb and lanes */
	void **lanes;
	int nr_cpus;
	uint64_t ring_bytes, lane_bytes;
	uint32_t slot;
	pthread_t thread;
	bool running;
	int err;
};

/* An array of maps as OUTER's definition says, its inner maps as
 * OUTER's inner definition: what libbpf would make. The fd, or -errno. */
static int make_outer(const struct bpf_map *outer)
{
	const struct bpf_map *in = bpf_map__inner_map((struct bpf_map *)outer);
	LIBBPF_OPTS(bpf_map_create_opts, inner_opts);
	LIBBPF_OPTS(bpf_map_create_opts, outer_opts);
	int inner, fd;

	if (!in)
		return -EINVAL;
	inner_opts.map_flags = bpf_map__map_flags(in);
	inner = bpf_map_create(bpf_map__type(in), bpf_map__name(in), bpf_map__key_size(in), bpf_map__value_size(in),
			       bpf_map__max_entries(in), &inner_opts);
	if (inner < 0)
		return -errno;
	outer_opts.inner_map_fd = inner;
	outer_opts.map_flags = bpf_map__map_flags(outer);
	fd = bpf_map_create(bpf_map__type(outer), bpf_map__name(outer), bpf_map__key_size(outer),
			    bpf_map__value_size(outer), bpf_map__max_entries(outer), &outer_opts);
	fd = fd < 0 ? -errno : fd;
	close(inner);
	return fd;
}

/* The object's arrays of rings are E's (before its load). */
static int reuse_arrays(struct loader *l, const struct early_rings *e)
{
	int err = bpf_map__reuse_fd(l->skel->maps.events, e->events_fd);

	return err ? err : bpf_map__reuse_fd(l->skel->maps.lanes, e->lanes_fd);
}

static void *early_rings_thread(void *arg)
{
	struct early_rings *e = arg;

	e->err = make_rings(e->nr_cpus, e->ring_bytes, false, e->lane_bytes, e->fds);
	if (!e->err)
		e->err = place_rings(e->events_fd, e->lanes_fd, e->nr_cpus, &e->slot, &e->fds, 1);
	if (!e->err && e->reader)
		e->err = map_rings_into(e->reader, e->nr_cpus, e->lane_bytes, e->fds, &e->rb, &e->lanes);
	return NULL;
}

/* The arrays made and taken by the object, the rings begun: 0 or -errno.
 * Without a thread, the rings are made at once. */
static int early_rings_start(struct loader *l, struct early_rings *e)
{
	int err;

	*e = (struct early_rings){ .events_fd = -1, .lanes_fd = -1, .nr_cpus = l->nr_cpus,
				   .ring_bytes = l->opts.ring_bytes, .lane_bytes = l->lane_bytes, .slot = l->slot,
				   .reader = l->opts.on_record ? l : NULL };
	e->fds = calloc(2 * l->nr_cpus, sizeof(int));
	if (!e->fds)
		return -ENOMEM;
	for (int i = 0; i < 2 * l->nr_cpus; i++)
		e->fds[i] = -1;
	if ((e->events_fd = make_outer(l->skel->maps.events)) < 0 ||
	    (e->lanes_fd = make_outer(l->skel->maps.lanes)) < 0)
		return e->events_fd < 0 ? e->events_fd : e->lanes_fd;
	err = reuse_arrays(l, e);
	if (err)
		return err;
	e->running = !pthread_create(&e->thread, NULL, early_rings_thread, e);
	if (!e->running)
		early_rings_thread(e);
	return 0;
}

/* The rings done: into L (KEEP) or closed; the arrays' own fds closed
 * (the object holds its copies). 0 or the rings' -errno. */
static int early_rings_finish(struct loader *l, struct early_rings *e, bool keep)
{
	int err;

	if (e->running)
		pthread_join(e->thread, NULL);
	e->running = false;
	err = e->err;
	if (e->events_fd >= 0)
		close(e->events_fd);
	if (e->lanes_fd >= 0)
		close(e->lanes_fd);
	if (keep && !err) {
		l->ring_fds = e->fds;
		l->rb = e->rb;
		l->lanes = e->lanes;
		return 0;
	}
	ring_set__free(e->rb);
	for (int cpu = 0; e->lanes && cpu < e->nr_cpus; cpu++)
		if (e->lanes[cpu])
			munmap(e->lanes[cpu], lane_value_size(e->lane_bytes));
	free(e->lanes);
	close_rings(e->nr_cpus, e->fds);
	return err;
}

/* Kernels before 6.13 have no uprobe sessions and before 6.6 no multi-uprobe
 * links: step down until the programs load. */
int loader__load(struct loader *l)
{
	struct early_rings rings;
	int err = early_rings_start(l, &rings), rings_err;

	if (err) {
		early_rings_finish(l, &rings, false);
		return err;
	}
	err = memtrace_bpf__load(l->skel);
	while (err && err != -EPERM && l->mode != LOADER_CLASSIC) {
		memtrace_bpf__destroy(l->skel);
		err = open_skel(l, l->mode + 1);
		if (!err)
			err = reuse_arrays(l, &rings);
		if (!err)
			err = memtrace_bpf__load(l->skel);
	}
	rings_err = early_rings_finish(l, &rings, !err);
	err = err ? err : rings_err;
	if (err)
		return err;
	if (l->opts.empty_probes == 4 && l->mode != LOADER_SESSION)
		return -EOPNOTSUPP; /* row R is made of sessions */
	verifier_totals(l);
	l->shared = shared_new();
	if (!l->shared)
		return -ENOMEM;
	err = map_unwind(l);
	if (!err && l->opts.on_record)
		err = map_rings(l);
	return err ? err : add_target(l);
}

uint64_t loader__verify_usec(const struct loader *l, uint32_t *insns)
{
	if (insns)
		*insns = l->verified_insns;
	return l->verify_usec;
}

enum loader_mode loader__mode(const struct loader *l)
{
	return l->mode;
}

static struct bpf_program *entry_prog(struct loader *l, enum probe_prog p)
{
	struct memtrace_bpf *s = l->skel;

	if (l->opts.empty_probes == 4)
		return p == PROBE_FREE ? s->progs.least_free : s->progs.least_session;
	/* The session floor: free has no return probe, so no session either. */
	if (l->opts.empty_probes == 3 && l->mode == LOADER_SESSION && p != PROBE_FREE)
		return s->progs.empty_session;
	if (l->opts.empty_probes)
		return s->progs.empty_enter;
	switch (p) {
	case PROBE_MALLOC:
	case PROBE_CALLOC:
	case PROBE_REALLOC:
	case PROBE_REALLOCARRAY:
	case PROBE_MEMALIGN:
	case PROBE_POSIX_MEMALIGN: return s->progs.alloc_enter; /* the kind in the cookie */
	case PROBE_FREE: return s->progs.free_enter;
	case PROBE_DELETE: return s->progs.delete_enter;
	default: return NULL;
	}
}

/* NULL: no return probes (the entry-only bench floor). */
static struct bpf_program *exit_prog(struct loader *l)
{
	if (l->opts.empty_probes == 1 || l->opts.empty_probes == 4 ||
	    (l->mode == LOADER_SESSION && l->opts.empty_probes != 2))
		return NULL; /* sessions run the entry program at the return */
	return l->opts.empty_probes ? l->skel->progs.empty_exit : l->skel->progs.alloc_exit;
}

/* What the entry program learns from its attach cookie (memtrace_abi.h). */
static uint64_t probe_cookie(const struct probe *p)
{
	static const uint8_t kind[PROBE_NR_PROGS] = {
		[PROBE_MALLOC] = MT_KIND_MALLOC,     [PROBE_CALLOC] = MT_KIND_CALLOC,
		[PROBE_REALLOC] = MT_KIND_REALLOC,   [PROBE_REALLOCARRAY] = MT_KIND_REALLOCARRAY,
		[PROBE_MEMALIGN] = MT_KIND_MEMALIGN, [PROBE_POSIX_MEMALIGN] = MT_KIND_POSIX_MEMALIGN,
		[PROBE_FREE] = MT_KIND_FREE,         [PROBE_DELETE] = MT_KIND_FREE,
	};

	return (p->may_nest ? MT_COOKIE_MAY_NEST : 0) | p->arg_cookie |
	       (uint64_t)kind[p->prog < PROBE_NR_PROGS ? p->prog : PROBE_MALLOC] << MT_COOKIE_KIND_SHIFT;
}

static int attach_one(struct loader *l, struct bpf_program *prog, const struct probe *p, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret, .bpf_cookie = probe_cookie(p));
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog, l->opts.pid, p->path, p->offset, &uo);
	if (!link)
		return -errno;
	l->links[l->nr_links++] = link;
	return 0;
}

/* Keep LINK (what a libbpf attach returned: NULL with errno set on failure)
 * with the others, to be destroyed at detach. 0 or -errno. */
static int remember_link(struct loader *l, struct bpf_link *link)
{
	struct bpf_link **v;

	if (!link)
		return -errno;
	v = realloc(l->links, (l->nr_links + 1) * sizeof(*v));
	if (!v) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	l->links = v;
	l->links[l->nr_links++] = link;
	return 0;
}

static int fd_list__push(struct fd_list *f, int fd)
{
	if (f->nr == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 64;
		int *v = realloc(f->v, cap * sizeof(*v));

		if (!v) {
			close(fd);
			return -ENOMEM;
		}
		f->v = v;
		f->cap = cap;
	}
	f->v[f->nr++] = fd;
	return 0;
}

/* Close the last fds of F down to KEEP, the newest first. */
static void fd_list__close_to(struct fd_list *f, size_t keep)
{
	while (f->nr > keep)
		close(f->v[--f->nr]);
}

static int remember_link_fd(struct loader *l, int fd)
{
	return fd_list__push(&l->fds, fd);
}

/* A multi-uprobe link; the breakpoints it placed in the target are told to
 * the fork cleaner (user/record/fork_clean.h), if there is one. */
static int attach_req(struct loader *l, const struct uprobe_multi_req *req)
{
	int fd = uprobe_multi__attach(req);

	if (fd >= 0 && l->fork_clean && req->pid > 0 && req->pid == l->opts.pid)
		fork_clean__add(l->fork_clean, req->path, req->offsets, req->cnt); /* best effort: a site missed stays trapping, as before */
	return fd;
}

void loader__set_fork_clean(struct loader *l, struct fork_clean *fc)
{
	l->fork_clean = fc;
}

/* One link for PROG on every probe in PATH whose entry program (return
 * program, with RET) it is. */
static int attach_multi(struct loader *l, struct bpf_program *prog, const struct probe_set *ps,
			const char *path, bool ret, const struct probe **failed, struct fd_list *into)
{
	struct uprobe_multi_req req = {
		.session = l->mode == LOADER_SESSION && is_session_prog(l->skel, prog),
		.path = path,
		.ret = ret,
		.pid = l->opts.pid,
	};
	uint64_t offsets[PROBE_MAX], cookies[PROBE_MAX];
	int fd;

	if (!prog)
		return 0;
	req.prog_fd = bpf_program__fd(prog);

	for (size_t i = 0; i < ps->nr; i++) {
		const struct probe *p = &ps->v[i];

		if (strcmp(p->path, path) || (ret ? !p->ret : entry_prog(l, p->prog) != prog))
			continue;
		cookies[req.cnt] = probe_cookie(p);
		offsets[req.cnt++] = p->offset; /* entry and return share one breakpoint */
		*failed = p;
	}
	if (!req.cnt)
		return 0;
	req.offsets = offsets;
	req.cookies = cookies;
	fd = attach_req(l, &req);
	if (fd < 0)
		return fd;
	return fd_list__push(into, fd);
}

/* Whether PROG (an entry program) takes frees: the tail of a window keeps them. */
static bool frees_prog(struct loader *l, const struct bpf_program *prog)
{
	return prog == l->skel->progs.free_enter || prog == l->skel->progs.delete_enter;
}

/* The links of GROUP's programs for every file of PS, into INTO. */
static int attach_all_multi(struct loader *l, const struct probe_set *ps, const struct probe **failed,
			    enum loader_group group, struct fd_list *into)
{
	bool allocs = group != LOADER_FREES, frees = group != LOADER_ALLOCS;
	int err = 0;

	for (size_t i = 0; i < ps->nr && !err; i++) {
		const char *path = ps->v[i].path;
		size_t j = 0;

		while (j < i && strcmp(ps->v[j].path, path))
			j++;
		if (j < i)
			continue; /* this file is done */
		if (allocs)
			err = attach_multi(l, exit_prog(l), ps, path, true, failed, into);
		for (int p = 0; p < PROBE_NR_PROGS && !err; p++) {
			struct bpf_program *prog = entry_prog(l, p);
			int q = 0;

			while (q < p && entry_prog(l, q) != prog)
				q++;
			if (q < p || !prog || (frees_prog(l, prog) ? !frees : !allocs))
				continue; /* each program once: alloc_enter serves six kinds */
			err = attach_multi(l, prog, ps, path, false, failed, into);
		}
	}
	return err;
}

/* Undo the links made since there were KEEP_LINKS and KEEP_FDS of them. */
static void detach_since(struct loader *l, size_t keep_links, size_t keep_fds)
{
	while (l->nr_links > keep_links)
		bpf_link__destroy(l->links[--l->nr_links]);
	while (l->fds.nr > keep_fds)
		close(l->fds.v[--l->fds.nr]);
}

/* --budget: the probes of PS are attached at each window, not now. */
static int keep_window_probes(struct loader *l, const struct probe_set *ps)
{
	struct probe *v = realloc(l->win_probes, (l->nr_win_probes + ps->nr) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->win_probes = v;
	for (size_t i = 0; i < ps->nr; i++) {
		struct probe *p = &v[l->nr_win_probes];

		*p = ps->v[i];
		p->path = strdup(ps->v[i].path);
		if (!p->path)
			return -ENOMEM;
		l->nr_win_probes++;
	}
	return 0;
}

int loader__window_attach(struct loader *l, enum loader_group group, const struct probe **failed)
{
	struct probe_set ps = { .v = l->win_probes, .nr = l->nr_win_probes };
	struct fd_list *into = &l->win[group == LOADER_FREES];
	size_t keep = into->nr;
	int err;

	if (l->mode == LOADER_CLASSIC || group == LOADER_ALL)
		return -EOPNOTSUPP;
	err = attach_all_multi(l, &ps, failed, group, into);
	if (err)
		fd_list__close_to(into, keep);
	return err;
}

/*
 * Closing a multi-uprobe link removes its breakpoints at once, then waits
 * for the kernel's RCU grace periods (20-45 ms here). Links are closed on
 * closer threads: the recorder keeps its clock, and a link is not left
 * trapping while another's close waits (one closer thread made the frees'
 * probes outlive their tail by tens of ms, unpriced). Concurrent waits share
 * their grace periods. The closers stay, shared by every loader, and a new
 * one starts only when none is idle: one started per close cost the
 * recorder 0.37 ms a close (a clone, and the munmap of its stack with the
 * TLB flushes it sends), 3 ms of its 38 at --budget 1 on a loaded
 * redis-server in 8 s.
 */
#define CLOSER_STACK (256 * 1024)
#define CLOSERS_MAX 32 /* beyond, a close waits for a closer */

struct closing {
	struct loader *l;
	int fd;
	struct closing *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct closing *head, **tail;
	int queued, idle, threads;
	pid_t pid; /* the process the closers run in: a fork (record's teardown) has none */
} closers = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &closers.head, 0, 0, 0, 0 };

/* This process is not the one whose closers the counts and the queue are:
 * the child record's teardown forks, which has none of its threads (nor,
 * maybe, the lock a thread held). Waiting there for a close in flight in
 * the parent waited forever, the child holding every map and link (2 of
 * about 35 --budget recordings here); there it closes inline. */
static bool closers_elsewhere(void)
{
	return closers.pid && closers.pid != getpid();
}

static void *closer_main(void *arg)
{
	pthread_mutex_lock(&closers.lock);
	for (;;) {
		struct closing *c;
		uint64_t t0;

		while (!closers.head) {
			closers.idle++;
			pthread_cond_wait(&closers.work, &closers.lock);
			closers.idle--;
		}
		c = closers.head;
		closers.head = c->next;
		if (!closers.head)
			closers.tail = &closers.head;
		closers.queued--;
		pthread_mutex_unlock(&closers.lock);
		t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		close(c->fd);
		/* what the close cost (removing the breakpoints), for --budget */
		__atomic_fetch_add(&c->l->closer_cpu_ns, now_ns(CLOCK_THREAD_CPUTIME_ID) - t0, __ATOMIC_SEQ_CST);
		__atomic_fetch_sub(&c->l->closing, 1, __ATOMIC_SEQ_CST);
		free(c);
		pthread_mutex_lock(&closers.lock);
	}
	return arg;
}

uint64_t loader__closer_cpu_ns(struct loader *l)
{
	return __atomic_load_n(&l->closer_cpu_ns, __ATOMIC_SEQ_CST);
}

/* Hand C to a closer, starting one if every closer is busy. 0 or an error
 * number from pthread_create when there is no closer at all. */
static int closer_take(struct closing *c)
{
	int err = 0;

	if (closers_elsewhere())
		return ECHILD; /* closed inline: nobody here to take it */
	pthread_mutex_lock(&closers.lock);
	closers.pid = getpid();
	if (closers.queued >= closers.idle && closers.threads < CLOSERS_MAX) {
		pthread_attr_t attr;
		pthread_t t;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* Room for the static TLS of every thread besides what close
		 * needs: glibc refuses (EINVAL) a stack that cannot hold it. */
		pthread_attr_setstacksize(&attr, CLOSER_STACK);
		err = pthread_create(&t, &attr, closer_main, NULL);
		pthread_attr_destroy(&attr);
		if (!err)
			closers.threads++;
		else if (closers.threads)
			err = 0; /* the busy ones take it in turn */
	}
	if (!err) {
		c->next = NULL;
		*closers.tail = c;
		closers.tail = &c->next;
		closers.queued++;
		pthread_cond_signal(&closers.work);
	}
	pthread_mutex_unlock(&closers.lock);
	return err;
}

static void close_later(struct loader *l, struct fd_list *f)
{
	while (f->nr) {
		struct closing *c = malloc(sizeof(*c));
		int err;

		if (!c)
			break;
		*c = (struct closing){ .l = l, .fd = f->v[f->nr - 1] };
		__atomic_fetch_add(&l->closing, 1, __ATOMIC_SEQ_CST);
		if ((err = closer_take(c))) {
			__atomic_fetch_sub(&l->closing, 1, __ATOMIC_SEQ_CST);
			free(c);
			/* Said, not silent: closing here holds the recorder for the
			 * grace periods, and each tail runs that much long. */
			if (!l->said_inline_close)
				fprintf(stderr, "memtrace: warning: cannot start a thread to detach probes (%s): "
						"--budget windows' tails run tens of ms long\n", strerror(err));
			l->said_inline_close = true;
			break;
		}
		f->nr--;
	}
	fd_list__close_to(f, 0); /* what could not go to a thread */
}

/* Wait until every link handed to a closer thread is closed. */
static void closer_join(struct loader *l)
{
	while (!closers_elsewhere() && __atomic_load_n(&l->closing, __ATOMIC_SEQ_CST))
		usleep(1000);
}

void loader__window_detach(struct loader *l, enum loader_group group)
{
	if (group == LOADER_ALL || group == LOADER_ALLOCS)
		close_later(l, &l->win[0]);
	if (group == LOADER_ALL || group == LOADER_FREES)
		close_later(l, &l->win[1]);
}

void loader__window_allocs(struct loader *l, bool open)
{
	struct memtrace_bpf__bss *bss = l->skel->bss;

	if (open)
		__atomic_fetch_add(&bss->window_gen[l->slot], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&bss->allocs_open[l->slot], open ? 1 : 0, __ATOMIC_SEQ_CST);
}

int loader__hits(struct loader *l, uint64_t *entries, uint64_t *returns, uint64_t map_hits[2])
{
	struct mt_hit_count *v = calloc(l->nr_cpus, sizeof(*v));
	int err = 0;

	*entries = *returns = map_hits[0] = map_hits[1] = 0;
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.hits), &l->slot, v))
		err = -errno;
	for (int cpu = 0; !err && cpu < l->nr_cpus; cpu++) {
		*entries += v[cpu].entries;
		*returns += v[cpu].returns;
		map_hits[0] += v[cpu].map_entries;
		map_hits[1] += v[cpu].map_returns;
	}
	free(v);
	return err;
}

/* Run time of the allocator programs so far (BPF_ENABLE_STATS must be on:
 * loader__enable_stats), summed. */
int loader__prog_ns(struct loader *l, uint64_t *run_ns, uint64_t *runs)
{
	struct bpf_program *progs[] = { l->skel->progs.alloc_enter, l->skel->progs.alloc_exit,
					l->skel->progs.free_enter, l->skel->progs.delete_enter };

	*run_ns = *runs = 0;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (bpf_program__fd(progs[i]) < 0)
			continue; /* not loaded: alloc_exit under sessions */
		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			return -errno;
		*run_ns += info.run_time_ns;
		*runs += info.run_cnt;
	}
	return 0;
}

int loader__calibration_attach(struct loader *l, const char *path, uint64_t offset, bool with_return, int fds[2])
{
	struct memtrace_bpf *s = l->skel;
	bool session = with_return && l->mode == LOADER_SESSION;
	struct uprobe_multi_req req = {
		.session = session,
		.path = path,
		.offsets = &offset,
		.cnt = 1,
		.pid = getpid(),
	};

	fds[0] = fds[1] = -1;
	if (l->mode == LOADER_CLASSIC)
		return -EOPNOTSUPP;
	req.prog_fd = bpf_program__fd(session ? s->progs.empty_session : s->progs.empty_enter);
	fds[0] = uprobe_multi__attach(&req);
	if (fds[0] < 0)
		return fds[0];
	if (!with_return || session)
		return 0;
	req.prog_fd = bpf_program__fd(s->progs.empty_exit);
	req.ret = true;
	fds[1] = uprobe_multi__attach(&req);
	if (fds[1] >= 0)
		return 0;
	close(fds[0]);
	return fds[1];
}

/* The kernel's run-time statistics are one switch for every program: one
 * descriptor keeps them on for every handle of this process (the agent's
 * targets held one each). */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static int stats_fd = -1;
static unsigned stats_users;

int loader__enable_stats(struct loader *l)
{
	int err = 0;

	if (l->stats_on)
		return 0;
	pthread_mutex_lock(&stats_lock);
	if (stats_fd < 0)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats_fd < 0) {
		err = stats_fd;
		stats_fd = -1;
	} else {
		stats_users++;
		l->stats_on = true;
	}
	pthread_mutex_unlock(&stats_lock);
	return err;
}

static void stats_release(struct loader *l)
{
	if (!l->stats_on)
		return;
	l->stats_on = false;
	pthread_mutex_lock(&stats_lock);
	if (!--stats_users && stats_fd >= 0) {
		close(stats_fd);
		stats_fd = -1;
	}
	pthread_mutex_unlock(&stats_lock);
}

int loader__attach(struct loader *l, const struct probe_set *ps, const struct probe **failed)
{
	size_t keep_links = l->nr_links, keep_fds = l->fds.nr;
	struct bpf_link **links;
	int err = 0;

	if (l->opts.windowed)
		return keep_window_probes(l, ps);
	if (l->mode != LOADER_CLASSIC) {
		err = attach_all_multi(l, ps, failed, LOADER_ALL, &l->fds);
		if (err)
			detach_since(l, keep_links, keep_fds);
		return err;
	}
	links = realloc(l->links, (l->nr_links + ps->nr * 2) * sizeof(*links));
	if (!links)
		return -ENOMEM;
	l->links = links;
	/* Return probes first: an entry without its return would leave a
	 * thread's depth open. */
	for (size_t i = 0; i < ps->nr && !err; i++) {
		if (ps->v[i].ret && exit_prog(l))
			err = attach_one(l, exit_prog(l), &ps->v[i], true);
		if (err)
			*failed = &ps->v[i];
	}
	for (size_t i = 0; i < ps->nr && !err; i++) {
		err = attach_one(l, entry_prog(l, ps->v[i].prog), &ps->v[i], false);
		if (err)
			*failed = &ps->v[i];
	}
	if (err)
		detach_since(l, keep_links, keep_fds);
	return err;
}

static int attach_marks_multi(struct loader *l, struct bpf_program *prog, const char *path, uint64_t *offsets,
			      uint64_t *cookies, uint64_t *ref_ctrs, uint32_t n)
{
	struct uprobe_multi_req req = {
		.prog_fd = bpf_program__fd(prog),
		.path = path,
		.offsets = offsets,
		.cookies = cookies,
		.ref_ctrs = ref_ctrs,
		.cnt = n,
		.pid = l->opts.pid,
	};
	int fd = attach_req(l, &req);

	if (fd < 0)
		return fd;
	return remember_link_fd(l, fd);
}

static int attach_marks_classic(struct loader *l, struct bpf_program *prog, const char *path, uint64_t *offsets,
				uint64_t *cookies, uint64_t *ref_ctrs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookies[i], .ref_ctr_offset = ref_ctrs[i]);
		int err = remember_link(l, bpf_program__attach_uprobe_opts(prog, l->opts.pid, path, offsets[i], &uo));

		if (err)
			return err;
	}
	return 0;
}

/* USDT sites of PATH for PROG, their specs in usdt_specs, all or none. */
static int attach_usdt(struct loader *l, struct bpf_program *prog, const char *path, const struct loader_mark *marks,
		       size_t n)
{
	uint64_t *offsets = calloc(n ? n : 1, 3 * sizeof(uint64_t));
	uint64_t *cookies = offsets + n, *ref_ctrs = offsets + 2 * n;
	int fd = bpf_map__fd(l->skel->maps.usdt_specs), err = 0;
	size_t keep_links = l->nr_links, keep_fds = l->fds.nr;
	uint32_t used = 0;

	if (!offsets)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		uint32_t idx = __atomic_fetch_add(&l->shared->nr_specs, 1, __ATOMIC_SEQ_CST);

		if (idx >= MT_USDT_MAX_SPECS)
			break; /* more sites than we have room for: the rest stay unprobed */
		if (bpf_map_update_elem(fd, &idx, &marks[i].spec, BPF_ANY)) {
			err = -errno;
			break;
		}
		offsets[used] = marks[i].file_offset;
		ref_ctrs[used] = marks[i].sema_offset;
		cookies[used++] = (uint64_t)idx << 8 | marks[i].kind;
	}
	if (!err && used)
		err = l->mode == LOADER_CLASSIC ? attach_marks_classic(l, prog, path, offsets, cookies, ref_ctrs, used)
						: attach_marks_multi(l, prog, path, offsets, cookies, ref_ctrs, used);
	if (err)
		detach_since(l, keep_links, keep_fds); /* all or nothing: the caller may retry each */
	free(offsets);
	return err;
}

int loader__attach_marks(struct loader *l, const char *path, const struct loader_mark *marks, size_t n)
{
	return attach_usdt(l, l->skel->progs.mark_hit, path, marks, n);
}

int loader__attach_glibc_probes(struct loader *l, const char *path, const struct loader_mark *marks, size_t n)
{
	if (!l->opts.trace_maps)
		return -EINVAL; /* its program is loaded with --rss only */
	return attach_usdt(l, l->skel->progs.glibc_probe, path, marks, n);
}

/* PROG on the one instruction at OFFSET of PATH, for this handle's process. */
static int attach_at(struct loader *l, struct bpf_program *prog, const char *path, uint64_t offset)
{
	struct uprobe_multi_req req = {
		.prog_fd = bpf_program__fd(prog),
		.path = path,
		.offsets = &offset,
		.cnt = 1,
		.pid = l->opts.pid,
	};
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	int fd;

	if (l->mode != LOADER_CLASSIC) {
		fd = attach_req(l, &req);
		return fd < 0 ? fd : remember_link_fd(l, fd);
	}
	return remember_link(l, bpf_program__attach_uprobe_opts(prog, l->opts.pid, path, offset, &uo));
}

int loader__attach_link_map_hook(struct loader *l, const char *path, uint64_t offset)
{
	return attach_at(l, l->skel->progs.link_map_hit, path, offset);
}

int loader__attach_py_code_free(struct loader *l, const char *path, uint64_t offset)
{
	return attach_at(l, l->skel->progs.py_code_free, path, offset);
}

int loader__attach_thread_names(struct loader *l)
{
	if (!l->owns_skel)
		return 0; /* once per object: the handle that loaded it attached them */
	int err = remember_link(l, bpf_program__attach(l->skel->progs.thread_new));

	return err ? err : remember_link(l, bpf_program__attach(l->skel->progs.thread_rename));
}

int loader__attach_maps(struct loader *l)
{
	struct bpf_program *prog;
	size_t keep = l->nr_links;
	int err = 0;

	if (!l->owns_skel || !l->opts.trace_maps)
		return 0;
	/* kretprobes on the five syscalls, else (no kprobes in this kernel)
	 * each target's C library's wrappers, which its recorder attaches */
	bpf_object__for_each_program(prog, l->skel->obj)
		if (!err && is_kernel_map_prog(l->skel, prog) && prog != l->skel->progs.map_exit &&
		    prog != l->skel->progs.map_fault)
			err = remember_link(l, bpf_program__attach(prog));
	if (err) {
		while (l->nr_links > keep)
			bpf_link__destroy(l->links[--l->nr_links]);
		__atomic_store_n(&l->shared->maps_tier, MAPS_WRAPPERS, __ATOMIC_SEQ_CST);
		err = 0;
	}
	/* write faults by stack: x86's tracepoint; without it, none */
	if (!err && remember_link(l, bpf_program__attach(l->skel->progs.map_fault)))
		l->no_faults = true;
	return err;
}

int loader__attach_large(struct loader *l)
{
	size_t keep = l->nr_links;
	struct bpf_program *progs[3] = { l->skel->progs.map_mmap, l->skel->progs.map_munmap, l->skel->progs.map_mremap };
	int err = 0;

	if (!l->owns_skel || !l->opts.large_min)
		return 0;
	if (l->opts.trace_maps) { /* --rss attached them, or the wrappers that serve it serve these */
		if (!loader__maps_by_wrappers(l))
			__atomic_store_n(&l->shared->large_traced, 1, __ATOMIC_SEQ_CST);
		return 0;
	}
	for (size_t i = 0; i < 3 && !err; i++)
		err = remember_link(l, bpf_program__attach(progs[i]));
	if (err) {
		/* no kprobes: each target's C library's wrappers, as --rss's */
		while (l->nr_links > keep)
			bpf_link__destroy(l->links[--l->nr_links]);
		__atomic_store_n(&l->shared->maps_tier, MAPS_WRAPPERS, __ATOMIC_SEQ_CST);
		return 0;
	}
	__atomic_store_n(&l->shared->large_traced, 1, __ATOMIC_SEQ_CST);
	return 0;
}

bool loader__large_traced(const struct loader *l)
{
	return l->opts.large_min && __atomic_load_n(&l->shared->large_traced, __ATOMIC_SEQ_CST);
}

bool loader__maps_by_wrappers(struct loader *l)
{
	return (l->opts.trace_maps || l->opts.large_min) &&
	       __atomic_load_n(&l->shared->maps_tier, __ATOMIC_SEQ_CST) == MAPS_WRAPPERS;
}

int loader__attach_map_wrappers(struct loader *l, const char *path, const uint64_t *offsets, const uint32_t *calls,
				size_t n)
{
	size_t keep_links = l->nr_links, keep_fds = l->fds.nr, keep_wrap = l->wrap_fds.nr;
	uint64_t cookies[8];
	int err = 0;

	if (!loader__maps_by_wrappers(l) || n > sizeof(cookies) / sizeof(cookies[0]))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		cookies[i] = calls[i];
	if (l->mode == LOADER_SESSION) {
		/* one link, entry and return: a call the entry wants nothing of
		 * costs no return probe */
		struct uprobe_multi_req req = {
			.prog_fd = bpf_program__fd(l->skel->progs.map_wrap_enter), .path = path, .offsets = offsets,
			.cookies = cookies, .cnt = (uint32_t)n, .pid = l->opts.pid, .session = true,
		};
		int fd = attach_req(l, &req);

		err = fd < 0 ? fd : fd_list__push(&l->wrap_fds, fd);
	} else if (l->mode != LOADER_CLASSIC) {
		/* the return first: an entry's pending call never outlives it */
		struct uprobe_multi_req req = {
			.prog_fd = bpf_program__fd(l->skel->progs.map_wrap_exit),
			.path = path, .offsets = offsets, .cnt = (uint32_t)n, .pid = l->opts.pid, .ret = true,
		};
		int fd = attach_req(l, &req);

		err = fd < 0 ? fd : fd_list__push(&l->wrap_fds, fd);
		if (!err) {
			req.prog_fd = bpf_program__fd(l->skel->progs.map_wrap_enter);
			req.cookies = cookies;
			req.ret = false;
			fd = attach_req(l, &req);
			err = fd < 0 ? fd : fd_list__push(&l->wrap_fds, fd);
		}
	} else {
		for (size_t i = 0; i < n && !err; i++) {
			LIBBPF_OPTS(bpf_uprobe_opts, ret, .retprobe = true);
			LIBBPF_OPTS(bpf_uprobe_opts, entry, .bpf_cookie = cookies[i]);

			err = remember_link(l, bpf_program__attach_uprobe_opts(l->skel->progs.map_wrap_exit, l->opts.pid,
									       path, offsets[i], &ret));
			if (!err)
				err = remember_link(l, bpf_program__attach_uprobe_opts(l->skel->progs.map_wrap_enter,
										       l->opts.pid, path, offsets[i], &entry));
		}
	}
	if (err) {
		detach_since(l, keep_links, keep_fds);
		fd_list__close_to(&l->wrap_fds, keep_wrap);
	} else {
		__atomic_fetch_add(&l->shared->maps_wrapped, 1, __ATOMIC_SEQ_CST);
	}
	return err;
}

int loader__detach_map_wrappers(struct loader *l)
{
	if (!l->wrap_fds.nr)
		return l->mode == LOADER_CLASSIC && loader__maps_by_wrappers(l) ? -EOPNOTSUPP : 0;
	/* closed last first: without sessions the entries' link, pushed after
	 * the returns', so a call whose entry ran still has its return */
	fd_list__close_to(&l->wrap_fds, 0);
	return 0;
}

const char *loader__maps_how(struct loader *l)
{
	switch (__atomic_load_n(&l->shared->maps_tier, __ATOMIC_SEQ_CST)) {
	case MAPS_WRAPPERS:
		return "at the C library's wrappers (no kprobes in this kernel)";
	case MAPS_SYS_EXIT:
		return "at every syscall's return (no kprobes in this kernel, no C library in the target)";
	}
	return "by kretprobes on the syscalls";
}

int loader__attach_maps_exit(struct loader *l)
{
	int err;

	if (!l->owns_skel || !loader__maps_by_wrappers(l))
		return -EINVAL;
	if (__atomic_load_n(&l->shared->maps_wrapped, __ATOMIC_SEQ_CST))
		return -EBUSY; /* its targets' calls would be counted twice */
	err = remember_link(l, bpf_program__attach(l->skel->progs.map_exit));
	if (!err)
		__atomic_store_n(&l->shared->maps_tier, MAPS_SYS_EXIT, __ATOMIC_SEQ_CST);
	return err;
}

bool loader__link_map_changed(struct loader *l)
{
	return __atomic_exchange_n(&l->skel->bss->link_map_changed[l->slot], 0, __ATOMIC_SEQ_CST) != 0;
}

uint32_t loader__creds_changed(struct loader *l, char *comm, size_t cap)
{
	uint32_t why = __atomic_load_n(&l->skel->bss->creds_changed[l->slot], __ATOMIC_SEQ_CST);

	if (why && cap)
		snprintf(comm, cap, "%.*s", (int)sizeof(l->skel->bss->creds_comm[0]), l->skel->bss->creds_comm[l->slot]);
	return why;
}

void loader__set_python(struct loader *l, const struct mt_py_layout *layout)
{
	volatile struct mt_py_layout *dst = &l->skel->bss->py_layout[l->slot];
	struct mt_py_layout copy = *layout;

	/* the walk starts once runtime is set, after the rest */
	__atomic_store_n(&dst->runtime, 0, __ATOMIC_SEQ_CST);
	copy.runtime = 0;
	memcpy((void *)dst, &copy, sizeof(copy));
	__atomic_store_n(&dst->runtime, layout->runtime, __ATOMIC_SEQ_CST);
}

bool loader__python_walk(const struct loader *l)
{
	return l->opts.python_walk && l->opts.stack_depth;
}

void loader__python_copy(struct loader *l, uint32_t from_slot)
{
	struct mt_py_layout copy;

	memcpy(&copy, (const void *)&l->skel->bss->py_layout[from_slot & (MT_MAX_TARGETS - 1)], sizeof(copy));
	copy.tag_cache = 0; /* until this process's code objects' deaths are probed too */
	if (copy.runtime)
		loader__set_python(l, &copy);
}

void loader__set_recording(struct loader *l, bool on)
{
	__atomic_store_n(&l->skel->bss->recording[l->slot], on ? 1 : 0, __ATOMIC_SEQ_CST);
}

/* The records in CPU's lane, in order; its tail moved past those taken.
 * The probes publish a record's bytes before its head (x86 keeps stores in
 * order), so everything below the head read here is whole. */
static int consume_lane(struct loader *l, int cpu)
{
	struct mt_lane_ctl *c = l->lanes[cpu];
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE), tail = c->tail;
	int err = 0;

	if (head - tail > l->lane_bytes)
		return -EIO; /* a head no probe wrote */
	while (tail != head && !err) {
		const struct mt_event_header *h = (const void *)((char *)c + MT_LANE_DATA + (tail & (l->lane_bytes - 1)));

		if (h->size < sizeof(*h) || h->size > MT_LANE_SLACK || (h->size & 7) || h->size > head - tail)
			return -EIO;
		err = l->opts.on_record(l->opts.ctx, h, h->size);
		tail += h->size;
		l->by_lane++;
	}
	__atomic_store_n(&c->tail, tail, __ATOMIC_RELEASE);
	return err;
}

/* Every CPU's ring and lane drained: 0 or -errno. The ring buffer first: a
 * record that fell back to it (its lane full) is older than what the lane
 * took after, and the drain sorts by time either way. */
static int consume(struct loader *l)
{
	int n = ring_set__consume(l->rb);

	if (n < 0 && n != -EINTR)
		return n;
	for (int cpu = 0; l->lanes && cpu < l->nr_cpus; cpu++)
		if ((n = consume_lane(l, cpu)))
			return n;
	return 0;
}

int loader__poll(struct loader *l, int timeout_ms)
{
	/* Probes never wake us (it would cost them a wakeup per event): the
	 * timeout is the drain's clock, cut short only by the wake fd. */
	struct pollfd p = { .fd = l->wake_fd, .events = POLLIN };

	if (timeout_ms > 0 && poll(&p, p.fd >= 0, timeout_ms) > 0)
		l->wake_fd = -1; /* once: a process that ended would end every wait */
	return consume(l);
}

int loader__poll_wake(struct loader *l, int fd)
{
	if (!l || !l->rb || fd < 0)
		return -EINVAL;
	l->wake_fd = fd;
	return 0;
}

int loader__poll_until(struct loader *l, uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ULL),
			       .tv_nsec = (long)(deadline_ns % 1000000000ULL) };

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); /* EINTR: a signal, looked at by the caller */
	return consume(l);
}

void loader__detach(struct loader *l)
{
	loader__set_recording(l, false);
	/* Entries first, so no return probe is left waiting on a missing entry. */
	for (size_t i = l->nr_links; i > 0; i--)
		bpf_link__destroy(l->links[i - 1]);
	l->nr_links = 0;
	loader__window_allocs(l, false);
	fd_list__close_to(&l->win[0], 0);
	fd_list__close_to(&l->win[1], 0);
	closer_join(l);
	fd_list__close_to(&l->fds, 0);
	fd_list__close_to(&l->wrap_fds, 0);
}

void loader__stack_counts(struct loader *l, uint64_t *from_template, uint64_t *walked)
{
	size_t size = bpf_map__value_size(l->skel->maps.stack_scratch);
	char *vals = calloc(l->nr_cpus, size);
	uint32_t zero = 0;

	*from_template = *walked = 0;
	if (!vals)
		return;
	if (!bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.stack_scratch), &zero, vals))
		for (int cpu = 0; cpu < l->nr_cpus; cpu++) {
			/* struct stack_scratch (bpf/memtrace.bpf.c) ends with the two counters */
			const uint64_t *tail = (const uint64_t *)(vals + (size_t)cpu * size + size) - 2;

			*from_template += tail[0];
			*walked += tail[1];
		}
	free(vals);
}

void loader__lane_counts(const struct loader *l, uint64_t *by_lane, uint64_t *by_ring)
{
	*by_lane = l->by_lane;
	*by_ring = l->by_ring;
}

uint64_t loader__drops(struct loader *l, int cpu)
{
	uint64_t *vals = calloc(l->nr_cpus, sizeof(uint64_t));
	uint64_t n = 0;

	if (!vals)
		return 0;
	if (!bpf_map_lookup_elem(bpf_map__fd(l->skel->maps.drops), &l->slot, vals) && cpu < l->nr_cpus)
		n = vals[cpu];
	free(vals);
	return n;
}

int loader__nr_cpus(const struct loader *l)
{
	return l->nr_cpus;
}

void loader__close(struct loader *l)
{
	if (!l)
		return;
	loader__detach(l);
	if (l->skel && l->shared)
		remove_target(l);
	if (l->shared)
		release_modules(l);
	free(l->held_mods);
	release_handle(l);
	loader__spare_close(l);
	if (l->owns_skel) {
		/* a fork has none: what is at those addresses now is not ours */
		if (l->unwind_rows && unwind_here(l))
			munmap(l->unwind_rows, l->unwind_rows_len);
		if (l->unwind_maps && unwind_here(l))
			munmap(l->unwind_maps, l->unwind_maps_len);
		if (l->targets_fast)
			munmap(l->targets_fast, l->targets_fast_len);
		if (l->shared)
			munmap(l->shared, sizeof(*l->shared));
		memtrace_bpf__destroy(l->skel);
	}
	free(l);
}
