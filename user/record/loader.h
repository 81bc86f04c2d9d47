/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_LOADER_H
#define MEMTRACE_LOADER_H

#include "probes.h"
#include <linux/types.h>
#include "memtrace_abi.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Called for every record a probe hands over, in ring order per CPU. */
typedef int (*loader_record_fn)(void *ctx, const void *data, size_t size);

/* How probes are attached, best first. */
enum loader_mode {
	LOADER_SESSION, /* uprobe sessions in multi-uprobe links (kernel >= 6.13) */
	LOADER_MULTI,   /* multi-uprobe links, entry and return (kernel >= 6.6) */
	LOADER_CLASSIC, /* one perf-event uprobe per probe */
};

struct loader_opts {
	int pid;                  /* process to trace */
	uint32_t stack_depth;     /* frames per stack; 0: none */
	uint64_t ring_bytes;      /* per-CPU ring buffer size, a power of two (one_ring: the target's) */
	bool one_ring;            /* one ring buffer for all the target's CPUs (the slot of each holds it):
				     the agent's --budget, whose ring is sized by the events the budget lets
				     through, not by the CPUs */
	uint64_t lane_ring_bytes; /* the ring size the lanes are sized for; 0: ring_bytes (a shared
				     loader's own rings go unused, its processes' are larger) */
	uint64_t sample_mean;     /* 0: every allocation; else mean bytes between samples */
	int empty_probes;         /* bench floor: 1 empty entry probes, 2 entry and return,
				   * 3 entry and return as one uprobe session where there are,
				   * 4 the least an exact recorder does (least_session, least_free) */
	uint32_t unwind_rows;     /* room for unwind table rows (0: none) */
	bool reclaim_rows;        /* the rows of files no handle holds now may go when room is short (the agent's
				     object, whose targets come and go for its life; not --follow-children's, whose
				     forked children take their parent's rows without holding them) */
	uint32_t max_targets;     /* processes the object may record at once (0: 1) */
	bool check_creds;         /* the recorder lacks CAP_SYS_PTRACE: enforce the rule below */
	uint32_t allowed_uid;     /* the recorder's real uid and gid */
	uint32_t allowed_gid;
	uint64_t allowed_caps;    /* its permitted capabilities */
	bool windowed;            /* --budget: allocator probes only in windows (loader__window_*) */
	bool python_walk;         /* its targets may run CPython: the walk of Python frames is loaded (else pruned) */
	bool trace_maps;          /* --rss: mmap, munmap, mremap, brk, madvise with stacks (loader__attach_maps) */
	bool report_forks;        /* a target's forks that nothing records come as MT_EVENT_FORK records */
	uint64_t large_min;       /* --budget: the allocator's mmap'd blocks from this length, exactly (0: off) */
	loader_record_fn on_record;
	void *ctx;
};

struct loader;

/* libbpf says nothing (the command says what failed, once), unless
 * MEMTRACE_DEBUG_LIBBPF=1: its own words, verifier logs included. Every
 * object memtrace loads sets it, the one rule for all of them. */
void loader__quiet_libbpf(void);

/* The fixed lifecycle: open (and configure), load, attach, poll, close.
 * The loading handle records opts->pid (if > 0) in target slot 0. */
int loader__open(struct loader **out, const struct loader_opts *opts);
int loader__load(struct loader *l);
/* Another process on BASE's loaded object, in SLOT (< max_targets, not in
 * use by another handle): rings of its own, nothing loaded or verified.
 * OPTS gives its pid, ring size and record callback; the rest is BASE's.
 * Valid in a process forked from BASE's too (the recorders of
 * --follow-children). Closing it frees the slot. 0 or -errno. */
int loader__add_target(struct loader *base, const struct loader_opts *opts, uint32_t slot, struct loader **out);
/* Make the rings of the next loader__add_target calls on BASE, in SLOTS (N
 * of them; those spare already are kept), now (RING_BYTES a CPU) and put
 * them in place, all with one wait for the kernel, so that adding them does
 * not wait for that. At most LOADER_MAX_SPARES are kept, and as many as fit
 * in LOADER_SPARE_MEMORY (one at least). 0 or -errno. */
