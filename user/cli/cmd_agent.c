// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace agent (-p PID | --comm NAME | --exe PATH | --cgroup PATH)... [--user NAME|UID]...
 *                [--budget PCT | --exact] [--rss] [--listen ADDR:PORT] [--alloc-fn GLOB]...
 *                [-o DIR [--rotate SEC] [--keep N] [--max-bytes SIZE]] [-d SEC]
 *
 * A long-running recorder for one machine, read over HTTP by the engines a
 * fleet already runs: each target is a recording (record_run, as top has
 * it) on a thread of its own, fed live to a replay engine (live_feed.h)
 * under a lock; libmicrohttpd serves, from its own threads, under the same
 * locks:
 *   /debug/pprof/heap, /debug/pprof/allocs  gzipped profile.proto as Go
 *       serves them (all four sample types; heap shows inuse_space first,
 *       allocs alloc_space), every target labelled pid and comm, or one
 *       with ?pid=PID;
 *   /metrics  the Prometheus text format, a few series per target;
 *   /report   the HTML report of a target's last trace file;
 *   /         an index.
 * Only GET and HEAD; any other path is 404, a malformed query 400. Bound to
 * 127.0.0.1 unless --listen says otherwise. Nothing is written to disk
 * without -o DIR (the last minute of each target is in /dev/shm).
 *
 * It is a service other local users must not take over or hold: matches by
 * name are narrowed by owner (--user, the program's owner, --per-user);
 * no client holds a connection past its headers' deadline; a signal stops
 * it within a second, cleaning up; what it serves leaves out the command
 * lines (--show-cmdline) and is valid UTF-8. memtrace-agent(1) says how.
 */
#include "commands.h"
#include "export.h"
#include "live_feed.h"
#include "protobuf.h"
#include "record.h"
#include "replay.h"
#include "arena.h"
#include "u64map.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

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
enum refused_kind { REFUSED_OWNER, REFUSED_PER_USER, REFUSED_FULL, REFUSED_KINDS };

struct refused {
	int pid;
	uint64_t start;    /* its start time (/proc/PID/stat), so a reused PID is another process */
	uint64_t retry_ns; /* not looked at before */
	unsigned tries;
};

struct agent;

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
};

/* INT, TERM and HUP from the agent's first instruction on: before any
 * target attached nothing else handles them, and their default action
 * killed the agent with its /dev/shm directory left behind. record_run
 * installs its own INT and TERM handler with each recording; either
 * handler's flag stops the agent (agent_stop_requested). */
static volatile sig_atomic_t agent_signal;

static void agent_on_signal(int sig)
{
	agent_signal = sig;
}

static void agent_signals_install(void)
{
	struct sigaction sa = { .sa_handler = agent_on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is an error, not an end */
}

static bool agent_stop_requested(const struct agent *a)
{
	return agent_signal || record_stop_requested() || a->stopping;
}

static void agent_usage(FILE *f)
{
	fprintf(f, "usage: memtrace agent (-p PID | --comm NAME | --exe PATH | --cgroup PATH)...\n"
		   "                      [--user NAME|UID]... [--per-user N] [--show-cmdline]\n"
		   "                      [--budget PCT | --exact] [--rss] [--listen ADDR:PORT]\n"
		   "                      [--alloc-fn GLOB]... [-o DIR [--rotate SEC] [--keep N] [--max-bytes SIZE]]\n"
		   "                      [-d SEC]\n"
		   "  -p, --pid PID        a process to record (up to %d processes in all)\n"
		   "      --comm NAME      every process of that name, those started later too\n"
		   "      --exe PATH       every process running that program\n"
		   "      --cgroup PATH    every process in that cgroup (a container, a systemd service)\n"
		   "      --user NAME|UID  match only processes of that user (real and effective uid)\n"
		   "      --per-user N     matched processes one user's may hold (default %d of the %d)\n"
		   "      --budget PCT     bound what tracing costs each target to PCT percent of its\n"
		   "                       work (default %g; figures are estimates)\n"
		   "      --exact          trace every allocation instead (the full cost)\n"
		   "      --rss            also sample each target's resident memory\n"
		   "      --listen ADDR:PORT  serve there (default 127.0.0.1:%d; nothing listens\n"
		   "                       beyond this host unless ADDR says so)\n"
		   "      --alloc-fn GLOB  frames of matching functions count as the allocator's\n"
		   "  -o, --output DIR     write each target's trace there, in files of --rotate SEC\n"
		   "                       (default %d) named COMM.PID.<UTC start>.mtrace, the\n"
		   "                       newest --keep N per program kept (default %d), --max-bytes\n"
		   "                       SIZE in all (default 1G); DIR must be root's (or ours) and\n"
		   "                       writable by no one else; without -o\n"
		   "                       nothing is written to disk: the last --rotate SEC (default\n"
		   "                       %d) stay in memory (/dev/shm) for /report\n"
		   "      --show-cmdline   serve the targets' command lines (in /debug/pprof and /report)\n"
		   "  -d, --duration SEC   stop after SEC seconds (default: until SIGINT, SIGTERM or SIGHUP)\n"
		   "serves /debug/pprof/heap and /debug/pprof/allocs (gzipped pprof, ?pid=PID for one\n"
		   "target), /metrics (Prometheus text format), /report?pid=PID (the HTML report of\n"
		   "the last --rotate SEC) and / (an index)\n",
		AGENT_MAX_TARGETS, AGENT_DEFAULT_PER_USER, AGENT_MAX_TARGETS, AGENT_DEFAULT_BUDGET, AGENT_DEFAULT_PORT, AGENT_DEFAULT_ROTATE, AGENT_DEFAULT_KEEP,
		AGENT_MEM_ROTATE);
}

static int parse_listen(const char *s, struct sockaddr_in *out)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	uint64_t port;

	if (!colon || (size_t)(colon - s) >= sizeof(host) || parse_u64(colon + 1, &port) || !port || port > 65535)
		return fail("invalid --listen '%s'; give ADDR:PORT, e.g. 127.0.0.1:%d", s, AGENT_DEFAULT_PORT);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	*out = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return fail("invalid --listen address '%s'; give an IPv4 address, e.g. 127.0.0.1 (0.0.0.0 for every "
			    "interface)", host);
	return 0;
}

/* --user: a uid, or a name looked up in /etc/passwd itself (a static
 * memtrace makes no NSS lookups); 0 or -ENOENT. */
static int parse_user(const char *s, unsigned *uid)
{
	char line[1024];
	uint64_t n;
	FILE *f;
	int err = -ENOENT;

	if (!parse_u64(s, &n) && n < UINT32_MAX) {
		*uid = (unsigned)n;
		return 0;
	}
	f = fopen("/etc/passwd", "re");
	while (f && err && fgets(line, sizeof(line), f)) {
		char *name = strtok(line, ":"), *pw = strtok(NULL, ":"), *id = strtok(NULL, ":");

		if (name && pw && id && !strcmp(name, s) && !parse_u64(id, &n) && n < UINT32_MAX) {
			*uid = (unsigned)n;
			err = 0;
		}
	}
	if (f)
		fclose(f);
	return err;
}

/* Why -o DIR is not safe for the agent's traces, into WHY ("" if it is):
 * DIR, and each directory above it, must be root's or ours and writable by
 * no one else (a sticky one, /tmp, may be: its entries are safe from
 * others). Otherwise another user could plant a trace the agent parses as
 * root, a symlink where it writes, or swap the directory itself. */
static void out_dir_unsafe(const char *dir, char *why, size_t cap)
{
	char path[PATH_MAX], *slash;
	struct stat st;
	bool top = true;

	if (!realpath(dir, path)) {
		snprintf(why, cap, "%s", strerror(errno));
		return;
	}
	for (;;) {
		if (stat(path[0] ? path : "/", &st)) {
			snprintf(why, cap, "%s: %s", path[0] ? path : "/", strerror(errno));
			return;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			snprintf(why, cap, "%s is owned by uid %u, neither root nor the agent's", path[0] ? path : "/",
				 (unsigned)st.st_uid);
			return;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (top || !(st.st_mode & S_ISVTX))) {
			snprintf(why, cap, "%s is writable by group or others (mode %04o)", path[0] ? path : "/",
				 (unsigned)(st.st_mode & 07777));
			return;
		}
		if (!path[0])
			return;
		top = false;
		slash = strrchr(path, '/');
		*slash = 0; /* "" stands for / */
	}
}

