// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "target_file.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* A descriptor opened O_PATH (nothing was opened yet) becomes one opened
 * for FLAGS only once it is known to be a regular file, and the expected
 * inode (and device, unless DEV is NULL). */
static int reopen_checked(int pfd, const uint64_t *dev, uint64_t inode, int flags)
{
	char self[32];
	struct stat st;
	int fd;

	if (fstat(pfd, &st))
		fd = -errno;
	else if (!S_ISREG(st.st_mode))
		fd = -EINVAL;
	else if ((inode && (uint64_t)st.st_ino != inode) || (dev && (uint64_t)st.st_dev != *dev))
		fd = -ESTALE;
	else {
		/* Reopening through /proc/self/fd reaches this inode, never a path. */
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, flags | O_CLOEXEC | O_NOCTTY);
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
	return reopen_checked(pfd, NULL, inode, O_RDONLY | O_NONBLOCK);
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
	return reopen_checked((int)pfd, NULL, inode, O_RDONLY | O_NONBLOCK);
}

int file_reopen_made(const char *path, uint64_t dev, uint64_t ino, int flags)
{
	int pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (pfd < 0)
		return -errno;
	return reopen_checked(pfd, &dev, ino, flags);
}

int target_root_open(int pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Roots held by several targets (target_root_hold). A descriptor of
 * /proc/PID/root is that process's root directory on its mount: two with
 * the same mount id, device and inode reach the same files, so one serves
 * both (each was one more descriptor for each of the agent's targets). */
#define HELD_ROOTS 128
static struct held_root {
	uint64_t mnt_id, dev, ino;
	int fd;
	unsigned refs; /* 0: a free entry */
} held_roots[HELD_ROOTS];
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;

/* FD's mount id, from /proc/self/fdinfo; 0 if unknown (never shared). */
static uint64_t mount_id(int fd)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (read_file_at(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "mnt_id:");
	return p ? strtoull(p + 7, NULL, 10) : 0;
}

int target_root_hold(const char *root)
{
	struct held_root add = { .refs = 1 }, *free_at = NULL;
	struct stat st;
	int fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	add.mnt_id = mount_id(fd);
	if (!add.mnt_id || fstat(fd, &st))
		return fd; /* unshared: target_root_release closes it */
	add.dev = st.st_dev;
	add.ino = st.st_ino;
	add.fd = fd;
	pthread_mutex_lock(&roots_lock);
	for (int i = 0; i < HELD_ROOTS; i++) {
		struct held_root *h = &held_roots[i];

		if (!h->refs) {
			free_at = free_at ? free_at : h;
		} else if (h->mnt_id == add.mnt_id && h->dev == add.dev && h->ino == add.ino) {
			h->refs++;
			close(fd);
			fd = h->fd;
			free_at = NULL;
			goto out;
		}
	}
	if (free_at)
		*free_at = add;
out:
	pthread_mutex_unlock(&roots_lock);
	return fd;
}

void target_root_release(int fd)
{
	if (fd < 0)
		return;
	pthread_mutex_lock(&roots_lock);
	for (int i = 0; i < HELD_ROOTS; i++) {
		struct held_root *h = &held_roots[i];

		if (h->refs && h->fd == fd) {
			if (!--h->refs)
				close(fd);
			pthread_mutex_unlock(&roots_lock);
			return;
		}
	}
	pthread_mutex_unlock(&roots_lock);
	close(fd); /* held alone */
}

int target_file_check_fd(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	return S_ISREG(st.st_mode) ? 0 : -EINVAL;
}
