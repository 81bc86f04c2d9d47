// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The agent's lifecycle (agent.h): signals from its start, the main loop,
 * the stop, and its directory in /dev/shm. */
#include "agent.h"
#include "budget.h"
#include "loader.h"
#include "record_setup.h"
#include "symbolizer.h"
#include "windows.h"
#include "util.h"

#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

bool agent_stop_requested(const struct agent *a)
{
	return agent_signal || record_stop_requested() || a->stopping;
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
	agent_remove_files(a->mem_dir, NULL);
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
	pthread_mutex_init(&a->deaths_lock, NULL);
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
	pthread_mutex_destroy(&a->deaths_lock);
	pthread_cond_destroy(&a->wake);
}

/* Every slot freed, their recordings ended. */
static void agent_free_targets(struct agent *a)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use)
			agent_target_reclaim(a, &a->targets[i]);
}

struct agent *agent__new(void)
{
	struct agent *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	/* One malloc arena for every thread: each target's recording runs on a
	 * thread of its own, and with an arena each a restarted target's
	 * recording grew a new arena while the ended one's free memory stayed
	 * in its old one. The agent's threads allocate little and rarely. */
	mallopt(M_ARENA_MAX, 1);
	agent_signals_install();
	agent_locks_init(a);
	a->oom_dirfd = -1;
	a->oom_dir = AGENT_DEFAULT_OOM_DIR;
	return a;
}

void agent__free(struct agent *a)
{
	loader__close(a->loader); /* after every target's recording (agent_stop) */
	if (a->exits)
		agent_exits_close(a);
	if (a->oom_dirfd >= 0)
		close(a->oom_dirfd);
	agent_locks_destroy(a);
	free(a);
}

/* The test knobs: MEMTRACE_AGENT_KEEP_ENDED=SEC, how long an ended target
 * stays; MEMTRACE_AGENT_MAX_STACKS=N, the stacks kept per target;
 * MEMTRACE_AGENT_OOM_KEEP=N, --oom-dir's files kept per program;
 * MEMTRACE_AGENT_UNWIND_ROWS=N, the unwind rows all targets share. */
static void agent_knobs(struct agent *a)
{
	uint64_t n;

	a->keep_ended_ns = AGENT_KEEP_ENDED_NS;
	a->oom_keep = AGENT_OOM_KEEP;
	if (getenv("MEMTRACE_AGENT_OOM_KEEP") && !parse_u64(getenv("MEMTRACE_AGENT_OOM_KEEP"), &n) && n >= 1 &&
	    n <= 100000)
		a->oom_keep = (unsigned)n;
	a->max_stacks = AGENT_MAX_STACKS;
	if (getenv("MEMTRACE_AGENT_MAX_STACKS") && !parse_u64(getenv("MEMTRACE_AGENT_MAX_STACKS"), &n) && n >= 1 &&
	    n <= (1u << 24))
		a->max_stacks = n;
	if (getenv("MEMTRACE_AGENT_KEEP_ENDED") && !parse_u64(getenv("MEMTRACE_AGENT_KEEP_ENDED"), &n) && n <= 86400)
		a->keep_ended_ns = n * 1000000000ull;
	if (getenv("MEMTRACE_AGENT_UNWIND_ROWS") && !parse_u64(getenv("MEMTRACE_AGENT_UNWIND_ROWS"), &n) && n >= 1 &&
	    n <= (1u << 24))
		a->o.unwind_rows = (uint32_t)n;
}

/* The soft limit on descriptors raised to the hard one: a target holds
 * tens of them (its BPF maps, programs, links and rings, its trace, its
 * files held), and systemd gives a service 1024 (its hard limit 524288):
 * 16 targets took 976 here and the 17th failed to load its programs. */
