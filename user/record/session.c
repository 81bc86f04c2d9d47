// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A recording session (record.h's record_run): start or find the target,
 * bind the allocator functions, attach, stream events to the trace until
 * the target exits, a signal, or the duration; then symbolize every
 * distinct address once and close. `memtrace record` and `top` are thin
 * callers; --follow-children (follow.c) runs one per process.
 */
#include "drain.h"
#include "elf_util.h"
#include "fork_clean.h"
#include "launcher.h"
#include "loader.h"
#include "module_set.h"
#include <linux/types.h>
#include "memtrace_abi.h"
#include "probes.h"
#include "record.h"
#include "record_setup.h"
#include "procmaps.h"
#include "python.h"
#include "preload.h"
#include "rss.h"
#include "map_wrappers.h"
#include "symbolizer.h"
#include "target_file.h"
#include "exit_watch.h"
#include "trace_writer.h"
#include "unwinder.h"
#include "mark_finder.h"
#include "util.h"
#include "windows.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_MS 10
/* --preload: nothing wakes us when a thread writes, so we look every
 * millisecond; each thread's ring holds this much (a busy thread fills a
 * few MiB in a millisecond or two, then waits for us) */
#define PRELOAD_POLL_MS 1
#define PRELOAD_SLOTS 256
#define PRELOAD_RING_BYTES (4u << 20)
/* --budget between windows: nothing comes, and every wakeup is a context
 * switch taken from a loaded host (100-200 us each under a hypervisor here) */
#define WINDOWS_POLL_NS (100 * 1000 * 1000ULL)
/* What a SIGKILL of the recorder can lose: the trace gets what is drained at
 * least this often, from the first interval after attach on (README: the
 * bound is this plus REORDER_NS plus one poll, under 300 ms). */
#define FLUSH_NS (250 * 1000 * 1000ULL)
/* With --budget, /proc/PID/maps is looked at once a second, not at every
 * flush: its read was a quarter of the recorder's CPU at --budget 1 on a
 * loaded redis-server (12 ms in 8 s), charged to the budget like the rest.
 * A library loaded by dlopen is still seen at once (the link map). */
#define WINDOWS_MODULES_NS (1000 * 1000 * 1000ULL)


struct recording {
	struct record_opts o;
	struct fork_clean forks; /* the breakpoints an unfollowed fork of the target inherits */
	const struct record_view *view; /* NULL: none */
	struct launcher child;
	char cmd_path[PATH_MAX]; /* -- CMD: the program found in PATH */
	struct preload pre;      /* --preload: the in-process capture's shared memory */
	char **pre_env;          /* ... and the command's environment */
	bool pre_done;           /* --follow-children: the memory will not come (the process is gone) */
	bool pre_stop_only;      /* ... a program recorded by uprobes: its memory, if any, taken and stopped */
	bool pre_unwind_warned;  /* the unwind area was full, said once */
	int pid;
	int pidfd;
	int rootfd; /* the target's root: reachable after it exits */
	bool held_files; /* procmaps__hold(pid) made: released at cleanup */
	char comm[64];
	char *cmdline;
	char output[PATH_MAX];
	struct procmaps maps;       /* at attach: where the allocator functions are */
	struct module_set modules;  /* every executable mapping seen while recording */
	uint64_t files_hash;        /* procmaps__files_hash at the last refresh_modules */
	bool files_hash_set;
	struct probe_set probes;
	struct symbolizer *warm_symbols; /* a copy of the binding's, its files loaded: ours */
	struct mark_finder *marks;  /* inproc/memtrace.h marks in the target's files */
	struct map_wrappers wrappers; /* --rss without kprobes: the C libraries probed for the calls that map memory */
	bool maps_exit_tried;       /* ... or the sys_exit tracepoint asked for (a target without one) */
	struct unwinder *unwinder;  /* unwind tables for the BPF stack walker */
	char **alloc_files;         /* files looked at for allocator functions */
	size_t nr_alloc_files;
	struct trace_writer *w;
	struct drain *drain;
	struct python *py;          /* the target's interpreter, if memtrace knows it */
	bool py_looked;             /* find_python ran */
	pthread_t load_thread;      /* load_probes_begin's, while it loads */
	bool loading;
	int load_err;               /* its load_probes' */
	bool walk_decided;          /* python_walk below is what load_probes loads */
	bool python_walk;
	bool bind_waited;           /* bind_probes looked again (a process caught in its exec) */
	char py_why[512];           /* why not, when it runs one memtrace does not know */
	int py_said;                /* that line, said once */
	struct loader *loader;
	struct budget_cost hit_cost; /* --budget: calibrated at attach */
	struct windows *windows;     /* --budget: the windows; NULL in exact mode */
	uint64_t start_ns;
	uint64_t start_real_ns;
	uint64_t next_rss_ns; /* --rss: when the next sample is due */
	uint64_t next_resident_anon; /* --rss: RssAnon that takes the next resident snapshot (growth) */
	uint64_t next_resident_ns;   /* --rss: when the next one is due anyway */
	uint64_t earliest_resident_ns; /* --rss: none before */
	struct rss_resident resident; /* --rss: the snapshot's buffers */
	int exit_status; /* wait status of a command we started, -1 unknown */
	bool target_exited;
	bool view_quit; /* the live view was told to quit */
	/* what sees every record the trace gets: the view's tap */
	const struct trace_reader_ops *tap;
	void *tap_ctx;
	uint64_t end_ns; /* when recording stopped */
	char stop_reason[256]; /* set when the target crossed the privilege boundary */
	struct exit_watch *exits; /* o.watch_exit: how the target ended; NULL: not known */
	char memcg[256];          /* ... and its memory cgroup, for the limit an OOM kill hit */
	char limit_of[272];       /* ... and whose that limit is (END's memory_limit_of) */
	/* rotated traces (o.rotate_sec) */
	uint64_t next_rotate_ns;
	uint64_t file_events;  /* drain__events when the current file began */
	char **kept;           /* the files written, oldest first (o.rotate_keep) */
	size_t nr_kept;
};

static volatile sig_atomic_t stop_signal;

bool record_stop_requested(void)
{
	return stop_signal != 0;
}

bool record_output_is_stdout(const char *output)
{
	return !strcmp(output, "-");
}

static void on_signal(int sig)
{
	stop_signal = sig;
}

static uint64_t effective_caps(void)
{
	return record_own_caps("CapEff");
}

/* Say what is missing before anything is started or created. */
static int check_system(void)
{
	uint64_t caps = effective_caps();
	uint64_t need = (1ULL << CAP_BPF_BIT) | (1ULL << CAP_PERFMON_BIT);

	if ((caps & need) != need)
		return fail("recording needs root or the CAP_BPF and CAP_PERFMON capabilities; run it with sudo");
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return fail("this kernel has no BTF (/sys/kernel/btf/vmlinux); memtrace needs a kernel built with CONFIG_DEBUG_INFO_BTF");
	if (access("/sys/bus/event_source/devices/uprobe", F_OK))
		return fail("this kernel has no uprobes (CONFIG_UPROBE_EVENTS); memtrace cannot trace here");
	return 0;
}

/* What a failed launch step means for the user, in one line. */
static int launch_error(struct recording *r, int err)
{
	const char *cmd = r->o.cmd[0];

	switch (r->child.failed_step) {
	case LAUNCH_EXEC:
		return fail("failed to execute '%s': %s; check that it is a program or a script with a #! line",
			    cmd, strerror(-err));
	case LAUNCH_LINKER:
		return fail("failed to start '%s': cannot read its dynamic linker: %s; nothing was recorded",
			    cmd, strerror(-err));
	case LAUNCH_ATTACH:
		return fail("failed to start '%s': cannot attach the launch probe: %s; check that uprobes work on this kernel",
			    cmd, strerror(-err));
	case LAUNCH_WAIT:
		if (err == -ECHILD)
			return fail("'%s' ended before its libraries were loaded (see its own message above); nothing was recorded",
				    cmd);
		if (err == -ETIMEDOUT)
			return fail("failed to start '%s': no launch probe fired within 10 s; uprobes do not seem to work on this host",
				    cmd);
		return fail("failed to start '%s': %s while holding it after its libraries were loaded",
			    cmd, strerror(-err));
	default:
		return fail("failed to start '%s': %s", cmd, strerror(-err));
	}
}

/*
 * --python-objects. CPython keeps objects of at most 512 bytes in its own
 * arenas (pymalloc), and an optimized build (Debian's: PGO and LTO) inlines
 * pymalloc's fast path into its callers: probes on PyObject_Malloc saw 109
 * of the ~250,000 objects a test script made. With PYTHONMALLOC=malloc the
 * interpreter asks malloc for each object, where the probes count it once,
 * with its Python stack: set for a command memtrace starts, required of a
 * process it attaches to (docs/python.md).
 */
static bool pythonmalloc_is_malloc(const char *v)
{
	return v && (!strcmp(v, "malloc") || !strcmp(v, "malloc_debug"));
}

static int python_objects_env(struct recording *r)
{
	const char *v = getenv("PYTHONMALLOC");

	if (!r->o.python_objects)
		return 0;
	if (v && *v && !pythonmalloc_is_malloc(v))
		return fail("--python-objects runs the command with PYTHONMALLOC=malloc, but PYTHONMALLOC is '%s'; unset it", v);
	if (!v || !*v)
		setenv("PYTHONMALLOC", "malloc", 1);
	return 0;
}

/* -p PID --python-objects: PID's interpreter must have started with
 * PYTHONMALLOC=malloc (its environment at exec; memtrace changes nothing in
 * the target). */
static int python_objects_pid(struct recording *r)
{
	char path[64], *env, *v = NULL;
	size_t len = 0;
	FILE *f;

	if (!r->o.python_objects || r->o.cmd)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", r->pid);
	f = fopen(path, "re");
	env = f ? malloc(1 << 20) : NULL;
	if (env) {
		len = fread(env, 1, (1 << 20) - 1, f);
		env[len] = 0;
		for (size_t i = 0; i < len; i += strlen(env + i) + 1)
			if (!strncmp(env + i, "PYTHONMALLOC=", 13))
				v = env + i + 13;
	}
	if (f)
		fclose(f);
	if (!pythonmalloc_is_malloc(v)) {
		free(env);
		return fail("failed to record the Python objects of PID %d: it was not started with PYTHONMALLOC=malloc, "
			    "and its objects of at most 512 bytes come from an allocator inlined into the interpreter, which "
			    "no probe sees; restart it so, or record it with --python-objects -- CMD", r->pid);
	}
	free(env);
	return 0;
}

/* -- CMD, before anything starts: the command exists and may run, the
 * output can be created, the BPF programs load. */
static int check_command(struct recording *r)
{
	int err = launcher__resolve(r->o.cmd[0], r->cmd_path, sizeof(r->cmd_path));

	if (err == -ENOENT && !strchr(r->o.cmd[0], '/'))
		return fail("failed to start '%s': no such command in PATH; check its name", r->o.cmd[0]);
	if (err == -ENOENT)
		return fail("failed to start '%s': no such file; check the path", r->o.cmd[0]);
	if (err == -EISDIR)
		return fail("failed to start '%s': it is a directory; give a program", r->o.cmd[0]);
	if (err == -EACCES)
		return fail("failed to start '%s': %s is not executable; check its permissions (chmod +x)",
			    r->o.cmd[0], r->cmd_path);
	if (err)
		return fail("failed to start '%s': %s; check the path", r->o.cmd[0], strerror(-err));
	return python_objects_env(r);
}

static int load_launcher(struct recording *r)
{
	int err = launcher__open(&r->child);

	if (err == -EPERM || err == -EACCES)
		return fail("failed to load the BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON",
			    strerror(-err));
	if (err)
		return fail("failed to load the BPF programs: %s", strerror(-err));
	if (r->o.preload) {
		r->child.envp = r->pre_env;
		r->child.keep_fd = r->pre.fd;
	}
	err = launcher__fork(&r->child, r->cmd_path, r->o.cmd);
	if (err)
		return fail("failed to start '%s': fork: %s", r->o.cmd[0], strerror(-err));
	r->pid = r->child.pid;
	if (r->o.preload)
		preload__set_pid(&r->pre, r->pid);
	return 0;
}

