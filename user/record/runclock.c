// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A process's run time to the microsecond (runclock.h). */
#include "runclock.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Past this many threads, schedstat: a perf event each would hold as many
 * descriptors (the agent records many processes). */
#define RUNCLOCK_MAX_THREADS 256
/* And the events of all runclocks in this process hold at most a quarter of
 * its descriptors (the agent's 64 targets would take 1024 for 16 threads
 * each): the rest are for traces, links and /proc. */
#define RUNCLOCK_FD_SHARE 4

static int fds_open; /* atomic: perf events held by every runclock */

static bool take_fd(void)
{
	static int cap;
	struct rlimit r;

	if (!__atomic_load_n(&cap, __ATOMIC_RELAXED))
		__atomic_store_n(&cap, getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur == RLIM_INFINITY ? 256 :
				 (int)(r.rlim_cur / RUNCLOCK_FD_SHARE), __ATOMIC_RELAXED);
	if (__atomic_add_fetch(&fds_open, 1, __ATOMIC_SEQ_CST) <= __atomic_load_n(&cap, __ATOMIC_RELAXED))
		return true;
	__atomic_sub_fetch(&fds_open, 1, __ATOMIC_SEQ_CST);
	return false;
}

static void give_fd(int fd)
{
	close(fd);
	__atomic_sub_fetch(&fds_open, 1, __ATOMIC_SEQ_CST);
}

struct thread_clock {
	int tid;
	int fd;
	uint64_t last; /* its count at the last read */
	bool seen;     /* listed at this read */
};

struct runclock {
	int pid;
	uint64_t start; /* its start time: the process PID is ours while it has it */
	int proc_fd;    /* /proc/PID during a read (proc_dir_open), else -1 */
	bool exact;
	bool asleep;    /* runclock__sleep: read from the process's clock until woken */
	int64_t asleep_offset; /* ... which goes on from the exact count */
	uint64_t sum;
	int64_t offset; /* read coarsely after reading exactly: what keeps it going on from there */
	struct thread_clock t[RUNCLOCK_MAX_THREADS];
	int n;
};


static int task_clock_open(int tid)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static int count_of(int fd, uint64_t *v)
{
	return read(fd, v, sizeof(*v)) == (ssize_t)sizeof(*v) ? 0 : -EIO;
}

/* Call FN on each thread's id listed in /proc/PID/task; the sum of what it returns. */
static uint64_t each_thread(struct runclock *rc, uint64_t (*fn)(struct runclock *, int tid))
{
	struct dirent *de;
	uint64_t sum = 0;
	DIR *d;
	int fd;

	rc->proc_fd = proc_dir_open(rc->pid, rc->start);
	if (rc->proc_fd < 0)
		return 0;
	fd = openat(rc->proc_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d && fd >= 0)
		close(fd);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			sum += fn(rc, atoi(de->d_name));
	}
	if (d)
		closedir(d);
	close(rc->proc_fd);
	rc->proc_fd = -1;
	return sum;
}