static void raise_nofile(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* One loaded object for every target, as --follow-children has for its
 * processes (record_opts' shared_loader): its programs verified once, the
 * maps that are not a target's made once, the unwind rows of a file
 * shared by every target that maps it (by build-id), a probe hit timed
 * once for --budget; each target a slot of it with its own rings, made
 * when it attaches and released when its recording ends. Where it cannot
 * be loaded, each recording loads its own and says why it cannot. */
static void agent_loader_open(struct agent *a)
{
	struct loader_opts lo;
	struct budget_cost c;
	int err;

	record_loader_opts(&a->o, &lo);
	lo.pid = 0;           /* no process of its own: slot 0 stays empty */
	lo.ring_bytes = 4096; /* ... and its rings unused */
	/* No fork of a target cleaned (fork_clean.h): a fork the agent's
	 * --comm, --exe or --cgroup match becomes a target of its own, with
	 * breakpoints of its own links, which a cleaning racing the match
	 * would take out unseen. */
	lo.report_forks = false;
	/* the lanes are a load's: sized for the targets' rings, and where a
	 * target's ring is one for all its CPUs, so that its lanes do not
	 * grow with them either */
	lo.lane_ring_bytes = a->o.one_ring ? budget_lane_ring_bytes(a->o.ring_bytes, libbpf_num_possible_cpus()) :
					     a->o.ring_bytes;
	lo.max_targets = AGENT_MAX_TARGETS + 1;
	/* targets come and go for the agent's life: the rows of files none of
	 * them maps any more make room for new ones */
	lo.reclaim_rows = true;
	lo.python_walk = !getenv("MEMTRACE_NO_PYTHON"); /* any target may be Python */
	err = loader__open(&a->loader, &lo);
	if (!err)
		err = loader__load(a->loader);
	if (!err && a->o.budget && !(err = windows__calibrate(a->loader, &c))) {
		a->o.hit_entry_ns = c.entry_ns;
		a->o.hit_return_ns = c.return_ns;
	}
	/* thread names, and the calls that map memory (--rss, --budget's
	 * large blocks): attached once for every target */
	if (!err && loader__attach_thread_names(a->loader))
		fprintf(stderr, "memtrace: warning: threads started or renamed from now on keep no name\n");
	if (!err)
		err = loader__attach_maps(a->loader);
	if (!err)
		err = loader__attach_large(a->loader);
	if (err) {
		loader__close(a->loader);
		a->loader = NULL;
	}
}

/* The flight recorder: --oom-dir (the default made if it can be: a host
 * whose agent cannot write /var/lib goes on without it, said once) and
 * the programs that tell how a target ended. */
static void flight_recorder_start(struct agent *a)
{
	char why[PATH_MAX + 160] = "";
	int err;

	if (a->oom_dirfd < 0 && (a->oom_dirfd = agent_oom_dir_open(a->oom_dir, why, sizeof(why))) < 0) {
		fprintf(stderr, "memtrace: warning: no OOM flight recorder: %s: %s; give --oom-dir DIR\n", a->oom_dir,
			why);
		return;
	}
	agent_oom_sweep(a);
	err = agent_exits_open(a);
	if (err)
		fprintf(stderr, "memtrace: warning: no OOM flight recorder: cannot watch how processes end (the "
				"oom:mark_victim and sched_process_exit tracepoints): %s\n", strerror(-err));
}

/* One pass of the main loop over the slots: an ended matched target is
 * freed a minute after it ended (at once if it never attached: it is
 * looked at again later). Whether a recording that ever attached is left. */
static bool agent_reap(struct agent *a, uint64_t now)
{
	bool any = false;

	for (size_t i = 0; i < a->ntargets; i++) {
		struct agent_target *t = &a->targets[i];
		bool gone, failed;

		if (!t->in_use)
			continue;
		pthread_mutex_lock(&t->lock);
		any = any || (t->started && (t->attached || !t->ended));
		failed = t->matched && t->ended && !t->attached;
		gone = t->matched && t->ended && (failed || now - t->ended_ns >= a->keep_ended_ns);
		pthread_mutex_unlock(&t->lock);
		if (failed)
			agent_refuse(a, t->pid, now);
		if (gone)
			agent_target_reclaim(a, t);
	}
	return any;
}

/* The recordings stop at their next tick, the ?seconds= profiles at once;
 * then the HTTP threads end. -ESRCH if a -p target's recording failed. */
static int agent_stop(struct agent *a)
{
	int err = 0;

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
			err = -ESRCH;
	}
	MHD_stop_daemon(a->http);
	if (a->out_dir) /* the last files written, none being written now */
		agent_prune_traces(a);
	return err;
}

int agent__run(struct agent *a)
{
	int pids[AGENT_MAX_TARGETS], npids, err = 0;
	bool matching = a->ncomms || a->nexes || a->ncgroups;
	char addr[INET_ADDRSTRLEN];

	/* -p's pids were put in the slots by the parse: started below */
	npids = (int)a->ntargets;
	for (int i = 0; i < npids; i++)
		pids[i] = a->targets[i].pid;
	memset(a->targets, 0, sizeof(a->targets));
	a->ntargets = 0;
	agent_knobs(a);
	raise_nofile();
	/* the targets' live names: a library they all map is loaded once */
	symbolizer_share_files();
	mem_dir_sweep();
	if (!a->out_dir && !mem_dir_make(a))
		fprintf(stderr, "memtrace: warning: no /report: cannot make a directory in /dev/shm for the last "
				"traces (%s)\n", strerror(errno));
	/* the listening socket first: a port in use is said before anything is attached */
	inet_ntop(AF_INET, &a->listen.sin_addr, addr, sizeof(addr));
	if (agent_http_start(a)) {
		fprintf(stderr, "memtrace: failed to listen on %s:%u: the port is in use or not ours to take; give "
				"--listen ADDR:PORT\n", addr, ntohs(a->listen.sin_port));
		mem_dir_remove(a);
		agent__free(a);
		return -EADDRINUSE;
	}
	flight_recorder_start(a);
	agent_loader_open(a);
	fprintf(stderr, "memtrace: agent serving http://%s:%u/ (%d target%s%s, %s)\n", addr, ntohs(a->listen.sin_port),
		npids, npids == 1 ? "" : "s", matching ? " and the processes matched" : "",
		a->o.budget ? "--budget" : "exact");
	for (int i = 0; i < npids && !agent_stop_requested(a); i++) {
		if (agent_target_start(a, pids[i], false, 0)) {
			fprintf(stderr, "memtrace: failed to record PID %d: out of memory or threads\n", pids[i]);
			err = -ESRCH;
		}
	}
	/* Serving goes on after a target exits (its last figures stay,
	 * target_up 0) until a stop or -d; with -p alone, also until no
	 * recording is left that ever attached. Matched targets are found
	 * every 200 ms, and freed a minute after they ended. */
	for (uint64_t t0 = now_ns(CLOCK_MONOTONIC), pruned_ns = 0;; usleep(AGENT_SCAN_US)) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		bool any;

		if (agent_stop_requested(a) || (a->o.duration > 0 && now - t0 >= a->o.duration * 1e9)) {
			/* SIGHUP stops a recording still attaching as SIGTERM does:
			 * record_run's own handler is the one that can tell it */
			if (agent_signal == SIGHUP)
				raise(SIGTERM);
			break;
		}
		any = agent_reap(a, now);
		agent_http_sweep(a, now);
		if (a->out_dir && now - pruned_ns >= AGENT_PRUNE_NS) {
			agent_prune_traces(a);
			pruned_ns = now;
		}
		if (matching)
			agent_scan(a);
		else if (!any)
			break;
	}
	err = agent_stop(a) ?: err;
	agent_free_targets(a);
	mem_dir_remove(a);
	agent__free(a);
	return err;
}
