// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The agent's per-target store (agent.h): a recording on a thread of its
 * own feeding a live engine under the target's lock, what is copied out
 * under that lock, and the trace files it leaves. */
#include "agent.h"
#include "exit_watch.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
	agent_target_died(t); /* its files closed, its mapped files still held by the feed */
	pthread_mutex_lock(&t->lock);
	if (!t->ended)
		t->ended_ns = now_ns(CLOCK_MONOTONIC);
	t->ended = true;
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* The target recording PID, or NULL (under slots_lock). */
struct agent_target *agent_target_of(struct agent *a, int pid)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use && a->targets[i].pid == pid)
			return &a->targets[i];
	return NULL;
}

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

	if (array_reserve((void **)&pc->rows, &pc->cap, pc->nrows + 1, sizeof(*pc->rows)))
		return -ENOMEM;
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
int part_copy__take(struct part_copy *pc, struct agent_target *t, bool show_cmdline)
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

void part_copy__free(struct part_copy *pc)
{
	arena__free(&pc->mem);
	u64map__free(&pc->seen);
	free(pc->rows);
	free(pc->mods);
}

/* Where the targets' traces go: -o DIR, else the memory directory; NULL: nowhere. */
const char *agent_trace_dir(const struct agent *a)
{
	return a->out_dir ? a->out_dir : a->mem_dir[0] ? a->mem_dir : NULL;
}

/* The part of a target's trace prefix (DIR/COMM.PID) its files' names begin with. */
const char *agent_trace_base(const struct agent_target *t)
{
	const char *slash = strrchr(t->output, '/');

	return slash ? slash + 1 : t->output;
}

/* Remove DIR's files whose names begin with BASE and a dot (NULL: every file). */
void agent_remove_files(const char *dir, const char *base)
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

/* Why DIR (-o DIR, --oom-dir) is not safe for the agent's traces, into WHY ("" if it is):
 * DIR, and each directory above it, must be root's or ours and writable by
 * no one else (a sticky one, /tmp, may be: its entries are safe from
 * others). Otherwise another user could plant a trace the agent parses as
 * root, a symlink where it writes, or swap the directory itself. */
void agent_dir_unsafe(const char *dir, char *why, size_t cap)
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

/* NAME in the traces' directory DIRFD for reading: a regular file of ours,
 * not through a symlink (a planted one would have root parse what it
 * points at), not a FIFO that blocks. A descriptor, or -errno. */
int agent_trace_open(int dirfd, const char *name)
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

/* ---- the agent ---- */

/* Start recording PID in a free slot (the main thread, under the write
 * lock). 0, or -ENOSPC, -ENOMEM, -EAGAIN (no thread). */
int agent_target_start(struct agent *a, int pid, bool matched, unsigned uid)
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
	t->o.shared_loader = a->loader; /* a slot of the agent's object (agent_loader_open), or its own */
	t->o.slot = (uint32_t)(t - a->targets) + 1;
	if (agent_trace_dir(a)) {
		/* -o DIR: DIR/COMM.PID.<UTC start>.mtrace, one every --rotate;
		 * without it the same in memory, the last two only */
		char comm[64];

		read_proc_string(pid, "comm", comm, sizeof(comm));
		comm_file_safe(comm);
		snprintf(t->output, sizeof(t->output), "%s/%s.%d", agent_trace_dir(a), comm, pid);
		t->o.output = t->output;
	} else {
		/* no memory directory: no trace at all */
		snprintf(t->output, sizeof(t->output), "memtrace-agent.%d", pid);
		t->o.output = t->output;
		t->o.discard_output = true;
		t->o.rotate_sec = 0;
	}
	t->in_use = true;
	/* its end known from the exit watch (when it watches it), which lets
	 * the recording hold no pidfd once attached */
	t->o.shared_exits = agent_exits_watch(a, pid) ? NULL : a->exits;
	exit_watch_memcg(pid, t->memcg, sizeof(t->memcg)); /* gone with the process: the limit an OOM kill hit */
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
void agent_target_reclaim(struct agent *a, struct agent_target *t)
{
	if (t->started)
		pthread_join(t->thread, NULL);
	if (!a->out_dir && a->mem_dir[0])
		agent_remove_files(a->mem_dir, agent_trace_base(t)); /* what it left in memory */
	pthread_rwlock_wrlock(&a->slots_lock);
	t->in_use = false;
	pthread_rwlock_unlock(&a->slots_lock);
	agent_exits_forget(a, t->pid);
	live_feed__free(&t->feed);
	pthread_mutex_destroy(&t->lock);
	malloc_trim(0); /* what the ended recording held goes back to the kernel */
}

/* A recording of PID in a slot, ended or not. */
bool agent_recorded(const struct agent *a, int pid)
{
	for (size_t i = 0; i < a->ntargets; i++)
		if (a->targets[i].in_use && a->targets[i].pid == pid && !a->targets[i].ended)
			return true;
	return false;
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
		const char *base = agent_trace_base(t);
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
 * regular files named as ours (ours, or under sudo its user's: each trace
 * made is given to them), never a file being written, each removed
 * relative to the directory (a name is never followed). */
void agent_prune_traces(struct agent *a)
{
	struct trace_file *v = NULL;
	size_t n = 0, cap = 0, kept = 0, same = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *d = opendir(a->out_dir);
	uid_t owner = geteuid(), given;
	gid_t group;

	if (record_sudo_owner(&given, &group))
		owner = given;

	while (d && (de = readdir(d))) {
		struct trace_file f;
		struct stat st;
		char *name;

		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
		    st.st_uid != owner || !(name = strdup(de->d_name)))
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
