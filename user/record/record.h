/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_RECORD_H
#define MEMTRACE_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What `memtrace record` was asked to do. */
struct record_opts {
	const char *output;
	double duration;
	int pid;
	char **cmd;
	const char *lib;
	uint32_t stack_depth;
	uint32_t unwind_rows; /* --unwind-rows: room for unwind tables; 0: frame pointers only */
	uint64_t ring_bytes;
	size_t max_stacks;         /* 0: every stack; else past it new stacks fold into one (agent) */
	bool ring_bytes_given; /* --buffer-size was given */
	bool one_ring;         /* RING_BYTES for all the target's CPUs, not each (loader_opts.one_ring) */
	uint64_t sample;
	double budget;    /* --budget PCT: 0 exact; else windows (user/record/budget.h) */
	uint64_t large;   /* --budget: the allocator's mmap'd blocks from this length are recorded exactly (0: not) */
	bool rss;         /* --rss: the target's resident memory, sampled (rss.h) */
	bool rss_only;    /* --rss=only: that and the calls that map memory, no allocator probes */
	bool python_objects; /* --python-objects: CPython's small objects too (PYTHONMALLOC=malloc) */
	bool preload;     /* --preload: -- CMD's allocator calls captured in-process (user/record/preload.h), no allocator probes */
	int preload_fd;   /* --preload --follow-children: the descriptor a process's memory is at, in it */
	bool preload_root; /* ... the first process: the supervisor's memory, at the same descriptor of ours */
	/* ... a probe hit's cost on this host, when already timed (a followed
	 * recorder: its supervisor's); 0: time it */
	double hit_entry_ns, hit_return_ns;
	bool verbose;
	bool verbose_counts; /* a followed process's recorder under -v: its record counts, by PID */
	bool follow;      /* --follow-children */
	int empty_probes; /* --empty-probes, for make bench */
	int supervisor;   /* a --follow-children recorder: the supervisor's PID; it ends with it */
	/* ... and the supervisor's CPU time per process it follows (its mean
	 * so far, ns), which --budget charges with the recorder's own start */
	uint64_t follow_cost_ns;
	bool discard_output; /* no trace: the records go nowhere, nothing is written (top and agent without -o) */
	bool teardown_detached; /* record: the kernel's release of links and maps off the user's clock */
	bool watch_exit;        /* record: how the target ended (an OOM kill, a crash) in the trace's END */
	/* Rotated traces (the agent's -o DIR): OUTPUT is a prefix, each file is
	 * PREFIX.<UTC start, YYYYmmddTHHMMSSZ>.mtrace and stands alone, a new
	 * one every rotate_sec; at most rotate_keep are kept (0: all), the
	 * oldest removed. 0: one file. */
	double rotate_sec;
	unsigned rotate_keep;
	uint64_t rotate_bytes; /* ... and sooner when a file has this many bytes (0: no bound) */
	size_t chunk_bytes;    /* the trace's chunks close at this many raw bytes (0: the default) */
	bool clock_sleeps;     /* --budget: the target's run clock holds its perf events through
				* windows and tails alone (the agent: one a thread a target) */
	/* The agent's watch of how its targets end (exit_watch.h), the target
	 * added to it before the recording starts: once attached, the
	 * recording knows the end from it and lets its pidfd go. NULL: the
	 * pidfd is held to the end. */
	struct exit_watch *shared_exits;
	bool trace_unheld;     /* the trace file reopened at each chunk, not held (the agent: a
				* descriptor per target; trace_writer__open_unheld) */
	bool no_symbols;       /* no SYMBOL records: a reader names the frames from the modules' files,
				* as it does for a killed recorder's trace (the agent's traces in memory) */
	/* A --follow-children recorder, forked from the supervisor: it records
	 * in SLOT of the supervisor's loaded object instead of loading its own. */
	struct loader *shared_loader;
	uint32_t slot;
	/* ... and the allocator functions its process's parent was found to
	 * have (NULL: search), used while it maps the same files */
	const struct record_binding *binding;
	/* ... and, for a process its supervisor already let go on: the slot's
	 * handle with every probe attached (record_prepare), its marks, and
	 * when it began recording (CLOCK_MONOTONIC and CLOCK_REALTIME ns) */
	struct loader *prepared;
	struct mark_finder *prepared_marks;
	uint64_t prepared_mono_ns, prepared_real_ns;
	/* ... and what watching it takes, made by the supervisor (it may be
	 * gone before its recorder runs): a pidfd, its /proc/PID/root, its
	 * name and command line */
	int prepared_pidfd, prepared_rootfd;
	char prepared_comm[64];
	char *prepared_cmdline;
};

struct trace_reader_ops;
struct loader;
struct record_binding;
struct mark_finder;

