/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef MEMTRACE_PLACEMENT_H
#define MEMTRACE_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Two questions asked of an allocator function's machine code, answered by
 * decoding it (capstone):
 *
 * - Where its entry probe goes. A uprobe on an instruction the kernel
 *   emulates costs a fraction of one it must single-step, so the probe
 *   moves to the first such instruction that every call executes, while
 *   the arguments the probe reads are still in registers (their ABI ones,
 *   or 64-bit copies the code made before reusing those), before the stack
 *   pointer or the frame pointer change, and that no branch targets; the
 *   return address is then still at [sp].
 * - Whether it only forwards to another allocator function (libstdc++'s
 *   operator new calling malloc, glibc's reallocarray jumping to realloc):
 *   then it needs no probe of its own, since the one it calls sees the call.
 */

#define PLACEMENT_INSN_MAX 64

#define PLACEMENT_ARGS 4 /* arguments a probe reads, at most */

struct placement {
	uint32_t offset;                /* bytes from the function's start */
	bool emulated;                  /* false: single-stepped at the function's start */
	char insn[PLACEMENT_INSN_MAX];  /* the probed instruction, Intel syntax */
	const char *why;                /* !emulated: why no emulated site qualifies */
	uint8_t arg_reg[PLACEMENT_ARGS]; /* enum mt_arg_reg: where each argument is there */
	char moved[64];                 /* "argument 1 in rsi" for -v; "" when none moved */
};

#define PLACEMENT_PROLOGUE_MAX 128 /* bytes from the start a probe may move */

/* Decide for the machine code CODE (LEN bytes from the function's start at
 * ELF address VADDR; the whole function, so that branches into the prologue
 * are seen), whose probe reads the first NARGS integer arguments (1..3).
 * OUTSIDE is the lowest offset in (0, PLACEMENT_PROLOGUE_MAX] that a branch
 * from outside the function lands on (a split-off cold part jumping back),
 * or UINT32_MAX. 0, or -ENOMEM / -EINVAL if the decoder cannot be opened. */
int placement_choose(const uint8_t *code, size_t len, uint64_t vaddr, unsigned nargs,
		     uint32_t outside, struct placement *out);

/* The same for a C library's syscall wrapper (mmap, munmap, ...), whose
 * probe may also sit past the syscall instruction itself (munmap is "mov
 * eax, 11; syscall; cmp rax, -4095; jae": nothing before the syscall is
 * emulated) as long as the arguments are still where the ABI put them
 * (the kernel keeps all but rcx, r11 and rax). The site is no entry then:
 * the call has been made; for a probe that reads only the arguments and
 * takes the result at the return, the same. */
int placement_choose_wrapper(const uint8_t *code, size_t len, uint64_t vaddr, unsigned nargs,
			     struct placement *out);

/* What a call or jump leaving the function reaches, as the caller knows it. */
enum placement_target {
	TARGET_OTHER,     /* some other function, or one it cannot tell */
	TARGET_ALLOCATOR, /* an allocator function that is probed (or forwards to one) */
	TARGET_COLD,      /* no function starts there: a split-off part of this one */
};

/* Classify ADDR: an ELF address that is called or jumped to, or, with SLOT
 * set, the address of the pointer an indirect call or jump reads (a GOT
 * slot). */
typedef enum placement_target (*placement_classify_fn)(void *ctx, uint64_t addr, bool slot);

#define FORWARDER_MAX_BYTES 512 /* a forwarder is small; a bigger function has code of its own */

/*
 * Whether the function (CODE, LEN bytes at VADDR) only forwards: every path
 * from its entry that returns, returns what an allocator function it called
 * returned, or NULL (a failed call allocates nothing); with VOID_RETURN
 * (operator delete) every such path has called one. Every
 * jump that leaves it goes to an allocator function (a tail call) or to a
 * split-off cold part, and it calls one on some path. Paths that reach code
 * it cannot decode make it no forwarder.
 */
bool placement_forwards(const uint8_t *code, size_t len, uint64_t vaddr, bool void_return,
			placement_classify_fn classify, void *ctx);

/* The ELF address a PLT stub (CODE, LEN bytes) jumps through: its GOT slot.
 * 0 if CODE is no PLT stub. */
uint64_t placement_plt_slot(const uint8_t *code, size_t len, uint64_t vaddr);

#endif /* MEMTRACE_PLACEMENT_H */
