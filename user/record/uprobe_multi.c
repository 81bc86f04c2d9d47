// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include "uprobe_multi.h"

#include <errno.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MT_BPF_F_UPROBE_MULTI_RETURN 1

struct uprobe_multi_attr { /* union bpf_attr, link_create with uprobe_multi */
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad;
};

int uprobe_multi__attach(const struct uprobe_multi_req *r)
{
	struct uprobe_multi_attr attr = {
		.prog_fd = r->prog_fd,
		.attach_type = r->session ? MT_BPF_TRACE_UPROBE_SESSION : MT_BPF_TRACE_UPROBE_MULTI,
		.path = (uint64_t)(uintptr_t)r->path,
		.offsets = (uint64_t)(uintptr_t)r->offsets,
		.cookies = (uint64_t)(uintptr_t)r->cookies,
		.ref_ctr_offsets = (uint64_t)(uintptr_t)r->ref_ctrs,
		.cnt = r->cnt,
		.multi_flags = r->ret ? MT_BPF_F_UPROBE_MULTI_RETURN : 0,
		.pid = r->pid,
	};
	int fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));

	return fd < 0 ? -errno : fd;
}
