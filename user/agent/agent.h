/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * memtrace agent: a long-running recorder for one machine, read over HTTP
 * by the engines a fleet already runs (memtrace-agent(1)). Its parts:
 *   agent.c        the lifecycle: signals, the main loop (targets found,
 *                  ended ones freed, connections past their deadline cut,
 *                  -o DIR pruned), the stop, /dev/shm;
 *   agent_store.c  the per-target store: a recording on a thread of its
 *                  own feeding a live engine under the target's lock, what
 *                  is copied out under it, the trace files;
 *   agent_match.c  discovery: --comm, --exe, --cgroup, --user and the rules
 *                  that keep another user from taking the slots;
 *   agent_http.c   serving: the endpoints and the connections' deadlines;
 *   agent_oom.c    the flight recorder: a target OOM-killed or crashed
 *                  leaves its last minute in --oom-dir.
 * user/cli/cmd_agent.c parses the command line into a struct agent and
 * calls agent__run.
 */
#ifndef MEMTRACE_AGENT_H
#define MEMTRACE_AGENT_H

#include "arena.h"
#include "live_feed.h"
#include "record.h"
#include "u64map.h"

#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define AGENT_MAX_TARGETS 64
#define AGENT_DEFAULT_PORT 6071
#define AGENT_DEFAULT_BUDGET 1.0
#define AGENT_MAX_DELTA_S 600
/* HTTP: 64 connections, at most 16 from one address, each given 5 s to
 * send a request's headers (on_connection says why) and cut after 10 s
 * without a byte either way */
#define AGENT_HTTP_MAX_CONN 64
#define AGENT_HTTP_PER_IP 16
#define AGENT_HTTP_TRACKED (AGENT_HTTP_MAX_CONN + 8)
#define AGENT_HEADERS_S 5
#define AGENT_HTTP_IDLE_S 10
#define AGENT_MAX_DELTAS 4 /* ?seconds= profiles pending at once (a thread each); 503 past them */
#define AGENT_SCAN_US 200000                   /* --comm, --exe, --cgroup: /proc scanned this often */
#define AGENT_KEEP_ENDED_NS (60 * 1000000000ull) /* an ended matched target's figures stay this long */
/* Stacks kept per target: the agent's memory stays bounded over hours. A
 * stack costs the agent about 1 KB (the drain's copy, the live view's, their
 * index and per-site rows); at 16384 a target making new stacks without end
 * (tests/progs/many_stacks) took 3 minutes to fill them and the agent grew
 * 15.5 MB past its first minute. Profiles of real services have a few
 * hundred to a few thousand. */
#define AGENT_MAX_STACKS 4096
#define AGENT_DEFAULT_ROTATE 600 /* -o DIR: seconds per trace file */
#define AGENT_DEFAULT_KEEP 144   /* ... and files kept per program: a day of them */
#define AGENT_DEFAULT_MAX_BYTES (1ull << 30) /* ... and at most this much in all */
#define AGENT_PRUNE_NS 1000000000ull            /* -o DIR pruned this often */
/* Without -o: the last minute of each target in memory (tmpfs), for
 * /report: two files of a minute, each at most 16 MB (an exact recording of
 * a busy target fills that in seconds, then rotates sooner). */
#define AGENT_MEM_ROTATE 60
#define AGENT_MEM_KEEP 2
#define AGENT_MEM_BYTES (16ull << 20)
/* ... written in chunks of 64 KiB: the writer's buffers and compressor for
 * 1 MiB chunks cost each target 7.5 MB of the agent's resident memory. */
#define AGENT_MEM_CHUNK (64u << 10)

/* A process found whose recording failed before it attached (no allocator
 * found, or caught between its exec and its dynamic linker loading the C
 * library): looked at again after 200 ms, then twice as long each time up to
 * 10 minutes, not at every scan (its error line every 200 ms, and a slot
 * held a minute each time, until every slot was). */
#define AGENT_RETRY_FIRST_NS 200000000ull
#define AGENT_RETRY_MAX_NS 600000000000ull
#define AGENT_MAX_REFUSED 256
/* Matched processes one user's may hold (--per-user): any user can name a
 * process like the service, and one user's processes took every slot. */
#define AGENT_DEFAULT_PER_USER 16
#define AGENT_SAY_NS 1000000000ull /* refusals: a line a second at most, of each kind */
#define AGENT_DEFAULT_OOM_DIR "/var/lib/memtrace/oom"
#define AGENT_MAX_DEATH_COMMS 64 /* /metrics' OOM kills and crashes: rows by program, the last for the rest */
/* --oom-dir's files kept: a service in a crash loop (systemd restarting it
 * every few seconds) left a file each time, up to 32 MB each, without end */