#define LOADER_MAX_SPARES 8
#define LOADER_SPARE_MEMORY (32ull << 20) /* bytes of rings and lanes kept spare, at most (one process's at least) */
int loader__spare_rings(struct loader *base, uint64_t ring_bytes, const uint32_t *slots, int n);
/* SLOT's rings are made ahead (loader__spare_rings) and not taken yet. */
bool loader__spare_has(const struct loader *base, uint32_t slot);
/* Forget SLOT's spare rings, if any, where SLOT went to a process that made
 * its own (its recorder adds it): spare, they would be taken for a later
 * process in SLOT after that recorder took its rings out of the arrays. */
void loader__spare_drop(struct loader *base, uint32_t slot);
/* Close the spare rings (in a forked process that will add none). */
void loader__spare_close(struct loader *base);
/* A handle prepared here (no on_record in OPTS: its rings made, not
 * mapped) and handed to a process forked after (its recorder, which owns it
 * from then on): where its events go there, its rings mapped. 0 or -errno. */
int loader__set_sink(struct loader *l, int (*on_record)(void *ctx, const void *data, size_t size), void *ctx);
/* ... and let go of this process's copy: its fds closed, its memory freed,
 * nothing detached or removed (the other process's copy holds them). A
 * handle with classic links cannot be: -EBUSY, nothing done. */
int loader__forget(struct loader *l);
/* L's process was forked from the one in FROM_SLOT and maps what it maps:
 * publish that slot's unwind mappings for L too. */
void loader__unwind_copy(struct loader *l, uint32_t from_slot);
struct fork_clean;
/* Tell FC (NULL: nothing) every breakpoint a multi-uprobe link places in
 * L's process from now on: what a fork of it inherits. */
void loader__set_fork_clean(struct loader *l, struct fork_clean *fc);
/* Attach every probe of PS (again for files mapped later); on failure FAILED
 * names the probe and none of PS stays attached. */
int loader__attach(struct loader *l, const struct probe_set *ps, const struct probe **failed);
/* One mark site (inproc/memtrace.h USDT probe) to attach. */
struct loader_mark {
	uint64_t file_offset;
	uint64_t sema_offset;         /* 0: none */
	uint32_t kind;                /* enum mt_mark_kind (glibc's probes: enum mt_map_call) */
	struct mt_usdt_spec spec;     /* where its arguments are */
};

/* Attach the mark sites of the file PATH, all or none. 0 or -errno. */
int loader__attach_marks(struct loader *l, const char *path, const struct loader_mark *marks,
			 size_t n);

/* --rss (opts.trace_maps): glibc's probes of its allocator (provider libc,
 * bpf/maps.bpf.h's glibc_probe) in PATH, all or none; a mark's kind is
 * then its enum mt_map_call. 0 or -errno. */
int loader__attach_glibc_probes(struct loader *l, const char *path, const struct loader_mark *marks, size_t n);

/* Watch the dynamic linker's debugger hook at OFFSET in PATH (ld.so). */
int loader__attach_link_map_hook(struct loader *l, const char *path, uint64_t offset);

/* Thread names from the kernel: a new thread's and every rename
 * (bpf/threads.bpf.h). 0 or -errno. */
int loader__attach_thread_names(struct loader *l);
/* --rss (opts.trace_maps): the syscalls that map memory, for every target
 * of the object; once per object, by the handle that loaded it. */
int loader__attach_maps(struct loader *l);
/* --budget (opts.large_min): mmap, munmap and mremap of large blocks,
 * every target of the object, by kretprobes; once per object. Where the
 * kernel has no kprobes, loader__maps_by_wrappers says so afterwards: each
 * target's C library's wrappers are then probed instead. 0 or -errno. */