/* 0 to go on, 1 after --help, -EINVAL after printing why. */
static int agent_parse(struct agent *a, struct record_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "budget", required_argument, NULL, 'P' },
		{ "exact", no_argument, NULL, 'E' },
		{ "rss", no_argument, NULL, 'R' },
		{ "listen", required_argument, NULL, 'L' },
		{ "alloc-fn", required_argument, NULL, 'A' },
		{ "comm", required_argument, NULL, 'C' },
		{ "exe", required_argument, NULL, 'X' },
		{ "cgroup", required_argument, NULL, 'G' },
		{ "output", required_argument, NULL, 'o' },
		{ "rotate", required_argument, NULL, 'T' },
		{ "keep", required_argument, NULL, 'K' },
		{ "user", required_argument, NULL, 'U' },
		{ "per-user", required_argument, NULL, 'N' },
		{ "show-cmdline", no_argument, NULL, 'S' },
		{ "max-bytes", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool exact = false, budget = false, rotate = false, keep = false, max_bytes = false;
	struct stat st;
	uint64_t n;
	int c, pid;

	record_opts__defaults(o);
	a->listen = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(AGENT_DEFAULT_PORT),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	optind = 0;
	opterr = 0;
	o->rotate_sec = AGENT_DEFAULT_ROTATE;
	o->rotate_keep = AGENT_DEFAULT_KEEP;
	a->per_user = AGENT_DEFAULT_PER_USER;
	a->max_bytes = AGENT_DEFAULT_MAX_BYTES;
	while ((c = getopt_long(argc, argv, "+p:d:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_pid(optarg, &pid))
				return -EINVAL;
			if (a->ntargets == AGENT_MAX_TARGETS)
				return fail("too many -p; an agent records at most %d processes", AGENT_MAX_TARGETS);
			for (size_t i = 0; i < a->ntargets; i++)
				if (a->targets[i].pid == pid)
					return fail("-p %d given twice; give each process once", pid);
			a->targets[a->ntargets++].pid = pid;
			break;
		case 'd':
		case 'P':
		case 'R':
			if (record_option(c, optarg, o) < 0)
				return -EINVAL;
			budget = budget || c == 'P';
			break;
		case 'E': exact = true; break;
		case 'L':
			if (parse_listen(optarg, &a->listen))
				return -EINVAL;
			break;
		case 'A':
			if (a->nalloc_fns == sizeof(a->alloc_fns) / sizeof(a->alloc_fns[0]))
				return fail("too many --alloc-fn globs; at most 32");
			a->alloc_fns[a->nalloc_fns++] = optarg;
			break;
		case 'C':
			if (!*optarg || strlen(optarg) > 15 || a->ncomms == 16)
				return fail("invalid --comm '%s'; give a process name as ps shows it (at most 15 characters, "
					    "16 of them)", optarg);
			a->comms[a->ncomms++] = optarg;
			break;
		case 'X':
			if (optarg[0] != '/' || a->nexes == 16)
				return fail("invalid --exe '%s'; give the program's absolute path, e.g. /usr/bin/redis-server "
					    "(16 of them)", optarg);
			a->exes[a->nexes++] = optarg;
			break;
		case 'G':
			if (optarg[0] != '/' || a->ncgroups == 16)
				return fail("invalid --cgroup '%s'; give a path in the cgroup tree, e.g. "
					    "/system.slice/redis-server.service (16 of them)", optarg);
			a->cgroups[a->ncgroups++] = optarg;
			break;
		case 'o': {
			char why[PATH_MAX + 160] = "";

			if (!*optarg)
				snprintf(why, sizeof(why), "empty");
			else if (stat(optarg, &st))
				snprintf(why, sizeof(why), "%s", strerror(errno));
			else if (!S_ISDIR(st.st_mode))
				snprintf(why, sizeof(why), "not a directory");
			else if (access(optarg, W_OK | X_OK))
				snprintf(why, sizeof(why), "%s", strerror(errno));
			else
				out_dir_unsafe(optarg, why, sizeof(why));
			if (why[0])
				return fail("invalid -o '%s': %s; give a directory of root's (or the agent's user's) that no "
					    "one else can write, e.g. made with mkdir -m 0700", optarg, why);
			a->out_dir = optarg;
			break;
		}
		case 'M':
			if (parse_size(optarg, &n) || n < (1u << 20))
				return fail("invalid --max-bytes '%s'; give the most -o DIR's traces may hold together, e.g. "
					    "1G (1M at least)", optarg);
			a->max_bytes = n;
			max_bytes = true;
			break;
		case 'T':
			if (parse_u64(optarg, &n) || n < 1 || n > 86400)
				return fail("invalid --rotate '%s'; give the seconds each trace file covers, 1 to 86400", optarg);
			o->rotate_sec = (double)n;
			rotate = true;
			break;
		case 'K':
			if (parse_u64(optarg, &n) || n < 1 || n > 100000)
				return fail("invalid --keep '%s'; give how many trace files to keep per target, 1 to 100000",
					    optarg);
			o->rotate_keep = (unsigned)n;
			keep = true;
			break;
		case 'U':
			if (a->nusers == 16 || parse_user(optarg, &a->users[a->nusers]))
				return fail("invalid --user '%s'; give a user name of /etc/passwd or a uid (16 of them)", optarg);
			a->nusers++;
			break;
		case 'N':
			if (parse_u64(optarg, &n) || n < 1 || n > AGENT_MAX_TARGETS)
				return fail("invalid --per-user '%s'; give how many matched processes one user's may hold, 1 to %d",
					    optarg, AGENT_MAX_TARGETS);
			a->per_user = (unsigned)n;
			break;
		case 'S': a->show_cmdline = true; break;
		case 'h': agent_usage(stdout); return 1;
		default:
			return fail("failed to parse agent options: '%s' is unknown or lacks its value; see memtrace agent "
				    "--help", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return fail("agent records running processes: give -p PID, not a command ('%s')", argv[optind]);
	if (a->nusers && !a->ncomms && !a->nexes && !a->ncgroups)
		return fail("--user narrows --comm, --exe and --cgroup: give one of them too");
	if (!a->ntargets && !a->ncomms && !a->nexes && !a->ncgroups)
		return fail("give what to record: -p PID, --comm NAME, --exe PATH or --cgroup PATH; see memtrace agent "
			    "--help");
	if (exact && budget)
		return fail("--exact and --budget do not combine: give one of them");
	if (max_bytes && !a->out_dir)
		return fail("--max-bytes bounds what -o DIR's trace files hold together: give -o DIR too");
	if (keep && !a->out_dir)
		return fail("--keep says how many of -o DIR's trace files stay: give -o DIR too (without it the agent "
			    "keeps the last two in memory)");
	if (a->out_dir) {
		/* the agent prunes -o DIR per program and by size (prune_traces):
		 * the recording's own count is per process, and a restarted
		 * service's old files were never pruned */
		a->keep = o->rotate_keep;
		o->rotate_keep = 0;
	} else {
		o->rotate_sec = rotate ? o->rotate_sec : AGENT_MEM_ROTATE;
		o->rotate_keep = AGENT_MEM_KEEP;
		o->rotate_bytes = AGENT_MEM_BYTES;
		o->chunk_bytes = AGENT_MEM_CHUNK;
		/* named when /report reads them, from the modules' files: a
		 * symbolizer at each rotation cost each target 7 MB */
		o->no_symbols = true;
	}
	if (!exact && !budget)
		o->budget = AGENT_DEFAULT_BUDGET;
	if (record_check_budget(o))
		return -EINVAL;
	return 0;
}

/* ---- recording: a thread per target ---- */

/* The length of the UTF-8 sequence at S (1 to 4), 0 if it is not one:
 * overlong forms, surrogates and past U+10FFFF are not. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;

	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/* SRC into DST (CAP bytes) as valid UTF-8, each byte of an invalid sequence
 * a U+FFFD: a comm is any 15 bytes its process chose, and one invalid
 * byte in /metrics made Prometheus reject the whole scrape. */
static void utf8_clean(char *dst, size_t cap, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, n;

	while (*s && o + 4 < cap) {
		n = utf8_len(s);
		if (n) {
			memcpy(dst + o, s, n);
			s += n;
			o += n;
		} else {
			memcpy(dst + o, "\xef\xbf\xbd", 3);
			s++;
			o += 3;
		}
	}
	dst[o] = 0;
}

static int agent_tick(void *ctx, const struct record_live *live, uint64_t now)
{
	struct agent_target *t = ctx;

	if (t->agent->stopping)
		return 1;
	pthread_mutex_lock(&t->lock);
	t->attached = true;
	t->start_ns = live->start_ns;
	t->dropped = live->dropped;
	t->events = live->events;
	t->folded = live->folded;
	t->exited = live->target_exited;
	utf8_clean(t->comm, sizeof(t->comm), live->comm ? live->comm : "?");
	pthread_mutex_unlock(&t->lock);
	return 0;
}

static void agent_done(void *ctx, const struct record_live *live)
{
	struct agent_target *t = ctx;

	pthread_mutex_lock(&t->lock);
	t->ended = true;
	t->ended_ns = now_ns(CLOCK_MONOTONIC);
	if (live) {
		t->dropped = live->dropped;
		t->exited = live->target_exited;
	}
	pthread_mutex_unlock(&t->lock);
}

static void *agent_record(void *arg)
{
	struct agent_target *t = arg;
	struct record_view view = { .tap = &live_feed_tap, .ctx = t, .tap_ctx = &t->feed, .tick = agent_tick,
				    .done = agent_done };

	t->status = record_run(&t->o, &view);
	pthread_mutex_lock(&t->lock);
	if (!t->ended)
		t->ended_ns = now_ns(CLOCK_MONOTONIC);
	t->ended = true;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* ---- HTTP ---- */

/* A growing text buffer. */
struct text {
	char *s;
	size_t len, cap;
	bool oom;
};

static void __attribute__((format(printf, 2, 3))) text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->oom = true;
			return;
		}
		if (t->s && t->len + (size_t)n < t->cap) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = t->cap ? 2 * t->cap : 4096;

		while (cap <= t->len + (size_t)n)
			cap *= 2;
		char *p = realloc(t->s, cap);

		if (!p) {
			t->oom = true;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type, void *data, size_t n,
			     bool gzip)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(n, data, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (gzip)
		MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"profile.pb.gz\"");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	char *s = strdup(msg);

	return s ? reply(c, status, "text/plain; charset=utf-8", s, strlen(s), false) : MHD_NO;
}

/* DATA gzipped, as Go's pprof handlers send profiles. */
static int gzip_buf(const void *data, size_t n, void **out, size_t *out_n)
{
	z_stream z = { 0 };
	size_t cap = n + n / 100 + 64;
	unsigned char *buf = malloc(cap);
	int rc;

	if (!buf || deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)n;
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	rc = deflate(&z, Z_FINISH);
	*out_n = z.total_out;
	deflateEnd(&z);
	if (rc != Z_STREAM_END) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	return 0;
}

/* The target recording PID, or NULL (under slots_lock). */
static struct agent_target *target_of(struct agent *a, int pid)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use && a->targets[i].pid == pid)
			return &a->targets[i];
	return NULL;
}

/* ?pid=PID: -1 for none, 0 and *BAD for a malformed one. */
static int query_pid(struct MHD_Connection *c, bool *bad)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	int pid;

	*bad = false;
	if (!v)
		return -1;
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || end == v || *end || n <= 0 || n > INT_MAX) {
		*bad = true;
		return 0;
	}
	pid = (int)n;
	return pid;
}

