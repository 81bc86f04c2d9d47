// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace record --follow-children (-- CMD | -p PID): this process only
 * supervises.
 * It keeps the command's process tree under ptrace (fork, vfork, clone and
 * exec events; nothing per allocation), and gives every process, and every
 * program a process execs, a recorder of its own: the `memtrace record -p
 * PID` path, writing its own trace. The BPF programs are loaded and verified
 * once, here, before anything is held: each recorder is forked from this
 * process and records in a slot of that one object (loader__add_target), so
 * a new process is held only while its probes are placed and attached, never
 * while a verifier runs.
 */
#include "launcher.h"
#include "loader.h"
#include "preload.h"
#include "procmaps.h"
#include "record.h"
#include "record_setup.h"
#include "util.h"
#include "windows.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACE_OPTIONS (PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)

struct tracee {
	pid_t tid;      /* a thread under ptrace */
	pid_t tgid;     /* its process */
	bool process;   /* the process's first thread: it owns the recorder */
	pid_t recorder; /* memtrace record -p TGID, or 0 */
	uint32_t slot;  /* the recorder's slot in the loaded object; 0: none */
	const struct record_binding *binding; /* its program's allocator functions (f->bindings owns it) */
	pid_t parent;   /* the process it was forked from; 0: none we follow, or it exec'd since */
	int err_fd;     /* the recorder's stderr, while we wait for it to attach; -1 after */
	int execs;      /* programs this process ran since it was born */
};

/* A recorder whose process ended: it finishes its trace while we go on
 * following the others; its slot is taken until we collect it. */
struct finishing {
	pid_t pid;
	int err_fd;
	uint32_t slot;
};

/* Slots whose rings are made ahead, together: putting rings in place waits
 * for the kernel (an RCU grace period, 9 ms here), once for any number. */
#define FOLLOW_SPARES LOADER_MAX_SPARES

struct follow {
	const struct record_opts *o;
	struct record_opts own_o;  /* o, as this run may change it (--preload falling back) */
	struct preload pre;        /* --preload: the first process's memory (each later one makes its own) */
	char **pre_env;            /* ... and the command's environment */
	pid_t supervisor;         /* our pid: recorders watch it */
	struct launcher launcher; /* holds every new program after linking */
	bool seized;     /* -p: we joined a running process, and leave it running */
	struct tracee *v;
	size_t nr;
	pid_t root;
	int root_status;
	bool root_done;
	struct loader *loader;    /* the one loaded object every recorder shares */
	uint32_t max_slots;
	bool *slot_used;          /* slot 0 is the loader's own, never a target's */
	double hit_entry_ns, hit_return_ns; /* --budget: a probe hit, timed once for every recorder */
	double follow_ns;         /* our CPU time per process followed (start_recorder's), its running mean */
	uint64_t followed;        /* processes start_recorder was called for */
	struct record_binding **bindings; /* one per program seen: a forked child shares its parent's */
	size_t nr_bindings;
	uint32_t spares[FOLLOW_SPARES]; /* slots taken ahead, their rings in place (loader__spare_rings) */
	int nr_spares;
	struct finishing *fin; /* recorders whose process has ended, still writing their traces */
	size_t nr_fin, cap_fin;
	struct deferred *def;  /* stops seen while waiting for a slot, handled next (supervise) */
	size_t nr_def, cap_def;
};

struct deferred {
	pid_t tid;
	int status;
};

#define FOLLOW_SLOTS 256       /* processes recorded at once */

/* FOLLOW_SLOTS, or fewer for tests (MEMTRACE_FOLLOW_SLOTS=N, at least 2:
 * the loader's own and one), to run out of them on purpose. */
static uint32_t follow_slots(void)
{
	const char *v = getenv("MEMTRACE_FOLLOW_SLOTS");
	long n = v ? strtol(v, NULL, 10) : 0;

	return n >= 2 && n < FOLLOW_SLOTS ? (uint32_t)n : FOLLOW_SLOTS;
}
#define FOLLOW_RING_BYTES (1 << 20) /* per CPU per process, unless --buffer-size says */

/* A followed process's ring size: a server forks many, so 1 MiB a CPU each
 * unless --buffer-size asks. */
static uint64_t follow_ring_bytes(const struct record_opts *o)
{
	return !o->ring_bytes_given && o->ring_bytes > FOLLOW_RING_BYTES ? FOLLOW_RING_BYTES : o->ring_bytes;
}

