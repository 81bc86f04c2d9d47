// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memtrace --version: which memtrace this is (version, commit, how it was
 * built), the libbpf inside it, and what the kernel here offers it. The
 * kernel's features are found the way record finds them: by loading the
 * BPF programs and stepping down from uprobe sessions to multi-uprobe
 * links to classic uprobes until they load, which needs CAP_BPF.
 */
#include "commands.h"
#include "loader.h"
#include "usdt.h"
#include "version.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* "yes", "no", or why we cannot tell, for the two link kinds. */
static void probe_links(const char **sessions, const char **multi)
{
	struct loader_opts o = { .ring_bytes = 4096 };
	struct loader *l = NULL;
	int err;

	*sessions = *multi = "unknown (needs root or CAP_BPF to try)";
	/* a kernel that refuses a program is an answer here, not news: the
	 * loader keeps libbpf quiet */
	err = loader__open(&l, &o);
	if (!err)
		err = loader__load(l);
	if (!err) {
		enum loader_mode m = loader__mode(l);

		*sessions = m == LOADER_SESSION ? "yes" : "no";
		*multi = m <= LOADER_MULTI ? "yes" : "no";
	} else if (err != -EPERM && err != -EACCES) {
		*sessions = *multi = "unknown (the BPF programs did not load)";
	}
	loader__close(l);
}

int cmd_version(int argc, char **argv)
{
	struct utsname u;
	const char *sessions, *multi;
	bool btf = !access("/sys/kernel/btf/vmlinux", R_OK);

	if (argc > 1) {
		fprintf(stderr, "usage: memtrace --version\n");
		return MEMTRACE_EXIT_USAGE;
	}
	uname(&u);
	probe_links(&sessions, &multi);
	printf("memtrace %s (%s)\n", MEMTRACE_VERSION, MEMTRACE_BUILD);
	printf("libbpf %s\n", libbpf_version_string());
	printf("kernel %s: BTF %s, uprobe sessions %s, multi-uprobe links %s, optimized uprobes on 5-byte nops %s\n",
	       u.release, btf ? "yes" : "no", sessions, multi, usdt_kernel_nop5() ? "yes" : "no");
	return MEMTRACE_EXIT_OK;
}