/* ?seconds=N: a delta profile, each row's figures at the start of the N
 * seconds subtracted from its figures at their end, as Go's handlers do. */
struct delta_base {
	struct u64map index; /* row key -> figures + 1 */
	struct analysis_figures *v;
	size_t n, cap;
	int pid;             /* the target being read */
	int oom;
};

/* A row's identity: its process, stack, thread and zone. */
static uint64_t row_key(int pid, const struct live_row *row)
{
	uint64_t h = 1469598103934665603ull;
	const char *z = row->zone ? row->zone : "";

	h = (h ^ (uint32_t)pid) * 1099511628211ull;
	h = (h ^ row->stack.id) * 1099511628211ull;
	h = (h ^ row->tid) * 1099511628211ull;
	for (; *z; z++)
		h = (h ^ (unsigned char)*z) * 1099511628211ull;
	return h ? h : 1;
}

static int base_row(void *ctx, const struct live_row *row)
{
	struct delta_base *d = ctx;
	struct u64map_entry *e;
	bool existed;

	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 256;
		struct analysis_figures *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	e = u64map__insert(&d->index, row_key(d->pid, row), &existed);
	if (!e)
		return -ENOMEM;
	if (!existed) {
		e->val = d->n + 1;
		d->v[d->n++] = row->stack.figures;
	}
	return 0;
}

/* The figures since the base, in place; 1 (leave it out) when nothing changed. */
static int delta_row(void *ctx, int pid, struct live_row *row)
{
	struct delta_base *d = ctx;
	struct u64map_entry *e = u64map__get(&d->index, row_key(pid, row));
	struct analysis_figures *f = &row->stack.figures;

	if (e) {
		const struct analysis_figures *b = &d->v[e->val - 1];

		/* live blocks may have gone: a negative change, as int64 in the profile */
		f->allocations -= b->allocations;
		f->allocated_bytes -= b->allocated_bytes;
		f->leaked_allocations -= b->leaked_allocations;
		f->leaked_bytes -= b->leaked_bytes;
	}
	return !f->allocations && !f->allocated_bytes && !f->leaked_allocations && !f->leaked_bytes;
}

/* ?seconds=N: at most AGENT_MAX_DELTAS wait at once (a thread each); 0,
 * or -EBUSY past them. */
static int delta_enter(struct agent *a)
{
	int err = 0;

	pthread_mutex_lock(&a->wait_lock);
	if (a->ndeltas >= AGENT_MAX_DELTAS)
		err = -EBUSY;
	else
		a->ndeltas++;
	pthread_mutex_unlock(&a->wait_lock);
	return err;
}

static void delta_leave(struct agent *a)
{
	pthread_mutex_lock(&a->wait_lock);
	a->ndeltas--;
	pthread_mutex_unlock(&a->wait_lock);
}

/* Wait SECONDS from T0 (CLOCK_MONOTONIC), or less if the agent stops; the
 * ns waited. The flags are looked at every 100 ms as well as on a wake: a
 * signal is seen here even before the main thread has passed it on. */
static uint64_t delta_wait(struct agent *a, uint64_t t0, uint64_t seconds)
{
	uint64_t end = t0 + seconds * 1000000000ull, now;

	pthread_mutex_lock(&a->wait_lock);
	while (!agent_stop_requested(a) && (now = now_ns(CLOCK_MONOTONIC)) < end) {
		uint64_t until = now + 100000000ull < end ? now + 100000000ull : end;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull), .tv_nsec = (long)(until % 1000000000ull) };

		pthread_cond_timedwait(&a->wake, &a->wait_lock, &ts);
	}
	pthread_mutex_unlock(&a->wait_lock);
	now = now_ns(CLOCK_MONOTONIC);
	return now < end ? now - t0 : seconds * 1000000000ull;
}

static enum MHD_Result serve_pprof_copied(struct agent *a, struct MHD_Connection *c, bool allocs, int pid,
					  uint64_t seconds);

/* /debug/pprof/heap and /debug/pprof/allocs: every target (or ?pid's) as
 * one profile. */
static enum MHD_Result serve_pprof(struct agent *a, struct MHD_Connection *c, bool allocs)
{
	const char *secs = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds");
	uint64_t seconds = 0;
	enum MHD_Result ret;
	bool bad;
	int pid = query_pid(c, &bad);

	if (bad)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "bad pid: give ?pid= a process id the agent records\n");
	if (secs && (parse_u64(secs, &seconds) || !seconds || seconds > AGENT_MAX_DELTA_S))
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "bad seconds: give ?seconds= from 1 to 600\n");
	if (seconds && delta_enter(a))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "too many ?seconds= profiles pending: try again when "
								   "one has ended\n");
	ret = serve_pprof_copied(a, c, allocs, pid, seconds);
	if (seconds)
		delta_leave(a);
	return ret;
}

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

/* A copy of what P points at (N bytes, a string if N is 0), once per address. */
static const void *part_copy__dup(struct part_copy *pc, const void *p, size_t n)
{
	struct u64map_entry *e;
	bool existed;
	void *d;

	if (!p || pc->err)
		return NULL;
	e = u64map__insert(&pc->seen, (uint64_t)(uintptr_t)p, &existed);
	if (!e) {
		pc->err = -ENOMEM;
		return NULL;
	}
	if (existed)
		return (const void *)(uintptr_t)e->val;
	n = n ? n : strlen(p) + 1;
	d = arena__alloc(&pc->mem, n);
	if (!d) {
		pc->err = -ENOMEM;
		u64map__remove(&pc->seen, e);
		return NULL;
	}
	memcpy(d, p, n);
	e->val = (uint64_t)(uintptr_t)d;
	return d;
}