static volatile sig_atomic_t follow_signal;

static void follow_on_signal(int sig)
{
	follow_signal = sig;
}

static struct tracee *find(struct follow *f, pid_t tid)
{
	for (size_t i = 0; i < f->nr; i++) {
		if (f->v[i].tid == tid)
			return &f->v[i];
	}
	return NULL;
}

static struct tracee *add(struct follow *f, pid_t tid, pid_t tgid)
{
	struct tracee *v = realloc(f->v, (f->nr + 1) * sizeof(*v));

	if (!v)
		return NULL;
	f->v = v;
	v[f->nr] = (struct tracee){ .tid = tid, .tgid = tgid, .process = tid == tgid, .err_fd = -1 };
	return &v[f->nr++];
}

/* The allocator functions of TGID's program, found once here so that every
 * process forked from it is held only while its probes are attached. */
static const struct record_binding *bind_program(struct follow *f, pid_t tgid)
{
	struct record_binding *b = record_bind(f->o, tgid), **v;

	if (!b)
		return NULL; /* its recorder searches itself, and says what failed */
	v = realloc(f->bindings, (f->nr_bindings + 1) * sizeof(*v));
	if (!v) {
		record_binding__free(b);
		return NULL;
	}
	f->bindings = v;
	f->bindings[f->nr_bindings++] = b;
	return b;
}

/* The binding of the process TGID belongs to (NULL: none known). */
static const struct record_binding *binding_of(struct follow *f, pid_t tgid)
{
	for (size_t i = 0; i < f->nr; i++)
		if (f->v[i].tid == tgid)
			return f->v[i].binding;
	return NULL;
}

static pid_t proc_status_field(pid_t tid, const char *field)
{
	char path[64], line[256], fmt[32];
	FILE *fp;
	int v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	snprintf(fmt, sizeof(fmt), "%s: %%d", field);
	fp = fopen(path, "re");
	while (fp && fgets(line, sizeof(line), fp)) {
		if (sscanf(line, fmt, &v) == 1)
			break;
	}
	if (fp)
		fclose(fp);
	return v;
}

static pid_t tgid_of(pid_t tid)
{
	pid_t tgid = proc_status_field(tid, "Tgid");

	return tgid > 0 ? tgid : tid;
}

/* The root's first program writes to -o FILE (or the default name); every
 * other process or program to FILE.PID[.N].mtrace beside it. COMM: the
 * process's name as read while it was held (NULL: read it now). */
static void output_name(struct follow *f, const struct tracee *t, const char *comm, char *buf, size_t cap)
{
	char own[64], base[PATH_MAX];
	size_t len;

	if (!f->o->output) {
		/* the target's: "/../x" would be a path */
		if (comm)
			snprintf(own, sizeof(own), "%s", comm);
		else
			read_proc_string(t->tgid, "comm", own, sizeof(own));
		comm_file_safe(own);
	}
	if (f->o->output) {
		snprintf(base, sizeof(base), "%s", f->o->output);
		len = strlen(base);
		if (len > 7 && !strcmp(base + len - 7, ".mtrace"))
			base[len - 7] = 0;
	} else {
		snprintf(base, sizeof(base), "memtrace.%s", own);
	}
	if (f->o->output && t->tgid == f->root && !t->execs)
		snprintf(buf, cap, "%s", f->o->output);
	else if (t->execs)
		snprintf(buf, cap, "%s.%d.%d.mtrace", base, t->tgid, t->execs);
	else
		snprintf(buf, cap, "%s.%d.mtrace", base, t->tgid);
}

/* Copy what a recorder said (after its "attached" line) to our stderr. */
static void relay(int fd)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(STDERR_FILENO, buf, n) < 0)
			break;
}

static uint32_t take_slot(struct follow *f)
{
	for (uint32_t i = 1; i < f->max_slots; i++) {
		if (!f->slot_used[i]) {
			f->slot_used[i] = true;
			return i;
		}
	}
	return 0;
}

struct recorder_thread {
	struct record_opts o;
	int status;
};

/* Every signal blocked, as forked: record_run unblocks SIGINT and SIGTERM
 * once its handlers are in place (a stop sent sooner waits for them). */
static void *recorder_main(void *arg)
{
	struct recorder_thread *rt = arg;

	rt->status = record_run(&rt->o, NULL);
	return NULL;
}

