/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one ABI between the BPF programs and user space: the records the
 * probes put in the per-CPU ring buffers. No includes; fixed-width types
 * only; padding spelled out. user/ _Static_asserts every size.
 */
#ifndef MEMTRACE_ABI_H
#define MEMTRACE_ABI_H

#define MT_MAX_STACK_DEPTH 127 /* frames kept per stack, at most */
#define MT_STACK_DEPTH_MASK 127 /* bounds a frame count for the verifier: 2^n - 1 >= the above */
#define MT_DEFAULT_STACK_DEPTH 64
#define MT_SAMPLE_GAPS 1024     /* exponential draws user space provides for sampling */

/* Event kinds: of the ring-buffer records, and (ALLOC, FREE, REALLOC) of
 * the events the trace reader hands out (user/trace/trace.h): one list. */
enum mt_event_type {
	MT_EVENT_ALLOC = 1,   /* a successful allocation */
	MT_EVENT_FREE = 2,    /* free/delete of a non-NULL pointer */
	MT_EVENT_REALLOC = 3, /* realloc of a non-NULL pointer that moved or resized it */
	MT_EVENT_STACK = 4,   /* first sighting of a stack: its frames */
	MT_EVENT_MARK = 5,    /* an inproc/memtrace.h mark (zone, frame, pool, thread name) */
	MT_EVENT_STRING = 6,  /* first sighting on a CPU of a name a mark points to */
	MT_EVENT_MAP = 7,     /* --rss: mmap, munmap, mremap, brk or madvise returned */
	MT_EVENT_PYSTACK = 8, /* first sighting of a stack with Python frames: them and its native stack's id */
	MT_EVENT_PYCODE = 9,  /* first sighting on a CPU of a Python code object: its names, line table */
	MT_EVENT_FORK = 10,   /* the process forked one not recorded (ring only, never in a trace) */
};

/* mt_map_event.call */
enum mt_map_call {
	MT_MAP_MMAP = 1,    /* a0 addr hint, a1 length, a2 prot, a3 flags; ret: the mapping */
	MT_MAP_MUNMAP = 2,  /* a0 addr, a1 length */
	MT_MAP_BRK = 3,     /* a0 the break asked for; ret: the break now */
	MT_MAP_MREMAP = 4,  /* a0 old addr, a1 old length, a2 new length, a3 flags; ret: the mapping */
	MT_MAP_MADVISE = 5, /* a0 addr, a1 length, a2 advice (DONTNEED, FREE or REMOVE only) */
	MT_MAP_FAULT = 6,   /* a sampled write fault: a0 the address, a1 the bytes it stands for, a2 error code */
	/* glibc's own probes in its allocator (provider libc, where the C
	 * library has them): a0, a1 the probe's first two arguments */
	MT_MAP_ARENA_NEW = 7,   /* memory_arena_new: a0 the arena, a1 its size */
	MT_MAP_ARENA_REUSE = 8, /* memory_arena_reuse, _reuse_free_list: a0 the arena a thread took */
	MT_MAP_HEAP_NEW = 9,    /* memory_heap_new: a0 a non-main arena's heap, a1 its size */
	MT_MAP_HEAP_MORE = 10,  /* memory_heap_more: a0 the heap, a1 its size now */
	MT_MAP_HEAP_LESS = 11,  /* memory_heap_less: a0 the heap, a1 its size now */
	MT_MAP_HEAP_FREE = 12,  /* memory_heap_free: a0 the heap, a1 its size */
	MT_MAP_SBRK_MORE = 13,  /* memory_sbrk_more: a0 where the main heap grew, a1 by how much */
	MT_MAP_SBRK_LESS = 14,  /* memory_sbrk_less: a0 the break now, a1 the bytes given back */
	MT_MAP_MALLOPT = 15,    /* memory_mallopt: a0 the parameter, a1 its value */
	MT_MAP_RETRY = 16,      /* memory_{malloc,calloc,realloc,memalign}_retry: a0 the size */
	MT_MAP_NR_CALLS = 17,
};

#define MT_FAULT_EVERY 16 /* --rss: one write fault in this many is sent (per CPU), standing for them all */

#define MT_MAP_IN_ALLOC 1u /* made while an allocator call was open on the thread */

