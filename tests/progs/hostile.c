// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a local user's process can do to a tracer that runs as root
 * (tests/e2e/hostile.sh runs it as nobody):
 *
 *   hostile lib DIR SRC KIND N
 *       copy the library SRC (libplugin.so) to DIR/libhostile.so, dlopen it,
 *       and put at its path KIND: "fifo" (a FIFO, whose open blocks for
 *       ever), "dev" (a symlink to /dev/zero) or a path to symlink to (a file
 *       only root may read). Then "hostile: ready", and after SIGUSR1 N calls
 *       of its plugin_work (N mallocs of 77 bytes), "hostile: done N", and
 *       wait for SIGTERM.
 *   hostile name DIR CANARY
 *       map DIR/names (written here: a name on its third page, never
 *       touched), "hostile: ready", and after SIGUSR1 fire a zone whose name
 *       points into that page, swap DIR/names for a symlink to CANARY, and
 *       exit at once, so the name can no longer be read from the process.
 *   hostile copies DIR SRC COPIES N
 *       "hostile: ready", and after SIGUSR1, COPIES times: copy SRC to
 *       DIR/libcopy.so, dlopen it, delete the file, N calls of plugin_work,
 *       10 ms, dlclose; then "hostile: done COPIES*N" and wait for SIGTERM.
 */
// link: -ldl
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../inproc/memtrace.h"

static volatile sig_atomic_t go, stop;

static void on_usr1(int sig) { go = 1; }
static void on_term(int sig) { stop = 1; }

static void wait_for(volatile sig_atomic_t *flag)
{
	while (!*flag)
		usleep(1000);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	return close(out);
}

static void (*load(const char *path, void **handle))(int)
{
	void (*work)(int);

	*handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*handle || !(work = (void (*)(int))dlsym(*handle, "plugin_work"))) {
		fprintf(stderr, "hostile: cannot load %s: %s\n", path, dlerror());
		exit(2);
	}
	return work;
}

static int run_lib(const char *dir, const char *src, const char *kind, int n)
{
	char path[4096];
	void (*work)(int), *handle;
	int err;

	snprintf(path, sizeof(path), "%s/libhostile.so", dir);
	if (copy_file(src, path))
		return perror("hostile: copy"), 2;
	work = load(path, &handle);
	unlink(path);
	if (!strcmp(kind, "fifo"))
		err = mkfifo(path, 0666);
	else if (!strcmp(kind, "dev"))
		err = symlink("/dev/zero", path);
	else
		err = symlink(kind, path);
	if (err)
		return perror("hostile: replace"), 2;
	fprintf(stderr, "hostile: ready\n");
	wait_for(&go);
	for (int i = 0; i < n; i++)
		work(i);
	printf("hostile: done %d\n", n);
	fflush(stdout);
	wait_for(&stop);
	return 0;
}

#define NAME_PAGE 2 /* the page the name is on: never read before the mark */

static int run_name(const char *dir, const char *canary)
{
	static const char name[] = "hostile_zone";
	char path[4096], page[4096];
	const char *p;
	void *map;
	int fd;

	snprintf(path, sizeof(path), "%s/names", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	memset(page, 'x', sizeof(page));
	for (int i = 0; i < NAME_PAGE + 1; i++) {
		if (i == NAME_PAGE)
			memcpy(page, name, sizeof(name));
		if (fd < 0 || write(fd, page, sizeof(page)) != sizeof(page))
			return perror("hostile: names"), 2;
	}
	/* Dropped from the page cache so the mark's read cannot find the page. */
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	map = mmap(NULL, (NAME_PAGE + 1) * 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return perror("hostile: mmap"), 2;
	p = (const char *)map + NAME_PAGE * 4096;
	fprintf(stderr, "hostile: ready\n");
	wait_for(&go);
	MEMTRACE_ZONE_BEGIN(p);
	free(malloc(33));
	MEMTRACE_ZONE_END(p);
	unlink(path);
	if (symlink(canary, path))
		return perror("hostile: symlink"), 2;
	_exit(0);
}

static int run_copies(const char *dir, const char *src, int copies, int n)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/libcopy.so", dir);
	fprintf(stderr, "hostile: ready\n");
	wait_for(&go);
	for (int c = 0; c < copies; c++) {
		void (*work)(int), *handle;

		if (copy_file(src, path))
			return perror("hostile: copy"), 2;
		work = load(path, &handle);
		unlink(path);
		for (int i = 0; i < n; i++)
			work(i);
		usleep(10000); /* long enough for the recorder to see each copy */
		dlclose(handle);
	}
	printf("hostile: done %d\n", copies * n);
	fflush(stdout);
	wait_for(&stop);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	if (argc == 6 && !strcmp(argv[1], "lib"))
		return run_lib(argv[2], argv[3], argv[4], atoi(argv[5]));
	if (argc == 4 && !strcmp(argv[1], "name"))
		return run_name(argv[2], argv[3]);
	if (argc == 6 && !strcmp(argv[1], "copies"))
		return run_copies(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: hostile lib DIR SRC fifo|dev|PATH N | name DIR CANARY | copies DIR SRC COPIES N\n");
	return 2;
}
