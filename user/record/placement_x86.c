// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * x86-64 decoding of allocator functions with capstone: where a probe is
 * cheapest, and whether a function only forwards to another allocator.
 */
#include "placement.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers that matter here, one bit per family (rdi, edi, di, dil: one). */
enum {
	REG_RDI = 1 << 0,
	REG_RSI = 1 << 1,
	REG_RDX = 1 << 2,
	REG_RCX = 1 << 3,
	REG_R8 = 1 << 4,
	REG_R9 = 1 << 5,
	REG_RSP = 1 << 6,
	REG_RBP = 1 << 7,
	REG_RAX = 1 << 8,
	REG_RBX = 1 << 9,
	REG_R10 = 1 << 10,
	REG_R11 = 1 << 11,
	REG_R12 = 1 << 12,
	REG_R13 = 1 << 13,
	REG_R14 = 1 << 14,
	REG_R15 = 1 << 15,
};

/* Where an argument may have been moved to, as the BPF side names it. */
static const struct {
	uint32_t family;
	uint8_t abi;    /* enum mt_arg_reg */
	const char *name;
} arg_homes[] = {
	{ REG_RDI, MT_ARG_RDI, "rdi" }, { REG_RSI, MT_ARG_RSI, "rsi" }, { REG_RDX, MT_ARG_RDX, "rdx" },
	{ REG_RCX, MT_ARG_RCX, "rcx" }, { REG_R8, MT_ARG_R8, "r8" },    { REG_R9, MT_ARG_R9, "r9" },
	{ REG_RAX, MT_ARG_RAX, "rax" }, { REG_RBX, MT_ARG_RBX, "rbx" }, { REG_R10, MT_ARG_R10, "r10" },
	{ REG_R11, MT_ARG_R11, "r11" }, { REG_R12, MT_ARG_R12, "r12" }, { REG_R13, MT_ARG_R13, "r13" },
	{ REG_R14, MT_ARG_R14, "r14" }, { REG_R15, MT_ARG_R15, "r15" },
};

/* The integer argument registers of the SysV ABI, in order. */
static const uint32_t arg_regs[6] = { REG_RDI, REG_RSI, REG_RDX, REG_RCX, REG_R8, REG_R9 };

static uint32_t reg_family(unsigned r)
{
	switch (r) {
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: return REG_RDI;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: return REG_RSI;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: case X86_REG_DH: return REG_RDX;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: case X86_REG_CH: return REG_RCX;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: return REG_R8;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: return REG_R9;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: return REG_RSP;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL: return REG_RBP;
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: case X86_REG_AH: return REG_RAX;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: case X86_REG_BH: return REG_RBX;
	case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: return REG_R10;
	case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: return REG_R11;
	case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: return REG_R12;
	case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: return REG_R13;
	case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: return REG_R14;
	case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: return REG_R15;
	default: return 0;
	}
}

/* Every register family IN writes, implicit ones (push: rsp; mul: rdx) included. */
static uint32_t regs_written(csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nrd = 0, nwr = 0;
	uint32_t mask = 0;

	if (cs_regs_access(h, in, rd, &nrd, wr, &nwr) != CS_ERR_OK)
		return ~0u; /* unknown: assume the worst */
	for (uint8_t i = 0; i < nwr; i++)
		mask |= reg_family(wr[i]);
	return mask;
}

static int decoder_open(csh *h)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, h) != CS_ERR_OK)
		return -EINVAL;
	if (cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK) {
		cs_close(h);
		return -EINVAL;
	}
	return 0;
}

/*
 * What the kernel emulates instead of single-stepping (arch/x86/kernel/
 * uprobes.c): push of a 64-bit register (optionally REX.B), jmp rel8/rel32,
 * call rel32, jcc rel8/rel32 (no 0x66 prefix), and nop (0x90 after legacy
 * prefixes). Kernels from 6.16 also emulate the multi-byte nops, but older
 * ones do not, so those are walked past rather than probed. Segment and lock
 * prefixes make the kernel refuse an instruction, so they count as not
 * emulated.
 */