/* Take slots for the next processes and make their rings of RING_BYTES now,
 * all at once, when none are left: a server forking a process per
 * connection (PostgreSQL) then waits for the kernel once per FOLLOW_SPARES
 * connections, not twice for each (its child's exit reaches it only once we
 * have seen it, and we are not seeing anything while we wait). */
static void spare_slots(struct follow *f, uint64_t ring_bytes)
{
	int taken = 0;
	bool made;

	if (f->nr_spares)
		return;
	while (taken < FOLLOW_SPARES && (f->spares[taken] = take_slot(f)))
		taken++;
	made = taken && !loader__spare_rings(f->loader, ring_bytes, f->spares, taken);
	/* keep the slots whose rings were made (as many as the loader's
	 * memory cap allows), free the rest */
	for (int i = 0; i < taken; i++) {
		if (made && loader__spare_has(f->loader, f->spares[i]))
			f->spares[f->nr_spares++] = f->spares[i];
		else
			f->slot_used[f->spares[i]] = false;
	}
}

/* The slot for a new process: a spare one if any is left, else a new one. */
static uint32_t next_slot(struct follow *f)
{
	while (f->nr_spares) {
		uint32_t slot = f->spares[--f->nr_spares];

		if (loader__spare_has(f->loader, slot))
			return slot;
		f->slot_used[slot] = false; /* its rings went (made for another size) */
	}
	return take_slot(f);
}

/* The recorder of T, in this forked process: record_run as `memtrace
 * record -p TGID -o OUT` would, on the supervisor's loaded object.
 *
 * It runs on a thread of its own, so that its allocations come from a new
 * malloc arena: on the main arena, inherited from the supervisor, every
 * allocation reused a free chunk on a page the fork shares, and copying
 * those pages was a third of a recorder's CPU under pgbench -C. The first
 * thread only waits, every signal blocked, so signals reach the recorder.
 * ERR_FD: where it speaks (-1: our stderr). */
static void run_recorder(struct follow *f, const struct record_opts *ro, int err_fd)
{
	static struct recorder_thread rt;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	pthread_t th;

	loader__spare_close(f->loader); /* the supervisor's, for the next process */
	dup2(null, STDIN_FILENO);
	dup2(null, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	signal(SIGALRM, SIG_DFL);
	rt.o = *ro;
	prctl(PR_SET_NAME, "memtrace-rec"); /* the process's name is its first thread's */
	if (pthread_create(&th, NULL, recorder_main, &rt))
		_exit(record_run(&rt.o, NULL)); /* on the main arena, then */
	pthread_join(th, NULL);
	_exit(rt.status);
}

static void reap_recorder(struct follow *f, struct tracee *t);
static bool collect_finished(struct follow *f, pid_t pid);
static void on_exit_of(struct follow *f, pid_t tid, int status);

#define SLOT_WAIT_MS 100 /* for the end of a process whose recorder would free one */

static int stop_signal_of(int status);

/* A stop seen while waiting for a slot: handled by supervise() next. */
static void defer_stop(struct follow *f, pid_t tid, int status)
{
	if (f->nr_def == f->cap_def) {
		size_t cap = f->cap_def ? 2 * f->cap_def : 8;
		struct deferred *v = realloc(f->def, cap * sizeof(*v));

		if (!v) { /* out of memory: it goes on, its signal delivered */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(long)stop_signal_of(status));
			return;
		}
		f->def = v;
		f->cap_def = cap;
	}
	f->def[f->nr_def++] = (struct deferred){ tid, status };
}

/*
 * A slot for a new process's recorder, waiting for one where every slot is
 * taken: in a storm of short processes most are held by recorders whose
 * process has ended, still writing their traces (80 of 2000 children went
 * unrecorded on a loaded host). The oldest such recorder is waited for; with
 * none, the ends of processes not seen yet (each moves its recorder there),
 * for SLOT_WAIT_MS at most, other stops put aside. 0: none came (every slot
 * held by a process that runs on). The process is held meanwhile.
 */