#define AGENT_OOM_KEEP 16                     /* per program (COMM), the newest */
#define AGENT_OOM_MAX_BYTES (1ull << 30)      /* ... and in all, the oldest removed first */
enum refused_kind { REFUSED_OWNER, REFUSED_PER_USER, REFUSED_FULL, REFUSED_KINDS };

struct refused {
	int pid;
	uint64_t start;    /* its start time (/proc/PID/stat), so a reused PID is another process */
	uint64_t retry_ns; /* not looked at before */
	unsigned tries;
};

struct agent;
struct exit_watch;

/* A program's targets that died: /metrics counts them by comm. */
struct agent_deaths {
	char comm[64];
	uint64_t oom_kills, crashes;
};

/* An HTTP connection and the deadline on its next request's headers. */
struct http_conn {
	int fd;         /* a dup of its socket; 0: a free entry */
	uint64_t since; /* CLOCK_MONOTONIC: started, or its last reply sent */
	bool busy;      /* a request is being served (or it was cut already) */
};

struct agent_target {
	struct agent *agent;
	bool in_use;      /* the slot holds a target (agent.slots_lock) */
	bool matched;     /* found by --comm, --exe or --cgroup: reclaimed after it ends */
	unsigned uid;     /* its real uid when found (matched): the per-user cap */
	uint64_t ended_ns; /* when its recording ended, for the reclaim */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* the feed and the figures below */
	struct live_feed feed;
	struct record_opts o;
	char output[PATH_MAX];
	int pid;
	char comm[64];
	uint64_t start_ns, dropped, events, folded;
	char memcg[256];  /* its memory cgroup when found: "v1:/PATH", "v2:/PATH"; "": none known */
	bool attached, ended, exited;
	int status;
};

struct agent {
	struct agent_target targets[AGENT_MAX_TARGETS];
	size_t ntargets;                /* slots ever used: the loops' bound */
	pthread_rwlock_t slots_lock;    /* in_use and pid of the slots: written by the main thread only */
	volatile int stopping;          /* the recordings stop at their next tick */
	/* ?seconds=N profiles wait on WAKE: a stop ends them at once, with
	 * what they have (a stop waits for every HTTP thread: systemd's
	 * SIGKILL would come before a 600 s wait ended, and skip the cleanup) */
	pthread_mutex_t wait_lock;
	pthread_cond_t wake;            /* CLOCK_MONOTONIC */
	unsigned ndeltas;               /* ?seconds= profiles pending (wait_lock) */
	struct record_opts o;           /* each recording's options but its pid */
	uint64_t keep_ended_ns;         /* an ended matched target's figures stay this long */
	size_t max_stacks;              /* stacks kept per target; past them new ones fold into one */
	/* --comm, --exe, --cgroup: every process matching, found by a scan of /proc */
	const char *comms[16], *exes[16], *cgroups[16];
	size_t ncomms, nexes, ncgroups;
	unsigned users[16];             /* --user: only their processes match (nusers 0: any) */
	size_t nusers;
	unsigned per_user;              /* matched targets one uid may hold */
	uint64_t said_ns[REFUSED_KINDS]; /* the last refusal of each kind said (main thread) */
	unsigned unsaid[REFUSED_KINDS];  /* refusals of that kind not said since */
	struct sockaddr_in listen;
	struct MHD_Daemon *http;
	const char *alloc_fns[32];
	size_t nalloc_fns;
	const char *out_dir;            /* -o DIR: rotated traces there; else the memory directory */
	unsigned keep;                  /* -o DIR: files kept per program (COMM) */
	uint64_t max_bytes;             /* -o DIR: what its traces may hold together */
	char mem_dir[64];               /* without -o: a directory in /dev/shm (memory, not disk) for
					 * /report's last files; removed at exit. "": none */
	struct refused refused[AGENT_MAX_REFUSED]; /* the main thread's only */
	size_t nrefused;
	bool show_cmdline;              /* --show-cmdline: serve the targets' command lines */
	struct http_conn conns[AGENT_HTTP_TRACKED]; /* the open connections' deadlines (conns_lock) */
	pthread_mutex_t conns_lock;
	/* the flight recorder (agent_oom.c) */
	const char *oom_dir;            /* --oom-dir DIR (default AGENT_DEFAULT_OOM_DIR) */
	bool oom_dir_given;             /* ... given: a directory that cannot be used stops the agent */
	int oom_dirfd;                  /* its descriptor; -1: no flight recorder */
	unsigned oom_keep;              /* its files kept per program (MEMTRACE_AGENT_OOM_KEEP=N, for tests) */
	struct exit_watch *exits;       /* how each target ended (exit_watch.h); NULL: not known */
	/* One loaded object for all the targets (agent_loader_open), each a
	 * slot of it: slot 0 its own, empty; target i's, i + 1. NULL: each
	 * recording loads its own. */
	struct loader *loader;
	pthread_mutex_t deaths_lock;
	struct agent_deaths deaths[AGENT_MAX_DEATH_COMMS];
	size_t ndeaths;
};