/* What an in-process mark (inproc/memtrace.h) said: mt_mark_event.kind,
 * and the trace's MARK records (docs/trace-format.md). */
enum mt_mark_kind {
	MT_MARK_ZONE_BEGIN = 1,  /* name: the zone */
	MT_MARK_ZONE_END = 2,    /* name: the zone */
	MT_MARK_FRAME = 3,       /* name: the frame's label, or 0 */
	MT_MARK_POOL_ALLOC = 4,  /* name: the pool; ptr, size */
	MT_MARK_POOL_FREE = 5,   /* name: the pool; ptr */
	MT_MARK_POOL_RESET = 6,  /* name: the pool */
	MT_MARK_THREAD_NAME = 7, /* name: the calling thread's new name */
	/* --budget windows, written by the recorder, not a probe (tid: the target's pid) */
	MT_MARK_WINDOW_BEGIN = 8, /* allocations taken from here; size: weight x 1e6 */
	MT_MARK_WINDOW_END = 9,   /* allocations no longer taken; frees still are */
	MT_MARK_TAIL_END = 10,    /* frees no longer taken either */
	MT_MARK_LARGE_END = 11,   /* the large blocks' probes detached: their mmap and munmap no longer seen */
};
#define MT_MARK_KIND_LAST MT_MARK_LARGE_END /* what a writer takes; a reader skips what is past what it knows */

/* A STRING whose text the kernel gave (a thread's name, bpf/threads.bpf.h)
 * is at a made-up address with this bit: no user pointer has it. */
#define MT_NAME_KERNEL (1ULL << 63)

#define MT_USDT_MAX_ARGS 3
#define MT_USDT_MAX_SPECS 4096
#define MT_STRING_MAX 64

enum mt_usdt_arg_kind {
	MT_USDT_ARG_NONE = 0,
	MT_USDT_ARG_REG = 1, /* value of the register at reg_off in struct pt_regs */
	MT_USDT_ARG_IMM = 2, /* the constant imm */
	MT_USDT_ARG_MEM = 3, /* the value at imm bytes from the register at reg_off */
};
/* mt_usdt_spec.kind[i]: the kind in the low 4 bits; then the argument's
 * width in bytes when 1, 2 or 4 (0: 8), and whether it is signed. */
#define MT_USDT_KIND(k) ((k) & 0xf)
#define MT_USDT_BYTES(k) (((k) >> 4) & 7)
#define MT_USDT_SIGNED 0x80

/* Where one USDT probe site keeps its arguments; the site's cookie is
 * (spec index << 8 | mark kind). */
struct mt_usdt_spec {
	__u8 kind[MT_USDT_MAX_ARGS];    /* enum mt_usdt_arg_kind */
	__u8 pad;                       /* zero */
	__u16 reg_off[MT_USDT_MAX_ARGS]; /* byte offset in struct pt_regs */
	__u16 pad2;                     /* zero */
	__s64 imm[MT_USDT_MAX_ARGS];    /* constants */
};

/* What an allocator entry point does with its arguments (in the attach cookie:
 * one entry program serves every kind, so the stack walk is verified once). */
enum mt_func_kind {
	MT_KIND_MALLOC = 1,         /* size = arg0: malloc, valloc, pvalloc, operator new */
	MT_KIND_CALLOC = 2,         /* size = arg0 * arg1 */
	MT_KIND_REALLOC = 3,        /* ptr = arg0, size = arg1 */
	MT_KIND_REALLOCARRAY = 4,   /* ptr = arg0, size = arg1 * arg2 */
	MT_KIND_MEMALIGN = 5,       /* size = arg1: memalign, aligned_alloc */
	MT_KIND_POSIX_MEMALIGN = 6, /* *arg0 = result, size = arg2, returns 0 */
	MT_KIND_FREE = 7,           /* ptr = arg0: free, operator delete */
};

/* An allocator probe's attach cookie: whether its function may call another
 * probed one, and where each argument is at the probed instruction when the
 * instructions before it moved it out of its ABI register (mimalloc's malloc
 * copies the size from rdi to rsi, then reuses rdi). */
#define MT_COOKIE_MAY_NEST 1        /* bit 0 */
#define MT_COOKIE_KIND_SHIFT 4      /* bits 4-7: enum mt_func_kind of an allocation entry */
#define MT_COOKIE_KIND_MASK 15
#define MT_COOKIE_ARG_SHIFT 8       /* argument i: 4 bits at 8 + 4 * i, enum mt_arg_reg */
#define MT_COOKIE_ARGS 3            /* arguments an entry program reads, at most */