/*
 * --preload: the shared memory and the environment the command gets. A
 * program the dynamic linker will not preload into (static, setuid, one
 * with its own malloc) is recorded with the probes instead, said in one
 * line.
 */
int record_preload_setup(const struct record_opts *o, const char *path, struct preload *pre, char ***env)
{
	char lib[PATH_MAX], why[256];
	int err;

	if (preload_unsupported(path, why, sizeof(why))) {
		fprintf(stderr, "memtrace: --preload: '%s' cannot be preloaded (%s); recording it with uprobes instead\n",
			o->cmd[0], why);
		return 1;
	}
	if (preload_find_library(lib, sizeof(lib)))
		return fail("failed to find %s beside memtrace (or in ../lib/memtrace); reinstall memtrace (make install), or record without --preload",
			    "libmemtrace_preload.so");
	/* room for the unwind tables, copied for the interposer's walk */
	err = preload__open(pre, PRELOAD_SLOTS, o->ring_bytes_given ? o->ring_bytes : PRELOAD_RING_BYTES, o->stack_depth,
			    o->follow, o->stack_depth ? o->unwind_rows : 0);
	if (err)
		return fail("failed to make the shared memory for --preload: %s", strerror(-err));
	*env = preload__environ(pre, lib, environ);
	if (!*env && errno == EINVAL)
		return fail("failed to preload %s: its path has a space or a colon, which LD_PRELOAD cannot hold; install memtrace elsewhere",
			    lib);
	if (!*env)
		return fail("out of memory");
	return 0;
}

static int setup_preload(struct recording *r)
{
	int err = record_preload_setup(&r->o, r->cmd_path, &r->pre, &r->pre_env);

	if (err > 0)
		r->o.preload = false;
	return err < 0 ? -1 : 0;
}

/* --follow-children: a process's program that cannot be preloaded (a
 * static or setuid one it exec'd) is recorded with uprobes; the memory it
 * may make still is taken, and stopped at once, so that it does not wait
 * for it. */
static void check_followed_program(struct recording *r)
{
	char exe[64], why[256];

	snprintf(exe, sizeof(exe), "/proc/%d/exe", r->pid);
	if (!preload_unsupported(exe, why, sizeof(why)))
		return;
	fprintf(stderr, "memtrace: --preload: PID %d (%s) cannot be preloaded (%s); recording it with uprobes instead\n",
		r->pid, r->comm, why);
	r->o.preload = false;
	r->pre_stop_only = true;
}

/* The pid is known (the command forked, not yet exec'd): hold it after
 * linking, then look at it as at any process. */
static int start_command(struct recording *r)
{
	int err = launcher__exec(&r->child);

	if (err)
		return launch_error(r, err);
	launcher__close(&r->child); /* its probes are done */
	if (r->child.at_entry)
		record_warn_held_at_entry(r->o.cmd[0]);
	return 0;
}

void record_warn_held_at_entry(const char *prog)
{
	fprintf(stderr, "memtrace: the dynamic linker never reported its libraries loaded; '%s' was held at its entry point, after library initializers (their allocations are not in the trace)\n",
		prog);
}

/* The kernel refused us PID's files (PATH, error ERR): say why, as far as
 * we can tell, and what would help. */
static int access_denied(int pid, const char *path, int err)
{
	int yama = -1;
	FILE *f;

	if (!(effective_caps() & (1ULL << CAP_SYS_PTRACE_BIT)))
		return fail("cannot read the files of PID %d (%s: %s): memtrace lacks CAP_SYS_PTRACE, which tracing another user's process needs; run it as root (sudo) or give it cap_sys_ptrace",
			    pid, path, strerror(err));
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &yama) != 1)
			yama = -1;
		fclose(f);
	}
	if (yama == 3)
		return fail("cannot read the files of PID %d (%s: %s): Yama's ptrace_scope is 3, which forbids tracing any process, even as root; memtrace cannot trace here until a reboot",
			    pid, path, strerror(err));
	return fail("cannot read the files of PID %d (%s: %s) although memtrace has CAP_SYS_PTRACE: a security policy protects that process (a security module, or a sandbox's init); memtrace cannot trace it",
		    pid, path, strerror(err));
}

static int watch_target(struct recording *r)
{
	char path[64];

	/* The target's files are held from the first read of its maps to the
	 * last symbol written. */
	procmaps__hold(r->pid);
	r->held_files = true;

	if (r->o.prepared) {
		/* the supervisor watched it while it was held: it may be gone */
		r->pidfd = r->o.prepared_pidfd;
		r->rootfd = r->o.prepared_rootfd;
		snprintf(r->comm, sizeof(r->comm), "%s", r->o.prepared_comm);
		r->cmdline = r->o.prepared_cmdline ? strdup(r->o.prepared_cmdline) : NULL;
		return 0;
	}

	r->pidfd = syscall(SYS_pidfd_open, r->pid, 0);
	if (r->pidfd < 0)
		return fail("failed to watch PID %d: %s", r->pid, strerror(errno));
	/* Held open, it keeps a container's files reachable after the target
	 * exits and its mount namespace is gone: symbolization comes last. */
	r->rootfd = target_root_open(r->pid);
	if (r->rootfd == -EACCES || r->rootfd == -EPERM) {
		snprintf(path, sizeof(path), "/proc/%d/root", r->pid);
		return access_denied(r->pid, path, -r->rootfd);
	}
	if (r->rootfd < 0)
		r->rootfd = -1;
	if (r->o.no_symbols && r->rootfd >= 0) {
		/* only the symbols at the end use it: a reader names the frames
		 * (the agent's traces in memory, a descriptor per target) */
		close(r->rootfd);
		r->rootfd = -1;
	}
	read_proc_string(r->pid, "comm", r->comm, sizeof(r->comm));
	r->cmdline = r->o.cmd ? join_args(r->o.cmd) : read_proc_cmdline(r->pid);
	return 0;
}

/* An OOM kill or a crash said in the trace (finish), known from programs
 * of their own (o.watch_exit): their load (another parse of the kernel's
 * BTF, their verification) goes on in a thread from the start while the
 * recorder's own are loaded and attached, and watch_end waits for it
 * before "attached". Without the programs (an old kernel) the trace just
 * does not say. */
static void watch_exits(struct recording *r)
{
	if (r->o.watch_exit && !r->o.supervisor)
		r->exits = exit_watch__open_async();
}

static void watch_end(struct recording *r)
{
	if (r->exits && exit_watch__add(r->exits, r->pid)) {
		exit_watch__free(r->exits);
		r->exits = NULL;
	}
	if (r->exits)
		exit_watch_memcg(r->pid, r->memcg, sizeof(r->memcg));
}

/* The target was OOM-killed or crashed (o.watch_exit): said in END's flags,
 * status and stop_reason, and on stderr. */
static void note_death(struct recording *r, struct trace_end *end)
{
	struct exit_info e;

	exit_watch__get(r->exits, r->pid, &e);
	if (e.kind != EXIT_OOM_KILLED && e.kind != EXIT_CRASHED)
		return;
	exit_watch_describe(&e, r->memcg, r->stop_reason, sizeof(r->stop_reason));
	end->flags |= e.kind == EXIT_OOM_KILLED ? TRACE_END_OOM_KILLED : TRACE_END_CRASHED;
	end->stop_reason = r->stop_reason;
	if (e.kind == EXIT_OOM_KILLED) {
		exit_watch_limit(r->memcg, &end->memory_limit, r->limit_of, sizeof(r->limit_of));
		end->memory_limit_of = end->memory_limit ? r->limit_of : NULL;
	}
	if (end->exit_status == -1)
		end->exit_status = e.status;
	fprintf(stderr, "%smemtrace: PID %d (%s) was %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", r->pid, r->comm,
		r->stop_reason);
}

static int find_process(struct recording *r)
{
	r->pid = r->o.pid;
	if (r->o.prepared)
		return 0; /* its supervisor attached it, and it may have ended since */
	if (kill(r->pid, 0) && errno == ESRCH)
		return fail("no process with PID %d; check the PID (pidof NAME)", r->pid);
	return python_objects_pid(r);
}

static bool is_basename(const char *path, const char *prefix)
{
	const char *b = strrchr(path, '/');

	return strncmp(b ? b + 1 : path, prefix, strlen(prefix)) == 0;
}

/* Whether the mapped file PATH is one LD_PRELOAD (PRELOAD) names. An entry
 * may be a symbolic link to it (libtcmalloc_minimal.so.4 for the mapped
 * libtcmalloc_minimal.so.4.5.10), so files are compared by identity; a bare
 * name (searched in the library path) matches the start of its base name. */
static bool is_preloaded(int pid, const char *preload, const char *path)
{
	char list[4096], *save = NULL, *tok;
	struct stat want, st;
	char *file = root_path(pid, path);
	bool found = false, known = file && !stat(file, &want);

	free(file);
	snprintf(list, sizeof(list), "%s", preload);
	for (tok = strtok_r(list, ": ", &save); tok && !found; tok = strtok_r(NULL, ": ", &save)) {
		if (!strchr(tok, '/')) {
			found = is_basename(path, tok);
			continue;
		}
		file = root_path(pid, tok);
		found = !strcmp(tok, path) ||
			(known && file && !stat(file, &st) && st.st_dev == want.st_dev && st.st_ino == want.st_ino);
		free(file);
	}
	return found;
}

/* The order the dynamic linker searches for a symbol: the executable, what
 * LD_PRELOAD put first, the other libraries, and libc and the linker last,
 * since every other library depends on them. */
static char **candidate_files(struct recording *r, size_t *n)
{
	char exe[PATH_MAX] = "", preload[4096] = "";
	char **out = calloc(r->maps.nr_paths + 1, sizeof(char *));
	int rank;

	*n = 0;
	if (!out)
		return NULL;
	proc_exe_path(r->pid, exe, sizeof(exe));
	read_proc_environ(r->pid, "LD_PRELOAD", preload, sizeof(preload));
	for (rank = 0; rank < 4; rank++) {
		for (size_t i = 0; i < r->maps.nr_paths; i++) {
			const char *p = r->maps.paths[i];
			bool base = is_basename(p, "libc.so") || is_basename(p, "ld-linux");
			int want = strcmp(p, exe) == 0 ? 0 : (*preload && is_preloaded(r->pid, preload, p)) ? 1 : base ? 3 : 2;

			/* A file memtrace cannot reach is no candidate. */
			if (want == rank && (out[*n] = procmaps__open_path(&r->maps, r->pid, p)))
				(*n)++;
		}
	}
	return out;
}

/* Whether PATH was looked at for allocator functions; from now on it has. */
static bool alloc_file_seen(struct recording *r, const char *path)
{
	if (strings_has(r->alloc_files, r->nr_alloc_files, path))
		return true;
	strings_push(&r->alloc_files, &r->nr_alloc_files, path); /* out of memory: looked at again */
	return false;
}

/* A function that only forwards (operator new calling malloc) needs no probe
 * when stacks are unwound with tables, which walk through its code; a walk
 * by frame pointers alone would lose its caller, the allocation's site. */
static bool skip_forwarders(const struct recording *r)
{
	return !r->o.stack_depth || r->o.unwind_rows;
}

#define BIND_TRIES 20 /* x 25 ms: how long a process just started may take to exec */

/* Find the allocator functions in the files the target maps now. */
static int bind_once(struct recording *r)
{
	char **files;
	size_t n;
	int err;

	err = procmaps__read(&r->maps, r->pid);
	if (err)
		return err;
	files = candidate_files(r, &n);
	if (!files)
		return -ENOMEM;
	err = probe_set__resolve(&r->probes, files, n, r->o.lib, skip_forwarders(r));
	free_strings(files, n);
	return err;
}