static uint32_t slot_for(struct follow *f)
{
	uint32_t slot = next_slot(f);
	int status, naps = 0;
	pid_t got;

	while (!slot) {
		if (f->nr_fin) {
			pid_t pid = f->fin[0].pid;

			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			collect_finished(f, pid);
		} else {
			got = waitpid(-1, &status, WNOHANG | __WALL);
			if (got < 0 && errno != EINTR)
				return 0;
			if (got <= 0) {
				if (naps++ >= SLOT_WAIT_MS * 5)
					return 0;
				usleep(200);
				continue;
			}
			if (WIFSTOPPED(status))
				defer_stop(f, got, status);
			else if (!collect_finished(f, got))
				on_exit_of(f, got, status);
		}
		slot = next_slot(f);
	}
	return slot;
}

/* The slot of the recorded process T was forked from, or 0. */
static uint32_t parent_slot(struct follow *f, const struct tracee *t)
{
	const struct tracee *p = t->parent > 0 ? find(f, t->parent) : NULL;

	return p && p->process && p->recorder > 0 ? p->slot : 0;
}

/* Start T's recorder; T goes on once its probes are live. A process forked
 * from one we record, of the same program, is attached here (record_prepare:
 * a millisecond or so) and let go on at once, its recorder taking over: 1.
 * Any other waits until its recorder says "attached": 0, still stopped for
 * the caller to resume. -1 after printing what the recorder said (T then
 * runs untraced once resumed). */
static int start_recorder_once(struct follow *f, struct tracee *t)
{
	char out[PATH_MAX], line[1024];
	struct record_opts o = *f->o;
	size_t len = 0;
	int fds[2] = { -1, -1 };
	bool released = false;
	sigset_t all, mask;
	char c;

	pid_t tid = t->tid;
	uint32_t slot = slot_for(f);

	t = find(f, tid); /* waiting for a slot may have seen processes end */
	if (!t) {
		if (slot)
			f->slot_used[slot] = false;
		return -1; /* it ended meanwhile (killed) */
	}
	t->slot = slot;
	if (!t->slot)
		return fail("not recording PID %d: %u processes are recorded already, the most one memtrace follows at once",
			    t->tgid, f->max_slots - 1);
	o.pid = t->tgid;
	o.cmd = NULL;
	o.output = out; /* named below: not while the process is held */
	o.follow = false;
	o.verbose = false;
	o.verbose_counts = f->o->verbose;
	o.duration = 0; /* the supervisor stops us */
	o.supervisor = (int)f->supervisor;
	o.shared_loader = f->loader;
	o.slot = t->slot;
	o.binding = t->binding;
	o.hit_entry_ns = f->hit_entry_ns;
	o.hit_return_ns = f->hit_return_ns;
	o.follow_cost_ns = (uint64_t)f->follow_ns;
	/* --preload: the memory the process makes at the descriptor the first
	 * one got ours at; the first process's is ours */
	o.preload_fd = f->pre.fd;
	o.preload_root = t->tgid == f->root && !t->execs;
	o.ring_bytes = follow_ring_bytes(&o);
	if (!record_prepare(&o, f->loader, t->slot, parent_slot(f, t), t->binding, t->tgid)) {
		released = !ptrace(PTRACE_CONT, t->tid, NULL, NULL); /* on its way: its probes are live */
		/* the CPU to it first: woken on ours, it would wait for what
		 * follows here (the recorder's fork) */
		sched_yield();
		/* failed (out of descriptors): its recorder does it all again */
		record_prepare_watch(&o, t->tgid, t->parent);
	}
	/* its name as it was held: it may have exec'd since it went on */
	output_name(f, t, o.prepared ? o.prepared_comm : NULL, out, sizeof(out));
	if (!o.prepared && pipe2(fds, O_CLOEXEC))
		goto failed;
	loader__spare_drop(f->loader, t->slot); /* unless taken above, its recorder makes its own */
	/* the recorder starts with every signal blocked (run_recorder) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &mask);
	t->recorder = fork();
	if (t->recorder == 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		run_recorder(f, &o, fds[1]);
	}
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	if (fds[1] >= 0)
		close(fds[1]);
	/* the recorder has its own copy of what was prepared; ours goes (all
	 * of it, detached, if there is no recorder to take it) */
	record_prepared_release(&o, t->recorder < 0);
	spare_slots(f, o.ring_bytes); /* the next processes', made while none waits */
	if (t->recorder < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		goto failed;
	}
	t->err_fd = fds[0];
	if (t->err_fd < 0)
		return released;
	for (;;) {
		ssize_t n = read(t->err_fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue; /* a signal for the supervisor: supervise() acts on it */
		if (n != 1)
			break;
		if (c != '\n' && len < sizeof(line) - 1) {
			line[len++] = c;
			continue;
		}
		line[len] = 0;
		fprintf(stderr, "%s\n", line);
		if (!strncmp(line, "memtrace: attached", 18))
			return 0;
		len = 0;
	}
	reap_recorder(f, t);
	return -1; /* it said why on the way out */
failed:
	f->slot_used[t->slot] = false;
	t->slot = 0;
	t->recorder = 0;
	return fail("failed to start a recorder for PID %d: %s", t->tgid, strerror(errno));
}

/* ... and what that costs us, measured for --budget to charge the next:
 * the whole of it, the recorder's fork and the next processes' rings
 * included, which a recorder forked in the middle cannot be told. */
static int start_recorder(struct follow *f, struct tracee *t)
{
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	int ret = start_recorder_once(f, t);
	double used = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - t0);

	f->followed++;
	f->follow_ns += (used - f->follow_ns) / (double)f->followed;
	return ret;
}