enum mt_arg_reg {
	MT_ARG_ABI = 0, /* where the calling convention puts it */
	MT_ARG_RAX, MT_ARG_RBX, MT_ARG_RCX, MT_ARG_RDX, MT_ARG_RSI, MT_ARG_RDI, MT_ARG_R8,
	MT_ARG_R9, MT_ARG_R10, MT_ARG_R11, MT_ARG_R12, MT_ARG_R13, MT_ARG_R14, MT_ARG_R15,
};

/* --budget: probe hits per target slot and CPU (the BPF map hits), what
 * the controller prices. */
struct mt_hit_count {
	__u64 entries; /* entry probes (every allocator call) */
	__u64 returns; /* return probes (allocation calls' returns) */
	/* the large blocks' probes on the C library's mmap, munmap and
	 * mremap: attached throughout, windows or not, so priced apart
	 * (their hits are neither frees nor a window's) */
	__u64 map_entries, map_returns;
};

struct mt_event_header {
	__u16 type; /* enum mt_event_type */
	__u16 size; /* bytes of the whole record, header included */
	__u32 tid;  /* kernel thread id of the caller */
	__u64 ts;   /* CLOCK_MONOTONIC ns: at return for allocations, entry for frees */
};

/* A recorded process made a process of its own memory (fork, not vfork or
 * a thread) that nothing records: the child holds copies of the probes'
 * breakpoints, which the recorder takes out (user/record/fork_clean.h). */
struct mt_fork_event {
	struct mt_event_header hdr; /* type FORK; tid: the forking thread */
	__u32 child;                /* the new process's pid */
	__u32 pad;                  /* 0 */
};

struct mt_alloc_event {
	struct mt_event_header hdr; /* type ALLOC or REALLOC */
	__u64 ptr;                  /* returned pointer */
	__u64 size;                 /* bytes requested (calloc: nmemb * size) */
	__u64 old_ptr;              /* REALLOC: the pointer passed in; else 0 */
	__u64 stack_id;             /* hash of the frames; an MT_EVENT_STACK carries them */
};

struct mt_free_event {
	struct mt_event_header hdr; /* type FREE */
	__u64 ptr;                  /* pointer freed, never 0 */
};

struct mt_stack_event {
	struct mt_event_header hdr;                /* type STACK; size counts only nr frames */
	__u64 stack_id;                            /* hash of the frames */
	__u32 nr;                                  /* frames that follow */
	__u32 pad;                                 /* zero */
	__u64 frames[MT_MAX_STACK_DEPTH];          /* return addresses, innermost (the site) first */
};

/*
 * A lane: one CPU's ring for the allocation and free records of one target,
 * written by the probes with plain stores and read by the recorder through
 * mmap. A BPF ring buffer costs a probe a locked reservation and a commit
 * per record (about 200 ns on a VM, measured); a lane costs a few stores. A
 * lane's value is this header, then lane_bytes of records (a power of two),
 * then MT_LANE_SLACK bytes: a record that starts near the end goes on into
 * them rather than wrapping, so every record is whole where it starts.
 * Stacks, marks and the rest go through the ring buffer, as does a record
 * that finds its lane full or being written (a probe preempted mid-record
 * on that CPU); the recorder puts both in time order.
 */
struct mt_lane_ctl {
	__u64 head;    /* bytes written, the probes' (published after the record) */
	__u64 busy;    /* a probe is writing: 1 (64 bits: BPF's exchange) */
	__u64 pad1[6]; /* head and tail on lines of their own */
	__u64 tail;    /* bytes read, the recorder's */
	__u64 pad2[7];
};

#define MT_LANE_DATA sizeof(struct mt_lane_ctl) /* where records start in a lane */
#define MT_LANE_SLACK 64                       /* >= the largest lane record, 8-byte aligned */

struct mt_mark_event {
	struct mt_event_header hdr; /* type MARK */
	__u32 kind;                 /* enum mt_mark_kind */
	__u32 pad;                  /* zero */
	__u64 name;                 /* address of the name in the target (0: none) */
	__u64 ptr;                  /* pool marks: the block */
	__u64 size;                 /* pool alloc: its size */
};

