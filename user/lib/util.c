// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("memtrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || *out > UINT64_MAX / mult)
		return -EINVAL;
	*out *= mult;
	return 0;
}

int parse_top(const char *s, unsigned int *top)
{
	uint64_t v;

	if (parse_u64(s, &v) || v == 0 || v > INT32_MAX) {
		fail("failed to parse --top '%s': not a positive number; pass e.g. --top 20", s);
		return -EINVAL;
	}
	*top = (unsigned int)v;
	return 0;
}

int parse_pid(const char *s, int *pid)
{
	uint64_t v;

	if (parse_u64(s, &v) || v == 0 || v > INT_MAX)
		return fail("invalid PID '%s'; give the number of a running process", s);
	*pid = (int)v;
	return 0;
}

int parse_seconds(const char *s, double *seconds)
{
	*seconds = strtod(s, NULL);
	if (!(*seconds > 0))
		return fail("invalid duration '%s'; give seconds, e.g. -d 10", s);
	return 0;
}

uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void format_bytes(uint64_t bytes, char *buf, size_t cap)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
}

ssize_t read_proc_file(int pid, const char *name, char *buf, size_t cap)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	return read_file_at(AT_FDCWD, path, buf, cap);
}

ssize_t read_file_at(int dir, const char *name, char *buf, size_t cap)
{
	ssize_t n, total = 0;
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (total < (ssize_t)cap - 1 && (n = read(fd, buf + total, cap - 1 - total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return total;
}

char *read_proc_alloc(int pid, const char *name, size_t *len)
{
	size_t cap = 16384, n = 0;
	char path[64], *buf = malloc(cap), *nb;
	ssize_t got = 1;
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !buf) {
		err = fd < 0 ? (errno == ENOENT ? ESRCH : errno) : ENOMEM;
		got = 0;
	}
	while (got > 0) {
		if (n + 1 == cap) {
			if (!(nb = realloc(buf, cap * 2))) {
				err = ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			got = 1;
		else if (got < 0)
			err = errno;
		else
			n += (size_t)got;
	}
	if (fd >= 0)
		close(fd);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

int proc_stat_parse(const char *text, char *state, uint64_t *fields, size_t n)
{
	const char *p = strrchr(text, ')'); /* the name may hold spaces and parentheses */
	char *end;

	if (!p || p[1] != ' ' || !p[2])
		return -EINVAL;
	p += 2;
	if (state)
		*state = *p;
	p++;
	for (size_t i = 0; i < n; i++, p = end) {
		fields[i] = (uint64_t)strtoll(p, &end, 10); /* a few are signed: -1 as all ones */
		if (end == p)
			return -EINVAL;
	}
	return 0;
}

void comm_file_safe(char *comm)
{
	for (char *s = comm; *s; s++)
		if (*s == '/' || *s == ' ' || (unsigned char)*s < 32)
			*s = '_';
}

uint64_t proc_stat_start(const char *text, char *state)
{
	uint64_t f[19]; /* fields 4 to 22 */

	return proc_stat_parse(text, state, f, 19) ? 0 : f[18];
}

bool proc_stat_ended(const char *text)
{
	uint64_t f[17]; /* fields 4 to 20: the number of threads is the last */
	char state = 0;

	if (proc_stat_parse(text, &state, f, 17))
		return true;
	return state == 'X' || (state == 'Z' && f[16] <= 1);
}

void read_proc_string(int pid, const char *name, char *buf, size_t cap)
{
	if (read_proc_file(pid, name, buf, cap) <= 0)
		snprintf(buf, cap, "?");
	buf[strcspn(buf, "\n")] = 0;
}

char *read_proc_cmdline(int pid)
{
	char buf[8192];
	ssize_t n = read_proc_file(pid, "cmdline", buf, sizeof(buf));

	for (ssize_t i = 0; i + 1 < n; i++) {
		if (!buf[i])
			buf[i] = ' ';
	}
	return strdup(n > 0 ? buf : "?");
}

void read_proc_environ(int pid, const char *var, char *buf, size_t cap)
{
	const size_t env_cap = 65536;
	char *env = malloc(env_cap); /* not thread-local: every thread would carry it */
	ssize_t n = env ? read_proc_file(pid, "environ", env, env_cap) : -1;
	size_t len = strlen(var);

	*buf = 0;
	for (ssize_t i = 0; i < n; i += strlen(env + i) + 1) {
		if (strncmp(env + i, var, len) == 0 && env[i + len] == '=') {
			snprintf(buf, cap, "%s", env + i + len + 1);
			break;
		}
	}
	free(env);
}

char *join_args(char *const *argv)
{
	size_t len = 1;
	char *s;

	for (int i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	*s = 0;
	for (int i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

char *root_path(int pid, const char *path)
{
	char *s;

	/* Never the host's file at the same path: that is not the target's. */
	if (asprintf(&s, "/proc/%d/root%s", pid, path) < 0)
		return NULL;
	return s;
}

void free_strings(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

bool strings_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v[i], s))
			return true;
	}
	return false;
}

int strings_push(char ***v, size_t *n, const char *s)
{
	char **w = realloc(*v, (*n + 1) * sizeof(*w)), *c;

	if (!w)
		return -ENOMEM;
	*v = w;
	if (!(c = strdup(s)))
		return -ENOMEM;
	w[(*n)++] = c;
	return 0;
}

int array_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

int strcmp_null(const char *x, const char *y)
{
	if (!x || !y)
		return (x != NULL) - (y != NULL);
	return strcmp(x, y);
}

void exponential_gaps(int64_t *gaps, int n, uint64_t mean, unsigned short seed[3])
{
	for (int i = 0; i < n; i++) {
		/* u in stratum i, [i/n, (i+1)/n): 1 - u is in (0, 1] */
		double u = (i + erand48(seed)) / n;

		gaps[i] = (int64_t)(-log(1.0 - u) * (double)mean) + 1;
	}
}
