// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* How a recorded process ended (exit_watch.h). */
#include "exit_watch.h"
#include "exits.skel.h"
#include "loader.h"
#include <linux/types.h>
#include "memtrace_abi.h"
#include "util.h"

#include <bpf/libbpf.h>
#include <pthread.h>
#include <stdbool.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct exit_watch {
	struct exits_bpf *skel;
	pthread_t loader; /* exit_watch__open_async's, until joined */
	bool loading;
	int err;          /* the load's: 0 or -errno */
};

/* Load and attach W's programs: 0 or -errno. */
static int load(struct exit_watch *w)
{
	w->skel = exits_bpf__open_and_load();
	return w->skel ? exits_bpf__attach(w->skel) : (errno ? -errno : -EINVAL);
}

struct exit_watch *exit_watch__open(void)
{
	struct exit_watch *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	loader__quiet_libbpf();
	err = load(w);
	if (err) {
		exit_watch__free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

static void *load_thread(void *arg)
{
	struct exit_watch *w = arg;

	w->err = load(w);
	return NULL;
}

struct exit_watch *exit_watch__open_async(void)
{
	struct exit_watch *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	loader__quiet_libbpf();
	w->loading = !pthread_create(&w->loader, NULL, load_thread, w);
	if (!w->loading)
		w->err = load(w);
	return w;
}

/* W's load done (joined): 0 or its -errno. */
static int settle(struct exit_watch *w)
{
	if (w->loading) {
		pthread_join(w->loader, NULL);
		w->loading = false;
	}
	return w->err;
}

void exit_watch__free(struct exit_watch *w)
{
	if (!w)
		return;
	settle(w);
	exits_bpf__destroy(w->skel);
	free(w);
}

int exit_watch__add(struct exit_watch *w, int pid)
{
	struct mt_exit e = { 0 };
	__u32 key = (__u32)pid;
	int err = settle(w);

	if (err)
		return err;
	return bpf_map__update_elem(w->skel->maps.exits, &key, sizeof(key), &e, sizeof(e), BPF_ANY);
}

void exit_watch__remove(struct exit_watch *w, int pid)
{
	__u32 key = (__u32)pid;

	if (settle(w))
		return;
	bpf_map__delete_elem(w->skel->maps.exits, &key, sizeof(key), 0);
}

void exit_watch__get(struct exit_watch *w, int pid, struct exit_info *info)
{
	struct mt_exit e = { 0 };
	__u32 key = (__u32)pid;
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	int sig;

	*info = (struct exit_info){ .kind = EXIT_NOT_KNOWN, .status = -1 };
	if (settle(w) || bpf_map__lookup_elem(w->skel->maps.exits, &key, sizeof(key), &e, sizeof(e), 0) || !e.exit_ns)
		return;
	sig = e.exit_code & 0x7f;
	info->status = e.exit_code;
	info->kind = e.oom_ns && sig == SIGKILL ? EXIT_OOM_KILLED :
		     sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ? EXIT_CRASHED :
													  EXIT_OTHER;
	info->death_mono_ns = info->kind == EXIT_OOM_KILLED ? e.oom_ns : e.exit_ns;
	info->death_real_ns = now_ns(CLOCK_REALTIME) - (now > info->death_mono_ns ? now - info->death_mono_ns : 0);
}

/* ---- the memory limit an OOM kill hit ---- */

/* PID's memory cgroup into BUF: "v1:/PATH" (the v1 memory controller's)
 * or "v2:/PATH"; "" if neither is known. The kernel writes
 * /proc/PID/cgroup; a path with ".." is refused anyway, as it is joined
 * to /sys/fs/cgroup below. */
void exit_watch_memcg(int pid, char *buf, size_t cap)
{
	char text[4096], *line, *save;
	ssize_t n = read_proc_file(pid, "cgroup", text, sizeof(text) - 1);

	buf[0] = 0;
	if (n <= 0)
		return;
	text[n] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path || path[1] != '/' || strstr(path, "/.."))
			continue;
		*path++ = 0;
		if (!strcmp(ctl + 1, "memory") || (!ctl[1] && !buf[0])) /* v1's memory line, else v2's (0::) */
			snprintf(buf, cap, "%s:%s", ctl[1] ? "v1" : "v2", path);
	}
}