struct mt_map_event {
	struct mt_event_header hdr; /* type MAP; ts at the syscall's return */
	__u32 call;                 /* enum mt_map_call */
	__u32 flags;                /* MT_MAP_* */
	__u64 ret;                  /* the syscall's result */
	__u64 a0, a1, a2, a3;       /* its arguments, as enum mt_map_call says */
	__u64 stack_id;             /* mmap, brk, mremap: the caller's stack; else 0 */
};

struct mt_string_event {
	struct mt_event_header hdr; /* type STRING */
	__u64 addr;                 /* where the string is in the target */
	__u32 len;                  /* bytes in text, without the NUL */
	__u32 unread;               /* 1: its page was not in memory; user space reads it */
	char text[MT_STRING_MAX];   /* NUL-terminated, cut at MT_STRING_MAX - 1 */
};

/* How a stack walk finds a frame's CFA (canonical frame address: the
 * caller's rsp), from a module's unwind table (user/record/unwind_table.h). */
enum mt_cfa_kind {
	MT_CFA_NONE = 0,   /* no rule the walker can follow: stop, stack truncated */
	MT_CFA_RSP = 1,    /* CFA = rsp + cfa_off */
	MT_CFA_RBP = 2,    /* CFA = rbp + cfa_off */
	MT_CFA_PLT = 3,    /* a PLT stub: CFA = rsp + 8, + 8 more once (pc & 15) >= 11 */
	MT_CFA_SIGNAL = 4, /* the kernel's signal frame (__restore_rt): registers in its ucontext */
	MT_CFA_END = 5,    /* the outermost frame (return address undefined): the stack is whole */
};

enum mt_rbp_rule {
	MT_RBP_SAME = 0,   /* the caller's rbp is this frame's */
	MT_RBP_AT_CFA = 1, /* saved at CFA + rbp_off */
};

/* One row: from pc (ELF vaddr in the module) up to the next row's. */
struct mt_unwind_row {
	__u32 pc;      /* ELF vaddr where the rule starts */
	__u8 cfa_kind; /* enum mt_cfa_kind */
	__u8 rbp_rule; /* enum mt_rbp_rule */
	__s16 rbp_off; /* MT_RBP_AT_CFA: bytes from the CFA */
	__s32 cfa_off; /* MT_CFA_RSP, MT_CFA_RBP: bytes added to the register; PLT: the pc & 15 threshold */
	__u32 flags;   /* MT_ROW_*; also pads the row to 16 bytes (BPF arrays keep 8-byte aligned elements) */
};

/* A row whose CFA offset the builder could not check against the code (the
 * first row of a function's cold part, a block after a ret or jmp): the
 * walker keeps the return address it reads there only if the instruction
 * before it is a call. */
#define MT_ROW_CHECK_RA 1u

#define MT_UNWIND_MAPS 512        /* executable mappings per process with a table */
#define MT_MAX_TARGETS 1024       /* processes one loaded object records at once (a power of two) */
#define MT_STACK_TRUNCATED 1ULL   /* last frame of a stack: no unwind table for the next frame */
#define MT_STACK_DEPTH_CUT 2ULL   /* last frame of a stack: --stack-depth reached */

/* One executable mapping of the traced process whose module has a table. */
struct mt_unwind_map {
	__u64 start;     /* runtime address range [start, end) */
	__u64 end;
	__u64 bias;      /* runtime address - ELF vaddr */
	__u32 first_row; /* the module's rows in map unwind_rows */
	__u32 nr_rows;
	__u32 flags;     /* MT_UNWIND_FRAME_POINTERS */
	__u32 pad;       /* zero */
};

/* Entries of the direct-mapped copy of the target map (targets_fast), a power of two. */
#define MT_TARGETS_FAST 4096

/* Stack templates (bpf/memtrace.bpf.c): 2^MT_TEMPLATE_BITS per CPU. */
#define MT_TEMPLATE_BITS 7

/* The walker's lookup cache: 2^MT_UNWIND_CACHE_BITS slots per CPU. */
#define MT_UNWIND_CACHE_BITS 12

#define MT_UNWIND_FRAME_POINTERS 1 /* the module keeps frame pointers: callers' frames by rbp */

/* What changed when a traced process took credentials the recorder may not
 * trace (bss creds_changed): bits, the first change seen. */
