// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command runs under ptrace only until its libraries are mapped. Why a
 * uprobe and a signal rather than a breakpoint of ours: see
 * bpf/launch.bpf.c. MEMTRACE_LAUNCH=entry forces the fallback stop at the
 * program's entry point, so the tests run that path too.
 */
#include "launcher.h"
#include "uprobe_multi.h"
#include "elf_util.h"
#include "launch.skel.h"
#include "loader.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define R_STATE_OFFSET 24     /* struct r_debug: int version, pad, r_map, r_brk, r_state */
#define LAUNCH_SIGNAL SIGURG  /* ignored by default: harmless if we vanish before it lands */
#define WAIT_LIMIT_MS 10000   /* the linker maps its libraries in milliseconds */
#define MAX_FOREIGN_STOPS 256 /* other signals passed on while we wait */

const char *launcher__step_name(enum launcher_step step)
{
	switch (step) {
	case LAUNCH_EXEC: return "execute the command";
	case LAUNCH_LINKER: return "find the dynamic linker's debugger hook";
	case LAUNCH_ATTACH: return "attach the launch probes";
	case LAUNCH_WAIT: return "hold the command after its libraries were loaded";
	default: return "launch the command";
	}
}

/* Multi-uprobe links where the kernel has them: unlike perf-event uprobes
 * they need no perf_event_open, which CAP_PERFMON alone may not pass. */
static struct launch_bpf *load_skel(bool multi)
{
	struct launch_bpf *skel = launch_bpf__open();

	if (!skel)
		return NULL;
	if (multi) {
		bpf_program__set_expected_attach_type(skel->progs.dl_hook_enter, MT_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(skel->progs.entry_enter, MT_BPF_TRACE_UPROBE_MULTI);
	}
	if (launch_bpf__load(skel)) {
		int err = errno;

		launch_bpf__destroy(skel);
		errno = err;
		return NULL;
	}
	return skel;
}

int launcher__open(struct launcher *l)
{
	*l = (struct launcher){ .pid = -1, .go_fd = -1, .err_fd = -1, .keep_fd = -1, .link_fds = { -1, -1 } };
	loader__quiet_libbpf();
	/* MEMTRACE_ATTACH=classic: the loader's switch forces this path too. */
	l->multi = !(getenv("MEMTRACE_ATTACH") && !strcmp(getenv("MEMTRACE_ATTACH"), "classic"));
	l->skel = load_skel(l->multi);
	if (!l->skel && l->multi && errno != EPERM && errno != EACCES) {
		l->multi = false;
		l->skel = load_skel(false);
	}
	if (!l->skel)
		return errno ? -errno : -EINVAL;
	return 0;
}

void launcher__drop_probes(struct launcher *l)
{
	for (int i = 0; i < 2; i++) {
		if (l->link_fds[i] >= 0)
			close(l->link_fds[i]);
		bpf_link__destroy(l->links[i]);
		l->link_fds[i] = -1;
		l->links[i] = NULL;
	}
}

void launcher__close(struct launcher *l)
{
	launch_bpf__destroy(l->skel);
	l->skel = NULL;
}

int launcher__resolve(const char *argv0, char *buf, size_t cap)
{
	const char *path = getenv("PATH");
	struct stat st;
	int err = -ENOENT;

	if (strchr(argv0, '/')) {
		snprintf(buf, cap, "%s", argv0);
		if (stat(buf, &st))
			return -errno;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		return access(buf, X_OK) ? -errno : 0;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");

		snprintf(buf, cap, "%.*s%s%s", (int)len, path, len ? "/" : "", argv0);
		path += len + (path[len] == ':');
		if (stat(buf, &st) || S_ISDIR(st.st_mode))
			continue;
		if (!access(buf, X_OK))
			return 0;
		err = -EACCES; /* as execvp: remember, look further */
	}
	return err;
}

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

/* The file mapped at ADDR in PID (reached through its root) and ADDR's
 * offset in that file, where a uprobe goes. */
static int mapping_at(pid_t pid, uint64_t addr, char *buf, size_t cap, uint64_t *file_offset)
{
	char path[64], line[4096];
	unsigned long start, end, off;
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) != 3 || addr < start ||
		    addr >= end || !p)
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(buf, cap, "/proc/%d/root%s", pid, p);
		*file_offset = addr - start + off;
		err = 0;
		break;
	}
	fclose(f);
	return err;
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

static uint64_t elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* The next stop or end of PID, waiting at most until WAIT_LIMIT_MS after T0:
 * a probe that never fires must not leave us waiting forever. 0 with
 * *STATUS, -ETIMEDOUT, or -errno. */