struct record_binding {
	struct procmaps maps;
	struct probe_set probes;
	uint64_t code_hash; /* procmaps__code_hash before the search */
	struct symbolizer *sym; /* its modules loaded: a forked recorder symbolizes with its copy */
	int pid;                /* whose files it holds */
	size_t nr_marks;        /* memtrace.h marks in its files */
};

struct record_binding *record_bind(const struct record_opts *o, int pid)
{
	struct recording r = { .o = *o, .pid = pid };
	struct record_binding *b = calloc(1, sizeof(*b));
	char root[64], why[256];

	if (!b)
		return NULL;
	procmaps__hold(pid);
	b->pid = pid;
	if (procmaps__code_hash(pid, &b->code_hash) || bind_once(&r)) {
		procmaps__free(&r.maps);
		probe_set__free(&r.probes);
		procmaps__release(pid);
		free(b);
		return NULL;
	}
	b->maps = r.maps;
	b->probes = r.probes;
	b->nr_marks = mark_finder_learn(pid, &b->maps);
	unwinder_learn(pid, &b->maps);
	if (o->rss || o->budget) /* their C library's wrappers, where the kernel has no kprobes */
		map_wrappers_learn(pid, &b->maps);
	/* whether it runs Python: what its files say is remembered (file_memo.h) */
	python__free(python__find(pid, pid, &b->maps, why, sizeof(why)));
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	b->sym = symbolizer__new_target(root);
	for (size_t i = 0; b->sym && i < b->maps.nr; i++)
		symbolizer__preload(b->sym, &b->maps.mods[i], procmaps__file(&b->maps, b->maps.mods[i].path));
	return b;
}

void record_binding__free(struct record_binding *b)
{
	if (!b)
		return;
	procmaps__free(&b->maps);
	probe_set__free(&b->probes);
	symbolizer__free(b->sym);
	procmaps__release(b->pid);
	free(b);
}

int record_prepare(struct record_opts *o, struct loader *shared, uint32_t slot, uint32_t parent_slot,
		   const struct record_binding *b, int pid)
{
	struct loader_opts lo;
	struct loader *l;
	struct mark_finder *marks = NULL;
	const struct probe *bad = NULL;
	uint64_t h;
	int err;

	if (!b || !parent_slot || loader__mode(shared) == LOADER_CLASSIC)
		return -ENOTSUP;
	err = procmaps__code_hash(pid, &h);
	if (err || h != b->code_hash)
		return err ? err : -ESTALE;
	record_loader_opts(o, &lo);
	lo.pid = pid;
	err = loader__add_target(shared, &lo, slot, &l);
	if (err)
		return err;
	loader__unwind_copy(l, parent_slot);
	loader__python_copy(l, parent_slot);
	err = o->rss_only || o->preload ? 0 : loader__attach(l, &b->probes, &bad);
	/* marks only where the program has some: its recorder looks again
	 * when it maps more (and finds none in files known to have none) */
	if (!err && !o->empty_probes && !o->rss_only && b->nr_marks) {
		marks = mark_finder__new(pid);
		err = !marks ? -ENOMEM : mark_finder__attach(marks, l, &b->maps);
	}
	if (err) {
		mark_finder__free(marks);
		loader__close(l);
		return err;
	}
	/* its root now: a child that ends at once has none by the time it
	 * could be read after it goes on (its pidfd and command line can
	 * wait: record_prepare_watch) */
	o->prepared_pidfd = -1;
	o->prepared_rootfd = target_root_open(pid);
	if (o->prepared_rootfd < 0) {
		err = o->prepared_rootfd;
		o->prepared_rootfd = -1;
		mark_finder__free(marks);
		loader__close(l);
		return err;
	}
	/* and its name, which an exec right after would change */
	read_proc_string(pid, "comm", o->prepared_comm, sizeof(o->prepared_comm));
	o->prepared_mono_ns = now_ns(CLOCK_MONOTONIC);
	o->prepared_real_ns = now_ns(CLOCK_REALTIME);
	loader__set_recording(l, true);
	o->prepared = l;
	o->prepared_marks = marks;
	return 0;
}

int record_prepare_watch(struct record_opts *o, int pid, int parent)
{
	int err;

	o->prepared_pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (o->prepared_pidfd < 0) {
		err = -errno;
		record_prepared_release(o, true);
		return err;
	}
	/* what it was forked with: its own may be an exec's by now */
	o->prepared_cmdline = read_proc_cmdline(parent > 0 ? parent : pid);
	if (!o->prepared_cmdline)
		o->prepared_cmdline = read_proc_cmdline(pid);
	return 0;
}

void record_prepared_release(struct record_opts *o, bool detach)
{
	if (!o->prepared)
		return;
	if (detach || loader__forget(o->prepared))
		loader__close(o->prepared);
	mark_finder__free(o->prepared_marks);
	if (o->prepared_pidfd >= 0)
		close(o->prepared_pidfd);
	close(o->prepared_rootfd);
	free(o->prepared_cmdline);
	o->prepared = NULL;
	o->prepared_marks = NULL;
	o->prepared_cmdline = NULL;
}

/* A process forked from one already bound, still mapping the same code:
 * the search's result is its too. This recorder was forked from the process
 * that holds the binding, so the copy in its memory is its own to keep. */
static bool take_binding(struct recording *r)
{
	uint64_t h;

	if (!r->o.binding)
		return false;
	/* prepared: its supervisor made this check while it was held */
	if (!r->o.prepared && (procmaps__code_hash(r->pid, &h) || h != r->o.binding->code_hash))
		return false;
	r->maps = r->o.binding->maps;
	r->probes = r->o.binding->probes;
	r->warm_symbols = r->o.binding->sym;
	for (size_t i = 0; i < r->maps.nr_paths; i++)
		alloc_file_seen(r, r->maps.paths[i]);
	return true;
}

static int bind_probes(struct recording *r)
{
	int err, tries = 0;

	if (r->o.preload) { /* no probes: only the modules */
		err = procmaps__read(&r->maps, r->pid);
		for (size_t i = 0; !err && i < r->maps.nr_paths; i++)
			alloc_file_seen(r, r->maps.paths[i]);
		return err ? fail("failed to read the mappings of PID %d: %s", r->pid, strerror(-err)) : 0;
	}
	if (take_binding(r))
		return 0;
	/* A process caught in the middle of its exec (memtrace -p $! right
	 * after starting it) maps no libc yet: look again a little later. */
	while ((err = bind_once(r)) == -ESRCH && !r->o.lib && ++tries < BIND_TRIES &&
	       kill(r->pid, 0) == 0) {
		r->bind_waited = true;
		procmaps__free(&r->maps);
		usleep(25 * 1000);
	}
	if (err == -ENOENT || err == -ESRCH) {
		if (kill(r->pid, 0) && errno == ESRCH)
			return fail("PID %d exited while memtrace was attaching; nothing was recorded", r->pid);
	}
	for (size_t i = 0; i < r->maps.nr_paths; i++)
		alloc_file_seen(r, r->maps.paths[i]);
	if (err == -ESRCH && r->o.lib)
		return fail("no malloc and free in %s; give --lib the allocator library", r->o.lib);
	if (err == -ESRCH)
		return fail("PID %d has no malloc and free in any of its modules; give --lib PATH", r->pid);
	if (err)
		return fail("failed to find the allocator functions of PID %d: %s", r->pid, strerror(-err));
	return 0;
}

/* The next file of a rotated trace, named by when it starts (UTC). */
static void rotated_output(struct recording *r)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(r->output, sizeof(r->output), "%s.%s.mtrace", r->o.output, when);
	/* two in one second (a short --rotate): the later one's name says so */
	for (int i = 2; !access(r->output, F_OK) && i < 100; i++)
		snprintf(r->output, sizeof(r->output), "%s.%s-%d.mtrace", r->o.output, when, i);
}

static void default_output(struct recording *r)
{
	char comm[sizeof(r->comm)];

	if (r->o.output && r->o.rotate_sec > 0) {
		rotated_output(r);
	} else if (r->o.output) {
		snprintf(r->output, sizeof(r->output), "%s", r->o.output);
	} else {
		snprintf(comm, sizeof(comm), "%s", r->comm); /* the target's: "/../x" would be a path */
		comm_file_safe(comm);
		snprintf(r->output, sizeof(r->output), "memtrace.%s.%d.mtrace", comm, r->pid);
	}
}

static int write_module(void *ctx, const struct trace_module *m)
{
	struct recording *r = ctx;

	if (r->tap && r->tap->module) {
		int err = r->tap->module(r->tap_ctx, m);

		if (err)
			return err;
	}
	return trace_writer__add_module(r->w, m);
}

/* Where the target has the code of the functions PS leaves unprobed
 * because they only forward: their frames are the allocator's, and the
 * drain drops them from the front of stacks, so the site stays the caller
 * of operator new. 0 or -ENOMEM. */
