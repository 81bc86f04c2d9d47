/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_LAUNCHER_H
#define MEMTRACE_LAUNCHER_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Starts a command held still at the moment its dynamic linker has mapped
 * every library it needs (LD_PRELOAD ones too) and before any of their
 * initializers run, so probes attached then see the program's first
 * allocation. A statically linked program is held at its exec.
 *
 * One mechanism on every host (see bpf/launch.bpf.c): a uprobe on the
 * linker's debugger hook signals the thread, and we, its ptrace parent, turn
 * the signal into the stop. A second uprobe on the program's entry point
 * bounds the wait if the hook never reports a complete link map.
 */
struct launch_bpf;
struct bpf_link;

enum launcher_step {
	LAUNCH_OK,
	LAUNCH_EXEC,   /* exec of the command */
	LAUNCH_LINKER, /* find the dynamic linker and its hook */
	LAUNCH_ATTACH, /* attach the launch probes */
	LAUNCH_WAIT,   /* wait for the stop */
};

struct launcher {
	pid_t pid;              /* the command; -1 before fork and after it was reaped */
	bool traced;            /* still under ptrace */
	int go_fd;              /* a byte written here lets the forked child exec */
	int err_fd;             /* the child's exec errno comes back here */
	struct launch_bpf *skel;
	bool multi;             /* probes attach as multi-uprobe links */
	enum launcher_step failed_step; /* what launcher__exec or __stop_after_linking failed at */
	bool at_entry;          /* held at the entry point (the fallback), not the hook */
	const char *path;       /* the program exec'd */
	char *const *envp;      /* its environment; NULL: ours (set before launcher__fork) */
	int keep_fd;            /* a descriptor of ours it inherits (record --preload's memory); -1: none */
	/* The launch probes, inert once the command stopped (its launching
	 * entry gone): released by launcher__drop_probes, not while it is
	 * held, since releasing a link waits on the kernel's grace periods. */
	int link_fds[2];
	struct bpf_link *links[2];
};

/* Load the launch probes: 0 or -errno (-EPERM without the capabilities). */
int launcher__open(struct launcher *l);

/* PATH search for ARGV0 as execvp does it; the program found in BUF. 0,
 * -ENOENT (nowhere), -EACCES (found, not executable), -EISDIR. */
int launcher__resolve(const char *argv0, char *buf, size_t cap);

/* Fork a child that waits, not yet exec'd, so its pid is known before
 * anything runs. 0 or -errno. */
int launcher__fork(struct launcher *l, const char *path, char *const argv[]);

/* Let the forked child exec PATH with ARGV and hold it as above. 0, or
 * -errno with l->failed_step set and nothing left running. */
int launcher__exec(struct launcher *l);

/* PID, stopped by ptrace right after an exec: run it until its dynamic
 * linker has mapped every library, and leave it stopped there. 0, or -errno
 * with l->failed_step set. */
int launcher__stop_after_linking(struct launcher *l, pid_t pid);

/* Let the command run (detach from it). */
int launcher__release(struct launcher *l);

/* Kill a command that never ran (or a child that never exec'd) and reap it. */
void launcher__kill(struct launcher *l);

/* Unload the launch probes. */
/* Release the launch probes kept since the last stop: after the command
 * runs, off its clock. launcher__close leaves them. */
void launcher__drop_probes(struct launcher *l);

void launcher__close(struct launcher *l);

/* What a failed step was doing, for "failed to <this>" messages. */
const char *launcher__step_name(enum launcher_step step);

#endif /* MEMTRACE_LAUNCHER_H */
