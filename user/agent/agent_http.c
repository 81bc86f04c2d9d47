// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The agent's HTTP server (agent.h), on libmicrohttpd's threads:
 *   /debug/pprof/heap, /debug/pprof/allocs  gzipped profile.proto as Go
 *       serves them, every target labelled pid and comm, or one with
 *       ?pid=PID, ?seconds=N for a delta;
 *   /metrics  the Prometheus text format, a few series per target;
 *   /report   the HTML report of a target's last trace file, or of a
 *             flight recorder's file (?file=NAME, in --oom-dir);
 *   /         an index.
 * Only GET and HEAD; any other path is 404, a malformed query 400. */
#include "agent.h"
#include "util.h"

#include "commands.h"
#include "export.h"
#include "protobuf.h"
#include "replay.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

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

	if (array_reserve((void **)&d->v, &d->cap, d->n + 1, sizeof(*d->v)))
		return -ENOMEM;
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
	if (pid > 0 && !agent_target_of(a, pid)) {
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

/* The targets that died, by program (comm): its series outlive the
 * targets, as counters must. */
static void serve_deaths(struct agent *a, struct text *o)
{
	pthread_mutex_lock(&a->deaths_lock);
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "memtrace_crashes_total" : "memtrace_oom_kills_total";
		bool header = false;

		for (size_t i = 0; i < a->ndeaths; i++) {
			uint64_t v = k ? a->deaths[i].crashes : a->deaths[i].oom_kills;

			if (!v)
				continue;
			if (!header)
				METRIC(o, name, "counter",
				       k ? "Targets that died of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT, by program" :
					   "Targets killed by the OOM killer, by program");
			header = true;
			text_add(o, "%s{comm=\"", name);
			text_label(o, a->deaths[i].comm[0] ? a->deaths[i].comm : "?");
			text_add(o, "\"} %" PRIu64 "\n", v);
		}
	}
	pthread_mutex_unlock(&a->deaths_lock);
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
	serve_deaths(a, &o);
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

/* Reports are drawn one at a time: the read side keeps its options global. */
static pthread_mutex_t report_rendering = PTHREAD_MUTEX_INITIALIZER;

/* Whether NAME is one of the flight recorder's files, a plain name:
 * COMM.PID.<UTC time>.oom.mtrace or .crash.mtrace. */
static bool death_file_name(const char *name)
{
	size_t len = strlen(name);

	return name[0] && name[0] != '.' && !strchr(name, '/') && len <= NAME_MAX &&
	       ((len > 11 && !strcmp(name + len - 11, ".oom.mtrace")) ||
		(len > 13 && !strcmp(name + len - 13, ".crash.mtrace")));
}

struct death_file {
	char *name;
	time_t mtime;
};

static int death_newest_first(const void *x, const void *y)
{
	const struct death_file *a = x, *b = y;

	return a->mtime != b->mtime ? (a->mtime < b->mtime ? 1 : -1) : strcmp(a->name, b->name);
}

/* A name in a query: every byte but [A-Za-z0-9._-] as %XX (a comm may hold
 * any of &, #, ?, %). */
static void text_url(struct text *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("._-", c))
			text_add(o, "%c", c);
		else
			text_add(o, "%%%02X", c);
	}
}

#define AGENT_INDEX_DEATHS 100 /* the index lists the newest files of --oom-dir, this many */

/* The index's list of --oom-dir's files, newest first: our own regular
 * files named as the flight recorder names them, each a link to its report. */
static void index_deaths(struct agent *a, struct text *o)
{
	struct death_file *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int fd = a->oom_dirfd >= 0 ? openat(a->oom_dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!death_file_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid() || array_reserve((void **)&v, &cap, n + 1, sizeof(*v)))
			continue;
		if ((v[n].name = strdup(de->d_name))) {
			v[n].mtime = st.st_mtime;
			n++;
		}
	}
	closedir(d);
	qsort(v, n, sizeof(*v), death_newest_first);
	text_add(o, "<h2>OOM kills and crashes (%s)</h2>\n<ul>\n", n ? "newest first" : "none");
	for (size_t i = 0; i < n; i++) {
		if (i < AGENT_INDEX_DEATHS) {
			text_add(o, "<li><a href=\"/report?file=");
			text_url(o, v[i].name);
			text_add(o, "\">");
			text_html(o, v[i].name);
			text_add(o, "</a></li>\n");
		}
		free(v[i].name);
	}
	text_add(o, "</ul>\n");
	free(v);
}