static int note_forwarders(struct recording *r, const struct probe_set *ps, const struct procmaps *pm)
{
	for (size_t i = 0; i < ps->nr_fwd; i++) {
		const struct forwarder *f = &ps->fwd[i];

		for (size_t j = 0; j < pm->nr; j++) {
			const struct trace_module *m = &pm->mods[j];
			uint64_t start = m->start + f->file_offset - m->file_offset;
			char *path;
			bool same;

			if (f->file_offset < m->file_offset || f->file_offset >= m->file_offset + (m->end - m->start))
				continue;
			path = procmaps__open_path(pm, r->pid, m->path);
			same = path && !strcmp(path, f->path);
			free(path);
			if (same && drain__add_allocator_code(r->drain, start, start + f->size))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Libraries loaded since attach (dlopen) join the module map, so the
 * addresses in their stacks symbolize. A target that is gone has no map. */
/* A library loaded later that has an allocator of its own (its code may be
 * bound to it: -Bsymbolic, RTLD_DEEPBIND) gets the allocator probes too.
 * Calls it passes on to libc are nested, so nothing counts twice. Under
 * --preload too: calls bound inside a library never reach the interposer,
 * and the program's calls by name reach the interposer, which passes them
 * to the allocator that was next at its start, never to this one. */
static void probe_new_allocators(struct recording *r, const struct procmaps *pm)
{
	for (size_t i = 0; i < pm->nr_paths; i++) {
		struct probe_set ps;
		const struct probe *bad = NULL;
		char *file;

		if (r->o.rss_only || alloc_file_seen(r, pm->paths[i]) ||
		    !(file = procmaps__open_path(pm, r->pid, pm->paths[i])))
			continue;
		if (!probe_set__resolve(&ps, &file, 1, NULL, skip_forwarders(r))) {
			if (loader__attach(r->loader, &ps, &bad))
				fail("failed to attach to %s in %s, loaded after attach; its allocations are not counted",
				     bad ? bad->func : "?", pm->paths[i]);
			else if (note_forwarders(r, &ps, pm))
				fail("out of memory");
			else if (r->o.verbose)
				fprintf(stderr, "memtrace: probed the allocator of %s, loaded after attach\n",
					pm->paths[i]);
			probe_set__free(&ps);
		}
		free(file);
	}
}

/* --rss: what the C library of PM's files offers: glibc's allocator
 * probes, and where the kernel has no kprobes, its wrappers of the calls
 * that map memory (a program with no C library at all: the sys_exit
 * tracepoint, or nothing with a warning). 0 or -errno. */
static int attach_map_calls(struct recording *r, const struct procmaps *pm)
{
	int err = mark_finder__attach_glibc(r->marks, r->loader, pm);

	if (err || !loader__maps_by_wrappers(r->loader))
		return err;
	if ((err = map_wrappers__attach(&r->wrappers, r->loader, pm, r->pid)))
		return err;
	if (!r->wrappers.nr_libs && !r->maps_exit_tried && map_wrappers__none_possible(pm)) {
		r->maps_exit_tried = true;
		err = loader__attach_maps_exit(r->loader);
		if (err)
			fprintf(stderr, "memtrace: warning: PID %d's calls that map memory are not traced: this kernel has no "
					"kprobes and the program no C library (%s)\n", r->pid, strerror(-err));
	}
	return 0;
}

/* --budget's large blocks: the kretprobes on mmap, munmap and mremap
 * (once per loaded object), else PM's C library's wrappers of them (--rss
 * probes those itself, all five), which a program without one lacks (its
 * large blocks are then estimates as the rest, and the trace says so: no
 * large_bytes). */
static int attach_large(struct recording *r, const struct procmaps *pm)
{
	int err = loader__attach_large(r->loader);

	if (err || r->o.rss || !loader__maps_by_wrappers(r->loader))
		return err;
	r->wrappers.large_only = true;
	return map_wrappers__attach(&r->wrappers, r->loader, pm, r->pid);
}

/* --preload: the tables the BPF walker was just given, for the
 * interposer's walk too. */
static void publish_unwind(struct recording *r)
{
	uint32_t half = loader__unwind_gen(r->loader) & 1;
	struct mt_unwind_map *maps = loader__unwind_maps(r->loader, half);
	size_t cap = 0;
	/* mapped (16 MiB, every page at once) only where they are copied */
	const struct mt_unwind_row *rows = r->o.preload ? loader__unwind_rows_view(r->loader, &cap) : NULL;

	if (!r->o.preload || !r->pre.geom.unwind_rows || !maps || !rows)
		return;
	if (preload__publish_unwind(&r->pre, maps, loader__unwind_count(r->loader, half), rows, cap) == -ENOSPC &&
	    !r->pre_unwind_warned) {
		r->pre_unwind_warned = true;
		fprintf(stderr, "memtrace: warning: --preload: the unwind tables outgrew their room in the shared memory; new modules' stacks stop there\n");
	}
}

/* Every FLUSH_NS, at a dlopen and at the end. Unless a file-backed mapping
 * changed, nothing is read: reading every module for its build-id four
 * times a second cost a traced redis-server several percent of its
 * throughput, through the recorder's CPU and the TLB flushes of its
 * mmap/munmap. */
static void start_python(struct recording *r, const struct procmaps *pm);

static int refresh_modules(struct recording *r)
{
	struct procmaps now;
	bool hashed;
	uint64_t h;
	int err;

	hashed = !procmaps__files_hash(r->pid, &h);
	if (hashed && r->files_hash_set && h == r->files_hash)
		return 0;
	if (procmaps__read(&now, r->pid))
		return 0;
	err = module_set__merge(&r->modules, &now, write_module, r);
	if (!err && !r->py) {
		/* an exec into the interpreter, or libpython loaded late: first,
		 * since building the new program's unwind tables takes longer than
		 * an interpreter takes to start */
		r->py_looked = false;
		start_python(r, &now);
	}
	if (!err && r->unwinder)
		err = unwinder__update(r->unwinder, r->loader, &now);
	if (!err && r->unwinder)
		publish_unwind(r);
	if (!err && !r->o.empty_probes) {
		probe_new_allocators(r, &now);
		err = mark_finder__attach(r->marks, r->loader, &now);
		if (!err && r->o.rss)
			err = attach_map_calls(r, &now);
	}
	procmaps__free(&now);
	if (!err) {
		r->files_hash = h;
		r->files_hash_set = hashed;
	}
	return err;
}

static int output_error(struct recording *r, int err)
{
	struct stat st;

	if (err == EEXIST && !lstat(r->output, &st) && S_ISLNK(st.st_mode))
		err = ELOOP; /* O_EXCL says EEXIST for a dangling link too */
	if (err == EEXIST)
		return fail("failed to create %s: file exists; remove it or choose another with -o", r->output);
	if (err == ELOOP)
		return fail("failed to create %s: it is a symbolic link; memtrace never writes through one", r->output);
	return fail("failed to create %s: %s; choose a writable path with -o", r->output, strerror(err));
}

/* Refuse a bad output path before the target is touched. The trace itself
 * is created once the probes are live, so its clock starts then. */
static int check_output(struct recording *r)
{
	int fd;

	default_output(r);
	if (r->o.discard_output)
		return 0; /* no file: the records go nowhere */
	if (record_output_is_stdout(r->output)) {
		if (isatty(STDOUT_FILENO))
			return fail("failed to write the trace to stdout: it is a terminal; redirect it (-o - > FILE) or give -o FILE");
		return 0;
	}
	fd = open(r->output, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return output_error(r, errno);
	close(fd);
	unlink(r->output);
	return 0;
}

/* -- CMD: the default name holds the pid, not known yet; its directory
 * (the current one) must take it. */
static int check_output_early(struct recording *r)
{
	if (r->o.output)
		return check_output(r);
	if (access(".", W_OK))
		return fail("failed to create a trace in the current directory: %s; choose a writable path with -o",
			    strerror(errno));
	return 0;
}

/* Every thread's name now, from /proc (later ones and renames come from
 * the kernel's tracepoints, bpf/threads.bpf.h). */
static int write_threads(struct recording *r)
{
	char path[64], comm[64];
	struct dirent *e;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", r->pid);
	d = opendir(path);
	if (!d)
		return 0; /* gone already: its exit ends the recording */
	while (!err && (e = readdir(d))) {
		struct trace_thread t = { .name = comm };

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		t.tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		snprintf(path, sizeof(path), "task/%u/comm", t.tid);
		read_proc_string(r->pid, path, comm, sizeof(comm));
		if (r->tap && r->tap->thread)
			err = r->tap->thread(r->tap_ctx, &t);
		if (!err)
			err = trace_writer__add_thread(r->w, &t);
	}
	closedir(d);
	return err;
}

/* Under sudo (running as root, SUDO_UID and SUDO_GID set), the trace
 * belongs to the user who asked for it, still mode 0600: they can report
 * on it without sudo, and nobody else can read it. 0, or -1 with errno. */
bool record_sudo_owner(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	uint64_t a, b;

	if (geteuid() != 0 || !u || !g || parse_u64(u, &a) || parse_u64(g, &b) || a > UINT32_MAX - 1 ||
	    b > UINT32_MAX - 1)
		return false;
	*uid = (uid_t)a;
	*gid = (gid_t)b;
	return true;
}

static int give_to_sudo_user(const char *path)
{
	uid_t uid;
	gid_t gid;

	if (!record_sudo_owner(&uid, &gid))
		return 0;
	return fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW);
}

/* The trace's time 0: when the probes went live. */
static void mark_start(struct recording *r)
{
	r->start_ns = r->o.prepared ? r->o.prepared_mono_ns : now_ns(CLOCK_MONOTONIC);
	r->start_real_ns = r->o.prepared ? r->o.prepared_real_ns : now_ns(CLOCK_REALTIME);
}

/* --rss: which pages are resident (the snapshot the replay reconciles
 * with the live heap of the same moment), among the events by its time;
 * the target gone is no error. */
static int take_resident(struct recording *r, uint64_t now)
{
	int err = rss_read_resident(r->pid, &r->resident);

	/* stamped when its maps were read, which may be after NOW: the
	 * program went on meanwhile; at the end (no event after end_ns) the
	 * end's time */
	if (r->end_ns)
		r->resident.r.ts = now;
	if (err)
		return err == -ENOMEM ? err : 0;
	return drain__add_resident(r->drain, &r->resident.r);
}

/* --rss: a status sample, among the events by its time; the target gone
 * is no error (its last sample is the one before). */
static int sample_rss(struct recording *r, uint64_t now)
{
	struct trace_rss s = { .ts = now };

	r->next_rss_ns = now + RSS_PERIOD_NS;
	if (rss_read_status(r->pid, &s))
		return 0;
	if ((s.anon >= r->next_resident_anon && now >= r->earliest_resident_ns) || now >= r->next_resident_ns) {
		uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), cost;
		int err = take_resident(r, now);

		if (err)
			return err;
		/* the next when RssAnon grew 2% more (so one comes near any
		 * peak), else in half a second; never sooner than 200 ms, and
		 * the walk costs memtrace at most 1% of a CPU in a large process
		 * (its CPU time: a loaded host's waits are not its cost) */
		cost = 100 * (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
		r->next_resident_anon = s.anon + s.anon / 50 + (256u << 10);
		r->earliest_resident_ns = now + (cost > RSS_RESIDENT_MIN_NS ? cost : RSS_RESIDENT_MIN_NS);
		r->next_resident_ns = now + (cost > RSS_RESIDENT_PERIOD_NS ? cost : RSS_RESIDENT_PERIOD_NS);
	}
	return drain__add_rss(r->drain, &s);
}

/* --rss: smaps_rollup at the start and the end (while the target lives). */
static int write_rollup(struct recording *r)
{
	struct rss_rollup *ro = calloc(1, sizeof(*ro)); /* not thread-local: see rss.c */
	int err;

	if (!ro)
		return -ENOMEM;
	ro->r.ts = now_ns(CLOCK_MONOTONIC);
	err = rss_read_rollup(r->pid, ro) ? 0 : trace_writer__add_rollup(r->w, &ro->r);
	free(ro);
	return err;
}

/* The trace file's writer, its META said from M, and what must come before
 * any event: the modules, the threads (and for a rotated trace's next file,
 * every stack and name so far: REWRITE). */
static int open_writer(struct recording *r, const struct trace_meta *m, bool rewrite)
{
	if (r->o.discard_output) { /* top and agent without -o: the records go nowhere */
		r->w = trace_writer__open_discard(m);
		if (!r->w)
			return fail("failed to start recording: %s", strerror(errno));
	} else if (record_output_is_stdout(r->output)) {
		int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);

		r->w = fd < 0 ? NULL : trace_writer__open_fd(fd, m);
		if (!r->w)
			return fail("failed to write the trace to stdout: %s", strerror(errno));
	} else if (!(r->w = r->o.trace_unheld ? trace_writer__open_unheld(r->output, m) :
						   trace_writer__open(r->output, m))) {
		return output_error(r, errno);
	}
	if (r->o.discard_output)
		;
	else if (!record_output_is_stdout(r->output) && give_to_sudo_user(r->output))
		return fail("failed to give %s to the user who ran sudo: %s; the trace stays root's",
			    r->output, strerror(errno));
	if (r->o.chunk_bytes)
		trace_writer__set_chunk_target(r->w, r->o.chunk_bytes);
	if (rewrite) {
		struct trace_writer *w = r->w;
		int err = 0;

		for (size_t i = 0; i < r->modules.nr && !err; i++)
			err = trace_writer__add_module(w, &r->modules.mods[i]);
		if (err || write_threads(r) || drain__rewrite(r->drain, w) || trace_writer__flush(w))
			return fail("failed to write %s: %s", r->output, strerror(err ? -err : errno));
		return 0;
	}
	if (r->tap) {
		if (r->tap->meta && r->tap->meta(r->tap_ctx, m))
			return fail("failed to start the live view: out of memory");
		drain__set_tap(r->drain, r->tap, r->tap_ctx);
	}
	if (module_set__merge(&r->modules, &r->maps, write_module, r) || write_threads(r) ||
	    trace_writer__flush(r->w))
		return fail("failed to write %s: %s", r->output, strerror(errno));
	drain__set_writer(r->drain, r->w);
	return 0;
}

/* A rotated trace's file just begun: the oldest past o.rotate_keep goes. */
static int keep_file(struct recording *r)
{
	char **v = realloc(r->kept, (r->nr_kept + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	r->kept = v;
	if (!(r->kept[r->nr_kept] = strdup(r->output)))
		return -ENOMEM;
	r->nr_kept++;
	if (r->o.rotate_keep && r->nr_kept > r->o.rotate_keep) {
		unlink(r->kept[0]);
		free(r->kept[0]);
		memmove(r->kept, r->kept + 1, --r->nr_kept * sizeof(*r->kept));
	}
	return 0;
}

/* What every file of this recording says it is, from START_NS on. */
static void fill_meta(struct recording *r, struct trace_meta *meta, struct utsname *u, char *host, size_t host_cap)
{
	struct trace_meta m = {
		.command_line = r->cmdline,
		.comm = r->comm,
		.pid = r->pid,
		.stack_depth = r->o.stack_depth,
		.sample_bytes = r->o.sample,
		.budget_ppm = (uint64_t)(r->o.budget * 10000 + 0.5),
		.hit_entry_ns = (uint64_t)(r->hit_cost.entry_ns + 0.5),
		.hit_return_ns = (uint64_t)(r->hit_cost.return_ns + 0.5),
		.flags = (r->o.rss_only ? TRACE_META_NO_HEAP : 0) | (r->o.rss ? TRACE_META_MAPS : 0) |
			 (r->o.cmd ? 0 : TRACE_META_ATTACHED) | (r->o.preload ? TRACE_META_PRELOAD : 0) |
			 (mark_finder__count_glibc(r->marks) ? TRACE_META_GLIBC_PROBES : 0),
		.large_bytes = r->loader && (loader__large_traced(r->loader) || r->wrappers.nr_libs) ? r->o.large : 0,
	};

	uname(u);
	gethostname(host, host_cap - 1);
	m.kernel = u->release;
	m.hostname = host;
	*meta = m;
}

static int open_output(struct recording *r)
{
	struct utsname u;
	char host[256] = "";
	struct trace_meta m;
	int err;

	fill_meta(r, &m, &u, host, sizeof(host));
	if (!r->start_ns)
		mark_start(r);
	m.start_mono_ns = r->start_ns;
	m.start_real_ns = r->start_real_ns;
	if ((err = open_writer(r, &m, false)))
		return err;
	if (r->o.rotate_sec > 0) {
		r->next_rotate_ns = r->start_ns + (uint64_t)(r->o.rotate_sec * 1e9);
		err = keep_file(r);
		if (err)
			return fail("out of memory");
	}
	if (r->o.rss) {
		int err = write_rollup(r);

		if (err || (err = sample_rss(r, now_ns(CLOCK_MONOTONIC))))
			return fail("failed to write %s: %s", r->output, strerror(-err));
	}
	loader__set_recording(r->loader, true);
	if (r->windows &&
	    windows__start(r->windows, r->o.budget, &r->hit_cost, r->loader, r->drain, r->pid, r->pidfd,
				  r->o.clock_sleeps, r->start_ns))
		return fail("out of memory");
	/* following it cost the supervisor's time and this recorder's start
	 * (a fork of the supervisor: its CPU time is this process's) */
	if (r->windows && r->o.supervisor)
		budget__charge_follow(&r->windows->ctl,
				      (double)r->o.follow_cost_ns + (double)now_ns(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}

static int on_record(void *ctx, const void *data, size_t size)
{
	return drain__record(ctx, data, size);
}

/* A fork of the target that nothing records: its copies of the probes'
 * breakpoints out, now (it traps on every allocator call until then). */
static void on_fork(void *ctx, uint32_t child)
{
	struct recording *r = ctx;
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int n = fork_clean__child(&r->forks, r->pid, (int)child);

	r->forks.ns += now_ns(CLOCK_MONOTONIC) - t0;

	if (r->o.verbose && n < 0 && n != -ENOENT && n != -ESRCH)
		fprintf(stderr, "memtrace: warning: failed to take the breakpoints out of PID %u, a fork of PID %d: %s\n",
			child, r->pid, strerror(-n));
}

/* dlopen and dlclose pass through the dynamic linker's debugger hook: a
 * probe there makes the recorder look for new modules within one poll.
 * Without it (static target, unknown linker) the periodic look remains. */
static void watch_link_map(struct recording *r)
{
	struct elf_function hook;

	for (size_t i = 0; i < r->maps.nr_paths; i++) {
		char *file;

		if (!is_basename(r->maps.paths[i], "ld-linux") ||
		    !(file = procmaps__open_path(&r->maps, r->pid, r->maps.paths[i])))
			continue;
		if (!elf_find_function(file, "_dl_debug_state", &hook))
			loader__attach_link_map_hook(r->loader, file, hook.file_offset);
		free(file);
		return;
	}
}

static void warn_line(void *ctx, const char *msg)
{
	fprintf(stderr, "memtrace: warning: %s\n", msg);
}

static bool python_may_run(struct recording *r);

/* The breakpoints the target's forks inherit taken out (fork_clean.h),
 * where its object reports them. */
static void watch_forks(struct recording *r, const struct loader_opts *lo)
{
	if (!lo->report_forks)
		return;
	loader__set_fork_clean(r->loader, &r->forks);
	drain__set_fork(r->drain, on_fork, r);
}

static int load_probes(struct recording *r)
{
	struct loader_opts lo;
	int err;

	record_loader_opts(&r->o, &lo);
	lo.pid = r->pid;
	lo.on_record = on_record;
	r->drain = drain__new(NULL);
	if (!r->drain)
		return fail("out of memory");
	drain__set_max_stacks(r->drain, r->o.max_stacks);
	lo.ctx = r->drain;
	if (r->o.prepared) {
		/* attached by the supervisor, which let the process go on */
		r->loader = r->o.prepared;
		err = loader__set_sink(r->loader, on_record, r->drain);
		if (err)
			return fail("failed to read the events of PID %d: %s", r->pid, strerror(-err));
		return 0;
	}
	if (r->o.shared_loader) {
		/* a followed process: the supervisor's object, nothing to verify */
		err = loader__add_target(r->o.shared_loader, &lo, r->o.slot, &r->loader);
		if (err)
			return fail("failed to record PID %d on the loaded BPF programs: %s", r->pid, strerror(-err));
		watch_forks(r, &lo); /* the agent's targets (a followed one's object reports none) */
		return 0;
	}
	lo.python_walk = r->walk_decided ? r->python_walk : python_may_run(r);
	err = loader__open(&r->loader, &lo);
	if (err)
		return fail("failed to open the BPF programs: %s", strerror(-err));
	err = loader__load(r->loader);
	if (err == -EPERM || err == -EACCES)
		return fail("failed to load the BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON", strerror(-err));
	if (err == -EOPNOTSUPP && r->o.empty_probes == 4)
		return fail("--empty-probes=record needs uprobe sessions: a kernel of 6.13 or later, and MEMTRACE_ATTACH unset");
	if (err)
		return fail("failed to load the BPF programs: %s", strerror(-err));
	watch_forks(r, &lo);
	return 0;
}

static void warn_text(const char *msg)
{
	warn_line(NULL, msg);
}

/* Unwind tables for the modules mapped now; later ones in refresh_modules. */
static int start_unwinder(struct recording *r)
{
	char cache[PATH_MAX];
	int err;

	if (!r->o.unwind_rows || !r->o.stack_depth || r->o.empty_probes ||
	    (r->o.preload && !r->o.rss && !r->pre.geom.unwind_rows && !r->o.supervisor))
		return 0; /* --preload walking frame pointers alone needs none (--rss's mappings do; a
			   * followed process's memory, still to come, has room for them) */
	r->unwinder = unwinder__new(r->pid, unwinder_default_cache(cache, sizeof(cache)), warn_text);
	if (!r->unwinder)
		return fail("out of memory");
	err = unwinder__update(r->unwinder, r->loader, &r->maps);
	if (!err)
		publish_unwind(r);
	if (err)
		return fail("failed to load unwind tables: %s", strerror(-err));
	if (r->o.verbose)
		fprintf(stderr, "memtrace: unwind tables for %zu modules, %zu rows\n",
			unwinder__modules(r->unwinder), unwinder__rows(r->unwinder));
	return 0;
}

/* The interpreter the target runs, looked for once (its maps read): R->py,
 * or why not in R->py_why ("" when it runs none). A process forked from a
 * bound one reads its files through the binding's held descriptors. */
static void find_python(struct recording *r, const struct procmaps *pm)
{
	int files_pid = r->warm_symbols && r->o.binding ? r->o.binding->pid : r->pid;

	if (r->py_looked)
		return;
	r->py_looked = true;
	r->py_why[0] = 0;
	r->py = python__find(files_pid, r->pid, pm, r->py_why, sizeof(r->py_why));
	if (!r->py && errno != EPROTONOSUPPORT)
		r->py_why[0] = 0;
}

/* Whether to load the walk of Python frames (bpf/python.bpf.h): a third of
 * what the verifier checks, so only where the target may run Python: -p's
 * process as its maps say, -- CMD's program as its file says. */
static bool python_may_run(struct recording *r)
{
	if (getenv("MEMTRACE_NO_PYTHON") || !r->o.stack_depth || r->o.empty_probes || r->o.rss_only)
		return false;
	if (r->o.cmd)
		return python_file_may_run(r->cmd_path, 0);
	find_python(r, &r->maps);
	return r->py != NULL;
}

static void *load_thread(void *arg)
{
	struct recording *r = arg;

	r->load_err = load_probes(r);
	return NULL;
}

/*
 * -p: the programs load (the verifier's work, most of setup) in a thread
 * while the probes' files are read and their places chosen (bind_probes,
 * 3 ms here, more on a loaded host). What the load needs of the target,
 * whether it runs Python, comes from a first read of its maps, here;
 * load_probes_end waits for it. Not for a process whose object or probes
 * its supervisor made.
 */
static void load_probes_begin(struct recording *r)
{
	struct procmaps pm = { 0 };

	if (r->o.cmd || r->o.prepared || r->o.shared_loader || r->o.binding || procmaps__read(&pm, r->pid)) {
		procmaps__free(&pm);
		return; /* loaded after bind_probes, which says what failed */
	}
	if (getenv("MEMTRACE_NO_PYTHON") || !r->o.stack_depth || r->o.empty_probes || r->o.rss_only) {
		r->python_walk = false;
	} else {
		find_python(r, &pm);
		r->python_walk = r->py != NULL;
	}
	procmaps__free(&pm);
	r->walk_decided = true;
	if (pthread_create(&r->load_thread, NULL, load_thread, r)) {
		r->walk_decided = false; /* load_probes after bind_probes, as without a thread */
		return;
	}
	r->loading = true;
}

/* 0 or what load_probes said (its line printed). A process caught in its
 * exec when its maps were first read may run Python only now: then, if
 * setup goes on (GOING), the programs are loaded again, with the walk. */
static int load_probes_end(struct recording *r, bool going)
{
	if (!r->loading)
		return 0;
	pthread_join(r->load_thread, NULL);
	r->loading = false;
	if (r->load_err || !r->bind_waited || !going)
		return r->load_err;
	python__free(r->py);
	r->py = NULL;
	r->py_looked = false;
	if (python_may_run(r) == r->python_walk)
		return 0;
	loader__close(r->loader);
	r->loader = NULL;
	fork_clean__free(&r->forks); /* the next load's links tell theirs */
	drain__free(r->drain);
	r->drain = NULL;
	r->walk_decided = false;
	return load_probes(r);
}

/* Python frames in stacks, where the target runs an interpreter memtrace
 * knows; one line where it runs one it does not. */
static void start_python(struct recording *r, const struct procmaps *pm)
{
	struct mt_py_layout layout;
	const char *file;
	uint64_t offset;

	/* MEMTRACE_NO_PYTHON: the walk left out, for make bench's row of its cost */
	if (!r->o.stack_depth || r->o.empty_probes || r->o.rss_only || getenv("MEMTRACE_NO_PYTHON"))
		return;
	find_python(r, pm);
	if (!r->py) {
		if (r->py_why[0] && !r->py_said++)
			fprintf(stderr, "memtrace: warning: %s; its stacks show native frames only\n", r->py_why);
		return;
	}
	if (!loader__python_walk(r->loader)) {
		if (!r->py_said++)
			fprintf(stderr, "memtrace: warning: PID %d runs CPython %s, but its command did not look like Python when "
				"the BPF programs were loaded; its stacks show native frames only (record it with -p)\n",
			r->pid, python__version(r->py));
		return;
	}
	layout = *python__layout(r->py);
	file = python__code_free(r->py, &offset);
	/* tags cached only where code objects' deaths are seen */
	layout.tag_cache = file && !loader__attach_py_code_free(r->loader, file, offset);
	loader__set_python(r->loader, &layout);
	drain__set_python(r->drain, r->py);
	if (r->o.verbose)
		fprintf(stderr, "memtrace: CPython %s in PID %d: stacks show its Python frames\n",
			python__version(r->py), r->pid);
}

/* --budget prices every probe hit at this host's cost, timed here. */
static int calibrate(struct recording *r)
{
	int err;

	if (!r->o.budget)
		return 0;
	if (loader__mode(r->loader) == LOADER_CLASSIC)
		return fail("--budget needs multi-uprobe links (Linux 6.6 or later); record exactly (without --budget) instead");
	r->hit_cost = (struct budget_cost){ .entry_ns = r->o.hit_entry_ns, .return_ns = r->o.hit_return_ns };
	err = r->hit_cost.entry_ns > 0 ? 0 : windows__calibrate(r->loader, &r->hit_cost);
	if (err)
		return fail("failed to time a probe hit on this host for --budget: %s", strerror(-err));
	r->windows = calloc(1, sizeof(*r->windows));
	if (!r->windows)
		return fail("out of memory");
	if (r->o.verbose)
		fprintf(stderr, "memtrace: a probe hit costs %.0f ns at entry, %.0f ns more with its return (--budget %g%%)\n",
			r->hit_cost.entry_ns, r->hit_cost.return_ns, r->o.budget);
	return 0;
}

static int attach_probes(struct recording *r)
{
	const struct probe *bad = NULL;
	char name[PATH_MAX];
	int err;

	err = r->o.prepared || r->o.rss_only || r->o.preload ? 0 : loader__attach(r->loader, &r->probes, &bad);
	if (err && kill(r->pid, 0) && errno == ESRCH)
		return fail("PID %d exited while memtrace was attaching; nothing was recorded", r->pid);
	if (err)
		return fail("failed to attach to %s in %s: %s", bad ? bad->func : "?",
			    bad ? procmaps__name(bad->path, name, sizeof(name)) : "?", strerror(-err));
	if (note_forwarders(r, &r->probes, &r->maps))
		return fail("out of memory");
	r->marks = r->o.prepared_marks ? r->o.prepared_marks : mark_finder__new(r->pid);
	if (!r->marks)
		return fail("out of memory");
	mark_finder__on_warning(r->marks, warn_line, NULL);
	drain__set_string_reader(r->drain, mark_finder__read_string, r->marks);
	err = r->o.empty_probes || r->o.rss_only || r->o.prepared_marks ? 0 : mark_finder__attach(r->marks, r->loader, &r->maps);
	if (err)
		return fail("failed to attach the memtrace.h marks of PID %d: %s", r->pid, strerror(-err));
	if (!r->o.empty_probes) {
		watch_link_map(r);
		err = loader__attach_thread_names(r->loader);
		if (err)
			fprintf(stderr, "memtrace: warning: threads started or renamed from now on keep no name (%s)\n",
				strerror(-err));
		err = loader__attach_maps(r->loader);
		if (err)
			return fail("failed to trace the calls that map memory for --rss: %s", strerror(-err));
		if ((err = attach_large(r, &r->maps)))
			return fail("failed to attach to the C library for --budget's large blocks: %s", strerror(-err));
		if (r->o.rss && (err = attach_map_calls(r, &r->maps)))
			return fail("failed to attach to the C library for --rss: %s", strerror(-err));
	}
	err = start_unwinder(r);
	if (!err)
		start_python(r, &r->maps);
	return err ? err : calibrate(r);
}

static const char *base_name(const char *path)
{
	return strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
}

/* The placement table of -v: where each probe sits and what it costs, and
 * which functions have none because they only forward to a probed one. */
static void print_probe(const struct probe *p)
{
	char name[PATH_MAX];

	fprintf(stderr, "memtrace: probe %-36s %s+0x%x (file offset 0x%llx) on %s: %s%s%s%s%s\n", p->func,
		base_name(procmaps__name(p->path, name, sizeof(name))), p->skipped, (unsigned long long)p->offset, p->insn,
		p->emulated ? "emulated" : "single-stepped, ", p->emulated ? "" : p->why,
		p->moved[0] ? ", " : "", p->moved, p->ret ? ", with return probe" : "");
}

static void print_forwarder(const struct forwarder *f)
{
	char name[PATH_MAX];

	fprintf(stderr, "memtrace: probe %-36s %s+0x0 (file offset 0x%llx) none: forwards to %s\n", f->func,
		base_name(procmaps__name(f->path, name, sizeof(name))), (unsigned long long)f->file_offset, f->to);
}

static const char *mode_name(enum loader_mode m)
{
	return m == LOADER_SESSION ? "uprobe sessions" : m == LOADER_MULTI ? "multi-uprobe links" : "uprobes";
}

static void announce(struct recording *r)
{
	if (r->o.verbose) {
		for (size_t i = 0; i < r->probes.nr; i++)
			print_probe(&r->probes.v[i]);
		for (size_t i = 0; i < r->probes.nr_fwd; i++)
			print_forwarder(&r->probes.fwd[i]);
		uint32_t insns;
		uint64_t usec = loader__verify_usec(r->loader, &insns);

		fprintf(stderr, "memtrace: attached with %s\n", mode_name(loader__mode(r->loader)));
		if (r->o.rss)
			fprintf(stderr, "memtrace: --rss: the calls that map memory caught %s\n", loader__maps_how(r->loader));
		fprintf(stderr, "memtrace: BPF programs verified in %.1f ms (%u instructions processed)\n",
			usec / 1000.0, insns);
		if (mark_finder__count(r->marks))
			fprintf(stderr, "memtrace: %zu of %zu memtrace.h marks on their 5-byte nop (a call, not a trap)\n",
				mark_finder__count_nop5(r->marks), mark_finder__count(r->marks));
	}
	/* one write: the recorders of --follow-children share the terminal */
	char marks[64] = "", glibc[64] = "", line[PATH_MAX + 256];
	size_t nglibc = mark_finder__count_glibc(r->marks);

	if (mark_finder__count(r->marks))
		snprintf(marks, sizeof(marks), ", %zu memtrace.h mark%s", mark_finder__count(r->marks),
			 mark_finder__count(r->marks) == 1 ? "" : "s");
	if (nglibc)
		snprintf(glibc, sizeof(glibc), ", %zu of glibc's allocator probe%s", nglibc, nglibc == 1 ? "" : "s");
	if (r->o.preload)
		snprintf(line, sizeof(line), "memtrace: attached to PID %d (%s): its allocator calls captured in-process (--preload)%s%s%s\n",
			 r->pid, r->comm, marks, r->o.discard_output ? "" : ", writing ",
			 r->o.discard_output ? "" : record_output_is_stdout(r->output) ? "to stdout" : r->output);
	else if (r->o.rss_only)
		snprintf(line, sizeof(line), "memtrace: attached to PID %d (%s): --rss=only, no allocator probes%s%s%s\n",
			 r->pid, r->comm, glibc, r->o.discard_output ? "" : ", writing ",
			 r->o.discard_output ? "" : record_output_is_stdout(r->output) ? "to stdout" : r->output);
	else
		snprintf(line, sizeof(line), "memtrace: attached to PID %d (%s): %zu probes in %zu module%s%s%s%s%s\n",
			 r->pid, r->comm, r->probes.nr, r->probes.nr_modules, r->probes.nr_modules == 1 ? "" : "s",
			 marks, glibc, r->o.discard_output ? "" : ", writing ",
			 r->o.discard_output ? "" : record_output_is_stdout(r->output) ? "to stdout" : r->output);
	fputs(line, stderr);
}

/* What the target did, in words, from what changed and its name then. */
static void describe_creds_change(struct recording *r, uint32_t why, const char *comm)
{
	bool exec = strcmp(comm, r->comm) != 0;
	const char *what = why & MT_CREDS_UID ? "setuid" : why & MT_CREDS_GID ? "setgid" : "file-capability";
	char how[128];

	if (exec)
		snprintf(how, sizeof(how), "%s exec of %s", what, comm);
	else if (why & (MT_CREDS_UID | MT_CREDS_GID))
		snprintf(how, sizeof(how), "%s() to another %s", what, why & MT_CREDS_UID ? "user" : "group");
	else
		snprintf(how, sizeof(how), "a capability gain");
	snprintf(r->stop_reason, sizeof(r->stop_reason),
		 "stopped recording PID %d: it changed credentials (%s)", r->pid, how);
}

/* The probes stopped recording the target at a privilege boundary. */
static bool creds_crossed(struct recording *r)
{
	char comm[16] = "";
	uint32_t why = loader__creds_changed(r->loader, comm, sizeof(comm));

	if (!why)
		return false;
	describe_creds_change(r, why, comm);
	fprintf(stderr, "%smemtrace: %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", r->stop_reason);
	return true;
}

/* The agent's recording, attached: the agent's exit watch tells the
 * target's end (target_gone), so its pidfd goes, one descriptor a target
 * less. Only while the pidfd says it still runs: the watch was given the
 * PID before this recording began, so an end after now is in it. */
static void let_pidfd_go(struct recording *r)
{
	struct pollfd p = { .fd = r->pidfd, .events = POLLIN };

	if (!r->o.shared_exits || r->pidfd < 0 || r->child.pid > 0 || r->o.preload || poll(&p, 1, 0) != 0)
		return;
	close(r->pidfd);
	r->pidfd = -1;
}

static bool target_gone(struct recording *r)
{
	struct pollfd p = { .fd = r->pidfd, .events = POLLIN };
	struct exit_info e;
	int status;

	if (r->pidfd < 0 && r->o.shared_exits) {
		exit_watch__get(r->o.shared_exits, r->pid, &e);
		if (e.kind == EXIT_NOT_KNOWN)
			return false;
	} else if (poll(&p, 1, 0) <= 0) {
		return false;
	}
	if (r->child.pid > 0 && waitpid(r->child.pid, &status, WNOHANG) == r->child.pid) {
		r->exit_status = status;
		r->child.pid = -1;
	}
	r->target_exited = true;
	return true;
}

/* What a live view is told, now. */
static struct record_live live_of(struct recording *r)
{
	struct record_live l = {
		.pid = r->pid,
		.comm = r->comm,
		.cmdline = r->cmdline,
		.output = r->o.discard_output ? NULL : r->output,
		.probes = r->probes.nr,
		.start_ns = r->start_ns,
		.end_ns = r->end_ns,
		.events = r->drain ? drain__events(r->drain) : 0,
		.folded = r->drain ? drain__folded(r->drain) : 0,
		.bytes_written = r->w ? trace_writer__bytes(r->w) : 0,
		.target_exited = r->target_exited,
		.stop = (volatile const int *)&stop_signal,
	};

	for (int cpu = 0; r->loader && cpu < loader__nr_cpus(r->loader); cpu++)
		l.dropped += loader__drops(r->loader, cpu);
	return l;
}

static int write_symbols(struct recording *r);

/* What closes a trace file, after its last events: the modules mapped since
 * the last look (REFRESH: the target still lives) and the symbols of every
 * stack, unless the reader is to name them (o.no_symbols); its END counts
 * the file's own events. */
static int close_file_records(struct recording *r, bool refresh, struct trace_end *end)
{
	int err = refresh ? refresh_modules(r) : 0;

	if (!err && !r->o.no_symbols)
		err = write_symbols(r);
	end->events = drain__events(r->drain) - r->file_events;
	return err;
}

/*
 * A rotated trace's next file, from a moment T on (now, less what a CPU's
 * events may lag, and never inside a --budget window whose marks are not
 * written yet): the events before T and the symbols of every stack so far
 * close this file; the next begins with the modules, threads, stacks and
 * names, so that each file stands alone. Blocks allocated before T are not
 * in it: it says so as a -p recording does (TRACE_META_ATTACHED).
 */
static int rotate(struct recording *r, uint64_t now)
{
	uint64_t t = now > REORDER_NS ? now - REORDER_NS : 0, bytes = 0;
	struct trace_end end = { .exit_status = -1 };
	struct utsname u;
	char host[256] = "";
	struct trace_meta m;
	int err;

	if (r->windows && windows__hold_ns(r->windows) < t)
		t = windows__hold_ns(r->windows);
	err = drain__flush(r->drain, t);
	if (!err)
		err = close_file_records(r, true, &end);
	end.end_mono_ns = t;
	if (!err)
		err = trace_writer__close_sized(r->w, &end, &bytes);
	else
		trace_writer__abort(r->w);
	r->w = NULL;
	if (err)
		return fail("failed to write %s: %s", r->output, strerror(-err));
	r->file_events = drain__events(r->drain);
	fill_meta(r, &m, &u, host, sizeof(host));
	m.flags |= TRACE_META_ATTACHED;
	m.start_mono_ns = t;
	m.start_real_ns = r->start_real_ns + (t - r->start_ns);
	rotated_output(r);
	if ((err = open_writer(r, &m, true)))
		return err;
	r->next_rotate_ns = now + (uint64_t)(r->o.rotate_sec * 1e9);
	return keep_file(r) ? fail("out of memory") : 0;
}

/*
 * --preload --follow-children: the memory the process makes for itself (a
 * forked child, a program exec'd: each waits for this), or, for the first
 * process, the one the supervisor made, at the same descriptor in ours.
 * Looked for at each poll until found.
 */
static void adopt_memory(struct recording *r)
{
	int err;

	if (r->pre_done)
		return;
	err = preload__adopt(&r->pre, r->o.preload_root ? -1 : r->pidfd, r->o.preload_fd, r->pid);
	if (!err && r->pre_stop_only)
		preload__stop(&r->pre);
	else if (!err && r->unwinder)
		publish_unwind(r); /* the tables its recorder has: until now it walked frame pointers */
	if (err && err != -EAGAIN) {
		r->pre_done = true; /* gone: nothing to read */
		if (err != -ESRCH)
			fprintf(stderr, "memtrace: warning: PID %d's --preload memory cannot be read (%s); its allocations are not recorded\n",
				r->pid, strerror(-err));
	}
}

static int record_loop(struct recording *r)
{
	uint64_t deadline = r->o.duration > 0 ? r->start_ns + (uint64_t)(r->o.duration * 1e9) : UINT64_MAX;
	uint64_t next_flush = r->start_ns + FLUSH_NS, next_modules = 0;
	const char *step = NULL; /* what failed, when it has not said so itself */
	int err = 0;

	while (!stop_signal && !err) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		uint64_t mark;

		if (t0 >= deadline || target_gone(r) || creds_crossed(r))
			break;
		step = "reading its resident memory (--rss)";
		if (r->o.rss && t0 >= r->next_rss_ns && (err = sample_rss(r, t0)))
			break;
		if (r->windows && windows__step(r->windows, t0)) {
			if (target_gone(r))
				break;
			err = fail("failed to attach a --budget window to PID %d", r->pid);
			break;
		}
		step = "taking events from the rings";
		if (r->windows)
			err = loader__poll_until(r->loader, windows__wake_ns(r->windows, t0, WINDOWS_POLL_NS));
		else
			err = loader__poll(r->loader, r->o.preload ? PRELOAD_POLL_MS : POLL_MS);
		if (!err && (r->o.preload || r->pre_stop_only) && !r->pre.hdr)
			adopt_memory(r);
		if (!err && r->o.preload)
			err = preload__poll(&r->pre, on_record, r->drain);
		mark = t0 > REORDER_NS ? t0 - REORDER_NS : 0;
		if (r->windows && windows__hold_ns(r->windows) < mark)
			mark = windows__hold_ns(r->windows);
		/* While probes are attached (a window or its tail) events are only
		 * taken from the rings (cheap, and no drop): handing them on (a
		 * flood of new stacks into a live view) waits for the pause, so it
		 * cannot keep the probes attached past their cost. */
		step = "handing events on to the trace";
		if (!err && !(r->windows && windows__attached(r->windows)))
			err = drain__flush(r->drain, mark);
		step = "looking at the libraries it loaded";
		if (!err && loader__link_map_changed(r->loader))
			err = refresh_modules(r);
		step = NULL;
		if (!err && r->o.rotate_sec > 0 &&
		    (t0 >= r->next_rotate_ns || (r->o.rotate_bytes && trace_writer__bytes(r->w) >= r->o.rotate_bytes)) &&
		    !(r->windows && windows__attached(r->windows)))
			err = rotate(r, t0);
		if (!err && t0 >= next_flush) {
			step = "looking at the libraries it loaded";
			if (t0 >= next_modules) {
				err = refresh_modules(r);
				next_modules = t0 + (r->windows ? WINDOWS_MODULES_NS : 0);
			}
			step = NULL;
			if (!err)
				err = trace_writer__flush(r->w);
			next_flush = t0 + FLUSH_NS;
		}
		if (!err && r->view && r->view->tick) {
			struct record_live l = live_of(r);

			err = r->view->tick(r->view->ctx, &l, t0);
			if (err > 0) {
				r->view_quit = true;
				err = 0;
				break;
			}
		}
	}
	if (r->view && r->view->line_on_stderr)
		fprintf(stderr, "\r\033[K");
	/* A step that failed without a word of its own (a write error is
	 * finish's to say): the trace stops here and is closed with what came
	 * before, and the user is told. */
	if (err < -1 && step && !(r->w && trace_writer__error(r->w)))
		fail("recording of PID %d stopped early, %s: %s; the trace holds what came before", r->pid, step,
		     strerror(-err));
	return err;
}

struct symbolize_ctx {
	struct symbolizer *s;
	struct trace_writer *w;
	struct python *py;
};

static int symbolize_one(void *ctx, uint64_t addr)
{
	struct symbolize_ctx *c = ctx;
	struct trace_symbol sym;

	if (python_is_addr(addr))
		return c->py && !python__resolve(c->py, addr, &sym) ? trace_writer__add_symbol(c->w, &sym) : 0;
	if (symbolizer__resolve(c->s, addr, &sym))
		return 0;
	return trace_writer__add_symbol(c->w, &sym);
}

static int write_symbols(struct recording *r)
{
	char root[64];
	struct symbolize_ctx c = { .w = r->w, .py = r->py };
	int err;

	snprintf(root, sizeof(root), "/proc/self/fd/%d", r->rootfd);
	c.s = r->warm_symbols ? r->warm_symbols : symbolizer__new_target(r->rootfd >= 0 ? root : NULL);
	if (!c.s)
		return -ENOMEM;
	for (size_t i = 0; i < r->modules.nr; i++) {
		const struct trace_module *m = &r->modules.mods[i];
		char *file = procmaps__held_file(r->pid, m->path, m->build_id, m->build_id_len);

		/* No file held (not reached as the file mapped): its debug file by
		 * build-id, or module+offset; never the path by name. */
		symbolizer__add_mapped_module(c.s, m, file);
		free(file);
	}
	err = drain__for_each_address(r->drain, symbolize_one, &c);
	/* The copy of the supervisor's symbolizer is not freed: this recorder
	 * exits next, and freeing it would first copy every page of it (a
	 * fifth of a followed recorder's CPU under pgbench -C). */
	if (!r->warm_symbols)
		symbolizer__free(c.s);
	return err;
}

/* Whether PATH can go into a shell command as it is. */
static bool shell_safe(const char *path)
{
	return *path && strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+,:=@-") ==
				strlen(path);
}

/* The one line that ends a recording: where the trace is, how big, and
 * what to run next. */
static void announce_trace(const char *path, uint64_t events, uint64_t bytes)
{
	char size[32];

	format_bytes(bytes, size, sizeof(size));
	if (record_output_is_stdout(path)) {
		fprintf(stderr, "memtrace: wrote the trace to stdout (%s, %llu events); next: memtrace report FILE, with the file it went to\n",
			size, (unsigned long long)events);
		return;
	}
	fprintf(stderr, "memtrace: wrote %s (%s, %llu events); next: memtrace report %s%s%s\n", path, size,
		(unsigned long long)events, shell_safe(path) ? "" : "'", path, shell_safe(path) ? "" : "'");
}

/* What --budget did, in one line: the share of time the probes were live
 * and what the controller priced them at. */
static void announce_windows(struct recording *r)
{
	const struct budget *b = &r->windows->ctl;
	double wall = r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) : 1;

	double large = 100.0 * b->large_cost_ns / (b->cpu * wall);
	char follow[64] = "", large_part[64] = "";

	if (r->o.supervisor)
		snprintf(follow, sizeof(follow), ", following it %.2f%%", 100.0 * b->follow_cost_ns / (b->cpu * wall));
	if (b->large_cost_ns > 0)
		snprintf(large_part, sizeof(large_part), ", the large blocks' probes %.2f%%", large);
	fprintf(stderr, "memtrace: --budget %g%%: allocations traced %.2f%% of the time in %llu window%s "
			"(%llu cut short by a burst), frees %.2f%% more; memtrace cost the target about %.2f%% of its "
			"work (the probes %.2f%%%s, the recorder's CPU on a busy host %.2f%%%s)\n",
		r->o.budget, 100.0 * (double)b->live_ns / wall, (unsigned long long)b->windows,
		b->windows == 1 ? "" : "s", (unsigned long long)b->cut_windows, 100.0 * (double)b->tail_ns / wall,
		100.0 * b->cost_ns / (b->cpu * wall),
		100.0 * (b->cost_ns - b->own_cost_ns - b->follow_cost_ns - b->large_cost_ns) / (b->cpu * wall),
		large_part, 100.0 * b->own_cost_ns / (b->cpu * wall), follow);
	/* They are attached throughout: the windows cannot make up for them. */
	if (r->windows->large_end_ns)
		fprintf(stderr, "memtrace: the large blocks' probes alone cost more than --budget %g%% allows (the target "
				"calls the C library's mmap and munmap often: a thread or a mapping a request?): detached "
				"%.1f s in, the large blocks after estimated with the rest; --large 0 spares them from the start\n",
			r->o.budget, (double)(r->windows->large_end_ns - r->windows->started_ns) / 1e9);
	else if (large > BUDGET_AIM * r->o.budget)
		fprintf(stderr, "memtrace: the large blocks' probes alone cost more than --budget %g%% allows: the target "
				"calls the C library's mmap and munmap often (a thread or a mapping a request?); --large 0 "
				"turns them off, its large blocks then estimated with the rest\n",
			r->o.budget);
}

/* Stop the probes, take what is still in the rings, then close the trace
 * with its drops, symbols and END chunk. */
static int finish(struct recording *r)
{
	struct trace_end end = { .exit_status = -1 };
	uint64_t bytes = 0;
	int err;

	loader__set_recording(r->loader, false);
	end.end_mono_ns = r->end_ns = now_ns(CLOCK_MONOTONIC);
	err = r->windows ? windows__finish(r->windows, r->end_ns) : 0;
	if (!err && r->o.rss && !r->target_exited && !(err = sample_rss(r, r->end_ns)) &&
	    !(err = take_resident(r, r->end_ns)))
		err = write_rollup(r);
	/* Detached so that no probe is midway when the rings are read for the
	 * last time. A target that has exited runs none: its links go with the
	 * rest, off the user's clock (teardown_in_child). */
	if (!(r->target_exited && r->o.teardown_detached && !r->o.supervisor))
		loader__detach(r->loader);
	if (!err)
		err = loader__poll(r->loader, 0);
	if (r->o.preload) {
		if (!r->pre.hdr)
			adopt_memory(r);
		preload__stop(&r->pre);
		if (!err)
			err = preload__poll(&r->pre, on_record, r->drain);
	}
	if (!err)
		err = drain__flush(r->drain, UINT64_MAX);
	for (int cpu = 0; !err && cpu < loader__nr_cpus(r->loader); cpu++) {
		struct trace_drops d = { .cpu = cpu, .count = loader__drops(r->loader, cpu) };

		/* --preload's lost records are CPU 0's: the threads' rings have no CPU */
		if (cpu == 0 && r->o.preload)
			d.count += preload__lost(&r->pre);
		end.dropped += d.count;
		if (d.count)
			err = trace_writer__add_drops(r->w, &d);
	}
	if (!err)
		err = close_file_records(r, !r->target_exited, &end);
	end.flags = r->target_exited ? TRACE_END_TARGET_EXITED : 0;
	if (!r->stop_reason[0])
		creds_crossed(r); /* in the last poll */
	if (r->stop_reason[0]) {
		end.flags |= TRACE_END_CREDS_CHANGED;
		end.stop_reason = r->stop_reason;
	}
	end.exit_status = r->exit_status;
	if (r->exits && r->target_exited && !r->stop_reason[0])
		note_death(r, &end);
	if (err) {
		trace_writer__abort(r->w);
		r->w = NULL;
		return fail("failed to write %s: %s; the trace is readable up to the last complete chunk",
			    r->output, strerror(-err));
	}
	err = trace_writer__close_sized(r->w, &end, &bytes);
	r->w = NULL;
	if (err)
		return fail("failed to finish %s: %s", r->output, strerror(-err));
	if (end.dropped)
		fprintf(stderr, "memtrace: %llu events dropped; use a larger --buffer-size\n",
			(unsigned long long)end.dropped);
	if (r->o.verbose && r->o.preload) {
		uint64_t threads, waits;

		preload__counts(&r->pre, &threads, &waits);
		fprintf(stderr, "memtrace: --preload: %llu records from %llu thread ring%s (%s clock), %llu waits for a full ring, %llu lost\n",
			(unsigned long long)r->pre.records, (unsigned long long)threads, threads == 1 ? "" : "s",
			r->pre.tsc ? "TSC" : "CLOCK_MONOTONIC", (unsigned long long)waits,
			(unsigned long long)preload__lost(&r->pre));
	}
	if (r->o.verbose || r->o.verbose_counts) {
		uint64_t by_lane, by_ring;
		char who[32] = ""; /* a followed process's line says whose it is */

		if (r->o.verbose_counts)
			snprintf(who, sizeof(who), "PID %d: ", r->o.pid);
		loader__lane_counts(r->loader, &by_lane, &by_ring);
		fprintf(stderr, "memtrace: %s%llu allocation and free records by the lanes, %llu by the ring buffers\n", who,
			(unsigned long long)by_lane, (unsigned long long)by_ring);
	}
	if (r->o.verbose && r->forks.children)
		fprintf(stderr, "memtrace: %llu forked process%s not recorded, %llu with the probes' breakpoints taken out (%llu in all), in %.1f ms\n",
			(unsigned long long)r->forks.children, r->forks.children == 1 ? "" : "es",
			(unsigned long long)r->forks.cleaned, (unsigned long long)r->forks.restored, (double)r->forks.ns / 1e6);
	if (r->o.verbose) {
		uint64_t from_template, walked;

		loader__stack_counts(r->loader, &from_template, &walked);
		fprintf(stderr, "memtrace: %llu stacks from templates, %llu walked by unwind tables\n",
			(unsigned long long)from_template, (unsigned long long)walked);
	}
	if (r->windows)
		announce_windows(r);
	if (!r->o.discard_output)
		announce_trace(r->output, end.events, bytes);
	return 0;
}

/* A command we started: wait for it and pass on how it ended. */
static int command_status(struct recording *r)
{
	int status = r->exit_status;

	if (r->child.pid > 0 && waitpid(r->child.pid, &status, 0) < 0)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

static void install_signals(bool forward)
{
	struct sigaction sa = { .sa_handler = on_signal };
	sigset_t stop;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A --follow-children recorder starts with every signal blocked, so
	 * that a stop sent before this point waits for our handler. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_UNBLOCK, &stop, NULL);
}

/* A --follow-children recorder ends with its supervisor, however that dies
 * (SIGKILL included): the kernel sends SIGTERM, which finishes the trace
 * and detaches. Set here, after the exec: an exec of a file with
 * capabilities (a setcap'd memtrace) clears the parent-death signal. */
static int watch_supervisor(struct recording *r)
{
	prctl(PR_SET_NAME, "memtrace-rec");
	if (prctl(PR_SET_PDEATHSIG, SIGTERM))
		return fail("failed to watch the supervisor: %s", strerror(errno));
	if (getppid() != r->o.supervisor)
		return fail("the supervisor (PID %d) is gone; not recording", r->o.supervisor);
	return 0;
}

static void cleanup(struct recording *r, bool failed)
{
	if (!r->loader && r->o.prepared) {
		loader__close(r->o.prepared); /* never taken over: nothing stays attached */
		mark_finder__free(r->o.prepared_marks);
		r->marks = NULL;
	}
	if (r->w) {
		trace_writer__abort(r->w);
		if (!record_output_is_stdout(r->output) && !r->o.discard_output)
			unlink(r->output); /* nothing was recorded: leave nothing behind */
	}
	loader__close(r->loader);
	if (r->windows)
		windows__free(r->windows);
	free(r->windows);
	drain__free(r->drain);
	for (size_t i = 0; i < r->nr_kept; i++)
		free(r->kept[i]);
	free(r->kept);
	rss_resident_free(&r->resident);
	probe_set__free(&r->probes);
	procmaps__free(&r->maps);
	module_set__free(&r->modules);
	mark_finder__free(r->marks);
	if (r->held_files)
		procmaps__release(r->pid);
	map_wrappers__free(&r->wrappers);
	fork_clean__free(&r->forks);
	unwinder__free(r->unwinder);
	python__free(r->py);
	free_strings(r->alloc_files, r->nr_alloc_files);
	if (failed && (r->child.traced || r->child.go_fd >= 0))
		launcher__kill(&r->child);
	launcher__drop_probes(&r->child);
	launcher__close(&r->child);
	if (r->pidfd > 0)
		close(r->pidfd);
	if (r->rootfd >= 0)
		close(r->rootfd);
	exit_watch__free(r->exits);
	free(r->cmdline);
	preload__close(&r->pre);
	preload__environ_free(r->pre_env);
}

/*
 * The trace is complete and the command's status known. What is left is the
 * kernel's: releasing the uprobe links and the rings' maps waits on RCU
 * grace periods, one after another (90 ms of link closes and 60 ms of map
 * deletes after `record -- /bin/true` here, against 0.4 s in all). A child
 * that shares every descriptor does it, by exiting: ours then only drop a
 * reference when we exit, and the user's shell has its prompt back. It
 * keeps no terminal and writes nothing. Whether a child took it.
 */
static bool teardown_in_child(struct recording *r)
{
	int null, hold[2];
	pid_t pid;
	char c;

	fflush(stdout);
	fflush(stderr);
	if (pipe2(hold, O_CLOEXEC))
		return false;
	pid = fork();
	if (pid < 0) {
		close(hold[0]);
		close(hold[1]);
		return false;
	}
	if (pid > 0) {
		close(hold[0]); /* hold[1] goes with our exit */
		return true;
	}
	close(hold[1]);
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	/* Its exit is the teardown: closing the last reference to each link
	 * and map releases it, as cleanup() would, without anything of ours
	 * that runs in the parent (the loader's closer threads are not here:
	 * waiting for them hung, f03e3ca). The last reference, not the
	 * parent's: a uprobe link's release waits for the kernel's grace
	 * periods (synchronize_rcu_tasks_trace, 200-300 ms here), and a
	 * parent that exited after this child paid it on the user's clock (a
	 * third of record -- /bin/true runs took 0.3-0.4 s instead of 0.1).
	 * The pipe's end is the parent's exit: its references were all
	 * dropped before the end of file is seen. */
	while (read(hold[0], &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

int record_run(struct record_opts *o, const struct record_view *view)
{
	struct recording r = { .o = *o, .view = view, .pidfd = -1, .rootfd = -1, .exit_status = -1, .pre = { .fd = -1 },
			       .child = { .pid = -1, .go_fd = -1, .err_fd = -1, .keep_fd = -1, .link_fds = { -1, -1 } } };
	int err = 0;

	install_signals(r.o.cmd != NULL);
	if (view) {
		r.tap = view->tap;
		r.tap_ctx = view->tap_ctx ? view->tap_ctx : view->ctx;
	}
	if (r.o.supervisor)
		err = watch_supervisor(&r);
	if (!err)
		err = check_system();
	if (!err && r.o.follow)
		return record_follow(&r.o);
	if (!err)
		watch_exits(&r);
	if (r.o.cmd) {
		/* Everything that can be checked is, before the command runs. */
		if (!err)
			err = check_command(&r);
		if (!err && r.o.preload)
			err = setup_preload(&r);
		if (!err)
			err = check_output_early(&r);
		if (!err)
			err = load_launcher(&r);
		if (!err)
			err = load_probes(&r);
		if (!err)
			err = start_command(&r);
	} else {
		if (!err)
			err = find_process(&r);
	}
	if (!err)
		err = watch_target(&r);
	if (!err && r.o.preload && r.o.supervisor)
		check_followed_program(&r);
	if (!err)
		load_probes_begin(&r);
	if (!err)
		err = bind_probes(&r);
	if (!err)
		err = check_output(&r);
	err = load_probes_end(&r, !err) || err;
	if (!err && !r.loader)
		err = load_probes(&r);
	if (!err)
		err = attach_probes(&r);
	if (!err)
		watch_end(&r);
	/* A followed process is held until its supervisor reads "attached":
	 * it goes on once its probes are live, and the trace is opened while
	 * it runs (its first events wait in the rings). The output was checked
	 * above; should opening it fail now, the process runs on untraced. */
	bool released = !err && r.o.supervisor;

	if (released) {
		mark_start(&r);
		loader__set_recording(r.loader, true);
		announce(&r);
	}
	if (!err)
		err = open_output(&r);
	if (err) {
		cleanup(&r, true);
		if (view && view->done)
			view->done(view->ctx, NULL);
		return 1;
	}
	let_pidfd_go(&r); /* before "attached": a reader of it counts what is held after */
	if (!released)
		announce(&r);
	/* the target's end stops the loop at once, not at the poll's timeout
	 * (record -- /bin/true waited 10 ms for it) */
	if (r.pidfd >= 0)
		loader__poll_wake(r.loader, r.pidfd);
	if (launcher__release(&r.child))
		fail("failed to let '%s' run: %s", r.o.cmd[0], strerror(errno));
	err = record_loop(&r);
	if ((stop_signal || r.view_quit) && r.child.pid > 0)
		kill(r.child.pid, stop_signal ? stop_signal : SIGTERM); /* our command stops with us */
	err = finish(&r) || err;
	if (view && view->done) {
		struct record_live l = live_of(&r);

		view->done(view->ctx, &l);
	}
	/* A command still running (the recording failed: a full disk) goes on
	 * untraced, so its probes go now, on our clock; so do a followed
	 * process's recorder's, which its supervisor waits for. */
	if (!(r.o.teardown_detached && !r.o.supervisor && (!r.o.cmd || r.child.pid <= 0) && teardown_in_child(&r)))
		cleanup(&r, false);
	if (r.o.cmd) {
		/* Recording failed (a full disk): the command still runs to its end. */
		int status = command_status(&r);

		return err ? 1 : r.view_quit ? 0 : status; /* q in top is no failure */
	}
	return err ? 1 : 0;
}
