// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command runs under ptrace only until its libraries are mapped: a
 * hardware breakpoint on the dynamic linker's debugger hook (_dl_debug_state,
 * the one gdb uses) fires when the link map is consistent, before
 * initializers run.
 */
#include "launcher.h"
#include "elf_util.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define RT_CONSISTENT 0
#define R_STATE_OFFSET 24 /* struct r_debug: int version, pad, r_map, r_brk, r_state */
#define MAX_HOOK_HITS 64

static int read_auxv(pid_t pid, uint64_t type, uint64_t *value)
{
	char path[64];
	uint64_t pair[2];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*value = 0;
	while (read(fd, pair, sizeof(pair)) == sizeof(pair) && pair[0] != AT_NULL) {
		if (pair[0] == type)
			*value = pair[1];
	}
	close(fd);
	return 0;
}

/* The path of the mapping that starts at ADDR (the dynamic linker's base). */
static int mapping_path_at(pid_t pid, uint64_t addr, char *buf, size_t cap)
{
	char path[64], line[4096];
	unsigned long start;
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (sscanf(line, "%lx-", &start) != 1 || start != addr || !p)
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, cap, "/proc/%d/root%s", pid, p);
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

static int wait_stop(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFSTOPPED(status))
		return -ECHILD; /* it died */
	return WSTOPSIG(status);
}

/* Run to the debugger hook until the link map is consistent, then put the
 * instruction back and leave the thread stopped at the hook. */
/* x86 debug registers: DR0 holds the address, DR7 bit 0 enables it as an
 * execute breakpoint. A hardware breakpoint leaves the code untouched, so it
 * cannot collide with a uprobe someone placed on the same instruction (the
 * kernel would take an int3 there for that uprobe's and swallow it). */
#define DR7_L0 1UL

static int set_debugreg(pid_t pid, int n, unsigned long value)
{
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[n]), (void *)value))
		return -errno;
	return 0;
}

/* Step over the hook's instruction with the breakpoint off, then re-arm it. */
static int step_over(pid_t pid)
{
	int err = set_debugreg(pid, 7, 0), sig;

	if (!err && ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL))
		err = -errno;
	if (!err && (sig = wait_stop(pid)) != SIGTRAP)
		err = sig < 0 ? sig : -EPROTO;
	return err ? err : set_debugreg(pid, 7, DR7_L0);
}

/* Run to the debugger hook until the link map is consistent, and leave the
 * thread stopped there, before the hook's instruction. */
static int run_to_consistent(pid_t pid, uint64_t hook, uint64_t r_state_addr)
{
	struct user_regs_struct regs;
	int sig, err, hits;
	long state;

	err = set_debugreg(pid, 0, hook);
	if (!err)
		err = set_debugreg(pid, 7, DR7_L0);
	for (hits = 0; !err && hits < MAX_HOOK_HITS; hits++) {
		if (ptrace(PTRACE_CONT, pid, NULL, NULL))
			return -errno;
		sig = wait_stop(pid);
		if (sig < 0)
			return sig;
		if (sig != SIGTRAP)
			return -EINTR; /* a real signal before main: give up waiting */
		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			return -errno;
		if (regs.rip != hook)
			return -EPROTO;
		errno = 0;
		state = ptrace(PTRACE_PEEKDATA, pid, (void *)r_state_addr, NULL);
		if (errno)
			return -errno;
		if ((int)state == RT_CONSISTENT)
			return set_debugreg(pid, 7, 0);
		err = step_over(pid);
	}
	return err ? err : -ELOOP;
}

/* The dynamic linker's r_debug is data, so not among the indexed functions. */
static int find_data_symbol(const char *path, const char *name, uint64_t *vaddr)
{
	struct elf_file *f = elf_file__open(path);
	Elf *elf = f ? elf_file__elf(f) : NULL;
	Elf_Scn *scn = NULL;
	int err = -ESRCH;

	while (elf && err && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(data, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (n && strcmp(n, name) == 0) {
				*vaddr = sym.st_value;
				err = 0;
				break;
			}
		}
	}
	if (f)
		elf_file__close(f);
	return f ? err : -errno;
}

int launcher__stop_after_linking(pid_t pid)
{
	struct elf_function hook;
	uint64_t r_debug = 0, base = 0;
	char interp[4200];
	int err;

	err = read_auxv(pid, AT_BASE, &base);
	if (err)
		return err;
	if (!base)
		return 0; /* static executable: everything is mapped already */
	err = mapping_path_at(pid, base, interp, sizeof(interp));
	if (!err)
		err = elf_find_function(interp, "_dl_debug_state", &hook);
	if (!err)
		err = find_data_symbol(interp, "_r_debug", &r_debug);
	if (err)
		return 0; /* unknown linker: attach now; later libraries load unprobed */
	return run_to_consistent(pid, base + hook.vaddr, base + r_debug + R_STATE_OFFSET);
}

static void child_exec(int errfd, char *const argv[])
{
	int err;

	ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	execvp(argv[0], argv);
	err = errno;
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

int launcher__spawn(struct launcher *l, char *const argv[])
{
	int fds[2], err = 0, sig;
	ssize_t n;

	l->pid = -1;
	l->traced = 0;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	l->pid = fork();
	if (l->pid < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (l->pid == 0)
		child_exec(fds[1], argv);
	close(fds[1]);
	do
		n = read(fds[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	if (n == sizeof(err)) {
		waitpid(l->pid, NULL, 0);
		l->pid = -1;
		return -err;
	}
	l->traced = 1;
	sig = wait_stop(l->pid);
	err = sig == SIGTRAP ? launcher__stop_after_linking(l->pid) : (sig < 0 ? sig : -EPROTO);
	if (err) {
		launcher__kill(l);
		return err;
	}
	return 0;
}

int launcher__release(struct launcher *l)
{
	if (!l->traced)
		return 0;
	l->traced = 0;
	if (ptrace(PTRACE_DETACH, l->pid, NULL, NULL))
		return -errno;
	return 0;
}

void launcher__kill(struct launcher *l)
{
	if (l->pid <= 0)
		return;
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
	l->traced = 0;
}