/* Load and verify the BPF programs once, for every recorder to come. */
static int load_shared(struct follow *f)
{
	struct loader_opts lo;
	int err;

	record_loader_opts(f->o, &lo);
	lo.pid = 0;          /* no process of its own: slot 0 stays empty */
	lo.ring_bytes = 4096; /* ... and its rings unused */
	/* the lanes are a load's: sized for its processes' rings (start_recorder) */
	lo.lane_ring_bytes = follow_ring_bytes(f->o);
	lo.max_targets = follow_slots();
	lo.python_walk = !getenv("MEMTRACE_NO_PYTHON"); /* any program a child execs may be Python */
	f->max_slots = lo.max_targets;
	f->slot_used = calloc(f->max_slots, sizeof(*f->slot_used));
	if (!f->slot_used)
		return fail("out of memory");
	err = loader__open(&f->loader, &lo);
	if (!err)
		err = loader__load(f->loader);
	if (err == -EPERM || err == -EACCES)
		return fail("failed to load the BPF programs: %s; run as root or with CAP_BPF and CAP_PERFMON",
			    strerror(-err));
	if (err)
		return fail("failed to load the BPF programs: %s", strerror(-err));
	/* --budget: a probe hit is timed once, here, not by every recorder
	 * while its process is held */
	if (f->o->budget) {
		struct budget_cost c;

		err = windows__calibrate(f->loader, &c);
		if (err)
			return fail("failed to time a probe hit on this host for --budget: %s", strerror(-err));
		f->hit_entry_ns = c.entry_ns;
		f->hit_return_ns = c.return_ns;
	}
	/* Thread names come from tracepoints, attached once for every recorder. */
	if (!f->o->empty_probes && loader__attach_thread_names(f->loader))
		fprintf(stderr, "memtrace: warning: threads started or renamed from now on keep no name\n");
	err = f->o->empty_probes ? 0 : loader__attach_maps(f->loader);
	if (err)
		return fail("failed to trace the calls that map memory for --rss: %s", strerror(-err));
	if (!f->o->empty_probes && (err = loader__attach_large(f->loader)))
		return fail("failed to trace the calls that map memory for --budget: %s", strerror(-err));
	return 0;
}

/* T's recorder has ended (or never started): collect what it said, and
 * its slot is free again (it left the object's target map on its way out). */
static void reap_recorder(struct follow *f, struct tracee *t)
{
	if (t->recorder > 0)
		waitpid(t->recorder, NULL, 0);
	if (t->err_fd >= 0) {
		relay(t->err_fd);
		close(t->err_fd);
	}
	if (t->slot)
		f->slot_used[t->slot] = false;
	t->recorder = 0;
	t->err_fd = -1;
	t->slot = 0;
}

/* Stop T's recorder (its process exec'd, or we stop) and wait for its trace. */
static void stop_recorder(struct follow *f, struct tracee *t)
{
	if (t->recorder <= 0)
		return;
	kill(t->recorder, SIGINT);
	reap_recorder(f, t);
}

/* A thread stopped for the first time: a new process gets its recorder; a
 * new thread of a known process just goes on. */
static void on_stop(struct follow *f, pid_t tid, int status);
static void on_exit_of(struct follow *f, pid_t tid, int status);