enum mt_creds_change {
	MT_CREDS_UID = 1,  /* real, effective or saved uid is not the recorder's */
	MT_CREDS_GID = 2,  /* real, effective or saved gid is not the recorder's */
	MT_CREDS_CAPS = 4, /* permitted capabilities beyond the recorder's */
};

/* Where bpf/launch.bpf.c held a command that memtrace starts. */
enum mt_launch_stop {
	MT_LAUNCH_WAITING = 0,  /* not yet */
	MT_LAUNCH_AT_HOOK = 1,  /* the dynamic linker's hook, link map consistent: the normal case */
	MT_LAUNCH_AT_ENTRY = 2, /* the program's entry point: the hook never said so */
};

/* One command being launched, keyed by its tgid (map `launching`). */
struct mt_launch {
	__u64 r_state_addr; /* address of the linker's r_debug.r_state; 0: unknown */
	__u32 signal;       /* what to send the thread; its ptrace parent suppresses it */
	__u32 stopped_at;   /* enum mt_launch_stop, set by the probe */
};

/* How a process the agent records ended, keyed by its tgid (bpf/exits.bpf.c,
 * map `exits`): the agent puts an entry in for each target, the programs
 * fill it in. */
struct mt_exit {
	__u64 oom_ns;    /* CLOCK_MONOTONIC: chosen by the OOM killer (oom:mark_victim); 0: never */
	__u64 exit_ns;   /* CLOCK_MONOTONIC: its last thread exited; 0: not yet */
	__s32 exit_code; /* the wait status: signal in bits 0-6, 0x80 a core, exit status << 8 */
	__u32 pad;       /* zero */
};

/*
 * Python frames (bpf/python.bpf.h): how to walk a CPython interpreter's
 * frames in one target slot, byte offsets into its structures for the
 * version user space found there (user/record/python.c). runtime 0: the
 * slot's process runs no interpreter memtrace knows.
 */
#define MT_PY_MAX_FRAMES 64   /* Python frames kept per stack, at most (a power of two) */
#define MT_PY_NONE 0xffff     /* an offset the version does not have */
#define MT_PY_READ 128        /* bytes read of each frame: every offset below + 8 fits */
#define MT_PY_TAG_BYTES 72    /* bytes of a code object hashed into its tag: the last 8 are co_name */

struct mt_py_layout {
	__u64 runtime;       /* address of _PyRuntime in the target; 0: none */
	__u16 interp_head;   /* _PyRuntimeState: interpreters.head */
	__u16 threads_head;  /* PyInterpreterState: threads.head */
	__u16 ts_next;       /* PyThreadState: next */
	__u16 ts_native_tid; /* PyThreadState: native_thread_id */
	__u16 ts_frame;      /* PyThreadState: cframe (3.11, 3.12) or current_frame (3.13) */
	__u16 cframe_frame;  /* _PyCFrame: current_frame; MT_PY_NONE: ts_frame holds the frame */
	__u16 fr_code;       /* _PyInterpreterFrame: f_code (f_executable in 3.13) */
	__u16 fr_previous;   /* _PyInterpreterFrame: previous */
	__u16 fr_instr;      /* _PyInterpreterFrame: prev_instr (3.11, 3.12), instr_ptr (3.13) */
	__u16 fr_owner;      /* _PyInterpreterFrame: owner (a byte) */
	__u16 fr_entry;      /* _PyInterpreterFrame: is_entry (3.11, a byte); MT_PY_NONE: see owner_cstack */
	__u16 code_tag;      /* PyCodeObject: where the MT_PY_TAG_BYTES hashed into a frame's tag start */
	__u16 name_hash;     /* str: its cached hash, mixed into the tag (3.11: no co_version); else MT_PY_NONE */
	__u16 co_qualname;   /* PyCodeObject: co_qualname (a str) */
	__u16 co_filename;   /* PyCodeObject: co_filename (a str) */
	__u16 co_firstlineno; /* PyCodeObject: co_firstlineno (an int) */
	__u16 co_linetable;  /* PyCodeObject: co_linetable (a bytes) */
	__u16 str_state;     /* PyASCIIObject: state (compact bit 5, ascii bit 6) */
	__u16 str_ascii;     /* sizeof(PyASCIIObject): where a compact ASCII str's characters start */
	__u16 bytes_size;    /* PyVarObject: ob_size of a bytes */
	__u16 bytes_data;    /* PyBytesObject: ob_sval */
	__u8 owner_cstack;   /* owner of the frames a C call of the evaluation loop pushes (3.12+) */
	__u8 tag_cache;      /* 1: code objects' deaths are probed (py_code_free), so tags may be cached */
	__u8 pad[4];         /* zero */
};

