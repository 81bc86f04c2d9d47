// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "file_memo.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#define FILE_MEMO_SLOTS 1024 /* a program maps tens of files, a tree a few programs */

/* A file is its device and inode, and the same content while its size and
 * modification time stay (a file rewritten in place, a build's cp) and its
 * change time: its owner (a target's user, for the files of its root) sets
 * the modification time back with utimensat(2), never the change time. */
struct file_key {
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
};

static struct file_memo {
	struct file_key key;
	uint64_t arg, value;
	enum file_fact what;
} memo[FILE_MEMO_SLOTS];
static size_t nr_memo;
/* memtrace agent records several processes at once, each on a thread */
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static int key_of(const char *path, struct file_key *k)
{
	struct stat st;

	if (!path || stat(path, &st))
		return -ENOENT;
	*k = (struct file_key){ st.st_dev, st.st_ino, (uint64_t)st.st_size,
				(uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec,
				(uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec };
	return 0;
}

int file_memo__get(const char *path, enum file_fact what, uint64_t arg, uint64_t *value)
{
	struct file_key k;

	if (key_of(path, &k))
		return -ENOENT;
	pthread_mutex_lock(&memo_lock);
	for (size_t i = 0; i < nr_memo; i++) {
		const struct file_memo *m = &memo[i];

		if (!memcmp(&m->key, &k, sizeof(k)) && m->what == what && m->arg == arg) {
			*value = m->value;
			pthread_mutex_unlock(&memo_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&memo_lock);
	return -ENOENT;
}

void file_memo__put(const char *path, enum file_fact what, uint64_t arg, uint64_t value)
{
	struct file_key k;
	uint64_t known;

	if (!file_memo__get(path, what, arg, &known) || key_of(path, &k))
		return;
	pthread_mutex_lock(&memo_lock);
	if (nr_memo < FILE_MEMO_SLOTS)
		memo[nr_memo++] = (struct file_memo){ k, arg, value, what };
	pthread_mutex_unlock(&memo_lock);
}