/* 1 if TID was let go on (start_recorder), else 0 or -errno: the caller resumes it. */
static int first_stop(struct follow *f, pid_t tid)
{
	pid_t tgid = tgid_of(tid), parent = tid == tgid ? proc_status_field(tid, "PPid") : tgid;
	const struct record_binding *b = binding_of(f, parent);
	struct tracee *t = add(f, tid, tgid);
	int status;

	if (!t)
		return -ENOMEM;
	t->binding = b;
	if (!t->process)
		return 0;
	t->parent = parent;
	/* The parent is held at its fork event, which may wait behind this
	 * stop: let it go on before this child's recorder starts (a server's
	 * next connection must not wait for that). */
	if (parent > 0 && find(f, parent) && waitpid(parent, &status, WNOHANG | __WALL) == parent) {
		if (WIFSTOPPED(status))
			on_stop(f, parent, status);
		else
			on_exit_of(f, parent, status);
		t = find(f, tid); /* the table may have moved */
		if (!t)
			return 0;
	}
	return start_recorder(f, t);
}

static void on_exec(struct follow *f, struct tracee *t)
{
	stop_recorder(f, t);
	t->execs++;
	int err = launcher__stop_after_linking(&f->launcher, t->tid);

	char exe[PATH_MAX] = "";

	if (err) {
		fail("failed to follow PID %d into its new program: could not %s: %s", t->tgid,
		     launcher__step_name(f->launcher.failed_step), strerror(-err));
		return;
	}
	if (f->launcher.at_entry) {
		proc_exe_path(t->tgid, exe, sizeof(exe));
		record_warn_held_at_entry(exe);
	}
	t->binding = bind_program(f, t->tgid); /* a new program */
	t->parent = 0;                         /* which maps nothing of its parent's */
	start_recorder(f, t);
}

/* T's process ended: its recorder goes on the finishing list. 0, or
 * -ENOMEM (then collect it now). */
static int finish_later(struct follow *f, struct tracee *t)
{
	if (f->nr_fin == f->cap_fin) {
		size_t cap = f->cap_fin ? 2 * f->cap_fin : 8;
		struct finishing *v = realloc(f->fin, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->fin = v;
		f->cap_fin = cap;
	}
	f->fin[f->nr_fin++] = (struct finishing){ t->recorder, t->err_fd, t->slot };
	t->recorder = 0;
	t->err_fd = -1;
	t->slot = 0;
	return 0;
}

/* PID, just reaped, was a finishing recorder: relay what it said, free its
 * slot. True if it was one. */
static bool collect_finished(struct follow *f, pid_t pid)
{
	for (size_t i = 0; i < f->nr_fin; i++) {
		if (f->fin[i].pid != pid)
			continue;
		if (f->fin[i].err_fd >= 0) {
			relay(f->fin[i].err_fd);
			close(f->fin[i].err_fd);
		}
		f->slot_used[f->fin[i].slot] = false;
		f->fin[i] = f->fin[--f->nr_fin];
		return true;
	}
	return false;
}

/* Wait for every finishing recorder (we are about to end). */
static void collect_all_finished(struct follow *f)
{
	while (f->nr_fin) {
		pid_t pid = f->fin[0].pid;

		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		collect_finished(f, pid);
	}
}

static void on_exit_of(struct follow *f, pid_t tid, int status)
{
	struct tracee *t = find(f, tid);

	if (tid == f->root) {
		f->root_status = status;
		f->root_done = true;
	}
	if (!t)
		return;
	/* Its recorder notices the exit itself and writes the trace: collected
	 * when it ends (collect_finished), so that no other process waits on
	 * that meanwhile (a server forking a child per connection would). */
	if (t->process && t->recorder > 0 && finish_later(f, t))
		reap_recorder(f, t);
	*t = f->v[--f->nr];
}

/* One ptrace stop of TID. */
static void on_stop(struct follow *f, pid_t tid, int status)
{
	int sig = WSTOPSIG(status), event = status >> 16;
	struct tracee *t = find(f, tid);
	unsigned long msg;

	if (!t) {
		if (first_stop(f, tid) != 1) /* its parent's event may come later */
			ptrace(PTRACE_CONT, tid, NULL, NULL);
		return;
	}
	if (sig == SIGTRAP && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
			       event == PTRACE_EVENT_CLONE)) {
		if (!ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) && !find(f, msg)) {
			pid_t tgid = event == PTRACE_EVENT_CLONE ? t->tgid : (pid_t)msg, parent = t->tgid;
			const struct record_binding *b = binding_of(f, t->tgid);
			struct tracee *child = add(f, msg, tgid); /* T may have moved */

			if (child) {
				child->execs = -1; /* until its first stop */
				child->binding = b; /* a fork maps what its parent maps */
				if (event != PTRACE_EVENT_CLONE)
					child->parent = parent;
			}
		}
		sig = 0;
	} else if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) {
		on_exec(f, t);
		sig = 0;
	} else if ((sig == SIGSTOP || event == PTRACE_EVENT_STOP) && t->execs == -1) {
		t->execs = 0; /* the stop every new thread starts with */
		if (t->process && start_recorder(f, t) == 1)
			return; /* it runs already (and may be stopped again by now) */
		sig = 0;
	} else if (event == PTRACE_EVENT_STOP) {
		sig = 0; /* a group-stop or our interrupt: resume without a signal */
	}
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig); /* deliver what was meant for it */
}