/* One target's rows, modules and names copied under its lock, so that a
 * profile is encoded with no lock held: the recording thread feeds its
 * engine under that lock, and while it waits its rings fill (drops). */
struct part_copy {
	struct arena mem;   /* the rows' frames and strings, the modules' paths */
	struct u64map seen; /* an address in the engine (string, frames) -> its copy */
	struct live_row *rows;
	size_t nrows, cap;
	struct trace_module *mods;
	size_t nmods;
	struct analysis_trace trace; /* its numbers; its strings the copy's */
	char comm[64];
	int pid;
	int err;
};

/* ---- agent.c ---- */

/* A new agent: its locks made and INT, TERM and HUP handled from here on;
 * NULL if out of memory. Fill in its options (cmd_agent.c), then run it. */
struct agent *agent__new(void);
/* Serve and record until a signal, -d, or (with -p alone) no recording
 * left; then stop everything and free A. 0 when stopped; -EADDRINUSE when
 * it could not listen, -ESRCH when a -p target could not be recorded
 * (each said on stderr). */
int agent__run(struct agent *a);
/* An agent never run: its locks and memory. */
void agent__free(struct agent *a);
/* A signal came, or the agent stops (any thread). */
bool agent_stop_requested(const struct agent *a);

/* ---- agent_store.c ---- */

/* Start recording PID in a free slot (the main thread). 0, or -ENOSPC,
 * -ENOMEM, -EAGAIN (no thread). */
int agent_target_start(struct agent *a, int pid, bool matched, unsigned uid);
/* Free a slot whose recording ended (its thread joined). */
void agent_target_reclaim(struct agent *a, struct agent_target *t);
/* The target recording PID, or NULL (under slots_lock). */
struct agent_target *agent_target_of(struct agent *a, int pid);
/* A recording of PID that has not ended. */
bool agent_recorded(const struct agent *a, int pid);
/* T's figures into PC (under T's lock); 0 or -ENOMEM. */
int part_copy__take(struct part_copy *pc, struct agent_target *t, bool show_cmdline);
void part_copy__free(struct part_copy *pc);
/* Where the targets' traces go: -o DIR, else the memory directory; NULL: nowhere. */
const char *agent_trace_dir(const struct agent *a);
/* The part of a target's trace prefix (DIR/COMM.PID) its files' names begin with. */
const char *agent_trace_base(const struct agent_target *t);
/* Remove DIR's files whose names begin with BASE and a dot (NULL: every file). */
void agent_remove_files(const char *dir, const char *base);
/* NAME in the traces' directory DIRFD for reading, never through a
 * symlink; a descriptor, or -errno. */
int agent_trace_open(int dirfd, const char *name);
/* -o DIR pruned per program (--keep) and by size (--max-bytes). */
void agent_prune_traces(struct agent *a);
/* Why DIR is not safe for the agent's files, into WHY ("" if it is): it
 * and each directory above it must be root's or ours and writable by no
 * one else (a sticky one, /tmp, excepted). */
void agent_dir_unsafe(const char *dir, char *why, size_t cap);

/* ---- agent_oom.c ---- */

/* Load and attach bpf/exits.bpf.c; 0 or -errno. */
int agent_exits_open(struct agent *a);
void agent_exits_close(struct agent *a);
/* PID's end is to be known (agent_target_start; 0, or -errno: no watch), then
 * no longer (the reclaim). */
int agent_exits_watch(struct agent *a, int pid);
void agent_exits_forget(struct agent *a, int pid);
/* --oom-dir DIR made if missing (0700), checked as -o DIR is, opened: a
 * descriptor, or -1 with why into WHY. */
int agent_oom_dir_open(const char *dir, char *why, size_t cap);
/* --oom-dir's .NAME.part files a minute old, of an agent killed writing them. */
void agent_oom_sweep(struct agent *a);
/* T's recording ended (its thread): an OOM kill or a crash leaves T's last
 * minute in --oom-dir, counted for /metrics, its path said on stderr. */
void agent_target_died(struct agent_target *t);

/* ---- agent_match.c ---- */

/* Every process that matches and has no recording gets one, unless a rule
 * refuses it (said on stderr). */
void agent_scan(struct agent *a);
/* PID's recording failed before it attached: not again before its time. */
void agent_refuse(struct agent *a, int pid, uint64_t now);

/* ---- agent_http.c ---- */

/* The HTTP server on A's address; 0, or -EADDRINUSE. */
int agent_http_start(struct agent *a);
/* Connections past their headers' deadline cut (the main thread). */
void agent_http_sweep(struct agent *a, uint64_t now);

#endif /* MEMTRACE_AGENT_H */
