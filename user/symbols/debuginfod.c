// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "debuginfod.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int debuginfod_enabled(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t")];
}

static void child(int out, const char *hex)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	char timeout[16];

	if (!getenv("DEBUGINFOD_TIMEOUT")) {
		snprintf(timeout, sizeof(timeout), "%d", DEBUGINFOD_TIMEOUT_S);
		setenv("DEBUGINFOD_TIMEOUT", timeout, 1);
	}
	dup2(null, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	execlp("debuginfod-find", "debuginfod-find", "debuginfo", hex, (char *)NULL);
	_exit(127);
}

/* Read the child's one line of output, waiting at most LIMIT_MS in all. */
static ssize_t read_bounded(int fd, char *buf, size_t cap, int limit_ms)
{
	struct timespec t0, t;
	size_t len = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = limit_ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, left) <= 0)
			continue;
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap - 1)
			break;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

int debuginfod_fetch(const uint8_t *id, uint32_t len, char *buf, size_t cap)
{
	char hex[2 * 64 + 1];
	const char *t = getenv("DEBUGINFOD_TIMEOUT");
	int fds[2], status, limit_ms;
	ssize_t n;
	pid_t pid;

	if (!len || len > 64)
		return -EINVAL;
	for (uint32_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	/* The client's own timeout is per transfer phase: ours bounds the whole. */
	limit_ms = ((t && atoi(t) > 0 ? atoi(t) : DEBUGINFOD_TIMEOUT_S) + 5) * 1000;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid == 0)
		child(fds[1], hex);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -errno;
	}
	n = read_bounded(fds[0], buf, cap, limit_ms);
	close(fds[0]);
	if (n == -ETIMEDOUT)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (n == -ETIMEDOUT)
		return -ETIMEDOUT;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOEXEC;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || n <= 0)
		return -ENOENT;
	buf[strcspn(buf, "\n")] = '\0';
	return access(buf, R_OK) ? -ENOENT : 0;
}
