// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "target_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* A descriptor opened O_PATH (nothing was opened yet) becomes a readable one
 * only once it is known to be a regular file, and the expected inode. */
static int reopen_checked(int pfd, uint64_t inode)
{
	char self[32];
	struct stat st;
	int fd;

	if (fstat(pfd, &st))
		fd = -errno;
	else if (!S_ISREG(st.st_mode))
		fd = -EINVAL;
	else if (inode && (uint64_t)st.st_ino != inode)
		fd = -ESTALE;
	else {
		/* Reopening through /proc/self/fd reaches this inode, never a path. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	}
	close(pfd);
	return fd;
}

int target_file_open_mapping(int pid, uint64_t start, uint64_t end, uint64_t inode)
{
	char link[96];
	int pfd;

	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	pfd = open(link, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	return reopen_checked(pfd, inode);
}

int target_file_open_in_root(int root_fd, const char *path, uint64_t inode)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long pfd;

	if (root_fd < 0 || !path || path[0] != '/')
		return -EINVAL;
	pfd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	if (pfd < 0)
		return -errno;
	return reopen_checked((int)pfd, inode);
}

int target_root_open(int pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int target_file_check_fd(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EINVAL;
}