/* Let every tracee go on untraced: interrupt it, wait for the stop, detach. */
/* The signal a stop seen as STATUS was delivering (0: none, or ours). */
static int stop_signal_of(int status)
{
	int sig = WSTOPSIG(status);

	return (status >> 16) || sig == SIGSTOP || sig == SIGTRAP ? 0 : sig;
}

static bool deferred_has(const struct follow *f, pid_t tid)
{
	for (size_t i = 0; i < f->nr_def; i++)
		if (f->def[i].tid == tid)
			return true;
	return false;
}

static void detach_all(struct follow *f)
{
	/* stopped already (put aside while a slot was waited for) */
	for (size_t i = 0; i < f->nr_def; i++)
		ptrace(PTRACE_DETACH, f->def[i].tid, NULL, (void *)(long)stop_signal_of(f->def[i].status));
	for (size_t i = 0; i < f->nr; i++) {
		int status;

		if (deferred_has(f, f->v[i].tid) || ptrace(PTRACE_INTERRUPT, f->v[i].tid, NULL, NULL))
			continue;
		while (waitpid(f->v[i].tid, &status, __WALL) == f->v[i].tid && WIFSTOPPED(status) &&
		       (status >> 16) != PTRACE_EVENT_STOP)
			ptrace(PTRACE_CONT, f->v[i].tid, NULL, (void *)(long)WSTOPSIG(status));
		ptrace(PTRACE_DETACH, f->v[i].tid, NULL, NULL);
	}
}

static void supervise(struct follow *f)
{
	int status;
	pid_t tid;

	while (f->nr) {
		/* stops put aside while a slot was waited for, oldest first */
		if (f->nr_def && !follow_signal) {
			tid = f->def[0].tid;
			status = f->def[0].status;
			memmove(f->def, f->def + 1, --f->nr_def * sizeof(*f->def));
			on_stop(f, tid, status);
			continue;
		}
		/* A signal may have come while we were elsewhere (starting a
		 * recorder): act on it now, not at the next child event. */
		tid = follow_signal ? -1 : waitpid(-1, &status, __WALL);
		if (tid < 0 && (follow_signal || errno == EINTR)) {
			/* A process we joined runs on without us; a command we
			 * started stops with us (and we still collect its end). */
			if (follow_signal && (f->seized || follow_signal == SIGALRM)) {
				detach_all(f);
				return;
			}
			if (follow_signal && !f->root_done)
				kill(f->root, follow_signal);
			follow_signal = 0;
			continue;
		}
		if (tid < 0)
			break;
		if (!WIFSTOPPED(status) && collect_finished(f, tid))
			continue;
		if (WIFSTOPPED(status))
			on_stop(f, tid, status);
		else if (WIFEXITED(status) || WIFSIGNALED(status))
			on_exit_of(f, tid, status);
	}
}

/* -p: seize every thread of the running process (none is stopped); threads
 * it starts from now on are reported by the clone events. */
static int seize_process(struct follow *f, pid_t pid)
{
	char path[64];
	bool added = true;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	while (added) { /* until a pass finds no thread we had missed */
		DIR *dir = opendir(path);
		struct dirent *de;

		if (!dir)
			return errno == ENOENT ? -ESRCH : -errno;
		added = false;
		while ((de = readdir(dir))) {
			pid_t tid = atoi(de->d_name);

			if (tid <= 0 || find(f, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)TRACE_OPTIONS))
				continue; /* it exited meanwhile */
			if (!add(f, tid, pid)) {
				closedir(dir);
				return -ENOMEM;
			}
			added = true;
		}
		closedir(dir);
	}
	return find(f, pid) ? 0 : -ESRCH;
}

