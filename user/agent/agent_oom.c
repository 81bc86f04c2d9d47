// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's flight recorder (agent.h): when a target is killed by the OOM
 * killer, or by SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, its last minute
 * goes into --oom-dir as one trace that stands alone, named
 * COMM.PID.<UTC time of the death>.oom.mtrace (.crash.mtrace), with names.
 *
 * How a death is known: exit_watch.h (bpf/exits.bpf.c on the kernel's
 * oom:mark_victim and sched_process_exit tracepoints); the agent cannot
 * wait() for a process it did not start.
 *
 * What the trace is: the target's last trace files (the recording's two in
 * memory, or -o DIR's), the newest and, when it began less than a minute
 * before the death, the one before, copied record by record into one file
 * (stacks, strings and modules once), then SYMBOL records for every
 * address, named from the files the recording held while the target lived
 * (the live feed keeps them held until the slot is freed: by the time of
 * the death /proc/PID/map_files is gone), then an END that says how it
 * died (TRACE_END_OOM_KILLED or TRACE_END_CRASHED, and a sentence).
 */
#include "agent.h"
#include "exit_watch.h"
#include "procmaps.h"
#include "python.h"
#include "symbolizer.h"
#include "trace_reader.h"
#include "trace_writer.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OOM_SPAN_NS (60 * 1000000000ull) /* the last minute: the file before the newest when it is needed */

/* ---- the kernel's side: exit_watch.h ---- */

/* Load and attach the exits programs; 0 or -errno. */
int agent_exits_open(struct agent *a)
{
	a->exits = exit_watch__open();
	return a->exits ? 0 : -errno;
}

void agent_exits_close(struct agent *a)
{
	exit_watch__free(a->exits);
	a->exits = NULL;
}

/* PID's death is to be told. */
int agent_exits_watch(struct agent *a, int pid)
{
	return a->exits ? exit_watch__add(a->exits, pid) : -ENOENT;
}

/* PID's entry gone, unless another slot records that PID again. */
void agent_exits_forget(struct agent *a, int pid)
{
	if (a->exits && !agent_recorded(a, pid))
		exit_watch__remove(a->exits, pid);
}

/* ---- --oom-dir ---- */

/* DIR made if missing (each missing directory 0700), then checked as -o DIR
 * is (agent_dir_unsafe) and opened: the directory's descriptor, or -1 with
 * why into WHY. */