static int wait_bounded(pid_t pid, const struct timespec *t0, int *status)
{
	long nap_us = 20;

	for (;;) {
		pid_t got = waitpid(pid, status, __WALL | WNOHANG);

		if (got == pid)
			return 0;
		if (got < 0 && errno != EINTR)
			return -errno;
		if (elapsed_ms(t0) > WAIT_LIMIT_MS)
			return -ETIMEDOUT;
		usleep(nap_us);
		if (nap_us < 2000)
			nap_us *= 2;
	}
}

struct launch_links {
	int fds[2];               /* multi-uprobe links, -1: none */
	struct bpf_link *links[2]; /* perf-event uprobes, where there are no such links */
};

static int attach_at(struct launcher *l, struct bpf_program *prog, pid_t pid, const char *path,
		     uint64_t offset, int slot, struct launch_links *ln)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo);
	struct uprobe_multi_req req = {
		.prog_fd = bpf_program__fd(prog),
		.path = path,
		.offsets = &offset,
		.cnt = 1,
		.pid = pid,
	};

	if (l->multi) {
		ln->fds[slot] = uprobe_multi__attach(&req);
		return ln->fds[slot] < 0 ? ln->fds[slot] : 0;
	}
	ln->links[slot] = bpf_program__attach_uprobe_opts(prog, pid, path, offset, &uo);
	return ln->links[slot] ? 0 : -errno;
}

static int attach_launch_probes(struct launcher *l, pid_t pid, const char *interp,
				uint64_t hook_off, const char *exe, uint64_t entry_off,
				struct launch_links *ln)
{
	const char *force = getenv("MEMTRACE_LAUNCH");
	int err = 0;

	if (hook_off && !(force && !strcmp(force, "entry")))
		err = attach_at(l, l->skel->progs.dl_hook_enter, pid, interp, hook_off, 0, ln);
	return err ? err : attach_at(l, l->skel->progs.entry_enter, pid, exe, entry_off, 1, ln);
}

/* Until launcher__drop_probes; a reused launcher's earlier ones go now. */
static void keep_launch_probes(struct launcher *l, const struct launch_links *ln)
{
	launcher__drop_probes(l);
	for (int i = 0; i < 2; i++) {
		l->link_fds[i] = ln->fds[i];
		l->links[i] = ln->links[i];
	}
}

/* Run PID until the probe signals it; pass on any other signal. */
static int run_to_launch_stop(struct launcher *l, pid_t pid, __u32 key)
{
	struct timespec t0;
	int inject = 0, status, err;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int stops = 0; stops < MAX_FOREIGN_STOPS; stops++) {
		struct mt_launch st;
		int sig;

		if (ptrace(PTRACE_CONT, pid, NULL, (void *)(long)inject))
			return -errno;
		err = wait_bounded(pid, &t0, &status);
		if (err)
			return err;
		if (!WIFSTOPPED(status))
			return -ECHILD; /* it ended before its libraries were loaded */
		sig = WSTOPSIG(status);
		inject = (status >> 16) == 0 && sig != SIGTRAP ? sig : 0;
		if (sig != LAUNCH_SIGNAL ||
		    bpf_map__lookup_elem(l->skel->maps.launching, &key, sizeof(key), &st, sizeof(st), 0) ||
		    st.stopped_at == MT_LAUNCH_WAITING)
			continue;
		l->at_entry = st.stopped_at == MT_LAUNCH_AT_ENTRY;
		return 0; /* the signal is ours: not passed on */
	}
	return -ELOOP;
}

/* Our signal must not be blocked (a mask survives exec): unblock it while
 * we wait, and give the program its own mask back once it stopped. */
static int unblock_launch_signal(pid_t pid, uint64_t *saved)
{
	uint64_t mask;

	if (ptrace(PTRACE_GETSIGMASK, pid, (void *)sizeof(mask), saved))
		return -errno;
	mask = *saved & ~(1ULL << (LAUNCH_SIGNAL - 1));
	if (mask != *saved && ptrace(PTRACE_SETSIGMASK, pid, (void *)sizeof(mask), &mask))
		return -errno;
	return 0;
}

