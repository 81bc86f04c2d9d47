// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace agent (-p PID | --comm NAME | --exe PATH | --cgroup PATH)... [--user NAME|UID]...
 *                [--budget PCT | --exact] [--rss] [--listen ADDR:PORT] [--alloc-fn GLOB]...
 *                [-o DIR [--rotate SEC] [--keep N] [--max-bytes SIZE]] [--oom-dir DIR] [-d SEC]
 *
 * The command line of the agent (user/agent/: discovery, serving, the
 * per-target store). A long-running recorder for one machine, read over HTTP by the engines a
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
#include "agent.h"
#include "budget.h"
#include "commands.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void agent_usage(FILE *f)
{
	fprintf(f, "usage: memtrace agent (-p PID | --comm NAME | --exe PATH | --cgroup PATH)...\n"
		   "                      [--user NAME|UID]... [--per-user N] [--show-cmdline]\n"
		   "                      [--budget PCT | --exact] [--rss] [--listen ADDR:PORT]\n"
		   "                      [--alloc-fn GLOB]... [-o DIR [--rotate SEC] [--keep N] [--max-bytes SIZE]]\n"
		   "                      [--oom-dir DIR] [-d SEC]\n"
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
		   "      --oom-dir DIR    a target killed by the OOM killer (or by SIGSEGV, SIGABRT...)\n"
		   "                       leaves its last minute there as COMM.PID.<UTC time>.oom.mtrace\n"
		   "                       (.crash.mtrace) (default %s, made 0700)\n"
		   "  -d, --duration SEC   stop after SEC seconds (default: until SIGINT, SIGTERM or SIGHUP)\n"
		   "serves /debug/pprof/heap and /debug/pprof/allocs (gzipped pprof, ?pid=PID for one\n"
		   "target), /metrics (Prometheus text format), /report?pid=PID (the HTML report of\n"
		   "the last --rotate SEC) and / (an index)\n",
		AGENT_MAX_TARGETS, AGENT_DEFAULT_PER_USER, AGENT_MAX_TARGETS, AGENT_DEFAULT_BUDGET, AGENT_DEFAULT_PORT, AGENT_DEFAULT_ROTATE, AGENT_DEFAULT_KEEP,
		AGENT_MEM_ROTATE, AGENT_DEFAULT_OOM_DIR);
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
		{ "oom-dir", required_argument, NULL, 'O' },
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
				agent_dir_unsafe(optarg, why, sizeof(why));
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
		case 'O': {
			char why[PATH_MAX + 160] = "";
			int fd = agent_oom_dir_open(optarg, why, sizeof(why));

			if (fd < 0)
				return fail("invalid --oom-dir '%s': %s; give a directory of root's (or the agent's user's) that "
					    "no one else can write (it is made 0700 if missing)", optarg, why);
			if (a->oom_dirfd >= 0)
				close(a->oom_dirfd);
			a->oom_dirfd = fd;
			a->oom_dir = optarg;
			a->oom_dir_given = true;
			break;
		}
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
	/* each target's trace reopened to append a chunk, not held: a
	 * descriptor per target (its files are the agent's, in -o DIR or
	 * its memory directory; a reopen finds the file made or fails) */
	o->trace_unheld = true;
	/* --budget's run clock: a perf event a thread of each target held
	 * through its windows and tails alone, its process clock between */
	o->clock_sleeps = true;
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
	/* a ring sized by the events the budget lets through (--budget 1:
	 * 512 KiB), not by exact tracing's maximum, and one for all of a
	 * target's CPUs: what the budget lets through does not grow with
	 * them (its lanes, 128 KiB, are still one a CPU) */
	if (o->budget) {
		o->ring_bytes = budget_ring_bytes(o->budget);
		o->one_ring = true;
	}
	return 0;
}

int cmd_agent(int argc, char **argv)
{
	struct agent *a = agent__new();
	int err;

	if (!a) {
		fprintf(stderr, "memtrace: failed to start the agent: out of memory\n");
		return MEMTRACE_EXIT_FAILURE;
	}
	err = agent_parse(a, &a->o, argc, argv);
	if (err) {
		agent__free(a);
		return err > 0 ? MEMTRACE_EXIT_OK : MEMTRACE_EXIT_USAGE;
	}
	return agent__run(a) ? MEMTRACE_EXIT_FAILURE : MEMTRACE_EXIT_OK;
}
