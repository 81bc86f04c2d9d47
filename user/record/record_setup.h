/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every recording asks of the loader, in one place: `record` and
 * `top` (one process), and the --follow-children supervisor, which loads
 * the object its forked recorders share.
 */
#ifndef MEMTRACE_RECORD_SETUP_H
#define MEMTRACE_RECORD_SETUP_H

#include "loader.h"
#include "record.h"
#include <stdint.h>

#define CAP_SYS_PTRACE_BIT 19
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

/* A capability set of ours (capget): WHICH is "CapEff" or "CapPrm"; 0 if
 * it cannot be read. */
uint64_t record_own_caps(const char *which);

/* The loader options O implies (stack depth, rings, sampling, unwind room,
 * and, without CAP_SYS_PTRACE, the kernel's ptrace rule enforced in BPF);
 * pid, record callback and context are the caller's. */
void record_loader_opts(const struct record_opts *o, struct loader_opts *lo);

#endif /* MEMTRACE_RECORD_SETUP_H */
