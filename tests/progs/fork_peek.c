// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fork_peek [MS]: a process that forks while memtrace -p (without
 * --follow-children) records it, and looks at the first code bytes of
 * malloc and free, in its memory and in the C library's file.
 *   waits for SIGUSR1 (stderr "fork_peek: waiting for SIGUSR1"), then:
 *   parent: 10 x malloc(100) at site_before, each freed; a process sharing
 *           its memory (clone CLONE_VM) that waits; a fork (below); when the
 *           fork has exited, the first bytes again, then 5 x malloc(300) at
 *           site_after, leaked; exits 0 if the fork and the clone exited 0.
 *   fork:   forks a grandchild at once, then waits (at most MS ms, the
 *           argument, 10000 if none) for its bytes to equal the file's,
 *           prints them, 20 x malloc(200) at site_child, each filled,
 *           checked and freed; exits 0 if they were right and the
 *           grandchild (the same wait and print, one allocation) exited 0.
 * Lines on stdout: "WHO FUNC differs=N int3=M" (N bytes of the first 64
 * unlike the file's, M of those 0xcc), and "fork allocations ok". No stdio:
 * the recorded parent makes exactly the allocations above.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WINDOW 64

static void *volatile keep[32];

__attribute__((noinline)) static void site_before(int i)
{
	keep[i] = malloc(100);
	free(keep[i]);
}

__attribute__((noinline)) static void site_after(int i)
{
	keep[i] = malloc(300);
}

__attribute__((noinline)) static int site_child(int i)
{
	unsigned char *p = malloc(200);
	int ok = p != NULL;

	if (ok) {
		memset(p, i, 200);
		ok = p[0] == (unsigned char)i && p[199] == (unsigned char)i;
	}
	free(p);
	return ok;
}

struct find {
	uintptr_t addr;
	off_t offset; /* in the file */
	const char *file;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find *f = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && f->addr >= start && f->addr < start + ph->p_memsz) {
			f->offset = (off_t)(f->addr - start + ph->p_offset);
			f->file = info->dlpi_name;
			return 1;
		}
	}
	return 0;
}

/* FUNC's first bytes in its file, into OUT: 0 or -1. */
static int file_bytes(void *func, unsigned char *out)
{
	struct find f = { .addr = (uintptr_t)func };
	int fd, ok;

	if (!dl_iterate_phdr(find_object, &f) || !f.file || !*f.file)
		return -1;
	fd = open(f.file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = pread(fd, out, WINDOW, f.offset) == WINDOW;
	close(fd);
	return ok ? 0 : -1;
}

static unsigned char file_malloc[WINDOW], file_free[WINDOW];

/* Bytes of FUNC unlike the file's (its copy in FILE), and of them 0xcc. */
static int differs(void *func, const unsigned char *file, int *int3)
{
	const volatile unsigned char *code = func;
	int n = 0;

	*int3 = 0;
	for (int i = 0; i < WINDOW; i++)
		if (code[i] != file[i]) {
			n++;
			*int3 += code[i] == 0xcc;
		}
	return n;
}

static void say(const char *who, const char *name, void *func, const unsigned char *file)
{
	char line[128];
	int int3, n = differs(func, file, &int3), len;

	len = snprintf(line, sizeof(line), "%s %s differs=%d int3=%d\n", who, name, n, int3);
	if (write(1, line, (size_t)len) != len)
		_exit(3);
}

static int cloned(void *arg)
{
	int *fds = arg;
	char c;

	/* shares the parent's memory: its breakpoints are the parent's own;
	 * its own copy of the write end closed, so a parent gone ends it */
	close(fds[1]);
	return read(fds[0], &c, 1) == 1 ? 0 : 1;
}

/* Wait (at most WAIT_MS) for malloc's and free's bytes to be the file's. */
static void wait_clean(int wait_ms)
{
	struct timespec ms = { 0, 1000000 };
	int int3;

	for (int i = 0; i < wait_ms; i++) {
		if (!differs((void *)malloc, file_malloc, &int3) && !differs((void *)free, file_free, &int3))
			break;
		nanosleep(&ms, NULL);
	}
}

static int fork_child(int wait_ms)
{
	int ok = 1, status;
	pid_t grandchild;

	/* at once, with the breakpoints the fork copied still in: the
	 * grandchild has them too, and no record tells memtrace of it */
	grandchild = fork();
	if (grandchild == 0) {
		wait_clean(wait_ms);
		say("grandchild", "malloc", (void *)malloc, file_malloc);
		say("grandchild", "free", (void *)free, file_free);
		_exit(site_child(0) ? 0 : 1);
	}
	wait_clean(wait_ms);
	say("fork", "malloc", (void *)malloc, file_malloc);
	say("fork", "free", (void *)free, file_free);
	for (int i = 0; i < 20; i++)
		ok &= site_child(i);
	if (ok && write(1, "fork allocations ok\n", 20) != 20)
		return 3;
	ok &= grandchild > 0 && waitpid(grandchild, &status, 0) == grandchild && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0;
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	int wait_ms = argc > 1 ? atoi(argv[1]) : 10000;
	static char stack[64 * 1024];
	int status, ok = 1, pipe_fd[2], sig;
	pid_t vm, child;
	sigset_t set;

	if (file_bytes((void *)malloc, file_malloc) || file_bytes((void *)free, file_free))
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (write(2, "fork_peek: waiting for SIGUSR1\n", 31) != 31)
		return 2;
	sigwait(&set, &sig);
	for (int i = 0; i < 10; i++)
		site_before(i);
	say("parent", "malloc", (void *)malloc, file_malloc);
	say("parent", "free", (void *)free, file_free);
	if (pipe(pipe_fd))
		return 2;
	vm = clone(cloned, stack + sizeof(stack), CLONE_VM | SIGCHLD, pipe_fd);
	if (vm < 0)
		return 2;
	child = fork();
	if (child == 0)
		_exit(fork_child(wait_ms));
	ok &= child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	ok &= write(pipe_fd[1], "x", 1) == 1;
	ok &= waitpid(vm, &status, 0) == vm && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	say("parent-after", "malloc", (void *)malloc, file_malloc);
	say("parent-after", "free", (void *)free, file_free);
	for (int i = 0; i < 5; i++)
		site_after(i);
	return ok ? 0 : 1;
}