static int part_copy__row(void *ctx, const struct live_row *row)
{
	struct part_copy *pc = ctx;
	struct live_row *r;
	struct analysis_frame *f;

	if (pc->nrows == pc->cap) {
		size_t cap = pc->cap ? 2 * pc->cap : 256;
		struct live_row *v = realloc(pc->rows, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pc->rows = v;
		pc->cap = cap;
	}
	r = &pc->rows[pc->nrows++];
	*r = *row;
	r->thread_name = part_copy__dup(pc, row->thread_name, 0);
	r->zone = part_copy__dup(pc, row->zone, 0);
	if (row->stack.nframes) {
		struct u64map_entry *e = u64map__get(&pc->seen, (uint64_t)(uintptr_t)row->stack.frames);

		/* a stack's frames are shared by its rows (threads, zones): copied once */
		f = e ? (struct analysis_frame *)(uintptr_t)e->val :
			(struct analysis_frame *)part_copy__dup(pc, row->stack.frames, row->stack.nframes * sizeof(*f));
		for (size_t i = 0; !e && f && i < row->stack.nframes; i++) {
			f[i].function = part_copy__dup(pc, f[i].function, 0);
			f[i].file = part_copy__dup(pc, f[i].file, 0);
			f[i].module = part_copy__dup(pc, f[i].module, 0);
		}
		r->stack.frames = f;
	}
	return pc->err;
}

/* T's figures into PC (under T's lock); 0 or -ENOMEM. */
static int part_copy__take(struct part_copy *pc, struct agent_target *t, bool show_cmdline)
{
	int err;

	pc->pid = t->pid;
	snprintf(pc->comm, sizeof(pc->comm), "%s", t->comm);
	pc->trace = *replay__trace(t->feed.r);
	pc->trace.comm = pc->comm;
	/* the command line only when the operator chose to serve it
	 * (--show-cmdline): it bypasses /proc's hidepid for any local user */
	pc->trace.command = show_cmdline ? part_copy__dup(pc, pc->trace.command, 0) : NULL;
	pc->trace.problem = pc->trace.stop_reason = NULL;
	pc->nmods = replay__nmodules(t->feed.r);
	pc->mods = calloc(pc->nmods ? pc->nmods : 1, sizeof(*pc->mods));
	if (!pc->mods)
		return -ENOMEM;
	for (size_t k = 0; k < pc->nmods; k++) {
		replay__module(t->feed.r, k, &pc->mods[k]);
		pc->mods[k].path = part_copy__dup(pc, pc->mods[k].path, 0);
	}
	err = live_sites__for_each(t->feed.live, part_copy__row, pc);
	return err ? err : pc->err;
}

static void part_copy__free(struct part_copy *pc)
{
	arena__free(&pc->mem);
	u64map__free(&pc->seen);
	free(pc->rows);
	free(pc->mods);
}

static enum MHD_Result serve_pprof_copied(struct agent *a, struct MHD_Connection *c, bool allocs, int pid,
					  uint64_t seconds)
{
	struct export_pprof_part parts[AGENT_MAX_TARGETS];
	struct part_copy *copies = calloc(AGENT_MAX_TARGETS, sizeof(*copies));
	struct pb_buf pb = { 0 };
	size_t nparts = 0, zn = 0;
	uint64_t now = now_ns(CLOCK_MONOTONIC), duration = 0, waited = 0;
	void *z = NULL;
	int err = copies ? 0 : -ENOMEM;
	struct delta_base base = { 0 };

	if (!copies)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	pthread_rwlock_rdlock(&a->slots_lock);
	if (pid > 0 && !target_of(a, pid)) {
		pthread_rwlock_unlock(&a->slots_lock);
		free(copies);
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such target: see / for the processes recorded\n");
	}
	if (seconds) { /* the base now, the profile in SECONDS: this connection's thread waits */
		for (size_t i = 0; i < a->ntargets && !err; i++) {
			struct agent_target *t = &a->targets[i];

			if (!t->in_use || (pid > 0 && t->pid != pid))
				continue;
			pthread_mutex_lock(&t->lock);
			if (t->attached && t->feed.r) {
				base.pid = t->pid;
				err = live_sites__for_each(t->feed.live, base_row, &base);
			}
			pthread_mutex_unlock(&t->lock);
		}
		pthread_rwlock_unlock(&a->slots_lock); /* new targets may come meanwhile */
		waited = err ? 0 : delta_wait(a, now, seconds);
		now = now_ns(CLOCK_MONOTONIC);
		pthread_rwlock_rdlock(&a->slots_lock);
	}
	/* each target's figures copied under its own lock, one at a time */
	for (size_t i = 0; i < a->ntargets && !err; i++) {
		struct agent_target *t = &a->targets[i];
		struct part_copy *pc = &copies[nparts];

		if (!t->in_use || (pid > 0 && t->pid != pid))
			continue;
		pthread_mutex_lock(&t->lock);
		if (t->attached && t->feed.r) {
			err = part_copy__take(pc, t, a->show_cmdline);
			if (now - t->start_ns > duration)
				duration = now - t->start_ns;
			nparts++;
		}
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&a->slots_lock);
	if (seconds) /* shorter when a stop cut the wait */
		duration = waited;
	if (!err && !nparts)
		err = -EAGAIN;
	if (!err) {
		for (size_t i = 0; i < nparts; i++)
			parts[i] = (struct export_pprof_part){ .rows = copies[i].rows, .nrows = copies[i].nrows,
							       .modules = copies[i].mods, .nmodules = copies[i].nmods,
							       .pid = copies[i].pid, .comm = copies[i].comm };
		struct export_pprof_input in = {
			.parts = parts, .nparts = nparts, .trace = &copies[nparts - 1].trace, .duration_ns = duration,
			.default_type = allocs ? "alloc_space" : "inuse_space",
			.adjust = seconds ? delta_row : NULL, .adjust_ctx = &base,
		};

		err = export_pprof__encode(&in, &pb);
	}
	for (size_t i = 0; i < AGENT_MAX_TARGETS; i++)
		part_copy__free(&copies[i]);
	free(copies);
	if (!err)
		err = gzip_buf(pb.data, pb.len, &z, &zn);
	pb_buf__free(&pb);
	u64map__free(&base.index);
	free(base.v);
	if (err == -EAGAIN)
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no target attached yet\n");
	if (err)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, MHD_HTTP_OK, "application/octet-stream", z, zn, true);
}

/* A label value as the text format quotes it. */
static void text_label(struct text *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			text_add(o, "\\%c", *s);
		else if (*s == '\n')
			text_add(o, "\\n");
		else
			text_add(o, "%c", *s);
	}
}

#define METRIC(o, name, type, help) text_add(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type)

static void metric_line(struct text *o, const char *name, const struct agent_target *t, double v)
{
	text_add(o, "%s{pid=\"%d\",comm=\"", name, t->pid);
	text_label(o, t->comm[0] ? t->comm : "?");
	text_add(o, "\"} %.17g\n", v);
}

/* /metrics: low cardinality: a few series per target, and memtrace's own. */
static enum MHD_Result serve_metrics(struct agent *a, struct MHD_Connection *c)
{
	static const struct {
		const char *name, *type, *help;
	} m[] = {
		{ "memtrace_target_up", "gauge", "1 while the target is recorded, 0 once it exited or recording stopped" },
		{ "memtrace_live_heap_bytes", "gauge", "Bytes in the target's live heap blocks (an estimate under --budget)" },
		{ "memtrace_live_heap_blocks", "gauge", "Live heap blocks of the target (an estimate under --budget)" },
		{ "memtrace_allocations_total", "counter", "Allocation calls of the target since the agent attached" },
		{ "memtrace_allocated_bytes_total", "counter", "Bytes the target's allocation calls asked for" },
		{ "memtrace_dropped_events_total", "counter", "Events the kernel could not hand to the agent" },
		{ "memtrace_probe_time_ratio", "gauge", "Share of the time the allocator probes were live (1: exact)" },
		{ "memtrace_stacks_folded_total", "counter", "Stack sightings folded into one past the stacks kept per target" },
		{ "memtrace_resident_anon_bytes", "gauge", "The target's RssAnon at the last --rss sample" },
		{ "memtrace_resident_file_bytes", "gauge", "The target's RssFile at the last --rss sample" },
		{ "memtrace_resident_shmem_bytes", "gauge", "The target's RssShmem at the last --rss sample" },
	};
	struct text o = { 0 };
	struct rusage ru;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	long pages = 0;
	FILE *f;

	pthread_rwlock_rdlock(&a->slots_lock);
	for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
		bool header = false;