int launcher__stop_after_linking(struct launcher *l, pid_t pid)
{
	char interp[PATH_MAX + 64], exe[PATH_MAX + 64];
	uint64_t base = 0, entry = 0, r_debug = 0, entry_off = 0, hook_off = 0, mask;
	struct mt_launch st = { .signal = LAUNCH_SIGNAL };
	struct launch_links ln = { .fds = { -1, -1 } };
	struct elf_function hook;
	__u32 key = pid;
	int err;

	l->at_entry = false;
	l->failed_step = LAUNCH_LINKER;
	err = read_auxv(pid, AT_BASE, &base);
	if (!err)
		err = read_auxv(pid, AT_ENTRY, &entry);
	if (err)
		return err;
	if (!base)
		return 0; /* static executable: everything is mapped already */
	err = mapping_at(pid, base, interp, sizeof(interp), &hook_off);
	if (!err)
		err = mapping_at(pid, entry, exe, sizeof(exe), &entry_off);
	if (err)
		return err;
	/* An unknown linker (no hook, no r_debug) leaves the entry point. */
	hook_off = 0;
	if (!elf_find_function(interp, "_dl_debug_state", &hook) &&
	    !find_data_symbol(interp, "_r_debug", &r_debug)) {
		hook_off = hook.file_offset;
		st.r_state_addr = base + r_debug + R_STATE_OFFSET;
	}
	l->failed_step = LAUNCH_ATTACH;
	err = unblock_launch_signal(pid, &mask);
	if (err)
		return err;
	err = bpf_map__update_elem(l->skel->maps.launching, &key, sizeof(key), &st, sizeof(st), BPF_ANY);
	if (!err)
		err = attach_launch_probes(l, pid, interp, hook_off, exe, entry_off, &ln);
	if (!err) {
		l->failed_step = LAUNCH_WAIT;
		err = run_to_launch_stop(l, pid, key);
	}
	/* Without its entry the probes do nothing: they are released with the
	 * launcher (40 to 60 ms of grace periods here, while the command was
	 * held; `record` releases them after the user has the prompt back). */
	bpf_map__delete_elem(l->skel->maps.launching, &key, sizeof(key), 0);
	keep_launch_probes(l, &ln);
	if (!err)
		ptrace(PTRACE_SETSIGMASK, pid, (void *)sizeof(mask), &mask);
	if (!err)
		l->failed_step = LAUNCH_OK;
	return err;
}

/* The forked child: wait for the go byte, then become the command. */
static void child_exec(const struct launcher *l, int go_fd, int err_fd, const char *path, char *const argv[])
{
	char go;
	int err;

	if (read(go_fd, &go, 1) != 1)
		_exit(127); /* the parent gave up: never run the command */
	if (l->keep_fd >= 0 && fcntl(l->keep_fd, F_SETFD, 0))
		_exit(127);
	ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	execve(path, argv, l->envp ? l->envp : environ);
	err = errno;
	if (write(err_fd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

int launcher__fork(struct launcher *l, const char *path, char *const argv[])
{
	int go[2], errp[2], err;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		err = -errno;
		close(go[0]);
		close(go[1]);
		return err;
	}
	l->path = path;
	l->pid = fork();
	if (l->pid == 0) {
		close(go[1]);
		close(errp[0]);
		child_exec(l, go[0], errp[1], path, argv);
	}
	err = l->pid < 0 ? -errno : 0;
	close(go[0]);
	close(errp[1]);
	l->go_fd = go[1];
	l->err_fd = errp[0];
	if (err) {
		close(l->go_fd);
		close(l->err_fd);
		l->go_fd = l->err_fd = -1;
	}
	return err;
}

static int wait_exec_stop(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFSTOPPED(status))
		return -ECHILD;
	return WSTOPSIG(status) == SIGTRAP ? 0 : -EPROTO;
}

int launcher__exec(struct launcher *l)
{
	int child_err = 0, err;
	ssize_t n;

	l->failed_step = LAUNCH_EXEC;
	if (write(l->go_fd, "g", 1) != 1) {
		err = -errno;
		launcher__kill(l);
		return err;
	}
	close(l->go_fd);
	l->go_fd = -1;
	do
		n = read(l->err_fd, &child_err, sizeof(child_err));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == sizeof(child_err)) {
		waitpid(l->pid, NULL, 0);
		l->pid = -1;
		return -child_err;
	}
	l->traced = true;
	err = wait_exec_stop(l->pid);
	/* If memtrace dies before the command is let go, the command dies
	 * too rather than stay stopped. */
	if (!err && ptrace(PTRACE_SETOPTIONS, l->pid, NULL, (void *)PTRACE_O_EXITKILL))
		err = -errno;
	if (!err)
		err = launcher__stop_after_linking(l, l->pid);
	if (err) {
		enum launcher_step step = l->failed_step;

		launcher__kill(l);
		l->failed_step = step;
	}
	return err;
}

int launcher__release(struct launcher *l)
{
	if (!l->traced)
		return 0;
	l->traced = false;
	if (ptrace(PTRACE_DETACH, l->pid, NULL, NULL))
		return -errno;
	return 0;
}

void launcher__kill(struct launcher *l)
{
	if (l->go_fd >= 0)
		close(l->go_fd); /* a child still waiting to exec exits */
	if (l->err_fd >= 0)
		close(l->err_fd);
	l->go_fd = l->err_fd = -1;
	if (l->pid <= 0)
		return;
	kill(l->pid, SIGKILL);
	waitpid(l->pid, NULL, 0);
	l->pid = -1;
	l->traced = false;
}
