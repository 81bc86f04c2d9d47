// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * deep_frames: stacks the walker cannot take from its copy of the stack's
 * top (bpf/unwind.bpf.h copies 2 KiB from the allocator's rsp and reads
 * whatever lies beyond word by word). Built as tests/progs are and once more
 * without frame pointers (build/progs/nofp/deep_frames); tests/e2e/unwind.sh
 * checks the stacks:
 *   deep_leaf < deep_frame x 8 < main           4 x malloc(48): frames of
 *                                               512 bytes, so the callers'
 *                                               return addresses lie past 2 KiB
 *   ctx_leaf < ctx_func < __start_context       3 x malloc(80), on a stack of
 *                                               its own (makecontext) whose top
 *                                               is 64 bytes above the call and
 *                                               then a guard page: no 2 KiB
 *                                               copy from there can be made
 * Pointers go to a volatile array so the compiler keeps every allocation;
 * deep_frame reads its pad after the call, so the call is not a tail call.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define DEPTH 8
#define STACK_SIZE (64 * 1024)

void *volatile keep[8];

NOINLINE void deep_leaf(int i) { keep[i] = malloc(48); }

NOINLINE int deep_frame(int n, int i)
{
	volatile char pad[512];

	pad[n] = (char)n;
	if (n)
		deep_frame(n - 1, i);
	else
		deep_leaf(i);
	return pad[n];
}

NOINLINE void ctx_leaf(int i) { keep[4 + i] = malloc(80); }

NOINLINE void ctx_func(void)
{
	for (int i = 0; i < 3; i++)
		ctx_leaf(i);
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	ucontext_t main_ctx, ctx;
	char *stack;

	for (int i = 0; i < 4; i++)
		deep_frame(DEPTH - 1, i);
	/* The context's stack ends at a page the process may not read. */
	stack = mmap(NULL, STACK_SIZE + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED || mprotect(stack + STACK_SIZE, page, PROT_NONE) || getcontext(&ctx))
		return 1;
	ctx.uc_stack.ss_sp = stack;
	ctx.uc_stack.ss_size = STACK_SIZE;
	ctx.uc_link = &main_ctx;
	makecontext(&ctx, ctx_func, 0);
	if (swapcontext(&main_ctx, &ctx))
		return 1;
	return 0;
}