static bool kernel_emulates(const cs_insn *in)
{
	const uint8_t *b = in->bytes;
	size_t n = in->size, i = 0;
	bool opsize = false;

	for (; i < n; i++) {
		if (b[i] == 0x66)
			opsize = true;
		else if (b[i] == 0x26 || b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x64 ||
			 b[i] == 0x65 || b[i] == 0xf0)
			return false;
		else if (b[i] != 0xf2 && b[i] != 0xf3)
			break;
	}
	if (i >= n)
		return false;
	if (b[i] == 0x90)
		return i + 1 == n;
	if (opsize)
		return false;
	if (b[i] == 0x41 && i + 2 == n)
		return b[i + 1] >= 0x50 && b[i + 1] <= 0x57;
	if (i + 1 == n)
		return b[i] >= 0x50 && b[i] <= 0x57;
	if (i + 2 == n)
		return b[i] == 0xeb || (b[i] >= 0x70 && b[i] <= 0x7f);
	if (i + 5 == n)
		return b[i] == 0xe9 || b[i] == 0xe8;
	if (i + 6 == n)
		return b[i] == 0x0f && b[i + 1] >= 0x80 && b[i + 1] <= 0x8f;
	return false;
}

static bool is_control_transfer(csh h, const cs_insn *in)
{
	return cs_insn_group(h, in, CS_GRP_JUMP) || cs_insn_group(h, in, CS_GRP_CALL) ||
	       cs_insn_group(h, in, CS_GRP_RET) || cs_insn_group(h, in, CS_GRP_INT) ||
	       cs_insn_group(h, in, CS_GRP_IRET) || in->id == X86_INS_UD2 || in->id == X86_INS_HLT;
}

/* The target of a direct jmp, jcc or call; false for anything else. */
static bool direct_target(csh h, const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (!cs_insn_group(h, in, CS_GRP_JUMP) && !cs_insn_group(h, in, CS_GRP_CALL))
		return false;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
		return false;
	*target = (uint64_t)x->operands[0].imm;
	return true;
}

/* The slot an indirect jmp or call through [rip + disp] reads. */
static bool slot_target(csh h, const cs_insn *in, uint64_t *slot)
{
	const cs_x86 *x = &in->detail->x86;

	if (!cs_insn_group(h, in, CS_GRP_JUMP) && !cs_insn_group(h, in, CS_GRP_CALL))
		return false;
	if (x->op_count != 1 || x->operands[0].type != X86_OP_MEM ||
	    x->operands[0].mem.base != X86_REG_RIP || x->operands[0].mem.index != X86_REG_INVALID)
		return false;
	*slot = in->address + in->size + (int64_t)x->operands[0].mem.disp;
	return true;
}

/* The lowest offset in (0, LEN) that a direct branch of the function lands
 * on, or LEN if none does. Bytes that do not decode are stepped over. */
static uint64_t lowest_branch_target(csh h, const uint8_t *code, size_t len, uint64_t vaddr)
{
	cs_insn *in = cs_malloc(h);
	const uint8_t *p = code;
	size_t n = len;
	uint64_t addr = vaddr, lowest = len, t;

	if (!in)
		return 0; /* no memory: as if everything were targeted */
	while (n) {
		if (!cs_disasm_iter(h, &p, &n, &addr, in)) {
			p++, n--, addr++;
			continue;
		}
		if (direct_target(h, in, &t) && t > vaddr && t - vaddr < lowest)
			lowest = t - vaddr;
	}
	cs_free(in, 1);
	return lowest;
}

static void insn_text(const cs_insn *in, char *buf, size_t cap)
{
	/* Long operands are cut: the line is for people, the offset is exact. */
	snprintf(buf, cap, "%.15s%s%.44s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
}

static const char WHY_CHANGES[] =
	"no instruction the kernel emulates before an argument is lost or the stack changes";
static const char WHY_SPLITS[] = "the paths split before any instruction the kernel emulates";
static const char WHY_TARGETED[] = "a branch lands before its first emulated instruction";
static const char WHY_UNDECODED[] = "its first instructions do not decode";

/* A 64-bit register-to-register mov: the value now also lives in DST. */
static bool reg_copy(const cs_insn *in, uint32_t *dst, uint32_t *src)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id != X86_INS_MOV || x->op_count != 2 || x->operands[0].type != X86_OP_REG ||
	    x->operands[1].type != X86_OP_REG || x->operands[0].size != 8 || x->operands[1].size != 8)
		return false;
	*dst = reg_family(x->operands[0].reg);
	*src = reg_family(x->operands[1].reg);
	return *dst && *src;
}

