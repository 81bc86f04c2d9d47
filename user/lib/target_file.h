/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one way memtrace opens a file that belongs to a target. memtrace runs
 * as root and the target is on the other side of a trust boundary: every
 * path it shows (in /proc/PID/maps, in its ELF's debug links, in its
 * container's root) may have been replaced by a FIFO that blocks an open
 * for ever, a device whose open does something, or a symlink to a file only
 * root may read. So:
 *
 * - a mapped file is opened through its mapping, /proc/PID/map_files/START-END,
 *   which reaches the file the kernel mapped whatever its path is now;
 * - where that cannot be had (no CAP_SYS_ADMIN, the mapping gone) or there
 *   is no mapping, by openat2() under the target's root with RESOLVE_IN_ROOT
 *   and RESOLVE_NO_MAGICLINKS, so no symlink leads out of it;
 * - either way first as O_PATH, which opens nothing (no FIFO wait, no device
 *   open), then checked to be a regular file (and the mapping's inode), and
 *   only then reopened for reading through the checked descriptor.
 *
 * Never a bare path, never the host's file at the same path. Every caller
 * that reads a target's file goes through here (procmaps.c holds what it
 * opens for the recording; the symbolizer opens debug files in the root).
 */
#ifndef MEMTRACE_TARGET_FILE_H
#define MEMTRACE_TARGET_FILE_H

#include <stdint.h>

/* The file PID maps at START-END, read-only (O_CLOEXEC): a descriptor, or
 * -errno (-EPERM without CAP_SYS_ADMIN, -ENOENT when the mapping is gone,
 * -EINVAL when it is not a regular file, -ESTALE when INODE, unless 0, is
 * not its inode). */
int target_file_open_mapping(int pid, uint64_t start, uint64_t end, uint64_t inode);

/* PATH (absolute, as the target sees it) under the target's root ROOT_FD
 * (an O_PATH descriptor of /proc/PID/root), read-only, with the same checks:
 * a descriptor or -errno (-ENOSYS on a kernel without openat2). */
int target_file_open_in_root(int root_fd, const char *path, uint64_t inode);

/* The same rule for a file memtrace made itself and opens again by its
 * name (the agent's traces, appended to chunk by chunk): PATH, its last
 * component not followed, opened for FLAGS (O_WRONLY | O_APPEND) only if
 * it is still the regular file made, DEV and INO as fstat said then, so
 * that nothing else put at PATH (a FIFO, a device, a symlink, another
 * file) is ever opened: a descriptor, or -errno (-EINVAL: not a regular
 * file, -ESTALE: another one). */
int file_reopen_made(const char *path, uint64_t dev, uint64_t ino, int flags);

/* The target's root, /proc/PID/root, as an O_PATH descriptor, or -errno. */
int target_root_open(int pid);

/* ROOT (a target's root directory, as /proc/PID/root) as an O_PATH
 * descriptor shared with every other holder of the same directory on the
 * same mount (its mount id, device and inode: the same files below it),
 * the agent's targets mostly having the host's: a descriptor, or -errno.
 * Give it back with target_root_release, never close(). */
int target_root_hold(const char *root);
void target_root_release(int fd);

/* Whether FD is a regular file: 0 or -EINVAL (for a descriptor a caller got
 * from a path that should have led to one). */
int target_file_check_fd(int fd);

#endif /* MEMTRACE_TARGET_FILE_H */
