/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One step of the stack walk by an unwind row (memtrace_abi.h's
 * mt_unwind_row): which address to look the row up at, where the CFA is,
 * where a signal frame keeps the interrupted registers, and which caller
 * frame is one to go on with. Included by the BPF walker (bpf/unwind.bpf.h)
 * and by the user-space model the fuzz test walks real stacks with
 * (tests/fuzz/fuzz_unwind_walk.c), so the two follow the same rules; each
 * reads memory its own way. The loop around them is not shared: in BPF it
 * is a bpf_loop callback over map lookups with bounded binary searches and
 * a frame count kept where the verifier converges, none of which compiles
 * or means anything in user space; the model's loop is a dozen lines that
 * mirror unwind_step one for one.
 */
#ifndef MEMTRACE_UNWIND_RULE_H
#define MEMTRACE_UNWIND_RULE_H

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Offsets in the kernel's rt_sigframe, from the handler's CFA (&uc):
 * uc_flags, uc_link, uc_stack (8 + 8 + 24), then struct sigcontext. */
#define MT_SIGFRAME_MCONTEXT 40
#define MT_SIGCONTEXT_RBP (MT_SIGFRAME_MCONTEXT + 10 * 8)
#define MT_SIGCONTEXT_RSP (MT_SIGFRAME_MCONTEXT + 15 * 8)
#define MT_SIGCONTEXT_RIP (MT_SIGFRAME_MCONTEXT + 16 * 8)

enum mt_unwind_next {
	MT_NEXT_CALLER = 0, /* the return address is at CFA - 8, rbp where the row says */
	MT_NEXT_SIGNAL = 1, /* the interrupted registers are at MT_SIGCONTEXT_* from rsp */
	MT_NEXT_END = 2,    /* the outermost frame: the stack is whole */
	MT_NEXT_CUT = 3,    /* no rule to follow: the stack is truncated */
};

/* The module address whose row applies to PC: a return address points
 * after its call, which may be the next function's first byte, so it is
 * looked up one byte back; an exact pc (the first frame, one a signal
 * interrupted) is not. */
static __always_inline __u64 mt_unwind_lookup_addr(__u64 pc, __u64 bias, bool exact_pc)
{
	return pc - bias - (exact_pc ? 0 : 1);
}

/* Whether ROW needs the frame's rbp. A frame's saved rbp is read only
 * when a row needs it: most rows of code without frame pointers find the
 * CFA from rsp, and a read per frame saved for nothing costs as much as the
 * rest of the step. The walker keeps where the caller's rbp was saved
 * (CFA + rbp_off) until then. */
static __always_inline bool mt_unwind_needs_bp(const struct mt_unwind_row *row)
{
	return row->cfa_kind == MT_CFA_RBP;
}

/* What to do at a frame with registers PC, SP, BP by ROW; for
 * MT_NEXT_CALLER the CFA in *CFA. */
static __always_inline int mt_unwind_cfa(const struct mt_unwind_row *row, __u64 pc, __u64 sp, __u64 bp,
					 __u64 *cfa)
{
	switch (row->cfa_kind) {
	case MT_CFA_RSP:
		*cfa = sp + row->cfa_off;
		return MT_NEXT_CALLER;
	case MT_CFA_RBP:
		*cfa = bp + row->cfa_off;
		return MT_NEXT_CALLER;
	case MT_CFA_PLT:
		*cfa = sp + 8 + ((pc & 15) >= (__u64)row->cfa_off ? 8 : 0);
		return MT_NEXT_CALLER;
	case MT_CFA_SIGNAL:
		return MT_NEXT_SIGNAL;
	case MT_CFA_END:
		return MT_NEXT_END;
	default:
		return MT_NEXT_CUT;
	}
}

/* A return address (or a signal frame's pc) that no mapping with a table
 * contains is not kept as a frame: the stack ends before it, marked
 * truncated. Such a frame is either code the walk cannot go on from (JIT
 * code, the vdso: one frame lost) or a value read from the wrong slot
 * through damaged CFI (tests/fuzz/fuzz_unwind_walk.c finds those): a stack
 * one frame short beats a frame that was never there. */
#define mt_unwind_keep_unmapped false

/* Whether CODE, the 8 bytes before a return address, end with a call:
 * call rel32 (e8), or call through a register or memory (ff /2: with a
 * ModRM byte alone, with a disp8 or a SIB byte, with disp32, with both),
 * whatever prefix precedes it. A value that is not a return address (a
 * function pointer, a function's first byte after padding) fails this. */
static __always_inline bool mt_unwind_after_call(const __u8 *code)
{
	return code[3] == 0xe8 || (code[6] == 0xff && (code[7] & 0x38) == 0x10) ||
	       (code[5] == 0xff && (code[6] & 0x38) == 0x10) || (code[2] == 0xff && (code[3] & 0x38) == 0x10) ||
	       (code[1] == 0xff && (code[2] & 0x38) == 0x10);
}

/* Whether the caller read at CFA (return address RA) from a frame whose
 * rsp was SP is one to go on with: a zero return address ends the stack,
 * and a frame must climb it. */
static __always_inline bool mt_unwind_caller_ok(__u64 ra, __u64 cfa, __u64 sp)
{
	return ra && cfa > sp;
}

#endif /* MEMTRACE_UNWIND_RULE_H */