/* /report?file=NAME: the HTML report of a flight recorder's file in
 * --oom-dir, opened relative to it, never through a symlink. */
static enum MHD_Result serve_death_report(struct agent *a, struct MHD_Connection *c, const char *name)
{
	char *data, path[64];
	size_t len;
	int partial, fd, err;

	if (!death_file_name(name))
		return reply_text(c, MHD_HTTP_BAD_REQUEST, "give ?file=NAME of a file listed at /\n");
	if (a->oom_dirfd < 0 || (fd = agent_trace_open(a->oom_dirfd, name)) < 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such file in --oom-dir: see / for the files kept\n");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pthread_mutex_lock(&report_rendering);
	err = report_html_of(path, !a->show_cmdline, &data, &len, &partial);
	pthread_mutex_unlock(&report_rendering);
	close(fd);
	if (err)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the file could not be read\n");
	return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", data, len, false);
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
		if (agent_trace_dir(a))
			text_add(&o, " <a href=\"/report?pid=%d\">report of the last %g s</a>", t->pid,
				 a->o.rotate_sec);
		text_add(&o, "</td></tr>\n");
		pthread_mutex_unlock(&t->lock);
	}
	pthread_rwlock_unlock(&a->slots_lock);
	text_add(&o, "</table>\n");
	index_deaths(a, &o);
	text_add(&o, "</body></html>\n");
	if (o.oom) {
		free(o.s);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", o.s, o.len, false);
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
	const char *dir = agent_trace_dir(a);
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
	if ((t = agent_target_of(a, pid)))
		snprintf(base, sizeof(base), "%s.", agent_trace_base(t));
	pthread_rwlock_unlock(&a->slots_lock);
	if (!base[0])
		return reply_text(c, MHD_HTTP_NOT_FOUND, "no such target: see / for the agent's targets\n");
	plen = strlen(base);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);

		if (strncmp(de->d_name, base, plen) || len < 7 || strcmp(de->d_name + len - 7, ".mtrace"))
			continue;
		if (array_reserve((void **)&names, &cap, n + 1, sizeof(*names)))
			break;
		if ((names[n] = strdup(de->d_name)))
			n++;
	}
	qsort(names, n, sizeof(*names), newest_first); /* named by their UTC start */
	ret = MHD_NO;
	pthread_mutex_lock(&report_rendering);
	for (size_t i = 0; d && i < n && !found; i++) {
		char *data, path[64];
		size_t len;
		int partial, fd = agent_trace_open(dirfd(d), names[i]);

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
	pthread_mutex_unlock(&report_rendering);
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
void agent_http_sweep(struct agent *a, uint64_t now)
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

	if (strcmp(key, "pid") && strcmp(key, "seconds") && strcmp(key, "debug") && strcmp(key, "gc") &&
	    strcmp(key, "file"))
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
		if (unknown || MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "file"))
			return reply_text(c, MHD_HTTP_BAD_REQUEST, "unknown query: the profiles take ?pid=PID and ?seconds=N\n");
		return serve_pprof(a, c, !strcmp(url, "/debug/pprof/allocs"));
	}
	if (!strcmp(url, "/metrics"))
		return serve_metrics(a, c);
	if (!strcmp(url, "/"))
		return serve_index(a, c);
	if (!strcmp(url, "/report")) {
		const char *file = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "file");

		if (unknown || MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "seconds") ||
		    (file && MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid")))
			return reply_text(c, MHD_HTTP_BAD_REQUEST, "unknown query: the report takes ?pid=PID or ?file=NAME\n");
		return file ? serve_death_report(a, c, file) : serve_report(a, c);
	}
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: see / for what the agent serves\n");
}

int agent_http_start(struct agent *a)
{
	/* a thread per connection: a delta profile (?seconds=N) waits on its
	 * own; poll(), not select(): with the descriptors the targets hold, a
	 * connection's is past select's 1024 */
	a->http = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0,
				   NULL, NULL,
				   on_request, a, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a->listen,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned int)AGENT_HTTP_MAX_CONN,
				   MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)AGENT_HTTP_PER_IP,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)AGENT_HTTP_IDLE_S,
				   MHD_OPTION_NOTIFY_CONNECTION, on_connection, a, MHD_OPTION_NOTIFY_COMPLETED, on_completed, a,
				   MHD_OPTION_END);
	return a->http ? 0 : -EADDRINUSE;
}