int loader__attach_large(struct loader *l);
/* Whether the large blocks are traced by the kretprobes of loader__attach_large. */
bool loader__large_traced(const struct loader *l);
/* --rss on a kernel without kprobes: whether the calls that map memory
 * are to be caught at each target's C library (user/record/map_wrappers.h),
 * and the probes of one: entry and return on N functions at OFFSETS of
 * PATH, CALLS their enum mt_map_call (at most 8), all or none. Or, for a
 * target without one, the sys_exit tracepoint for every target of the
 * object from then on (the handle that loaded it only). 0 or -errno. */
bool loader__maps_by_wrappers(struct loader *l);
int loader__attach_map_wrappers(struct loader *l, const char *path, const uint64_t *offsets, const uint32_t *calls,
				size_t n);
int loader__attach_maps_exit(struct loader *l);
/* How they are caught, in words (record -v). */
const char *loader__maps_how(struct loader *l);

/* Whether the link map changed (dlopen, dlclose) since the last call. */
bool loader__link_map_changed(struct loader *l);

/* Whether the target took credentials the recorder may not trace (see
 * bpf/memtrace.bpf.c: nothing is recorded from then on): enum
 * mt_creds_change bits, 0 if not; COMM gets the thread's name then. */
uint32_t loader__creds_changed(struct loader *l, char *comm, size_t cap);

/* The unwind tables the BPF stack walker reads (bpf/unwind.bpf.h), mapped:
 * rows (CAP of them; NULL in a fork of the process that loaded the object,
 * which has them mapped alone), and the two halves of the mapping list.
 * Fill the half not in use (the other of loader__unwind_gen), then publish
 * it. */
struct mt_unwind_row *loader__unwind_rows(struct loader *l, size_t *cap);
/* A module's rows in the shared array, found by build-id (every handle on
 * the object, in any process, shares them). */
struct loader_unwind_rows {
	uint32_t first_row;
	uint32_t nr_rows;
	uint32_t flags; /* MT_UNWIND_FRAME_POINTERS */
};
/* The rows of the module with build-id ID (LEN bytes), or -ENOENT. */
int loader__unwind_module_find(struct loader *l, const uint8_t *id, uint32_t len, struct loader_unwind_rows *out);
/* Copy IO->nr_rows ROWS into the array for the module ID (LEN 0: none, not
 * shared) and set IO->first_row; if another handle added the module first,
 * its rows are given instead. -ENOSPC when the array is full. */
int loader__unwind_module_add(struct loader *l, const uint8_t *id, uint32_t len, const struct mt_unwind_row *rows,
			      struct loader_unwind_rows *io);
/* The slot's list HALF (a fork maps its slot's lists when first asked);
 * NULL with errno if they could not be mapped. */
struct mt_unwind_map *loader__unwind_maps(struct loader *l, uint32_t half);
uint32_t loader__unwind_gen(struct loader *l);
/* Every row, to read, in this process (a followed process's recorder is
 * forked from where the rows are written): NULL with errno. */
const struct mt_unwind_row *loader__unwind_rows_view(struct loader *l, size_t *cap);
/* Mappings published in HALF (what the last loader__unwind_publish said). */
uint32_t loader__unwind_count(struct loader *l, uint32_t half);
void loader__unwind_publish(struct loader *l, uint32_t half, uint32_t nr);

/*
 * --budget's windows (opts.windowed): loader__attach only keeps the probes,
 * and these attach and detach them, the allocations' (entry and return
 * programs) and the frees' (free, operator delete) apart, so the frees of a
 * window's blocks are seen for a tail after it. Multi-uprobe links only
 * (-EOPNOTSUPP on classic uprobes). Allocations are taken only while
 * loader__window_allocs is open; frees whenever recording.
 */