/* The file of the cgroup v2 directory of PATH (where the v2 hierarchy is
 * mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1) into
 * VALUE; 0 or -errno. */
static int memcg_v2_read(const char *path, const char *file, char *value, size_t cap)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char p[PATH_MAX + 64];

	for (size_t i = 0; i < 2; i++) {
		FILE *f;

		snprintf(p, sizeof(p), "%s%s/%s", roots[i], strcmp(path, "/") ? path : "", file);
		if (!(f = fopen(p, "re")))
			continue;
		if (!fgets(value, (int)cap, f))
			value[0] = 0;
		fclose(f);
		return 0;
	}
	return -ENOENT;
}

/* The limit on MEMCG's memory, its ancestors' included: bytes, or
 * UINT64_MAX for none (or none known). */
static uint64_t memcg_limit(const char *memcg)
{
	uint64_t limit = UINT64_MAX, v;
	char p[PATH_MAX], line[256], v2[256];
	FILE *f;

	if (!strncmp(memcg, "v1:", 3)) {
		/* v1: the hierarchy's effective limit, past which its OOM killer runs */
		snprintf(p, sizeof(p), "/sys/fs/cgroup/memory%s/memory.stat", strcmp(memcg + 3, "/") ? memcg + 3 : "");
		f = fopen(p, "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "hierarchical_memory_limit %" SCNu64, &v) == 1)
				limit = v;
		if (f)
			fclose(f);
		/* no limit reads as the largest page-aligned long */
		return limit >= (1ull << 62) ? UINT64_MAX : limit;
	}
	if (strncmp(memcg, "v2:", 3))
		return UINT64_MAX;
	/* v2: memory.max of the cgroup and of each ancestor below the root */
	snprintf(v2, sizeof(v2), "%s", memcg + 3);
	while (strcmp(v2, "/") && v2[0]) {
		char *slash = strrchr(v2, '/');

		if (!memcg_v2_read(v2, "memory.max", line, sizeof(line)) && !parse_u64(strtok(line, "\n"), &v) &&
		    v < limit)
			limit = v;
		if (slash == v2)
			break;
		*slash = 0;
	}
	return limit;
}

/* The host's MemTotal, bytes; 0 if not known. */
static uint64_t host_memory(void)
{
	char line[256];
	uint64_t kib = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f) && sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) != 1)
		;
	if (f)
		fclose(f);
	return kib * 1024;
}

void exit_watch_limit(const char *memcg, uint64_t *bytes, char *of, size_t cap)
{
	uint64_t limit = memcg[0] ? memcg_limit(memcg) : UINT64_MAX;

	if (limit != UINT64_MAX) {
		*bytes = limit;
		snprintf(of, cap, "%s %s", memcg[1] == '1' ? "v1" : "v2", memcg + 3);
	} else {
		*bytes = host_memory();
		snprintf(of, cap, "%s", *bytes ? "host" : "");
	}
}

/* How a process ended, in a sentence (exit_watch.h). */
void exit_watch_describe(const struct exit_info *info, const char *memcg, char *buf, size_t cap)
{
	time_t sec = (time_t)(info->death_real_ns / 1000000000ull);
	bool oom = info->kind == EXIT_OOM_KILLED;
	uint64_t limit = oom && memcg[0] ? memcg_limit(memcg) : UINT64_MAX;
	int status = info->status;
	struct tm tm;
	char when[32], bytes[32];

	gmtime_r(&sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	format_bytes(limit, bytes, sizeof(bytes));
	if (oom && limit != UINT64_MAX)
		snprintf(buf, cap, "killed by the OOM killer at %s, its memory cgroup (%s %s) limited to %s", when,
			 memcg[1] == '1' ? "v1" : "v2", memcg + 3, bytes);
	else if (oom)
		snprintf(buf, cap, "killed by the OOM killer at %s, its memory cgroup%s unlimited: the host's memory ran out",
			 when, memcg[0] ? "" : " unknown or");
	else if (status >= 0 && (status & 0x7f))
		snprintf(buf, cap, "killed by SIG%s at %s%s", sigabbrev_np(status & 0x7f) ?: "?", when,
			 status & 0x80 ? " (core dumped)" : "");
	else
		snprintf(buf, cap, "exited with status %d at %s", (status >> 8) & 0xff, when);
}