int agent_oom_dir_open(const char *dir, char *why, size_t cap)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!*dir || strlen(dir) >= sizeof(path)) {
		snprintf(why, cap, "empty or too long");
		return -1;
	}
	snprintf(path, sizeof(path), "%s", dir);
	for (char *s = path + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;

		*s = 0;
		if (mkdir(path, 0700) && errno != EEXIST) {
			snprintf(why, cap, "cannot make %s: %s", path, strerror(errno));
			return -1;
		}
		*s = c;
		if (!c)
			break;
	}
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		snprintf(why, cap, "not a directory");
		return -1;
	}
	agent_dir_unsafe(dir, why, cap);
	if (why[0])
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || faccessat(fd, ".", W_OK | X_OK, AT_EACCESS)) {
		snprintf(why, cap, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* ---- the counts /metrics serves ---- */

static void count_death(struct agent *a, const char *comm, bool oom)
{
	struct agent_deaths *d = NULL;

	pthread_mutex_lock(&a->deaths_lock);
	for (size_t i = 0; i < a->ndeaths && !d; i++)
		if (!strcmp(a->deaths[i].comm, comm))
			d = &a->deaths[i];
	if (!d && a->ndeaths < AGENT_MAX_DEATH_COMMS) {
		d = &a->deaths[a->ndeaths++];
		snprintf(d->comm, sizeof(d->comm), "%s", comm);
	}
	if (!d) /* more programs than rows: the last row stands for the rest */
		d = &a->deaths[AGENT_MAX_DEATH_COMMS - 1];
	if (oom)
		d->oom_kills++;
	else
		d->crashes++;
	pthread_mutex_unlock(&a->deaths_lock);
}

/* ---- the trace: the last files copied into one ---- */

struct oom_copy {
	struct trace_writer *w;
	int fd;                    /* the new file, until the writer owns it */
	struct u64map stacks;      /* stack ids written */
	struct u64map strings;     /* string ids written */
	struct u64map addrs;       /* every frame address, for the symbols */
	struct trace_module *mods; /* written, in order: the symbols' module numbers */
	size_t nmods, capmods;
	uint64_t events, dropped;
	struct trace_end end;      /* the last file's */
	uint64_t first_start_ns;   /* the first file's start (CLOCK_MONOTONIC) */
	int err;
};

static int copy_meta(void *ctx, const struct trace_meta *m)
{
	struct oom_copy *c = ctx;

	if (c->w)
		return 0; /* the next file's: one trace, one META */
	c->first_start_ns = m->start_mono_ns;
	c->w = trace_writer__open_fd(c->fd, m);
	c->fd = -1; /* the writer's now, or closed */
	return c->w ? 0 : -errno;
}

static bool same_module(const struct trace_module *a, const struct trace_module *b)
{
	return a->start == b->start && a->end == b->end && a->file_offset == b->file_offset &&
	       !strcmp_null(a->path, b->path);
}

/* A module once: each file begins with every module mapped. */
static int copy_module(void *ctx, const struct trace_module *m)
{
	struct oom_copy *c = ctx;
	struct trace_module *k;

	for (size_t i = 0; i < c->nmods; i++)
		if (same_module(&c->mods[i], m))
			return 0;
	if (array_reserve((void **)&c->mods, &c->capmods, c->nmods + 1, sizeof(*c->mods)))
		return -ENOMEM;
	k = &c->mods[c->nmods];
	*k = *m;
	k->path = m->path ? strdup(m->path) : NULL;
	if (m->path && !k->path)
		return -ENOMEM;
	c->nmods++;
	return trace_writer__add_module(c->w, m);
}

/* Whether ID is new in SET (then it is in it). */
static int first_time(struct u64map *set, uint64_t id)
{
	bool existed;

	if (!u64map__insert(set, id + 1, &existed))
		return -ENOMEM;
	return existed ? 0 : 1;
}

static int copy_stack(void *ctx, const struct trace_stack *s)
{
	struct oom_copy *c = ctx;
	int n = first_time(&c->stacks, s->id);

	if (n <= 0)
		return n;
	for (uint32_t i = 0; i < s->nr; i++)
		if (first_time(&c->addrs, s->frames[i]) < 0)
			return -ENOMEM;
	return trace_writer__add_stack(c->w, s);
}

static int copy_string(void *ctx, const struct trace_string *s)
{
	struct oom_copy *c = ctx;
	int n = first_time(&c->strings, s->id);

	return n <= 0 ? n : trace_writer__add_string(c->w, s);
}

static int copy_event(void *ctx, const struct trace_event *e)
{
	struct oom_copy *c = ctx;

	c->events++;
	return trace_writer__add_event(c->w, e);
}

static int copy_drops(void *ctx, const struct trace_drops *d)
{
	struct oom_copy *c = ctx;

	c->dropped += d->count;
	return trace_writer__add_drops(c->w, d);
}

static int copy_end(void *ctx, const struct trace_end *e)
{
	struct oom_copy *c = ctx;

	c->end = *e;
	c->end.stop_reason = NULL; /* the file's own strings go with the read */
	return 0;
}

static int copy_thread(void *ctx, const struct trace_thread *t)
{
	return trace_writer__add_thread(((struct oom_copy *)ctx)->w, t);
}

static int copy_mark(void *ctx, const struct trace_mark *m)
{
	return trace_writer__add_mark(((struct oom_copy *)ctx)->w, m);
}

static int copy_rss(void *ctx, const struct trace_rss *s)
{
	return trace_writer__add_rss(((struct oom_copy *)ctx)->w, s);
}

static int copy_rollup(void *ctx, const struct trace_rollup *r)
{
	return trace_writer__add_rollup(((struct oom_copy *)ctx)->w, r);
}

static int copy_map(void *ctx, const struct trace_map *m)
{
	return trace_writer__add_map(((struct oom_copy *)ctx)->w, m);
}

static int copy_resident(void *ctx, const struct trace_resident *r)
{
	return trace_writer__add_resident(((struct oom_copy *)ctx)->w, r);
}

/* SYMBOL records of the files are not copied: their module numbers are
 * their file's. Every address is named again against the modules as
 * written here. */
static const struct trace_reader_ops copy_ops = {
	.meta = copy_meta,
	.module = copy_module,
	.stack = copy_stack,
	.event = copy_event,
	.thread = copy_thread,
	.drops = copy_drops,
	.end = copy_end,
	.string = copy_string,
	.mark = copy_mark,
	.rss = copy_rss,
	.rollup = copy_rollup,
	.map = copy_map,
	.resident = copy_resident,
};

static char *find_held(void *ctx, const char *path, const uint8_t *id, uint32_t len)
{
	return procmaps__held_file(*(int *)ctx, path, id, len);
}

/* Every frame address named from the files PID's recordings held; a
 * Python frame's from what its recorder named it (T's live replay): only
 * the recorder could read that from the target's memory. */
static int write_symbols(struct oom_copy *c, struct agent_target *t, int pid)
{
	struct symbolizer *s = symbolizer__new_target(NULL);
	int err = 0;

	if (!s)
		return -ENOMEM;
	symbolizer__set_finder(s, find_held, &pid);
	for (size_t i = 0; i < c->nmods; i++) {
		char *file = procmaps__held_file(pid, c->mods[i].path, c->mods[i].build_id, c->mods[i].build_id_len);

		symbolizer__add_mapped_module(s, &c->mods[i], file);
		free(file);
	}
	for (size_t i = 0; !err && i <= c->addrs.mask && c->addrs.slots; i++) {
		struct trace_symbol sym;
		uint64_t key = c->addrs.slots[i].key;

		if (key && python_is_addr(key - 1)) {
			struct trace_frame f;

			pthread_mutex_lock(&t->lock);
			if (t->feed.r && !replay__symbol(t->feed.r, key - 1, &sym, &f, 1))
				err = trace_writer__add_symbol(c->w, &sym);
			pthread_mutex_unlock(&t->lock);
		} else if (key && !symbolizer__resolve(s, key - 1, &sym)) {
			err = trace_writer__add_symbol(c->w, &sym);
		}
	}
	symbolizer__free(s);
	return err;
}

static void oom_copy__free(struct oom_copy *c)
{
	if (c->fd >= 0)
		close(c->fd);
	u64map__free(&c->stacks);
	u64map__free(&c->strings);
	u64map__free(&c->addrs);
	for (size_t i = 0; i < c->nmods; i++)
		free((char *)c->mods[i].path);
	free(c->mods);
}

static int by_name(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The trace files T's recording left (COMM.PID.<start>.mtrace in DIR),
 * oldest first, at most the last two; their count. */
static size_t last_files(DIR *d, const char *base, char *names[2])
{
	size_t plen = strlen(base), n = 0;
	char *all[2] = { NULL, NULL };
	struct dirent *de;

	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *keep;

		/* BASE.<start>.mtrace, the start without a dot: a comm may hold
		 * dots, and comm "a" of PID 1 is not comm "a.1" of PID 5 */
		if (strncmp(de->d_name, base, plen) || de->d_name[plen] != '.' || len < plen + 9 ||
		    strcmp(de->d_name + len - 7, ".mtrace") || strchr(de->d_name + plen + 1, '.') != de->d_name + len - 7)
			continue;
		/* keep the two greatest names: the UTC starts sort as text */
		if (n == 2) {
			qsort(all, 2, sizeof(*all), by_name);
			if (strcmp(de->d_name, all[0]) < 0)
				continue;
			free(all[0]);
			all[0] = all[1];
			n = 1;
		}
		if (!(keep = strdup(de->d_name)))
			break;
		all[n++] = keep;
	}
	qsort(all, n, sizeof(*all), by_name);
	names[0] = all[0];
	names[1] = all[1];
	return n;
}

static int read_start(void *ctx, const struct trace_meta *m)
{
	*(uint64_t *)ctx = m->start_mono_ns;
	return 1;
}

/* The file NAME of DIRFD into C's trace; 0 or -errno. */
static int copy_file(struct oom_copy *c, int dirfd, const char *name, bool meta_only, uint64_t *start)
{
	int fd = agent_trace_open(dirfd, name), err;
	struct trace_reader *r;
	char path[64];

	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd); /* the name is never followed again */
	r = trace_reader__open(path);
	close(fd);
	if (!r)
		return -errno;
	err = meta_only ? trace_reader__read(r, &(struct trace_reader_ops){ .meta = read_start }, start) :
			  trace_reader__read(r, &copy_ops, c);
	trace_reader__close(r);
	return meta_only && err == 1 ? 0 : err;
}

/* T's last files into OUTFD/NAME; 0 or -errno, and nothing left behind
 * on failure. Written as .NAME.part, then renamed (never over a file): a
 * reader that sees NAME sees it whole. */
static int write_death_trace(struct agent_target *t, int outfd, const char *name, const struct trace_end *how,
			     uint64_t death_mono_ns)
{
	struct oom_copy c = { .fd = -1 };
	char *names[2] = { NULL, NULL }, part[NAME_MAX + 8];
	uint64_t start = 0;
	size_t n;
	int err = 0;
	bool made = false;
	DIR *d = opendir(agent_trace_dir(t->agent));

	if (!d)
		return -errno;
	n = last_files(d, agent_trace_base(t), names);
	/* the newest, and the one before when the newest holds less than a minute */
	if (n == 2 && !copy_file(&c, dirfd(d), names[1], true, &start) && death_mono_ns > start &&
	    death_mono_ns - start >= OOM_SPAN_NS) {
		free(names[0]);
		names[0] = names[1];
		names[1] = NULL;
		n = 1;
	}
	if (!n)
		err = -ENOENT;
	snprintf(part, sizeof(part), ".%s.part", name);
	if (!err) {
		c.fd = openat(outfd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		err = c.fd < 0 ? -errno : 0;
		made = !err;
	}
	for (size_t i = 0; !err && i < n; i++)
		err = copy_file(&c, dirfd(d), names[i], false, NULL);
	if (!err && !c.w)
		err = -ENODATA;
	if (!err)
		err = write_symbols(&c, t, t->pid);
	if (!err) {
		c.end.events = c.events;
		c.end.dropped = c.dropped;
		c.end.exit_status = how->exit_status;
		c.end.flags |= TRACE_END_TARGET_EXITED | how->flags;
		c.end.stop_reason = how->stop_reason;
		c.end.memory_limit = how->memory_limit;
		c.end.memory_limit_of = how->memory_limit_of;
		err = trace_writer__close(c.w, &c.end);
		c.w = NULL;
		if (!err && renameat2(outfd, part, outfd, name, RENAME_NOREPLACE))
			err = -errno;
	}
	if (err && c.w)
		trace_writer__abort(c.w);
	c.w = NULL;
	if (err && made)
		unlinkat(outfd, part, 0);
	for (size_t i = 0; i < 2; i++)
		free(names[i]);
	closedir(d);
	oom_copy__free(&c);
	return err;
}

/* A file of --oom-dir: COMM.PID.<UTC time>.oom.mtrace or .crash.mtrace. */
struct kept_file {
	char *name;
	size_t comm_len; /* COMM is NAME's first COMM_LEN bytes (a comm may hold dots) */
	uint64_t bytes;
	struct timespec mtime;
};

/* COMM's length in NAME, if NAME is one of the flight recorder's; 0 if not. */
static size_t kept_comm_len(const char *name)
{
	size_t len = strlen(name), end;
	const char *time, *pid;

	if (len > 11 && !strcmp(name + len - 11, ".oom.mtrace"))
		end = len - 11;
	else if (len > 13 && !strcmp(name + len - 13, ".crash.mtrace"))
		end = len - 13;
	else
		return 0;
	time = memrchr(name, '.', end);
	pid = time && time > name ? memrchr(name, '.', (size_t)(time - name)) : NULL;
	return pid && pid > name && name[0] != '.' ? (size_t)(pid - name) : 0;
}

static int kept_newest_first(const void *x, const void *y)
{
	const struct kept_file *a = x, *b = y;

	if (a->mtime.tv_sec != b->mtime.tv_sec)
		return a->mtime.tv_sec < b->mtime.tv_sec ? 1 : -1;
	if (a->mtime.tv_nsec != b->mtime.tv_nsec)
		return a->mtime.tv_nsec < b->mtime.tv_nsec ? 1 : -1;
	return strcmp(b->name, a->name);
}

/* --oom-dir pruned: the newest oom_keep files of each program, and the
 * newest of those while they hold AGENT_OOM_MAX_BYTES at most (the newest
 * file always stays). Only our own regular files named as ours, each
 * removed relative to the directory. One thread at a time (deaths_lock). */
static void prune_kept(struct agent *a)
{
	struct kept_file *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	int fd = openat(a->oom_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	pthread_mutex_lock(&a->deaths_lock);
	while ((de = readdir(d))) {
		size_t comm_len = kept_comm_len(de->d_name);
		struct stat st;

		if (!comm_len || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || array_reserve((void **)&v, &cap, n + 1, sizeof(*v)))
			continue;
		v[n] = (struct kept_file){ .name = strdup(de->d_name), .comm_len = comm_len, .bytes = (uint64_t)st.st_size,
					   .mtime = st.st_mtim };
		if (v[n].name)
			n++;
	}
	qsort(v, n, sizeof(*v), kept_newest_first);
	for (size_t i = 0; i < n; i++) {
		size_t same = 0;

		for (size_t k = 0; k < i; k++)
			same += v[k].name && v[k].comm_len == v[i].comm_len && !memcmp(v[k].name, v[i].name, v[i].comm_len);
		if (same >= a->oom_keep || (i && total + v[i].bytes > AGENT_OOM_MAX_BYTES)) {
			unlinkat(dirfd(d), v[i].name, 0);
			free(v[i].name);
			v[i].name = NULL;
		} else {
			total += v[i].bytes;
		}
	}
	pthread_mutex_unlock(&a->deaths_lock);
	for (size_t i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	closedir(d);
}

/* What an agent killed while writing left in --oom-dir: .NAME.part files
 * of ours a minute old (a younger one may be another agent's, being
 * written). */
void agent_oom_sweep(struct agent *a)
{
	int fd = a->oom_dirfd >= 0 ? openat(a->oom_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	time_t now = time(NULL);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char name[NAME_MAX + 1];
		struct stat st;

		if (de->d_name[0] != '.' || len < 7 || strcmp(de->d_name + len - 5, ".part"))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - 6), de->d_name + 1);
		if (kept_comm_len(name) && !fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_mtime + 60 < now)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

/* T's recording ended (its thread, after record_run): if the target was
 * OOM-killed or crashed, its last minute into --oom-dir, counted, and a
 * line on stderr says where. */
void agent_target_died(struct agent_target *t)
{
	struct agent *a = t->agent;
	struct exit_info e;
	char reason[PATH_MAX], name[NAME_MAX + 1], when[32], limit_of[PATH_MAX];
	struct trace_end how;
	time_t sec;
	struct tm tm;
	bool oom;
	int err;

	if (!a->exits || !t->attached)
		return;
	exit_watch__get(a->exits, t->pid, &e);
	if (e.kind != EXIT_OOM_KILLED && e.kind != EXIT_CRASHED)
		return;
	oom = e.kind == EXIT_OOM_KILLED;
	count_death(a, t->comm, oom);
	exit_watch_describe(&e, t->memcg, reason, sizeof(reason));
	if (a->oom_dirfd < 0 || !agent_trace_dir(a)) {
		fprintf(stderr, "memtrace: PID %d (%s) was %s; no trace kept: %s\n", t->pid, t->comm, reason,
			a->oom_dirfd < 0 ? "no --oom-dir" : "the agent keeps no trace files");
		return;
	}
	sec = (time_t)(e.death_real_ns / 1000000000ull);
	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(name, sizeof(name), "%s.%s.%s.mtrace", agent_trace_base(t), when, oom ? "oom" : "crash");
	how = (struct trace_end){ .exit_status = e.status, .flags = oom ? TRACE_END_OOM_KILLED : TRACE_END_CRASHED,
				  .stop_reason = reason };
	if (oom) {
		exit_watch_limit(t->memcg, &how.memory_limit, limit_of, sizeof(limit_of));
		how.memory_limit_of = how.memory_limit ? limit_of : NULL;
	}
	err = write_death_trace(t, a->oom_dirfd, name, &how, e.death_mono_ns);
	if (!err)
		prune_kept(a);
	if (err)
		fprintf(stderr, "memtrace: PID %d (%s) was %s; failed to write %s/%s: %s\n", t->pid, t->comm, reason,
			a->oom_dir, name, strerror(-err));
	else
		fprintf(stderr, "memtrace: PID %d (%s) was %s; its last minute is in %s/%s (written %.1f s after)\n",
			t->pid, t->comm, reason, a->oom_dir, name,
			(double)(now_ns(CLOCK_MONOTONIC) - e.death_mono_ns) / 1e9);
}
