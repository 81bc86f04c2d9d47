// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * x86-64 prologue decoding. Only the few instruction forms that open
 * allocator functions are understood; anything else ends the walk, and the
 * probe stays where the walk stopped or at the start.
 */
#include "placement.h"

#include <string.h>

enum insn_class {
	INSN_UNKNOWN,  /* stop: we do not know what it changes */
	INSN_SKIP,     /* harmless, single-stepped: may be walked past */
	INSN_PUSH,     /* push reg: emulated */
	INSN_BRANCH,   /* jmp/jcc/call rel: emulated; paths split after it */
	INSN_NOP,      /* nop: emulated */
};

struct insn {
	enum insn_class cls;
	uint32_t len;
	const char *name;
};

static bool is_endbr64(const uint8_t *c, size_t n)
{
	return n >= 4 && c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa;
}

/* test r, r or cmp r, r (register forms only): flags, nothing else. */
static bool is_flag_test(const uint8_t *c, size_t n, uint32_t *len)
{
	size_t i = (n >= 1 && (c[0] & 0xf0) == 0x40) ? 1 : 0; /* REX */

	if (n < i + 2 || (c[i] != 0x85 && c[i] != 0x84 && c[i] != 0x39 && c[i] != 0x3b))
		return false;
	if ((c[i + 1] & 0xc0) != 0xc0)
		return false;
	*len = i + 2;
	return true;
}

/* cmp $imm8, disp32(%rip) (byte or dword): glibc's "is malloc initialized" check. */
static bool is_rip_cmp(const uint8_t *c, size_t n, uint32_t *len)
{
	size_t i = (n >= 1 && (c[0] & 0xf0) == 0x40) ? 1 : 0;

	if (n < i + 7 || (c[i] != 0x80 && c[i] != 0x83) || c[i + 1] != 0x3d)
		return false;
	*len = i + 7;
	return true;
}

static struct insn decode(const uint8_t *c, size_t n)
{
	struct insn in = { INSN_UNKNOWN, 0, "?" };
	uint32_t len;

	if (is_endbr64(c, n))
		return (struct insn){ INSN_SKIP, 4, "endbr64" };
	if (n >= 1 && c[0] >= 0x50 && c[0] <= 0x57)
		return (struct insn){ INSN_PUSH, 1, "push" };
	if (n >= 2 && c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57)
		return (struct insn){ INSN_PUSH, 2, "push" };
	if (n >= 1 && c[0] == 0x90)
		return (struct insn){ INSN_NOP, 1, "nop" };
	if (n >= 2 && (c[0] == 0xeb || (c[0] >= 0x70 && c[0] <= 0x7f)))
		return (struct insn){ INSN_BRANCH, 2, c[0] == 0xeb ? "jmp" : "jcc" };
	if (n >= 5 && (c[0] == 0xe9 || c[0] == 0xe8))
		return (struct insn){ INSN_BRANCH, 5, c[0] == 0xe9 ? "jmp" : "call" };
	if (n >= 6 && c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)
		return (struct insn){ INSN_BRANCH, 6, "jcc" };
	if (is_flag_test(c, n, &len))
		return (struct insn){ INSN_SKIP, len, "test" };
	if (is_rip_cmp(c, n, &len))
		return (struct insn){ INSN_SKIP, len, "cmp" };
	return in;
}

static int32_t rel32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * Would any branch in the function land in (0, OFF]? Every byte position is
 * tried as a branch opcode, so data or the middle of an instruction can only
 * produce false alarms, which just keep the probe earlier.
 */
static bool branch_lands_in_prologue(const uint8_t *c, size_t n, uint32_t off)
{
	for (size_t i = 0; i < n; i++) {
		int64_t target = -1;

		if ((c[i] == 0xeb || (c[i] >= 0x70 && c[i] <= 0x7f)) && i + 2 <= n)
			target = (int64_t)i + 2 + (int8_t)c[i + 1];
		else if ((c[i] == 0xe9 || c[i] == 0xe8) && i + 5 <= n)
			target = (int64_t)i + 5 + rel32(c + i + 1);
		else if (c[i] == 0x0f && i + 6 <= n && c[i + 1] >= 0x80 && c[i + 1] <= 0x8f)
			target = (int64_t)i + 6 + rel32(c + i + 2);
		if (target > 0 && target <= off)
			return true;
	}
	return false;
}

void placement_choose(const uint8_t *code, size_t len, struct placement *out)
{
	uint32_t off = 0;

	*out = (struct placement){ 0, false, "?" };
	while (off < len && off < 64) {
		struct insn in = decode(code + off, len - off);

		if (in.cls == INSN_UNKNOWN)
			break;
		if (in.cls != INSN_SKIP) {
			if (off && branch_lands_in_prologue(code, len, off))
				break;
			*out = (struct placement){ off, true, in.name };
			return;
		}
		off += in.len;
	}
	out->insn = off == 0 && len ? decode(code, len).name : "?";
}