/* A thread's schedstat run time; 0 for one that just exited. */
static uint64_t schedstat_of(struct runclock *rc, int tid)
{
	char path[64], buf[128];

	snprintf(path, sizeof(path), "task/%d/schedstat", tid);
	return read_file_at(rc->proc_fd, path, buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
}

/* What thread TID ran since the last read (0 the first time it is seen). */
static uint64_t exact_of(struct runclock *rc, int tid)
{
	struct thread_clock *t = NULL;
	uint64_t v, d;

	for (int i = 0; i < rc->n && !t; i++) {
		if (rc->t[i].tid == tid)
			t = &rc->t[i];
	}
	if (!t) {
		int fd;

		if (rc->n == RUNCLOCK_MAX_THREADS || !take_fd()) {
			rc->exact = false; /* read coarsely from now on */
			return 0;
		}
		fd = task_clock_open(tid);
		if (fd < 0) {
			if (errno != ESRCH)
				rc->exact = false;
			__atomic_sub_fetch(&fds_open, 1, __ATOMIC_SEQ_CST);
			return 0;
		}
		t = &rc->t[rc->n++];
		*t = (struct thread_clock){ .tid = tid, .fd = fd };
		if (count_of(fd, &t->last))
			t->last = 0;
	}
	t->seen = true;
	if (count_of(t->fd, &v) || v < t->last)
		return 0;
	d = v - t->last;
	t->last = v;
	return d;
}

/* Threads not listed have exited: what they ran since their last read, then let go. */
static uint64_t drop_gone(struct runclock *rc)
{
	uint64_t sum = 0, v;
	int k = 0;

	for (int i = 0; i < rc->n; i++) {
		struct thread_clock *t = &rc->t[i];

		if (t->seen) {
			t->seen = false;
			rc->t[k++] = *t;
			continue;
		}
		if (!count_of(t->fd, &v) && v > t->last)
			sum += v - t->last;
		give_fd(t->fd);
	}
	rc->n = k;
	return sum;
}

static void close_all(struct runclock *rc)
{
	for (int i = 0; i < rc->n; i++)
		give_fd(rc->t[i].fd);
	rc->n = 0;
}

/* The start time (clock ticks after boot) in /proc/PID/stat read through
 * DIR, and in *ENDED whether that process ended (proc_stat_ended: not a
 * process whose main thread alone did); 0 if unreadable. */
static uint64_t start_of(int dir, bool *ended)
{
	char buf[1024];

	if (read_file_at(dir, "stat", buf, sizeof(buf)) <= 0)
		return 0;
	*ended = proc_stat_ended(buf);
	return proc_stat_start(buf, NULL);
}

uint64_t proc_start_time(int pid, int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	bool ended = true;
	char path[32];
	uint64_t start;
	int dir;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return 0;
	start = start_of(dir, &ended);
	close(dir);
	/* its pidfd polled after the read: not readable, the process had not
	 * ended, and the directory was its own */
	if (ended || (pidfd >= 0 && poll(&p, 1, 0) != 0))
		return 0;
	return start;
}

int proc_dir_open(int pid, uint64_t start)
{
	bool ended = true;
	char path[32];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d", pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* the directory pins the process it names: its start time says
	 * whether that is still ours, and its state whether it still runs */
	if (start_of(fd, &ended) != start || ended) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

struct runclock *runclock__open(int pid, int pidfd)
{
	uint64_t start = proc_start_time(pid, pidfd);
	struct runclock *rc;

	if (!start) {
		errno = ESRCH;
		return NULL;
	}
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return NULL;
	rc->pid = pid;
	rc->start = start;
	rc->proc_fd = -1;
	/* The kernel's total so far, so that 0 still means "unknown" to
	 * the caller; exact increments after it. */
	rc->sum = each_thread(rc, schedstat_of);
	rc->exact = true;
	each_thread(rc, exact_of);
	drop_gone(rc);
	if (!rc->exact)
		close_all(rc);
	return rc;
}

/* The process's CPU clock (every thread's, those that ended too: never
 * back in time, unlike the sum of the threads' schedstat), which advances
 * at the scheduler's ticks; 0 if unreadable or no longer ours (gone). */
static uint64_t process_clock(const struct runclock *rc)
{
	struct timespec ts;
	clockid_t id;
	int dir;

	if (clock_getcpuclockid(rc->pid, &id) || clock_gettime(id, &ts))
		return 0;
	/* still ours after the read: so was the clock read (a PID is not
	 * given again while its process lives) */
	dir = proc_dir_open(rc->pid, rc->start);
	if (dir < 0)
		return 0;
	close(dir);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Asleep: the process's clock from where the exact count was (the last
 * figure again if it cannot be read: gone). */
static uint64_t asleep_read(struct runclock *rc)
{
	uint64_t now = process_clock(rc);
	int64_t v = (int64_t)now + rc->asleep_offset;

	if (now && v > (int64_t)rc->sum)
		rc->sum = (uint64_t)v;
	return rc->sum;
}

uint64_t runclock__read(struct runclock *rc)
{
	uint64_t add;

	if (rc->asleep)
		return asleep_read(rc);
	if (!rc->exact)
		return (uint64_t)((int64_t)each_thread(rc, schedstat_of) + rc->offset);
	add = each_thread(rc, exact_of);
	add += drop_gone(rc);
	if (!rc->exact) { /* too many threads now, or perf events refused: never back in time */
		close_all(rc);
		rc->offset = (int64_t)rc->sum - (int64_t)each_thread(rc, schedstat_of);
		return rc->sum;
	}
	rc->sum += add;
	return rc->sum;
}

void runclock__sleep(struct runclock *rc)
{
	uint64_t now;

	if (!rc->exact || rc->asleep)
		return;
	runclock__read(rc); /* what they ran up to now */
	if (!rc->exact || !(now = process_clock(rc)))
		return; /* no coarse figure to go on from: it stays awake */
	close_all(rc);
	rc->asleep_offset = (int64_t)rc->sum - (int64_t)now;
	rc->asleep = true;
}

void runclock__wake(struct runclock *rc)
{
	if (!rc->asleep)
		return;
	asleep_read(rc);
	rc->asleep = false;
	/* each thread's event counts from its first read, here */
	each_thread(rc, exact_of);
	drop_gone(rc);
	if (!rc->exact) {
		close_all(rc);
		rc->offset = (int64_t)rc->sum - (int64_t)each_thread(rc, schedstat_of);
	}
}

int runclock__exact(const struct runclock *rc)
{
	return rc->exact;
}

void runclock__free(struct runclock *rc)
{
	if (!rc)
		return;
	close_all(rc);
	free(rc);
}
