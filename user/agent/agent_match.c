// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The agent's discovery (agent.h): which processes --comm, --exe, --cgroup
 * and --user match, and the rules that keep another local user from
 * taking the slots (the program's owner, --per-user, a full table), each
 * refusal said, a line a second at most of each kind. */
#include "agent.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

/* PID's start time (proc_stat_start), and its state letter in *STATE
 * unless NULL; 0 if it is gone. */
static uint64_t proc_start(int pid, char *state)
{
	char buf[1024];

	return read_proc_file(pid, "stat", buf, sizeof(buf)) > 0 ? proc_stat_start(buf, state) : 0;
}

static struct refused *refused_find(struct agent *a, int pid)
{
	for (size_t i = 0; i < a->nrefused; i++)
		if (a->refused[i].pid == pid)
			return &a->refused[i];
	return NULL;
}

/* PID's recording failed before it attached: not again before its time. */
void agent_refuse(struct agent *a, int pid, uint64_t now)
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
		agent_target_reclaim(a, oldest);
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
		agent_refuse(a, pid, now);
		return;
	}
	if (user_slots(a, ruid) >= a->per_user && !make_room(a, ruid, false)) {
		say_refusal(a, REFUSED_PER_USER, now, "not recording PID %d (%s): uid %u has %u processes recorded already, the most one "
				    "user's may hold (--per-user)", pid, comm, ruid, a->per_user);
		return;
	}
	err = agent_target_start(a, pid, true, ruid);
	if (err == -ENOSPC && make_room(a, 0, true))
		err = agent_target_start(a, pid, true, ruid);
	if (err == -ENOSPC)
		say_refusal(a, REFUSED_FULL, now, "not recording PID %d (%s): %d processes are recorded already, the most an agent "
				    "records", pid, comm, AGENT_MAX_TARGETS);
}

/* Every process that matches and has no recording gets one. */
void agent_scan(struct agent *a)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end, state;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid() || agent_recorded(a, (int)pid) || refused_now(a, (int)pid, now) ||
		    !matches(a, (int)pid))
			continue;
		/* not a process on its way out (a zombie has nothing left to record) */
		if (!proc_start((int)pid, &state) || state == 'Z' || state == 'X')
			continue;
		admit(a, (int)pid, now);
	}
	closedir(d);
}