/* The command or process to follow, under ptrace and with its recorder. */
static int start_root(struct follow *f, struct launcher *l)
{
	char path[PATH_MAX];
	struct tracee *root;
	int err;

	if (f->seized) {
		f->root = f->o->pid;
		err = seize_process(f, f->root);
		if (err)
			return fail("failed to follow PID %d: %s; check the PID, and run as root or with CAP_SYS_PTRACE",
				    f->root, strerror(-err));
		root = find(f, f->root);
		root->binding = bind_program(f, f->root);
		return start_recorder(f, root);
	}
	err = launcher__resolve(f->o->cmd[0], path, sizeof(path));
	if (err)
		return fail("failed to start '%s': %s; check its name and execute permission",
			    f->o->cmd[0], err == -ENOENT ? "no such command" : strerror(-err));
	if (f->o->preload) {
		err = record_preload_setup(f->o, path, &f->pre, &f->pre_env);
		if (err < 0)
			return -1;
		if (err > 0) {
			f->own_o.preload = false; /* the whole tree by uprobes */
		} else {
			l->envp = f->pre_env;
			l->keep_fd = f->pre.fd;
		}
	}
	err = launcher__fork(l, path, f->o->cmd);
	if (!err && f->o->preload)
		preload__set_pid(&f->pre, l->pid);
	if (!err)
		err = launcher__exec(l);
	if (err)
		return fail("failed to start '%s': could not %s: %s", f->o->cmd[0],
			    launcher__step_name(l->failed_step), strerror(-err));
	if (l->at_entry)
		record_warn_held_at_entry(f->o->cmd[0]);
	f->root = l->pid;
	root = add(f, l->pid, l->pid);
	if (root)
		root->binding = bind_program(f, l->pid);
	if (!root || ptrace(PTRACE_SETOPTIONS, l->pid, NULL, (void *)TRACE_OPTIONS) ||
	    start_recorder(f, root)) {
		launcher__kill(l);
		return -1;
	}
	ptrace(PTRACE_CONT, l->pid, NULL, NULL);
	return 0;
}

int record_follow(const struct record_opts *o)
{
	struct follow f = { .own_o = *o, .seized = o->pid > 0, .supervisor = getpid(), .pre = { .fd = -1 } };
	struct sigaction sa = { .sa_handler = follow_on_signal };
	struct launcher *l = &f.launcher;
	int err = launcher__open(l);

	f.o = &f.own_o;
	if (err)
		return fail("failed to load the BPF programs: %s%s", strerror(-err),
			    err == -EPERM ? "; run as root or with CAP_BPF and CAP_PERFMON" : ""), 1;
	if (load_shared(&f)) {
		launcher__drop_probes(l);
		launcher__close(l);
		loader__close(f.loader);
		free(f.slot_used);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (start_root(&f, l)) {
		if (f.seized)
			detach_all(&f);
		launcher__drop_probes(l);
		launcher__close(l);
		loader__close(f.loader);
		free(f.slot_used);
		free(f.v);
		preload__close(&f.pre);
		preload__environ_free(f.pre_env);
		return 1;
	}
	if (o->duration > 0)
		alarm((unsigned int)(o->duration + 0.999));
	supervise(&f);
	/* every recorder is told at once, then each collected */
	for (size_t i = 0; i < f.nr; i++)
		if (f.v[i].recorder > 0)
			kill(f.v[i].recorder, SIGINT);
	for (size_t i = 0; i < f.nr; i++)
		stop_recorder(&f, &f.v[i]);
	collect_all_finished(&f);
	if (!f.seized && !f.root_done && waitpid(f.root, &f.root_status, 0) == f.root)
		f.root_done = true;
	launcher__drop_probes(l);
	launcher__close(l);
	loader__close(f.loader);
	free(f.slot_used);
	for (size_t i = 0; i < f.nr_bindings; i++)
		record_binding__free(f.bindings[i]);
	free(f.bindings);
	free(f.v);
	free(f.fin);
	free(f.def);
	preload__close(&f.pre);
	preload__environ_free(f.pre_env);
	if (f.seized)
		return 0;
	if (!f.root_done)
		return 1;
	return WIFEXITED(f.root_status) ? WEXITSTATUS(f.root_status) : 128 + WTERMSIG(f.root_status);
}
