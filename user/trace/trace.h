/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The trace as the writer takes it and the reader gives it back: plain
 * structs, one per record kind of docs/trace-format.md. Pointers inside
 * them are owned by whoever produced the struct and are valid only for
 * the duration of the call that hands it over.
 */
#ifndef MEMTRACE_TRACE_H
#define MEMTRACE_TRACE_H

#include <stdint.h>
#include <linux/types.h>
/* The event and mark kinds are the ABI's, so bpf/ and user/ share one list. */
#include "memtrace_abi.h"

/* Version 2: a --budget trace, whose events stand for more than
 * themselves (its WINDOW marks weigh them): a reader that does not know the
 * weights would misread every figure. Exact and sampled traces stay 1. */
#define TRACE_VERSION 2
#define TRACE_VERSION_UNWEIGHTED 1

struct trace_meta {
	const char *command_line; /* argv joined by spaces, or the target's cmdline */
	const char *comm;         /* target's short name */
	const char *kernel;       /* uname -r */
	const char *hostname;
	int32_t pid;               /* target pid as memtrace saw it */
	uint32_t stack_depth;      /* max frames recorded (0: no stacks) */
	uint64_t sample_bytes;     /* 0: every allocation; else mean bytes between samples */
	uint64_t start_mono_ns;    /* CLOCK_MONOTONIC at attach: event timestamps' clock */
	uint64_t start_real_ns;    /* CLOCK_REALTIME at the same moment */
	/* --budget (0: exact or sampled): the budget in millionths of the
	 * target's work, and one probe hit's cost as calibrated at start */
	uint64_t budget_ppm;
	uint64_t hit_entry_ns;
	uint64_t hit_return_ns;
	uint64_t flags;            /* TRACE_META_*; 0 in traces of earlier writers */
	/* --budget: the allocator's own mappings (mmap, munmap, mremap: MAP
	 * records) of this length or more are its large blocks, recorded
	 * exactly; 0: not traced (and in traces of earlier writers) */
	uint64_t large_bytes;
};

#define TRACE_META_NO_HEAP 0x1 /* --rss=only: no allocator probes, no heap events */
#define TRACE_META_MAPS 0x2    /* --rss: the calls that map memory were traced (MAP records) */
#define TRACE_META_ATTACHED 0x4 /* began in a running process: its earlier blocks are not in the trace */
#define TRACE_META_PRELOAD 0x10 /* record --preload: the allocator calls captured in-process */
#define TRACE_META_GLIBC_PROBES 0x8 /* --rss: the C library's allocator probes were attached (MAP records 7-16) */

/* A STACK record's last frame when the walk was cut: not an address. */
#define TRACE_FRAME_TRUNCATED 1ULL /* no unwind table for the next frame */
#define TRACE_FRAME_DEPTH_CUT 2ULL /* --stack-depth reached */
#define TRACE_FRAME_OTHER 3ULL     /* the stacks past a recording's cap (memtrace agent), folded into one */
#define TRACE_FRAME_PY_CUT 4ULL    /* more Python frames than a walk keeps (MT_PY_MAX_FRAMES) */

struct trace_module {
	uint64_t start;           /* mapping start address in the target */
	uint64_t end;             /* mapping end (exclusive) */
	uint64_t file_offset;     /* file offset the mapping starts at */
	const char *path;         /* path as the target sees it */
	uint8_t build_id[32];
	uint32_t build_id_len;    /* 0: none found */
};

struct trace_event {
	uint32_t type;     /* MT_EVENT_ALLOC, MT_EVENT_FREE or MT_EVENT_REALLOC (memtrace_abi.h) */
	uint32_t tid;
	uint64_t ts;       /* CLOCK_MONOTONIC ns */
	uint64_t ptr;      /* ALLOC/REALLOC: the new pointer; FREE: the pointer freed */
	uint64_t old_ptr;  /* REALLOC: the pointer passed in */
	uint64_t size;     /* ALLOC/REALLOC: bytes */
	uint32_t stack_id; /* ALLOC/REALLOC: id of a trace_stack (0: none) */
};

struct trace_stack {
	uint32_t id;            /* >= 1, unique in the trace */
	uint32_t nr;
	const uint64_t *frames; /* return addresses, innermost (the allocation site) first */
};

/* An interned string: marks refer to names by id (docs/trace-format.md). */
struct trace_string {
	uint32_t id;     /* >= 1, defined once per trace, before any mark that uses it */
	const char *str; /* the text; NULL only if the writer had none */
};


struct trace_mark {
	uint32_t kind; /* enum mt_mark_kind (memtrace_abi.h); a reader passes on kinds it does not know */
	uint32_t tid;
	uint64_t ts;   /* CLOCK_MONOTONIC ns, the clock of trace_event.ts */
	uint32_t name; /* id of a trace_string; 0: none */
	uint64_t ptr;  /* POOL_ALLOC, POOL_FREE; else 0 */
	uint64_t size; /* POOL_ALLOC; else 0 */
};