/* The argument homes at the chosen site: the ABI register if it still
 * holds the argument, else the first copy that does. */
static void set_homes(struct placement *out, const uint32_t *where, unsigned nargs)
{
	size_t len = 0;

	for (unsigned i = 0; i < nargs && i < PLACEMENT_ARGS; i++) {
		if (where[i] & arg_regs[i])
			continue;
		for (size_t k = 0; k < sizeof(arg_homes) / sizeof(arg_homes[0]); k++) {
			if (!(where[i] & arg_homes[k].family))
				continue;
			out->arg_reg[i] = arg_homes[k].abi;
			len += (size_t)snprintf(out->moved + len, sizeof(out->moved) - len, "%sargument %u in %s",
						len ? ", " : "", i + 1, arg_homes[k].name);
			break;
		}
	}
}

static int choose(const uint8_t *code, size_t len, uint64_t vaddr, unsigned nargs, uint32_t outside,
		  bool past_syscall, struct placement *out)
{
	uint32_t where[PLACEMENT_ARGS] = { 0 }; /* register families holding each argument */
	uint64_t lowest, addr = vaddr;
	const uint8_t *p = code;
	size_t n = len;
	cs_insn *in;
	csh h;
	int err;

	*out = (struct placement){ .why = WHY_UNDECODED };
	if (nargs > PLACEMENT_ARGS)
		return -EINVAL;
	for (unsigned i = 0; i < nargs; i++)
		where[i] = arg_regs[i];
	err = decoder_open(&h);
	if (err)
		return err;
	in = cs_malloc(h);
	if (!in) {
		cs_close(&h);
		return -ENOMEM;
	}
	lowest = lowest_branch_target(h, code, len, vaddr);
	if (outside < lowest)
		lowest = outside;
	out->why = WHY_CHANGES;
	while (n && addr - vaddr < PLACEMENT_PROLOGUE_MAX && cs_disasm_iter(h, &p, &n, &addr, in)) {
		uint32_t off = (uint32_t)(in->address - vaddr), written, dst, src;
		bool lost = false;

		if (off == 0)
			insn_text(in, out->insn, sizeof(out->insn));
		if (kernel_emulates(in)) {
			if (off && lowest <= off) {
				out->why = WHY_TARGETED;
				break;
			}
			out->offset = off;
			out->emulated = true;
			out->why = NULL;
			insn_text(in, out->insn, sizeof(out->insn));
			set_homes(out, where, nargs);
			break;
		}
		if (past_syscall && in->id == X86_INS_SYSCALL) {
			written = REG_RAX | REG_RCX | REG_R11; /* what the kernel gives back or clobbers */
		} else if (is_control_transfer(h, in)) {
			out->why = WHY_SPLITS;
			break;
		} else {
			written = regs_written(h, in);
		}
		if (written & (REG_RSP | REG_RBP))
			break;
		/* Follow the arguments through register copies, as compilers
		 * move them out of the way of a callee's first argument. */
		for (unsigned i = 0; i < nargs; i++) {
			if (reg_copy(in, &dst, &src))
				where[i] = (where[i] & src) ? (where[i] | dst) : (where[i] & ~dst);
			else
				where[i] &= ~written;
			lost |= !where[i];
		}
		if (lost)
			break;
	}
	if (!out->insn[0])
		out->why = WHY_UNDECODED;
	cs_free(in, 1);
	cs_close(&h);
	return 0;
}

int placement_choose(const uint8_t *code, size_t len, uint64_t vaddr, unsigned nargs,
		     uint32_t outside, struct placement *out)
{
	return choose(code, len, vaddr, nargs, outside, false, out);
}

int placement_choose_wrapper(const uint8_t *code, size_t len, uint64_t vaddr, unsigned nargs,
			     struct placement *out)
{
	return choose(code, len, vaddr, nargs, UINT32_MAX, true, out);
}