		for (size_t i = 0; i < a->ntargets; i++) {
			struct agent_target *t = &a->targets[i];
			const struct analysis_trace *tr;
			const struct analysis_totals *tot;
			double v;

			if (!t->in_use)
				continue;
			pthread_mutex_lock(&t->lock);
			if (!t->attached || !t->feed.r) {
				pthread_mutex_unlock(&t->lock);
				continue;
			}
			tr = replay__trace(t->feed.r);
			tot = replay__totals(t->feed.r);
			switch (k) {
			case 0: v = !t->ended && !t->exited; break;
			case 1: v = (double)replay__live_bytes(t->feed.r); break;
			case 2: v = (double)replay__live_allocations(t->feed.r); break;
			case 3: v = (double)tot->allocations; break;
			case 4: v = (double)tot->allocated_bytes; break;
			case 5: v = (double)t->dropped; break;
			case 6:
				v = !tr->budget.budget_ppm ? 1 :
				    now > t->start_ns ? (double)tr->budget.live_ns / (double)(now - t->start_ns) : 0;
				break;
			case 7: v = (double)t->folded; break;
			default:
				if (!tr->rss.npoints) {
					pthread_mutex_unlock(&t->lock);
					continue;
				}
				v = k == 8 ? (double)tr->rss.points[tr->rss.npoints - 1].anon :
				    k == 9 ? (double)tr->rss.points[tr->rss.npoints - 1].file :
					     (double)tr->rss.points[tr->rss.npoints - 1].shmem;
			}
			if (!header)
				METRIC(&o, m[k].name, m[k].type, m[k].help);
			header = true;
			metric_line(&o, m[k].name, t, v);
			pthread_mutex_unlock(&t->lock);
		}
	}
	pthread_rwlock_unlock(&a->slots_lock);
	getrusage(RUSAGE_SELF, &ru);
	METRIC(&o, "memtrace_own_cpu_seconds_total", "counter", "CPU time memtrace agent itself used");
	text_add(&o, "memtrace_own_cpu_seconds_total %.6f\n",
		 (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	f = fopen("/proc/self/statm", "re");
	if (f) {
		if (fscanf(f, "%*s %ld", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	METRIC(&o, "memtrace_own_resident_bytes", "gauge", "memtrace agent's own resident memory");
	text_add(&o, "memtrace_own_resident_bytes %ld\n", pages * sysconf(_SC_PAGESIZE));
	if (o.oom) {
		free(o.s);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", o.s, o.len, false);
}

/* HTML's special characters escaped. */
static void text_html(struct text *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': text_add(o, "&lt;"); break;
		case '>': text_add(o, "&gt;"); break;
		case '&': text_add(o, "&amp;"); break;
		case '"': text_add(o, "&quot;"); break;
		default: text_add(o, "%c", *s);
		}
	}
}

/* Where the targets' traces go: -o DIR, else the memory directory; NULL: nowhere. */
static const char *trace_dir(const struct agent *a)
{
	return a->out_dir ? a->out_dir : a->mem_dir[0] ? a->mem_dir : NULL;
}

/* The part of a target's trace prefix (DIR/COMM.PID) its files' names begin with. */
static const char *trace_base(const struct agent_target *t)
{
	const char *slash = strrchr(t->output, '/');

	return slash ? slash + 1 : t->output;
}

/* Remove DIR's files whose names begin with BASE and a dot (NULL: every file). */
static void remove_files(const char *dir, const char *base)
{
	size_t len = base ? strlen(base) : 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (base ? !strncmp(de->d_name, base, len) && de->d_name[len] == '.' : de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
}

static enum MHD_Result serve_index(struct agent *a, struct MHD_Connection *c)
{
	struct text o = { 0 };

	text_add(&o, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>memtrace agent</title></head><body>\n"
		     "<h1>memtrace agent</h1>\n<p><a href=\"/metrics\">/metrics</a> &middot; "
		     "<a href=\"/debug/pprof/heap\">/debug/pprof/heap</a> &middot; "
		     "<a href=\"/debug/pprof/allocs\">/debug/pprof/allocs</a></p>\n<table>\n"
		     "<tr><th>pid</th><th>comm</th><th>state</th><th>live heap</th><th>profiles</th></tr>\n");
	pthread_rwlock_rdlock(&a->slots_lock);
	for (size_t i = 0; i < a->ntargets; i++) {
		struct agent_target *t = &a->targets[i];

		if (!t->in_use)
			continue;
		pthread_mutex_lock(&t->lock);
		text_add(&o, "<tr><td>%d</td><td>", t->pid);
		text_html(&o, t->comm[0] ? t->comm : "?");
		text_add(&o, "</td><td>%s</td><td>%" PRIu64 " B</td>",
			 !t->attached ? "attaching" : t->exited ? "exited" : t->ended ? "stopped" : "recorded",
			 t->attached && t->feed.r ? replay__live_bytes(t->feed.r) : 0);
		text_add(&o, "<td><a href=\"/debug/pprof/heap?pid=%d\">heap</a> "
			     "<a href=\"/debug/pprof/allocs?pid=%d\">allocs</a>", t->pid, t->pid);
		if (trace_dir(a))
			text_add(&o, " <a href=\"/report?pid=%d\">report of the last %g s</a>", t->pid,
				 a->o.rotate_sec);
		text_add(&o, "</td></tr>\n");
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&a->slots_lock);
	text_add(&o, "</table>\n</body></html>\n");
	if (o.oom) {
		free(o.s);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", o.s, o.len, false);
}

/* NAME in the traces' directory DIRFD for reading: a regular file of ours,
 * not through a symlink (a planted one would have root parse what it
 * points at), not a FIFO that blocks. A descriptor, or -errno. */
static int trace_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int newest_first(const void *x, const void *y)
{
	return -strcmp(*(char *const *)x, *(char *const *)y);
}

/* /report?pid=PID: the HTML report of the target's newest whole trace
 * file, the last --rotate seconds (in -o DIR or in memory). One at a time:
 * the read side keeps its options global. */
static enum MHD_Result serve_report(struct agent *a, struct MHD_Connection *c)
{
	static pthread_mutex_t rendering = PTHREAD_MUTEX_INITIALIZER;
	const char *dir = trace_dir(a);
	char base[PATH_MAX] = "", **names = NULL;
	size_t n = 0, cap = 0, plen;
	struct agent_target *t;
	enum MHD_Result ret;
	struct dirent *de;
	bool bad, found = false;
	int pid = query_pid(c, &bad), err;
	DIR *d;

	if (bad || pid < 0)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "give ?pid=PID of a target\n");
	if (!dir)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no reports: without -o DIR the agent keeps its last traces in "
							 "/dev/shm, which it could not use\n");
	pthread_rwlock_rdlock(&a->slots_lock);
	if ((t = target_of(a, pid)))
		snprintf(base, sizeof(base), "%s.", trace_base(t));
	pthread_rwlock_unlock(&a->slots_lock);
	if (!base[0])
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such target: see / for the agent's targets\n");
	plen = strlen(base);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, base, plen) || len < 7 || strcmp(de->d_name + len - 7, ".mtrace"))
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!v)
				break;
			names = v;
		}
		if ((names[n] = strdup(de->d_name)))
			n++;
	}
	qsort(names, n, sizeof(*names), newest_first); /* named by their UTC start */
	ret = MHD_NO;
	pthread_mutex_lock(&rendering);
	for (size_t i = 0; d && i < n && !found; i++) {
		char *data, path[64];
		size_t len;
		int partial, fd = trace_open(dirfd(d), names[i]);

		if (fd < 0)
			continue;
		/* read through the descriptor: the name is never followed again */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		err = report_html_of(path, !a->show_cmdline, &data, &len, &partial);
		close(fd);
		if (err)
			continue;
		if (partial) {
			free(data);
			continue;
		}
		found = true;
		ret = reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", data, len, false);
	}
	pthread_mutex_unlock(&rendering);
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (!found)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no whole trace file yet: the first is written --rotate "
							 "seconds after the attach\n");
	return ret;
}

/* ---- HTTP connections: a deadline on each request's headers ----
 *
 * libmicrohttpd's connection timeout is an idle timeout: a client sending
 * a byte of its headers every few seconds holds its connection (and, with
 * a thread per connection, a thread) for good, and 64 of them held every
 * connection the agent takes. So each connection must send a request's
 * headers within AGENT_HEADERS_S of its start or of its last reply; past
 * that the main thread shuts its socket down. A request being served has
 * no deadline (?seconds=600 is a request that long). The socket is dup'ed
 * when the connection starts, so a shutdown can never reach a descriptor
 * number that libmicrohttpd closed and another open reused. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct agent *a = cls;
	struct http_conn *hc = *socket_context;

	pthread_mutex_lock(&a->conns_lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		for (size_t i = 0; info && i < AGENT_HTTP_TRACKED && !*socket_context; i++) {
			hc = &a->conns[i];
			if (hc->fd > 0)
				continue;
			hc->fd = fcntl(info->connect_fd, F_DUPFD_CLOEXEC, 3);
			hc->since = now_ns(CLOCK_MONOTONIC);
			hc->busy = false;
			if (hc->fd > 0)
				*socket_context = hc;
		}
	} else if (hc) { /* closed */
		close(hc->fd);
		hc->fd = 0;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&a->conns_lock);
}

/* C is being served (BUSY), or waits for its next request from NOW. */
static void http_conn_mark(struct agent *a, struct MHD_Connection *c, bool busy, uint64_t now)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct http_conn *hc = info ? info->socket_context : NULL;

	if (!hc)
		return;
	pthread_mutex_lock(&a->conns_lock);
	hc->busy = busy;
	hc->since = now;
	pthread_mutex_unlock(&a->conns_lock);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode code)
{
	http_conn_mark(cls, c, false, now_ns(CLOCK_MONOTONIC));
}

/* The main thread, every scan: connections past their deadline cut. */
static void http_conns_sweep(struct agent *a, uint64_t now)
{
	pthread_mutex_lock(&a->conns_lock);
	for (size_t i = 0; i < AGENT_HTTP_TRACKED; i++) {
		struct http_conn *hc = &a->conns[i];

		if (hc->fd > 0 && !hc->busy && now - hc->since > AGENT_HEADERS_S * 1000000000ull) {
			shutdown(hc->fd, SHUT_RDWR);
			hc->busy = true; /* once */
		}
	}
	pthread_mutex_unlock(&a->conns_lock);
}

/* Only the queries each path knows: anything else is a 400. */
static enum MHD_Result check_arg(void *ctx, enum MHD_ValueKind kind, const char *key, const char *value)
{
	bool *unknown = ctx;