/* mt_py_frame.code: the frame is the first its C call of the evaluation
 * loop ran (is_entry), so the next frame out belongs to the next such call. */
#define MT_PY_ENTRY (1ULL << 63)
#define MT_PY_CODE_MASK ((1ULL << 48) - 1)

struct mt_py_frame {
	__u64 code;  /* the code object's address | MT_PY_ENTRY */
	__u32 tag;   /* hash of the code object's first bytes: a code object freed and made again differs */
	__s32 instr; /* the frame's instruction pointer - code (bytes) */
};

struct mt_pystack_event {
	struct mt_event_header hdr;                 /* type PYSTACK; size counts only nr frames */
	__u64 stack_id;                             /* hash of the native id and the frames: what events use */
	__u64 native_id;                            /* the native stack's id (a STACK sent before it) */
	__u32 nr;                                   /* frames that follow, innermost first */
	__u32 truncated;                            /* 1: more Python frames than MT_PY_MAX_FRAMES */
	struct mt_py_frame frames[MT_PY_MAX_FRAMES];
};

/*
 * record --preload: the in-process capture (inproc/preload/). memtrace
 * makes one shared memory file (a sealed memfd the command inherits) of
 * this header, then nr_slots slots of slot_bytes each. A thread takes a
 * slot on its first call and writes the same records as the probes
 * (ALLOC, FREE, REALLOC, STACK) into its ring; the recorder reads them
 * in order and hands them to the same drain. A record is whole where it
 * starts (it may go on into the slack past the ring's end, as in a lane),
 * and is committed by its header's type, stored last: a slot has no head,
 * so a signal handler's record written in the middle of its thread's own
 * needs no lock. The recorder zeroes what it read before moving tail past
 * it, so a type of 0 is always "not yet".
 */
#define MT_PRELOAD_MAGIC 0x6d747072656c6f61ULL /* "mtpreloa" */
#define MT_PRELOAD_VERSION 2
#define MT_PRELOAD_SLACK 2048 /* >= the largest record (a STACK of MT_MAX_STACK_DEPTH frames) */
#define MT_PRELOAD_SEEN 4096  /* a slot's stacks already sent: direct-mapped hashes */
#define MT_PRELOAD_ROW_CACHE 1024 /* a slot's unwind lookups: direct-mapped by return address */

/* What a --preload record's ts holds. */
enum mt_preload_clock {
	MT_PRELOAD_CLOCK_MONOTONIC = 0, /* CLOCK_MONOTONIC ns, as the probes' */
	MT_PRELOAD_CLOCK_TSC = 1,       /* the TSC (the kernel's clocksource: synchronized); memtrace converts */
};

enum mt_preload_slot_state {
	MT_SLOT_FREE = 0,    /* anyone may take it */
	MT_SLOT_OWNED = 1,   /* a thread writes into it */
	MT_SLOT_RETIRED = 2, /* its thread is done: freed once read to the end */
};

struct mt_preload_header {
	__u64 magic;         /* MT_PRELOAD_MAGIC */
	__u32 version;       /* MT_PRELOAD_VERSION */
	__u32 nr_slots;      /* slots after the header */
	__u64 slot_bytes;    /* each slot: its mt_preload_slot, then ring_bytes + MT_PRELOAD_SLACK */
	__u64 ring_bytes;    /* a power of two */
	__u64 header_bytes;  /* where slot 0 starts (a page multiple) */
	__u32 pid;           /* the process recorded: another (a forked child) writes nothing */
	__u32 recorder_pid;  /* memtrace: a writer waiting on a full ring gives up once it is gone */
	__u32 stack_depth;   /* frames per stack; 0: no stacks */
	__u32 stopped;       /* set by memtrace when it stops recording: write nothing more */
	__u32 clock;         /* records' ts: enum mt_preload_clock */
	__u32 follow;        /* --follow-children: a forked child, or a new program, makes memory of its own */
	__u32 adopted;       /* 1 once a recorder reads this memory (a child waits for it, a second may not) */
	__u32 started;       /* 1 once a program wrote here: another program (an exec) makes its own */
	__u32 unwind_rows;   /* room for rows in the unwind area after the slots (0: frame pointers only) */
	__u32 pad1;          /* zero */
	__u64 lost;          /* records written nowhere: no free slot, or a full ring in a signal handler */
	__u64 waits;         /* times a writer found its ring full and waited for the recorder */
	__u64 threads;       /* slots taken, all told */
	__u64 pad2[3];       /* zero: 128 bytes */
};