uint64_t placement_plt_slot(const uint8_t *code, size_t len, uint64_t vaddr)
{
	const uint8_t *p = code;
	size_t n = len;
	uint64_t addr = vaddr, slot = 0;
	cs_insn *in;
	csh h;

	if (decoder_open(&h))
		return 0;
	in = cs_malloc(h);
	/* endbr64 or nothing, then jmp [rip + GOT slot] */
	for (int i = 0; in && i < 2 && cs_disasm_iter(h, &p, &n, &addr, in); i++) {
		if (in->id == X86_INS_ENDBR64)
			continue;
		if (in->id != X86_INS_JMP || !slot_target(h, in, &slot))
			slot = 0;
		break;
	}
	if (in)
		cs_free(in, 1);
	cs_close(&h);
	return slot;
}

/* --- forwarders ---------------------------------------------------------- */

enum step {
	STEP_NEXT,       /* falls through to the next instruction */
	STEP_CALL,       /* a call, then the next instruction */
	STEP_JUMP,       /* an unconditional jump */
	STEP_BRANCH,     /* a conditional jump: both ways */
	STEP_RET,
	STEP_END,        /* ud2, hlt, int3: the path ends here */
	STEP_UNKNOWN,    /* an indirect jump we cannot follow */
};

struct node {
	uint32_t off;
	uint8_t step;
	uint8_t target_kind; /* enum placement_target of a call or jump that leaves, or of its slot */
	bool inside;         /* the jump lands inside the function, at TARGET_OFF */
	bool zeroes_rax;     /* xor eax, eax and the like */
	bool writes_rax;
	uint32_t target_off;
};

/* What holds at an instruction on every path from the entry. */
enum {
	ST_CALLED = 1, /* an allocator was called */
	ST_RESULT = 2, /* rax holds what it returned */
	ST_ZERO = 4,   /* rax is 0 (NULL) */
};

static bool zeroes_rax(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (in->id == X86_INS_XOR && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_REG && x->operands[0].reg == x->operands[1].reg)
		return reg_family(x->operands[0].reg) == REG_RAX;
	if (in->id == X86_INS_MOV && x->op_count == 2 && x->operands[0].type == X86_OP_REG &&
	    x->operands[1].type == X86_OP_IMM && x->operands[1].imm == 0)
		return x->operands[0].reg == X86_REG_EAX || x->operands[0].reg == X86_REG_RAX;
	return false;
}

/* One node per instruction; false if some byte does not decode. */
static bool decode_nodes(csh h, const uint8_t *code, size_t len, uint64_t vaddr,
			 placement_classify_fn classify, void *ctx, struct node *nodes, size_t *nr)
{
	cs_insn *in = cs_malloc(h);
	const uint8_t *p = code;
	size_t n = len;
	uint64_t addr = vaddr, t;
	bool ok = true;

	*nr = 0;
	if (!in)
		return false;
	while (n && ok) {
		struct node *nd = &nodes[*nr];

		if (!cs_disasm_iter(h, &p, &n, &addr, in)) {
			ok = false;
			break;
		}
		*nd = (struct node){ .off = (uint32_t)(in->address - vaddr), .step = STEP_NEXT };
		nd->writes_rax = (regs_written(h, in) & REG_RAX) != 0;
		nd->zeroes_rax = zeroes_rax(in);
		if (cs_insn_group(h, in, CS_GRP_RET))
			nd->step = STEP_RET;
		else if (in->id == X86_INS_UD2 || in->id == X86_INS_HLT || in->id == X86_INS_INT3)
			nd->step = STEP_END;
		else if (cs_insn_group(h, in, CS_GRP_CALL) || cs_insn_group(h, in, CS_GRP_JUMP)) {
			bool call = cs_insn_group(h, in, CS_GRP_CALL);

			nd->step = call ? STEP_CALL : in->id == X86_INS_JMP ? STEP_JUMP : STEP_BRANCH;
			nd->target_kind = TARGET_OTHER;
			if (direct_target(h, in, &t)) {
				if (!call && t >= vaddr && t < vaddr + len) {
					nd->inside = true;
					nd->target_off = (uint32_t)(t - vaddr);
				} else {
					nd->target_kind = classify(ctx, t, false);
				}
			} else if (slot_target(h, in, &t)) {
				nd->target_kind = classify(ctx, t, true);
				if (nd->target_kind == TARGET_COLD)
					nd->target_kind = TARGET_OTHER; /* a pointer leads to a function */
			} else if (!call) {
				nd->step = STEP_UNKNOWN;
			}
		}
		(*nr)++;
	}
	cs_free(in, 1);
	return ok;
}