	if (strcmp(key, "pid") && strcmp(key, "seconds") && strcmp(key, "debug") && strcmp(key, "gc"))
		*unknown = true;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **state)
{
	struct agent *a = cls;
	bool unknown = false;

	if (!*state) { /* the headers: a method that writes is refused at once */
		*state = (void *)1;
		http_conn_mark(a, c, true, 0); /* its headers came in time: no deadline while it is served */
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET: the agent's endpoints only read\n");
		return MHD_YES;
	}
	if (*upload_size) { /* a body on a GET: read and dropped, then refused */
		*upload_size = 0;
		*state = (void *)2;
		return MHD_YES;
	}
	if (*state == (void *)2)
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "the agent takes no request body\n");
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_arg, &unknown);
	if (!strcmp(url, "/debug/pprof/heap") || !strcmp(url, "/debug/pprof/allocs")) {
		if (unknown)
			return reply_text(c, MHD_HTTP_BAD_REQUEST, "unknown query: the profiles take ?pid=PID and ?seconds=N\n");
		return serve_pprof(a, c, !strcmp(url, "/debug/pprof/allocs"));
	}
	if (!strcmp(url, "/metrics"))
		return serve_metrics(a, c);
	if (!strcmp(url, "/"))
		return serve_index(a, c);
	if (!strcmp(url, "/report")) {
		if (unknown || MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds"))
			return reply_text(c, MHD_HTTP_BAD_REQUEST, "unknown query: the report takes ?pid=PID\n");
		return serve_report(a, c);
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: see / for what the agent serves\n");
}

/* ---- the agent ---- */

/* Start recording PID in a free slot (the main thread, under the write
 * lock). 0, or -ENOSPC, -ENOMEM, -EAGAIN (no thread). */
static int target_start(struct agent *a, int pid, bool matched, unsigned uid)
{
	struct agent_target *t = NULL;

	pthread_rwlock_wrlock(&a->slots_lock);
	for (size_t i = 0; i < AGENT_MAX_TARGETS && !t; i++)
		if (!a->targets[i].in_use)
			t = &a->targets[i];
	if (!t) {
		pthread_rwlock_unlock(&a->slots_lock);
		return -ENOSPC;
	}
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->agent = a;
	t->pid = pid;
	t->matched = matched;
	t->uid = uid;
	if (live_feed__init(&t->feed, &t->lock)) {
		pthread_mutex_destroy(&t->lock);
		pthread_rwlock_unlock(&a->slots_lock);
		return -ENOMEM;
	}
	for (size_t k = 0; k < a->nalloc_fns; k++)
		replay__add_alloc_fn(t->feed.r, a->alloc_fns[k]);
	t->o = a->o;
	t->o.pid = pid;
	t->o.duration = 0; /* the agent's -d stops them all (agent_tick) */
	t->o.max_stacks = a->max_stacks;
	if (trace_dir(a)) {
		/* -o DIR: DIR/COMM.PID.<UTC start>.mtrace, one every --rotate;
		 * without it the same in memory, the last two only */
		char comm[64];

		read_proc_string(pid, "comm", comm, sizeof(comm));
		for (char *s = comm; *s; s++)
			if (*s == '/' || *s == ' ' || (unsigned char)*s < 32)
				*s = '_';
		snprintf(t->output, sizeof(t->output), "%s/%s.%d", trace_dir(a), comm, pid);
		t->o.output = t->output;
	} else {
		/* no memory directory: no trace at all */
		snprintf(t->output, sizeof(t->output), "memtrace-agent.%d", pid);
		t->o.output = t->output;
		t->o.discard_output = true;
		t->o.rotate_sec = 0;
	}
	t->in_use = true;
	if ((size_t)(t - a->targets) + 1 > a->ntargets)
		a->ntargets = (size_t)(t - a->targets) + 1;
	pthread_rwlock_unlock(&a->slots_lock);
	t->started = !pthread_create(&t->thread, NULL, agent_record, t);
	if (!t->started) {
		pthread_mutex_lock(&t->lock);
		t->ended = true;
		t->ended_ns = now_ns(CLOCK_MONOTONIC);
		pthread_mutex_unlock(&t->lock);
		return -EAGAIN;
	}
	return 0;
}

/* Free a slot whose recording ended (its thread joined). */
static void target_reclaim(struct agent *a, struct agent_target *t)
{
	if (t->started)
		pthread_join(t->thread, NULL);
	if (!a->out_dir && a->mem_dir[0])
		remove_files(a->mem_dir, trace_base(t)); /* what it left in memory */
	pthread_rwlock_wrlock(&a->slots_lock);
	t->in_use = false;
	pthread_rwlock_unlock(&a->slots_lock);
	live_feed__free(&t->feed);
	pthread_mutex_destroy(&t->lock);
	malloc_trim(0); /* what the ended recording held goes back to the kernel */
}

/* A recording of PID in a slot, ended or not. */
static bool recorded(const struct agent *a, int pid)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use && a->targets[i].pid == pid && !a->targets[i].ended)
			return true;
	return false;
}

/* PID's file under /proc (util.c's reader), its first line in BUF; false if gone. */
static bool proc_line(int pid, const char *what, char *buf, size_t cap)
{
	if (read_proc_file(pid, what, buf, cap) <= 0)
		return false;
	buf[strcspn(buf, "\n")] = 0;
	return true;
}

/* PID's real and effective uids (/proc/PID/status); false if it is gone. */
static bool proc_uids(int pid, unsigned *ruid, unsigned *euid)
{
	char buf[4096];
	const char *u;

	if (read_proc_file(pid, "status", buf, sizeof(buf)) <= 0 || !(u = strstr(buf, "\nUid:")))
		return false;
	return sscanf(u + 5, "%u %u", ruid, euid) == 2;
}

static bool user_given(const struct agent *a, unsigned uid)
{
	for (size_t i = 0; i < a->nusers; i++)
		if (a->users[i] == uid)
			return true;
	return false;
}

/* PID is one of the programs --comm, --exe or --cgroup name, run by one of
 * --user's users if given. */
static bool matches(const struct agent *a, int pid)
{
	char buf[4096], path[64];
	unsigned ruid, euid;
	ssize_t n;

	if (a->nusers && (!proc_uids(pid, &ruid, &euid) || !user_given(a, ruid) || !user_given(a, euid)))
		return false;

	if (a->ncomms && proc_line(pid, "comm", buf, sizeof(buf)))
		for (size_t i = 0; i < a->ncomms; i++)
			if (!strcmp(buf, a->comms[i]))
				return true;
	if (a->nexes) {
		snprintf(path, sizeof(path), "/proc/%d/exe", pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = 0;
			if (n > 10 && !strcmp(buf + n - 10, " (deleted)")) /* a program replaced since it started */
				buf[n - 10] = 0;
			for (size_t i = 0; i < a->nexes; i++)
				if (!strcmp(buf, a->exes[i]))
					return true;
		}
	}
	if (a->ncgroups && read_proc_file(pid, "cgroup", buf, sizeof(buf) - 1) > 0) {
		/* cgroup v2: "0::/system.slice/x.service" (the last line on a hybrid
		 * host, after v1's); the path or below it */
		char *cg = strstr(buf, "0::/");

		while (cg && cg != buf && cg[-1] != '\n')
			cg = strstr(cg + 1, "0::/");
		if (cg) {
			cg += 3;
			cg[strcspn(cg, "\n")] = 0;
		}

		for (size_t i = 0; cg && i < a->ncgroups; i++) {
			size_t len = strlen(a->cgroups[i]);

			if (!strncmp(cg, a->cgroups[i], len) && (cg[len] == 0 || cg[len] == '/'))
				return true;
		}
	}
	return false;
}

/* PID's start time in clock ticks since boot (field 22 of its stat), and
 * its state letter in *STATE unless NULL; 0 if it is gone. */
static uint64_t proc_start(int pid, char *state)
{
	char buf[1024];
	uint64_t f[19]; /* fields 4 to 22 */

	if (read_proc_file(pid, "stat", buf, sizeof(buf)) <= 0 || proc_stat_parse(buf, state, f, 19))
		return 0;
	return f[18];
}

static struct refused *refused_find(struct agent *a, int pid)
{
	for (size_t i = 0; i < a->nrefused; i++)
		if (a->refused[i].pid == pid)
			return &a->refused[i];
	return NULL;
}

/* PID's recording failed before it attached: not again before its time. */
static void refuse(struct agent *a, int pid, uint64_t now)
{
	struct refused *r = refused_find(a, pid);
	uint64_t start = proc_start(pid, NULL), wait;

	if (!start)
		return; /* gone: nothing to look at again */
	if (r && r->start != start)
		r->tries = 0;
	if (!r) {
		if (a->nrefused == AGENT_MAX_REFUSED) /* the oldest entry goes */
			memmove(&a->refused[0], &a->refused[1], --a->nrefused * sizeof(a->refused[0]));
		r = &a->refused[a->nrefused++];
		*r = (struct refused){ .pid = pid };
	}
	r->start = start;
	wait = AGENT_RETRY_FIRST_NS << (r->tries < 12 ? r->tries : 12);
	r->retry_ns = now + (wait < AGENT_RETRY_MAX_NS ? wait : AGENT_RETRY_MAX_NS);
	r->tries++;
}

/* Whether PID is to be left alone now (a reused PID is not). */
static bool refused_now(struct agent *a, int pid, uint64_t now)
{
	struct refused *r = refused_find(a, pid);

	if (!r || now >= r->retry_ns)
		return false;
	if (proc_start(pid, NULL) == r->start)
		return true;
	*r = a->refused[--a->nrefused];
	return false;
}

/* One refusal on stderr, a line a second at most (each refused process is
 * looked at again every scan while the table stays full): the count of
 * those not said goes with the next. */
static void __attribute__((format(printf, 4, 5)))
say_refusal(struct agent *a, enum refused_kind kind, uint64_t now, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (a->said_ns[kind] && now - a->said_ns[kind] < AGENT_SAY_NS) {
		a->unsaid[kind]++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (a->unsaid[kind])
		fprintf(stderr, "memtrace: %s (and %u more such refusals since the last line)\n", line, a->unsaid[kind]);
	else
		fprintf(stderr, "memtrace: %s\n", line);
	a->said_ns[kind] = now;
	a->unsaid[kind] = 0;
}

/* Whether PID's program belongs to root or to the user PID runs as: a
 * program another user owns is one that user could have put there and
 * named like the service (--comm and --exe match names). OWNER: its
 * owner's uid. */
static bool exe_trusted(int pid, unsigned euid, unsigned *owner)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st))
		return false;
	*owner = st.st_uid;
	return st.st_uid == 0 || st.st_uid == euid;
}