struct mt_preload_slot {
	__u64 state;         /* enum mt_preload_slot_state, taken with a compare-and-swap */
	__u32 tid;           /* the owner */
	__u32 pad;           /* zero */
	__u64 pad1[6];       /* state and tail on lines of their own */
	__u64 tail;          /* bytes read, the recorder's */
	__u64 pad2[7];
	/* The owner's own state (the interposer keeps none in TLS: a preloaded
	 * library with TLS would grow every thread's DTV, which the program's
	 * figures would show); the recorder never reads it. */
	__u64 w_reserved;    /* bytes of the ring taken: the next record's place */
	__u64 w_stack_lo;    /* the owner's stack, for the frame-pointer walk's checks */
	__u64 w_stack_hi;    /* ... its end; 0: unknown, the site alone is taken */
	__s32 w_guard;       /* > 0: inside one of the interposer's calls, whose inner calls do not count */
	__s32 w_depth;       /* records in the middle of being written (a signal handler's inside its thread's) */
	__u64 w_tail;        /* tail as last read: re-read only when it says the ring is full (its line is the recorder's) */
	__u64 pad3[3];       /* zero */
	__u64 seen[MT_PRELOAD_SEEN]; /* stacks this slot already sent, by hash (the owner's) */
	struct mt_preload_row_cache {
		__u64 pc;        /* the return address looked up (0: empty) */
		__u32 gen;       /* the unwind area's gen it was found in */
		__u32 found;     /* 1: row holds the rule; 0: no mapping or row (the walk stops) */
		struct mt_unwind_row row;
	} rows_seen[MT_PRELOAD_ROW_CACHE]; /* the owner's: a walk repeats the same few hundred return addresses */
};

/* The unwind area, after the slots: the tables memtrace builds for the BPF
 * walk (user/record/unwinder.c), copied for the interposer's, which walks
 * code without frame pointers as bpf/unwind.bpf.h does (bpf/unwind_rule.h).
 * Mappings in two halves: memtrace fills the one not in use, then bumps
 * gen; rows only ever added. unwind_rows rows follow it. */
struct mt_preload_unwind {
	__u32 gen;           /* publications; gen & 1: the half in use; 0: none yet */
	__u32 nr[2];         /* mappings in each half, sorted by start */
	__u32 pad;           /* zero */
	struct mt_unwind_map maps[2][MT_UNWIND_MAPS];
};
#define MT_PRELOAD_RING_AT sizeof(struct mt_preload_slot) /* where a slot's ring starts */

/* A code object's names and line table, sent by the walk the first time a
 * CPU sees it (while the code and its process surely live): user space
 * names its frames from this, reading the target only for what does not
 * fit (a longer table, a name that is not ASCII). */
#define MT_PY_NAME_MAX 128
#define MT_PY_FILE_MAX 256
#define MT_PY_TABLE_MAX 1024

struct mt_pycode_event {
	struct mt_event_header hdr;       /* type PYCODE */
	__u64 code;                       /* the code object's address */
	__u32 tag;                        /* its tag (mt_py_frame.tag) */
	__s32 firstlineno;                /* co_firstlineno */
	__u32 table_len;                  /* co_linetable's length, whole (table holds the first MT_PY_TABLE_MAX) */
	__u32 pad;                        /* zero */
	char name[MT_PY_NAME_MAX];        /* co_qualname if ASCII, NUL-terminated; "" else */
	char file[MT_PY_FILE_MAX];        /* co_filename if ASCII, NUL-terminated; "" else */
	__u8 table[MT_PY_TABLE_MAX];      /* co_linetable's bytes */
};

#endif /* MEMTRACE_ABI_H */