static long node_at(const struct node *nodes, size_t nr, uint32_t off)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (nodes[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nr && nodes[lo].off == off ? (long)lo : -1;
}

struct flow {
	const struct node *nodes;
	size_t nr;
	uint8_t *state;   /* per node: ST_* bits known on every path so far */
	bool *seen;
	uint32_t *work;
	size_t nwork;
	bool failed;
	bool forwards;    /* some path reaches an allocator */
};

/* Merge state S into node I: what holds on every path is what holds on all. */
static void flow_reach(struct flow *f, long i, uint8_t s)
{
	if (i < 0) {
		f->failed = true; /* into the middle of an instruction, or past the end */
		return;
	}
	if (f->seen[i] && (f->state[i] & s) == f->state[i])
		return;
	f->state[i] = f->seen[i] ? (f->state[i] & s) : s;
	f->seen[i] = true;
	f->work[f->nwork++] = (uint32_t)i;
}

/* Where a jump that leaves the function goes decides whether the path is fine. */
static void flow_leave(struct flow *f, const struct node *nd)
{
	if (nd->target_kind == TARGET_ALLOCATOR)
		f->forwards = true;
	else if (nd->target_kind != TARGET_COLD)
		f->failed = true; /* a tail call to something else */
}

static void flow_step(struct flow *f, long i, bool void_return)
{
	const struct node *nd = &f->nodes[i];
	uint8_t s = f->state[i];
	long next = (size_t)i + 1 < f->nr ? i + 1 : -1;

	if (nd->writes_rax)
		s &= ~(ST_RESULT | ST_ZERO);
	if (nd->zeroes_rax)
		s |= ST_ZERO;
	switch (nd->step) {
	case STEP_NEXT:
		flow_reach(f, next, s);
		break;
	case STEP_CALL:
		s &= ~(ST_RESULT | ST_ZERO); /* rax is what the callee returned */
		if (nd->target_kind == TARGET_ALLOCATOR) {
			f->forwards = true;
			s |= ST_CALLED | ST_RESULT;
		}
		flow_reach(f, next, s);
		break;
	case STEP_BRANCH: /* not taken here, taken below */
		flow_reach(f, next, s);
		/* fall through */
	case STEP_JUMP:
		if (nd->inside)
			flow_reach(f, node_at(f->nodes, f->nr, nd->target_off), s);
		else
			flow_leave(f, nd);
		break;
	case STEP_RET:
		if (void_return ? !(s & ST_CALLED) : !(s & (ST_RESULT | ST_ZERO)))
			f->failed = true; /* did something of its own, or returns a block it made */
		break;
	case STEP_END:
		break;
	default:
		f->failed = true;
	}
}

bool placement_forwards(const uint8_t *code, size_t len, uint64_t vaddr, bool void_return,
			placement_classify_fn classify, void *ctx)
{
	struct node nodes[FORWARDER_MAX_BYTES];
	uint8_t state[FORWARDER_MAX_BYTES];
	bool seen[FORWARDER_MAX_BYTES] = { false };
	uint32_t work[FORWARDER_MAX_BYTES * 4];
	struct flow f = { .nodes = nodes, .state = state, .seen = seen, .work = work };
	csh h;

	if (!len || len > FORWARDER_MAX_BYTES || decoder_open(&h))
		return false;
	if (!decode_nodes(h, code, len, vaddr, classify, ctx, nodes, &f.nr))
		f.failed = true;
	cs_close(&h);
	if (!f.failed)
		flow_reach(&f, 0, 0);
	/* A node is queued when first reached and again only when its state
	 * loses one of its three bits: at most 4 x nodes ever queued. */
	while (f.nwork && !f.failed)
		flow_step(&f, work[--f.nwork], void_return);
	return !f.failed && f.forwards;
}