/* Matched targets of UID (ended ones included: they hold their slot). */
static unsigned user_slots(const struct agent *a, unsigned uid)
{
	unsigned n = 0;

	for (size_t i = 0; i < a->ntargets; i++)
		n += a->targets[i].in_use && a->targets[i].matched && a->targets[i].uid == uid;
	return n;
}

/* Free the slot of the matched target (of UID, or any if ANY) that ended
 * first: its last figures stay a minute only while nothing needs the slot.
 * Whether one was freed. */
static bool make_room(struct agent *a, unsigned uid, bool any)
{
	struct agent_target *oldest = NULL;
	uint64_t oldest_ns = UINT64_MAX;

	for (size_t i = 0; i < a->ntargets; i++) {
		struct agent_target *t = &a->targets[i];

		if (!t->in_use || !t->matched || (!any && t->uid != uid))
			continue;
		pthread_mutex_lock(&t->lock);
		if (t->ended && t->ended_ns < oldest_ns) {
			oldest = t;
			oldest_ns = t->ended_ns;
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (oldest)
		target_reclaim(a, oldest);
	return oldest != NULL;
}

/* Start recording matched PID unless a rule refuses it (said on stderr). */
static void admit(struct agent *a, int pid, uint64_t now)
{
	unsigned ruid, euid, owner = 0;
	char comm[64] = "?";
	int err;

	if (!proc_uids(pid, &ruid, &euid))
		return;
	read_proc_string(pid, "comm", comm, sizeof(comm));
	for (char *c = comm; *c; c++) /* the line stays one line of text */
		if ((unsigned char)*c < 32 || (unsigned char)*c >= 127)
			*c = '?';
	if (!exe_trusted(pid, euid, &owner)) {
		struct refused *r = refused_find(a, pid);

		if (!r || !r->tries || r->start != proc_start(pid, NULL))
			say_refusal(a, REFUSED_OWNER, now, "not recording PID %d (%s): its program is owned by uid %u, neither root nor "
					    "the uid it runs as (%u); give -p %d to record it anyway", pid, comm, owner,
				    euid, pid);
		refuse(a, pid, now);
		return;
	}
	if (user_slots(a, ruid) >= a->per_user && !make_room(a, ruid, false)) {
		say_refusal(a, REFUSED_PER_USER, now, "not recording PID %d (%s): uid %u has %u processes recorded already, the most one "
				    "user's may hold (--per-user)", pid, comm, ruid, a->per_user);
		return;
	}
	err = target_start(a, pid, true, ruid);
	if (err == -ENOSPC && make_room(a, 0, true))
		err = target_start(a, pid, true, ruid);
	if (err == -ENOSPC)
		say_refusal(a, REFUSED_FULL, now, "not recording PID %d (%s): %d processes are recorded already, the most an agent "
				    "records", pid, comm, AGENT_MAX_TARGETS);
}

/* Every process that matches and has no recording gets one. */
static void scan(struct agent *a)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end, state;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid() || recorded(a, (int)pid) || refused_now(a, (int)pid, now) ||
		    !matches(a, (int)pid))
			continue;
		/* not a process on its way out (a zombie has nothing left to record) */
		if (!proc_start((int)pid, &state) || state == 'Z' || state == 'X')
			continue;
		admit(a, (int)pid, now);
	}
	closedir(d);
}

/* A trace file of -o DIR, named COMM.PID.<UTC start>.mtrace. */
struct trace_file {
	char *name;
	size_t comm_len;   /* COMM is NAME's first COMM_LEN bytes (a comm may hold dots) */
	size_t base_len;   /* COMM.PID: the first BASE_LEN */
	const char *start; /* <UTC start>.mtrace, in NAME: they sort as text */
	uint64_t bytes;
	bool writing;      /* the newest file of a recording still running: never removed */
};

static bool same_comm(const struct trace_file *a, const struct trace_file *b)
{
	return a->comm_len == b->comm_len && !memcmp(a->name, b->name, a->comm_len);
}

static int by_comm_newest_first(const void *x, const void *y)
{
	const struct trace_file *a = x, *b = y;
	size_t n = a->comm_len < b->comm_len ? a->comm_len : b->comm_len;
	int c = memcmp(a->name, b->name, n);

	if (!c && a->comm_len != b->comm_len)
		c = a->comm_len < b->comm_len ? -1 : 1;
	return c ? c : -strcmp(a->start, b->start);
}

static int oldest_first(const void *x, const void *y)
{
	return strcmp(((const struct trace_file *)x)->start, ((const struct trace_file *)y)->start);
}

/* F from NAME, if NAME is one of ours: COMM.PID.START.mtrace. */
static bool trace_file_parse(struct trace_file *f, char *name)
{
	size_t len = strlen(name);
	const char *start, *pid;

	if (len < 8 || strcmp(name + len - 7, ".mtrace"))
		return false;
	start = memrchr(name, '.', len - 7);
	pid = start && start > name ? memrchr(name, '.', (size_t)(start - name)) : NULL;
	if (!pid || pid == name || start == pid + 1 || strspn(pid + 1, "0123456789") != (size_t)(start - pid - 1))
		return false;
	*f = (struct trace_file){ .name = name, .comm_len = (size_t)(pid - name), .base_len = (size_t)(start - name),
				  .start = start + 1 };
	return true;
}

/* Whether F is the newest of the N files ALL of a recording still running. */
static bool trace_file_writing(struct agent *a, const struct trace_file *f, const struct trace_file *all, size_t n)
{
	for (size_t i = 0; i < a->ntargets; i++) {
		struct agent_target *t = &a->targets[i];
		const char *base = trace_base(t);
		bool running;

		if (!t->in_use || strlen(base) != f->base_len || strncmp(f->name, base, f->base_len))
			continue;
		pthread_mutex_lock(&t->lock);
		running = !t->ended;
		pthread_mutex_unlock(&t->lock);
		for (size_t k = 0; running && k < n; k++)
			if (all[k].base_len == f->base_len && !strncmp(all[k].name, base, f->base_len) &&
			    strcmp(all[k].start, f->start) > 0)
				running = false; /* a newer one is the one being written */
		return running;
	}
	return false;
}

/* -o DIR pruned (the main thread): the newest --keep files of each program
 * (COMM, whatever its PID: a restarted service's old files go too), then
 * the oldest until all of them hold --max-bytes at most. Only our own
 * regular files named as ours, never a file being written, each removed
 * relative to the directory (a name is never followed). */
static void prune_traces(struct agent *a)
{
	struct trace_file *v = NULL;
	size_t n = 0, cap = 0, kept = 0, same = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *d = opendir(a->out_dir);

	while (d && (de = readdir(d))) {
		struct trace_file f;
		struct stat st;
		char *name;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || !(name = strdup(de->d_name)))
			continue;
		if (!trace_file_parse(&f, name)) {
			free(name);
			continue;
		}
		if (n == cap) {
			struct trace_file *w = reallocarray(v, cap ? 2 * cap : 64, sizeof(*v));

			if (!w) {
				free(name);
				break;
			}
			v = w;
			cap = cap ? 2 * cap : 64;
		}
		f.bytes = (uint64_t)st.st_size;
		v[n++] = f;
	}
	for (size_t i = 0; i < n; i++)
		v[i].writing = trace_file_writing(a, &v[i], v, n);
	qsort(v, n, sizeof(*v), by_comm_newest_first);
	for (size_t i = 0; i < n; i++) {
		same = i && same_comm(&v[i], &v[i - 1]) ? same + 1 : 0;
		if (same >= a->keep && !v[i].writing) {
			unlinkat(dirfd(d), v[i].name, 0);
			free(v[i].name);
		} else {
			v[kept++] = v[i];
		}
	}
	for (size_t i = 0; i < kept; i++)
		total += v[i].bytes;
	qsort(v, kept, sizeof(*v), oldest_first);
	for (size_t i = 0; i < kept && total > a->max_bytes; i++) {
		if (!v[i].writing) {
			unlinkat(dirfd(d), v[i].name, 0);
			total -= v[i].bytes;
		}
	}
	for (size_t i = 0; i < kept; i++)
		free(v[i].name);
	free(v);
	if (d)
		closedir(d);
}

/* Without -o: /dev/shm/memtrace-agent.PID.XXXXXX, in memory; true if made.
 * The PID says whose it is once its agent is gone (mem_dir_sweep); the
 * random tail, that no other user can have made it first. */
static bool mem_dir_make(struct agent *a)
{
	snprintf(a->mem_dir, sizeof(a->mem_dir), "/dev/shm/memtrace-agent.%d.XXXXXX", (int)getpid());
	if (mkdtemp(a->mem_dir))
		return true;
	a->mem_dir[0] = 0;
	return false;
}