enum loader_group { LOADER_ALLOCS, LOADER_FREES, LOADER_ALL, LOADER_NR_GROUPS = 2 };
int loader__window_attach(struct loader *l, enum loader_group group, const struct probe **failed);
void loader__window_detach(struct loader *l, enum loader_group group);
void loader__window_allocs(struct loader *l, bool open);
/* CPU time the threads that detached window probes used so far, in ns. */
uint64_t loader__closer_cpu_ns(struct loader *l);
/* --budget: probe hits of this handle's process since it was added: the allocator
 * probes', entries and returns, and the large blocks' probes' (MAP_HITS[0]
 * entries, [1] returns). */
int loader__hits(struct loader *l, uint64_t *entries, uint64_t *returns, uint64_t map_hits[2]);
/* --budget: detach the C library's wrappers' probes (the large blocks'
 * where the kernel has no kprobes): 0, or -EOPNOTSUPP where they are
 * perf-event links (LOADER_CLASSIC), which stay. */
int loader__detach_map_wrappers(struct loader *l);
/* The kernel's run-time statistics of BPF programs, on from now until close;
 * then the allocator programs' total run time and runs so far. 0 or -errno. */
int loader__enable_stats(struct loader *l);
int loader__prog_ns(struct loader *l, uint64_t *run_ns, uint64_t *runs);

/* Empty probes on this process (the budget's calibration): at OFFSET in
 * PATH, entry only or entry and return; FDS get the links (-1: none), for
 * the caller to close. 0 or -errno. */
int loader__calibration_attach(struct loader *l, const char *path, uint64_t offset, bool with_return, int fds[2]);
/* Allocation and free records taken so far from the lanes and from the ring
 * buffers (a lane full, in use, or none: MEMTRACE_LANE_BYTES=0). */
void loader__lane_counts(const struct loader *l, uint64_t *by_lane, uint64_t *by_ring);
/* Allocation stacks the probes took from a stack template, and by walking
 * the unwind tables, on every CPU so far (the counters of all the object's
 * targets; frame-pointer walks are in neither). */
void loader__stack_counts(struct loader *l, uint64_t *from_template, uint64_t *walked);

/* Start or stop taking events, at once for every probe. */
void loader__set_recording(struct loader *l, bool on);
/* The slot's process runs the Python interpreter LAYOUT describes (python.h):
 * allocation stacks take its frames from now on. */
void loader__set_python(struct loader *l, const struct mt_py_layout *layout);
/* A probe on the interpreter's code_dealloc (PATH at OFFSET) for this
 * handle's process: the walk may then cache code objects' tags. */
int loader__attach_py_code_free(struct loader *l, const char *path, uint64_t offset);
/* Whether the object was loaded with the walk of Python frames. */
bool loader__python_walk(const struct loader *l);
/* A forked process's slot takes its parent's Python layout (the same
 * code at the same addresses), before the child runs on. */
void loader__python_copy(struct loader *l, uint32_t from_slot);
/* Wait up to TIMEOUT_MS for data, then drain every CPU's ring. Records
 * handed over, or -errno. */
int loader__poll(struct loader *l, int timeout_ms);
/* loader__poll returns as soon as FD is readable (once: a pidfd, whose
 * process's end should not wait out the timeout); 0 or -errno. */
int loader__poll_wake(struct loader *l, int fd);
/* The same, sleeping until DEADLINE_NS (CLOCK_MONOTONIC) to the
 * microsecond rather than the millisecond: a --budget window or tail ends
 * when planned, not up to 2 ms later (probes never wake the rings: the
 * sleep is the clock). A signal ends the sleep. */
int loader__poll_until(struct loader *l, uint64_t deadline_ns);
/* Remove every probe (the target runs untouched from here on). */
void loader__detach(struct loader *l);
/* Events the kernel could not hand over, for CPU. */
uint64_t loader__drops(struct loader *l, int cpu);
int loader__nr_cpus(const struct loader *l);
enum loader_mode loader__mode(const struct loader *l);
/* The kernel verifier's time over every program loaded, in microseconds,
 * and the instructions it processed into *INSNS (may be NULL). */
uint64_t loader__verify_usec(const struct loader *l, uint32_t *insns);
void loader__close(struct loader *l);

#endif /* MEMTRACE_LOADER_H */
