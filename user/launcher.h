/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_LAUNCHER_H
#define MEMTRACE_LAUNCHER_H

#include <sys/types.h>

/*
 * Starts a command held still at the moment its dynamic linker has mapped
 * every library it needs and before any of their initializers run, so probes
 * attached then see the program's first allocation.
 */
struct launcher {
	pid_t pid;
	int traced; /* still under ptrace */
};

/* Fork, exec ARGV[0] (PATH search) and stop it as above. 0, or -errno with
 * nothing left running: -ENOENT/-EACCES/-ENOEXEC when exec failed. */
int launcher__spawn(struct launcher *l, char *const argv[]);

/* PID, stopped by ptrace right after an exec: run it until its dynamic
 * linker has mapped every library (nothing to do for a static program),
 * and leave it stopped there. 0 or -errno. */
int launcher__stop_after_linking(pid_t pid);

/* Let the command run (detach from it). */
int launcher__release(struct launcher *l);

/* Kill a command that never ran and reap it. */
void launcher__kill(struct launcher *l);

#endif /* MEMTRACE_LAUNCHER_H */