/* What a live view is told about the recording it rides on. */
struct record_live {
	int pid;
	const char *comm;
	const char *cmdline;
	const char *output;        /* the trace file; NULL when discarded */
	size_t probes;             /* allocator probes attached */
	uint64_t start_ns;         /* CLOCK_MONOTONIC at attach */
	uint64_t end_ns;           /* when recording stopped; 0 while it goes on */
	uint64_t events;           /* handed to the trace so far */
	uint64_t bytes_written;    /* the trace's size so far */
	uint64_t dropped;          /* events the kernel could not hand over */
	uint64_t folded;           /* stack sightings folded past max_stacks */
	bool target_exited;
	volatile const int *stop;  /* non-zero once SIGINT or SIGTERM came */
};

/*
 * A live view riding on a recording (memtrace top): the same probes, drain
 * and trace, with every record the trace gets also handed to TAP (meta,
 * module, stack, event, string, mark), in the trace's order.
 */
struct record_view {
	const struct trace_reader_ops *tap;
	void *ctx;
	void *tap_ctx;       /* the tap's context when not CTX (NULL: CTX) */
	bool line_on_stderr; /* it keeps a line on stderr: cleared when recording stops */
	/* After each poll: 1 to stop recording, 0 to go on, -errno on failure. */
	int (*tick)(void *ctx, const struct record_live *live, uint64_t now_ns);
	/* After the trace is finished (also when recording failed to start:
	 * LIVE is NULL then). */
	void (*done)(void *ctx, const struct record_live *live);
};

/* The recording `memtrace record` makes, with VIEW (NULL: none) riding on
 * it; O is parsed and checked. The exit status for memtrace. */
int record_run(struct record_opts *o, const struct record_view *view);

/* Under sudo (running as root, SUDO_UID and SUDO_GID set), the user and
 * group who ran it, to whom every trace file made is given: true; false
 * otherwise (the files stay ours). */
bool record_sudo_owner(uid_t *uid, gid_t *gid);

/*
 * --follow-children: give the command (or the process -p names) and every
 * process it forks, and every program they exec, a recorder of its own (a
 * `memtrace record -p` of each, so each process gets its own trace file),
 * holding each new process still under ptrace until its recorder is
 * attached. Returns the exit status for memtrace: the command's, or 0 for a
 * process we joined (left running when we stop).
 */
int record_follow(const struct record_opts *o);

/* The allocator functions of PID, found as a recording of it would find
 * them, for the recordings of processes forked from it (record_opts's
 * binding): they skip the search while they map the same files. NULL when
 * it fails (those recordings then search themselves). */
struct record_binding *record_bind(const struct record_opts *o, int pid);
void record_binding__free(struct record_binding *b);

/*
 * --follow-children, a process PID forked from the one recorded in
 * PARENT_SLOT: when it still maps B's code, give it SLOT of SHARED (rings of
 * RING_BYTES per CPU), its parent's unwind mappings, B's probes and its
 * marks, attached, and start recording, so it can go on at once; its
 * recorder, forked after, takes that over (record_opts's prepared). Into
 * O: prepared, prepared_marks and the start time. 0, or -errno with
 * nothing left attached (the recorder then does it all itself). Only what
 * cannot wait is done here (its probes, its root and name, which a child
 * that ends or execs at once would not have after): the rest,
 * record_prepare_watch.
 */
int record_prepare(struct record_opts *o, struct loader *shared, uint32_t slot, uint32_t parent_slot,
		   const struct record_binding *b, int pid);
/* After record_prepare, once PID goes on (not reaped: the supervisor has
 * not waited for its end yet): its pidfd, and PARENT's command line (what
 * PID was forked with; an exec may have changed its own), into O. 0, or
 * -errno with what was prepared detached. */
int record_prepare_watch(struct record_opts *o, int pid, int parent);
/* The supervisor's copy of what record_prepare made, once the recorder
 * has its own (or to detach it all if no recorder came: DETACH). */
void record_prepared_release(struct record_opts *o, bool detach);

/* --preload for -- CMD, the program at PATH: the shared memory in PRE
 * (o->follow: each process makes its own after) and the command's
 * environment in ENV. 1 when the program cannot be preloaded (said in one
 * line: record it with uprobes), 0, or -1 after saying what failed. */
struct preload;
int record_preload_setup(const struct record_opts *o, const char *path, struct preload *pre, char ***env);

/* SIGINT or SIGTERM came since a recording set its handlers (memtrace
 * agent, whose recordings run on threads of their own). */
bool record_stop_requested(void);

/* -o -: the trace streams to stdout (the format is written front to back). */
bool record_output_is_stdout(const char *output);

/* One line on stderr: PROG was held at its entry point (the launcher's
 * fallback), so its library initializers ran untraced. */
void record_warn_held_at_entry(const char *prog);

#endif /* MEMTRACE_RECORD_H */