/* The memory directory and what the recordings left in it. */
static void mem_dir_remove(struct agent *a)
{
	if (!a->mem_dir[0])
		return;
	remove_files(a->mem_dir, NULL);
	rmdir(a->mem_dir);
	a->mem_dir[0] = 0;
}

/* Whether PID is a running memtrace (its comm): a directory of a live
 * agent is never swept, nor one whose PID came back as another memtrace. */
static bool memtrace_runs(int pid)
{
	char comm[64] = "";

	read_proc_string(pid, "comm", comm, sizeof(comm));
	return !strcmp(comm, "memtrace");
}

/* The memory directories of agents that died without their cleanup
 * (SIGKILL, a crash, a reboot of the service without one): ours, that is
 * owned by this uid, named memtrace-agent.PID.XXXXXX, their PID no running
 * memtrace. Not through a symlink (/dev/shm is everyone's), and only the
 * files in it: the agent makes nothing else there. */
static void mem_dir_sweep(void)
{
	int shm = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = shm >= 0 ? fdopendir(dup(shm)) : NULL;
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *end;
		long pid;
		struct stat st;
		int fd;
		DIR *sub;

		if (strncmp(de->d_name, "memtrace-agent.", 15))
			continue;
		pid = strtol(de->d_name + 15, &end, 10);
		if (end == de->d_name + 15 || *end != '.' || pid <= 0 || pid > INT_MAX || pid == getpid() ||
		    memtrace_runs((int)pid))
			continue;
		fd = openat(shm, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) || st.st_uid != geteuid() || !(sub = fdopendir(fd))) {
			close(fd);
			continue;
		}
		for (struct dirent *f; (f = readdir(sub));)
			if (strcmp(f->d_name, ".") && strcmp(f->d_name, ".."))
				unlinkat(dirfd(sub), f->d_name, 0);
		closedir(sub);
		unlinkat(shm, de->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
	if (shm >= 0)
		close(shm);
}

static void agent_locks_init(struct agent *a)
{
	pthread_rwlockattr_t ra;
	pthread_condattr_t ca;

	/* writer preference: readers come from every HTTP thread, and with
	 * glibc's default (readers first) a steady stream of them kept the
	 * scan from ever taking a slot */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&a->slots_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&a->wait_lock, NULL);
	pthread_mutex_init(&a->conns_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->wake, &ca);
	pthread_condattr_destroy(&ca);
}

static void agent_locks_destroy(struct agent *a)
{
	pthread_rwlock_destroy(&a->slots_lock);
	pthread_mutex_destroy(&a->wait_lock);
	pthread_mutex_destroy(&a->conns_lock);
	pthread_cond_destroy(&a->wake);
}

static void agent_free(struct agent *a)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use)
			target_reclaim(a, &a->targets[i]);
	agent_locks_destroy(a);
}

int cmd_agent(int argc, char **argv)
{
	struct agent *a = calloc(1, sizeof(*a));
	int pids[AGENT_MAX_TARGETS], npids, err, status = 0;
	bool matching;
	char addr[INET_ADDRSTRLEN];

	if (!a) {
		fprintf(stderr, "memtrace: failed to start the agent: out of memory\n");
		return MEMTRACE_EXIT_FAILURE;
	}
	/* One malloc arena for every thread: each target's recording runs on a
	 * thread of its own, and with an arena each a restarted target's
	 * recording grew a new arena while the ended one's free memory stayed
	 * in its old one. The agent's threads allocate little and rarely. */
	mallopt(M_ARENA_MAX, 1);
	agent_signals_install();
	agent_locks_init(a);
	err = agent_parse(a, &a->o, argc, argv);
	if (err) {
		agent_locks_destroy(a);
		free(a);
		return err > 0 ? MEMTRACE_EXIT_OK : MEMTRACE_EXIT_USAGE;
	}
	/* -p's pids were put in the slots by the parse: started below */
	npids = (int)a->ntargets;
	for (int i = 0; i < npids; i++)
		pids[i] = a->targets[i].pid;
	memset(a->targets, 0, sizeof(a->targets));
	a->ntargets = 0;
	matching = a->ncomms || a->nexes || a->ncgroups;
	/* MEMTRACE_AGENT_KEEP_ENDED=SEC: how long an ended target stays (tests) */
	a->keep_ended_ns = AGENT_KEEP_ENDED_NS;
	/* MEMTRACE_AGENT_MAX_STACKS=N: stacks kept per target (tests) */
	a->max_stacks = AGENT_MAX_STACKS;
	if (getenv("MEMTRACE_AGENT_MAX_STACKS")) {
		uint64_t n;

		if (!parse_u64(getenv("MEMTRACE_AGENT_MAX_STACKS"), &n) && n >= 1 && n <= (1u << 24))
			a->max_stacks = n;
	}
	if (getenv("MEMTRACE_AGENT_KEEP_ENDED")) {
		uint64_t s;

		if (!parse_u64(getenv("MEMTRACE_AGENT_KEEP_ENDED"), &s) && s <= 86400)
			a->keep_ended_ns = s * 1000000000ull;
	}
	mem_dir_sweep();
	if (!a->out_dir && !mem_dir_make(a))
		fprintf(stderr, "memtrace: warning: no /report: cannot make a directory in /dev/shm for the last "
				"traces (%s)\n", strerror(errno));
	/* the listening socket first: a port in use is said before anything is attached;
	 * a thread per connection: a delta profile (?seconds=N) waits on its own */
	a->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
				   on_request, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a->listen,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)AGENT_HTTP_MAX_CONN,
				   MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)AGENT_HTTP_PER_IP,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)AGENT_HTTP_IDLE_S,
				   MHD_OPTION_NOTIFY_CONNECTION, on_connection, a, MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
				   MHD_OPTION_END);
	inet_ntop(AF_INET, &a->listen.sin_addr, addr, sizeof(addr));
	if (!a->http) {
		fprintf(stderr, "memtrace: failed to listen on %s:%u: the port is in use or not ours to take; give "
				"--listen ADDR:PORT\n", addr, ntohs(a->listen.sin_port));
		mem_dir_remove(a);
		agent_locks_destroy(a);
		free(a);
		return MEMTRACE_EXIT_FAILURE;
	}
	fprintf(stderr, "memtrace: agent serving http://%s:%u/ (%d target%s%s, %s)\n", addr, ntohs(a->listen.sin_port),
		npids, npids == 1 ? "" : "s", matching ? " and the processes matched" : "",
		a->o.budget ? "--budget" : "exact");
	for (int i = 0; i < npids && !agent_stop_requested(a); i++) {
		if (target_start(a, pids[i], false, 0)) {
			fprintf(stderr, "memtrace: failed to record PID %d: out of memory or threads\n", pids[i]);
			status = MEMTRACE_EXIT_FAILURE;
		}
	}
	/* Serving goes on after a target exits (its last figures stay,
	 * target_up 0) until a stop or -d; with -p alone, also until no
	 * recording is left that ever attached. Matched targets are found
	 * every 200 ms, and freed a minute after they ended. */
	for (uint64_t t0 = now_ns(CLOCK_MONOTONIC), pruned_ns = 0;; usleep(AGENT_SCAN_US)) {
		bool any = false;
		uint64_t now = now_ns(CLOCK_MONOTONIC);

		if (agent_stop_requested(a) || (a->o.duration > 0 && now - t0 >= a->o.duration * 1e9)) {
			/* SIGHUP stops a recording still attaching as SIGTERM does:
			 * record_run's own handler is the one that can tell it */
			if (agent_signal == SIGHUP)
				raise(SIGTERM);
			break;
		}
		for (size_t i = 0; i < a->ntargets; i++) {
			struct agent_target *t = &a->targets[i];
			bool gone, failed;

			if (!t->in_use)
				continue;
			pthread_mutex_lock(&t->lock);
			any = any || (t->started && (t->attached || !t->ended));
			/* one that never attached has no figures to keep: its slot is
			 * free at once, and it is looked at again later (refuse) */
			failed = t->matched && t->ended && !t->attached;
			gone = t->matched && t->ended && (failed || now - t->ended_ns >= a->keep_ended_ns);
			pthread_mutex_unlock(&t->lock);
			if (failed)
				refuse(a, t->pid, now);
			if (gone)
				target_reclaim(a, t);
		}
		http_conns_sweep(a, now);
		if (a->out_dir && now - pruned_ns >= AGENT_PRUNE_NS) {
			prune_traces(a);
			pruned_ns = now;
		}
		if (matching)
			scan(a);
		else if (!any)
			break;
	}
	/* the recordings stop at their next tick, the ?seconds= profiles at once */
	pthread_mutex_lock(&a->wait_lock);
	a->stopping = 1;
	pthread_cond_broadcast(&a->wake);
	pthread_mutex_unlock(&a->wait_lock);
	for (size_t i = 0; i < a->ntargets; i++) {
		struct agent_target *t = &a->targets[i];

		if (!t->in_use)
			continue;
		if (t->started)
			pthread_join(t->thread, NULL);
		t->started = false;
		if (!t->matched && t->status)
			status = MEMTRACE_EXIT_FAILURE;
	}
	MHD_stop_daemon(a->http);
	if (a->out_dir) /* the last files written, none being written now */
		prune_traces(a);
	agent_free(a);
	mem_dir_remove(a);
	free(a);
	return status;
}