struct trace_thread {
	uint32_t tid;
	const char *name;
};

struct trace_frame {
	const char *function; /* demangled; NULL if unknown */
	const char *file;     /* source file; NULL if unknown */
	uint32_t line;        /* 0 if unknown */
	uint32_t column;
};

/* What one address resolves to: frames[0] is the innermost inlined call, the
 * last is the function the machine code belongs to. */
/* trace_symbol.language: what the frames at an address are code of. */
enum trace_language {
	TRACE_LANG_NATIVE = 0, /* machine code */
	TRACE_LANG_PYTHON = 1, /* a Python function (user/record/python.h) */
};

struct trace_symbol {
	uint64_t addr;                   /* the address as it appears in stacks */
	int32_t module;                  /* index into the modules in order written; -1 none */
	uint64_t module_offset;          /* addr relative to the module's ELF vaddr 0 */
	uint32_t nframes;                /* 0: unresolved */
	const struct trace_frame *frames;
	uint32_t language;               /* enum trace_language */
};

struct trace_drops {
	uint32_t cpu;
	uint64_t count; /* events the kernel could not hand over on that cpu */
};

/* --rss: the target's resident memory at TS (CLOCK_MONOTONIC ns), from
 * /proc/PID/status, in bytes. */
struct trace_rss {
	uint64_t ts;
	uint64_t anon;  /* RssAnon */
	uint64_t file;  /* RssFile */
	uint64_t shmem; /* RssShmem */
};

/* --rss: a call that mapped or unmapped memory (enum mt_map_call), as it
 * returned: memtrace_abi.h's mt_map_event with the stack interned. */
struct trace_map {
	uint64_t ts;
	uint32_t tid;
	uint32_t call;     /* enum mt_map_call */
	uint32_t flags;    /* MT_MAP_IN_ALLOC */
	uint32_t stack_id; /* 0: none */
	uint64_t ret, a0, a1, a2, a3;
};

/* --rss: /proc/PID/smaps_rollup at TS (the recording's start and end), its
 * lines as they come ("Rss", "Pss", "Anonymous", "Swap", ...), in bytes. */
#define TRACE_ROLLUP_MAX 32
struct trace_rollup {
	uint64_t ts;
	uint32_t n;
	const char *name[TRACE_ROLLUP_MAX];
	uint64_t bytes[TRACE_ROLLUP_MAX];
};

/* --rss: which of the target's pages were resident at TS, from
 * /proc/PID/pagemap: its private mappings that held anonymous pages, and in
 * them the runs of anonymous pages present (not swapped, not the file's). */
enum trace_vma_kind {
	TRACE_VMA_ANON = 0,         /* anonymous, named or not */
	TRACE_VMA_HEAP = 1,         /* [heap]: the break's */
	TRACE_VMA_STACK = 2,        /* [stack]: the main thread's */
	TRACE_VMA_THREAD_STACK = 3, /* anonymous, holding a thread's stack pointer */
	TRACE_VMA_FILE = 4,         /* a file's private mapping (written data, relro, bss) */
	TRACE_VMA_KINDS
};
struct trace_vma {
	uint64_t start, end;
	uint32_t kind;  /* enum trace_vma_kind */
	uint32_t nruns; /* its runs: the next NRUNS of trace_resident.runs */
};
struct trace_page_run {
	uint64_t start, end; /* bytes, page-aligned */
};
struct trace_resident {
	uint64_t ts;
	uint32_t page_size;
	uint32_t nvmas, nruns;
	const struct trace_vma *vmas;       /* ascending */
	const struct trace_page_run *runs;  /* ascending, vma by vma */
};

struct trace_end {
	uint64_t end_mono_ns;  /* when recording stopped */
	uint64_t events;       /* alloc/free/realloc records written */
	uint64_t dropped;      /* sum of all trace_drops */
	int32_t exit_status;   /* target's wait status if it exited under us; -1 unknown */
	uint32_t flags;        /* TRACE_END_* */
	const char *stop_reason; /* why recording stopped early, a sentence; NULL: none */
	/* TRACE_END_OOM_KILLED: the memory limit it hit */
	uint64_t memory_limit;     /* bytes; 0: not known */
	const char *memory_limit_of; /* whose: "v1 /PATH" or "v2 /PATH" (its memory cgroup), "host" (MemTotal); NULL */
};

#define TRACE_END_TARGET_EXITED 0x1 /* recording ended because the target exited */
#define TRACE_END_CREDS_CHANGED 0x2 /* the target changed to credentials we may not trace */
#define TRACE_END_OOM_KILLED 0x4    /* the target was killed by the OOM killer (the agent's --oom-dir) */
#define TRACE_END_CRASHED 0x8       /* the target died of SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT */

#endif /* MEMTRACE_TRACE_H */
