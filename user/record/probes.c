// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Which allocator functions to probe, and where. Each function is bound
 * independently, as the dynamic linker does: the first file in search order
 * that defines it wins. Aliases (memalign and aligned_alloc are one function
 * in glibc) are probed once, or every call would count twice.
 */
#include "probes.h"
#include "elf_util.h"
#include "placement.h"
#include <linux/types.h>
#include "memtrace_abi.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

struct alloc_func {
	const char *name;
	enum probe_prog prog;
};

static const struct alloc_func alloc_funcs[] = {
	{ "malloc", PROBE_MALLOC },
	{ "calloc", PROBE_CALLOC },
	{ "realloc", PROBE_REALLOC },
	{ "reallocarray", PROBE_REALLOCARRAY },
	{ "posix_memalign", PROBE_POSIX_MEMALIGN },
	{ "aligned_alloc", PROBE_MEMALIGN },
	{ "memalign", PROBE_MEMALIGN },
	{ "valloc", PROBE_MALLOC },
	{ "pvalloc", PROBE_MALLOC },
	{ "free", PROBE_FREE },
	/* operator new: new, new[], nothrow, aligned, aligned nothrow */
	{ "_Znwm", PROBE_MALLOC },
	{ "_Znam", PROBE_MALLOC },
	{ "_ZnwmRKSt9nothrow_t", PROBE_MALLOC },
	{ "_ZnamRKSt9nothrow_t", PROBE_MALLOC },
	{ "_ZnwmSt11align_val_t", PROBE_MALLOC },
	{ "_ZnamSt11align_val_t", PROBE_MALLOC },
	{ "_ZnwmSt11align_val_tRKSt9nothrow_t", PROBE_MALLOC },
	{ "_ZnamSt11align_val_tRKSt9nothrow_t", PROBE_MALLOC },
	/* operator delete: plain, sized, nothrow, aligned, sized aligned, aligned nothrow */
	{ "_ZdlPv", PROBE_DELETE },
	{ "_ZdaPv", PROBE_DELETE },
	{ "_ZdlPvm", PROBE_DELETE },
	{ "_ZdaPvm", PROBE_DELETE },
	{ "_ZdlPvRKSt9nothrow_t", PROBE_DELETE },
	{ "_ZdaPvRKSt9nothrow_t", PROBE_DELETE },
	{ "_ZdlPvSt11align_val_t", PROBE_DELETE },
	{ "_ZdaPvSt11align_val_t", PROBE_DELETE },
	{ "_ZdlPvmSt11align_val_t", PROBE_DELETE },
	{ "_ZdaPvmSt11align_val_t", PROBE_DELETE },
	{ "_ZdlPvSt11align_val_tRKSt9nothrow_t", PROBE_DELETE },
	{ "_ZdaPvSt11align_val_tRKSt9nothrow_t", PROBE_DELETE },
};

#define NR_FUNCS (sizeof(alloc_funcs) / sizeof(alloc_funcs[0]))

static bool already_probed(const struct probe_set *ps, const char *path, uint64_t func_offset)
{
	for (size_t i = 0; i < ps->nr; i++) {
		if (ps->v[i].offset - ps->v[i].skipped == func_offset && strcmp(ps->v[i].path, path) == 0)
			return true;
	}
	return false;
}

#define MAX_CODE 8192 /* bytes of a function scanned for branches into its prologue */

struct code_range {
	uint64_t start, end; /* ELF vaddrs */
};

/* The PLT sections: a call into them may reach any exported function. */
static size_t plt_ranges(struct elf_file *f, struct code_range *out, size_t cap)
{
	Elf *elf = elf_file__elf(f);
	Elf_Scn *scn = NULL;
	size_t n = 0, shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while (n < cap && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strncmp(name, ".plt", 4))
			out[n++] = (struct code_range){ sh.sh_addr, sh.sh_addr + sh.sh_size };
	}
	return n;
}

static bool lands_in(uint64_t target, const struct code_range *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (target >= r[i].start && target < r[i].end)
			return true;
	}
	return false;
}

/*
 * Could the function at VADDR (CODE, LEN bytes) call another probed
 * function? Any direct call or jump to one of STARTS or into the PLT, or any
 * indirect call or jump through memory, says yes. Every byte is tried as an
 * opcode, so false alarms only keep a return probe that was not needed.
 */
static bool code_may_nest(const uint8_t *code, size_t len, uint64_t vaddr,
			  const struct code_range *starts, size_t nstarts,
			  const struct code_range *plt, size_t nplt)
{
	for (size_t i = 0; i + 5 <= len; i++) {
		int32_t rel;
		uint64_t target;

		if (code[i] == 0xff && (code[i + 1] == 0x15 || code[i + 1] == 0x25))
			return true;
		if (code[i] != 0xe8 && code[i] != 0xe9)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		target = vaddr + i + 5 + (int64_t)rel;
		if (lands_in(target, starts, nstarts) || lands_in(target, plt, nplt))
			return true;
	}
	return false;
}

/* The integer arguments each entry program reads: the probe must sit
 * before any of them changes. */
static unsigned prog_args(enum probe_prog prog)
{
	switch (prog) {
	case PROBE_CALLOC: case PROBE_REALLOC: case PROBE_MEMALIGN: return 2;
	case PROBE_REALLOCARRAY: case PROBE_POSIX_MEMALIGN: return 3;
	default: return 1;
	}
}

/* What a function does, for forwarding: a function only forwards to one
 * that does the same (operator new to malloc, reallocarray to realloc,
 * operator delete to free). */
enum role { ROLE_ALLOC, ROLE_REALLOC, ROLE_FREE };

static enum role prog_role(enum probe_prog prog)
{
	if (prog == PROBE_FREE || prog == PROBE_DELETE)
		return ROLE_FREE;
	return prog == PROBE_REALLOC || prog == PROBE_REALLOCARRAY ? ROLE_REALLOC : ROLE_ALLOC;
}

static int add_probe(struct probe_set *ps, const struct alloc_func *fn, struct elf_file *f,
		     const char *path, const struct elf_function *ef, bool placed, uint32_t outside)
{
	struct probe *p = &ps->v[ps->nr];
	uint8_t code[MAX_CODE]; /* on the stack: the agent binds several targets at once, on threads */
	size_t len = ef->size < MAX_CODE ? ef->size : MAX_CODE;
	struct placement pl = { .why = "placement is off (MEMTRACE_NO_PLACEMENT)" };
	int err;

	if (placed && len && !elf_file__read(f, ef->file_offset, code, len)) {
		err = placement_choose(code, len, ef->vaddr, prog_args(fn->prog), outside, &pl);
		if (err)
			return err;
	}
	p->path = strdup(path);
	if (!p->path)
		return -ENOMEM;
	p->func = fn->name;
	p->offset = ef->file_offset + pl.offset;
	p->skipped = pl.offset;
	p->emulated = pl.emulated;
	memcpy(p->insn, pl.insn, sizeof(p->insn));
	memcpy(p->moved, pl.moved, sizeof(p->moved));
	p->why = pl.why;
	p->arg_cookie = 0;
	for (int i = 0; i < PLACEMENT_ARGS && i < MT_COOKIE_ARGS; i++)
		p->arg_cookie |= (uint64_t)pl.arg_reg[i] << (MT_COOKIE_ARG_SHIFT + 4 * i);
	p->vaddr = ef->vaddr;
	p->size = len;
	p->prog = fn->prog;
	p->ret = fn->prog != PROBE_FREE;
	ps->nr++;
	return 0;
}

static size_t count_modules(const struct probe_set *ps)
{
	size_t n = 0;

	for (size_t i = 0; i < ps->nr; i++) {
		size_t j = 0;

		while (j < i && strcmp(ps->v[j].path, ps->v[i].path) != 0)
			j++;
		n += j == i;
	}
	return n;
}

/* For sampling: which probed functions can be left without a return probe. */
static void mark_nesting(struct probe_set *ps, struct elf_file *f, const char *path)
{
	struct code_range starts[PROBE_MAX], plt[8];
	uint8_t code[MAX_CODE]; /* on the stack: the agent binds several targets at once, on threads */
	size_t nstarts = 0, nplt = plt_ranges(f, plt, 8);

	for (size_t i = 0; i < ps->nr; i++) {
		if (!strcmp(ps->v[i].path, path))
			starts[nstarts++] = (struct code_range){ ps->v[i].vaddr, ps->v[i].vaddr + 1 };
	}
	/* A call to a forwarder reaches a probed function through it. */
	for (size_t i = 0; i < ps->nr_fwd && nstarts < PROBE_MAX; i++) {
		if (!strcmp(ps->fwd[i].path, path))
			starts[nstarts++] = (struct code_range){ ps->fwd[i].vaddr, ps->fwd[i].vaddr + 1 };
	}
	for (size_t i = 0; i < ps->nr; i++) {
		struct probe *p = &ps->v[i];

		if (strcmp(p->path, path))
			continue;
		p->may_nest = true;
		if (p->size && !elf_file__read(f, p->offset - p->skipped, code, p->size))
			p->may_nest = code_may_nest(code, p->size, p->vaddr, starts, nstarts, plt, nplt);
	}
}

/* --- binding, and which bound functions only forward ----------------------- */

enum bind_state {
	BIND_NONE,      /* no candidate defines it */
	BIND_SKIPPED,   /* an ifunc: its address is a resolver, not the function */
	BIND_UNDECIDED,
	BIND_DECIDING,  /* on the way down a forwarding chain: a cycle reads as "not probed" */
	BIND_PROBED,
	BIND_FORWARDER,
};

struct binding {
	enum bind_state state;
	size_t file;              /* index of the defining file */
	struct elf_function ef;
	const char *to;           /* BIND_FORWARDER: where to */
	uint32_t outside;         /* lowest prologue offset a branch from outside lands on */
};

struct binder {
	struct elf_file **files;
	char *const *paths;
	size_t n;
	struct binding b[NR_FUNCS];
};

/* What the classifier needs to know about the function being decoded. */
struct classify_ctx {
	struct binder *bd;
	size_t fn;           /* alloc_funcs index of the function decoded */
	const char *to;      /* the last allocator it was seen to reach */
};

static long func_index(const char *name)
{
	for (size_t i = 0; name && i < NR_FUNCS; i++) {
		if (!strcmp(alloc_funcs[i].name, name))
			return (long)i;
	}
	return -1;
}

/* The symbol a dynamic relocation at SLOT (a GOT entry) binds to, or NULL. */
static const char *reloc_symbol(Elf *elf, uint64_t slot)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data, *syms;
		Elf_Scn *symscn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		symscn = elf_getscn(elf, sh.sh_link);
		syms = symscn ? elf_getdata(symscn, NULL) : NULL;
		for (size_t i = 0; data && syms && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			GElf_Shdr ssh;

			if (!gelf_getrela(data, (int)i, &r) || r.r_offset != slot)
				continue;
			if (!gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) || !gelf_getshdr(symscn, &ssh))
				return NULL;
			return elf_strptr(elf, ssh.sh_link, sym.st_name);
		}
	}
	return NULL;
}

/* Whether any function symbol (.symtab or .dynsym) starts at VADDR. */
static bool symbol_starts_at(Elf *elf, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (gelf_getsym(data, (int)i, &sym) && sym.st_value == vaddr && sym.st_shndx != SHN_UNDEF &&
			    (GELF_ST_TYPE(sym.st_info) == STT_FUNC || GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC))
				return true;
		}
	}
	return false;
}

static void decide(struct binder *bd, size_t i);

/* Whether a call to allocator function G from F (of file FILE, reaching it
 * at ADDR, or by name when LOCAL is false) is seen by a probe. */
static bool covered(struct binder *bd, size_t f, size_t g, size_t file, uint64_t addr, bool local)
{
	struct binding *b = &bd->b[g];

	if (g == f || prog_role(alloc_funcs[g].prog) != prog_role(alloc_funcs[f].prog))
		return false;
	/* A direct call reaches this file's copy, which must be the bound one. */
	if (b->state == BIND_NONE || (local && (b->file != file || b->ef.vaddr != addr)))
		return false;
	if (b->state == BIND_UNDECIDED)
		decide(bd, g);
	return b->state == BIND_PROBED || b->state == BIND_FORWARDER;
}

static enum placement_target classify_name(struct classify_ctx *c, const char *name)
{
	long g = func_index(name);

	if (g < 0 || !covered(c->bd, c->fn, (size_t)g, 0, 0, false))
		return TARGET_OTHER;
	c->to = alloc_funcs[g].name;
	return TARGET_ALLOCATOR;
}

static enum placement_target classify(void *ctx, uint64_t addr, bool slot)
{
	struct classify_ctx *c = ctx;
	size_t file = c->bd->b[c->fn].file;
	struct elf_file *f = c->bd->files[file];
	Elf *elf = elf_file__elf(f);
	struct code_range plt[8];
	size_t nplt = plt_ranges(f, plt, 8);
	struct elf_function ef;
	uint8_t stub[16];
	uint64_t off;

	if (!elf)
		return TARGET_OTHER;
	if (slot)
		return classify_name(c, reloc_symbol(elf, addr));
	if (lands_in(addr, plt, nplt)) {
		if (elf_offset_of_vaddr(elf, addr, &off) || elf_file__read(f, off, stub, sizeof(stub)))
			return TARGET_OTHER;
		return classify_name(c, reloc_symbol(elf, placement_plt_slot(stub, sizeof(stub), addr)));
	}
	for (size_t g = 0; g < NR_FUNCS; g++) {
		if (elf_file__find_function(f, alloc_funcs[g].name, &ef) || ef.vaddr != addr)
			continue;
		if (!covered(c->bd, c->fn, g, file, addr, true))
			return TARGET_OTHER;
		c->to = alloc_funcs[g].name;
		return TARGET_ALLOCATOR;
	}
	return symbol_starts_at(elf, addr) ? TARGET_OTHER : TARGET_COLD;
}

/* Probed, or a forwarder: decode it to know. */
static void decide(struct binder *bd, size_t i)
{
	struct binding *b = &bd->b[i];
	struct classify_ctx c = { .bd = bd, .fn = i };
	uint8_t code[FORWARDER_MAX_BYTES];
	bool fwd = false;

	b->state = BIND_DECIDING;
	if (b->ef.size && b->ef.size <= sizeof(code) &&
	    !elf_file__read(bd->files[b->file], b->ef.file_offset, code, b->ef.size))
		fwd = placement_forwards(code, b->ef.size, b->ef.vaddr, prog_role(alloc_funcs[i].prog) == ROLE_FREE,
					 classify, &c);
	b->state = fwd ? BIND_FORWARDER : BIND_PROBED;
	b->to = c.to;
}

/* Bind every function to the first file that defines it. */
static void bind_all(struct binder *bd)
{
	for (size_t i = 0; i < NR_FUNCS; i++) {
		bd->b[i].state = BIND_NONE;
		for (size_t j = 0; j < bd->n; j++) {
			if (!bd->files[j] || elf_file__find_function(bd->files[j], alloc_funcs[i].name, &bd->b[i].ef))
				continue;
			bd->b[i].file = j;
			bd->b[i].outside = UINT32_MAX;
			bd->b[i].state = bd->b[i].ef.is_ifunc ? BIND_SKIPPED : BIND_UNDECIDED;
			break;
		}
	}
}

/* Does a branch whose bytes start at SRC land on TARGET in the prologue of
 * a function bound to FILE, from outside that function? Keep the lowest. */
static void note_outside_branch(struct binder *bd, size_t file, uint64_t src, uint64_t target)
{
	for (size_t i = 0; i < NR_FUNCS; i++) {
		struct binding *b = &bd->b[i];

		if (b->state < BIND_UNDECIDED || b->file != file || target <= b->ef.vaddr ||
		    target > b->ef.vaddr + PLACEMENT_PROLOGUE_MAX ||
		    (src >= b->ef.vaddr && src < b->ef.vaddr + b->ef.size))
			continue;
		if (target - b->ef.vaddr < b->outside)
			b->outside = (uint32_t)(target - b->ef.vaddr);
	}
}

/*
 * Branches from elsewhere in the file into the functions' prologues: a
 * split-off cold part may jump back near the start. Every byte of the
 * executable sections is tried as a jmp, jcc or call rel32 opcode (decoding
 * the whole file would cost more than the rest of the attach; a rel8 does
 * not reach from a cold part); data and the middle of instructions can only
 * raise false alarms, which keep a probe at the function's start, and -v
 * says so.
 */
static void scan_outside_branches(struct binder *bd, size_t file)
{
	Elf *elf = bd->files[file] ? elf_file__elf(bd->files[file]) : NULL;
	uint64_t lo = UINT64_MAX, hi = 0;
	Elf_Scn *scn = NULL;

	for (size_t i = 0; i < NR_FUNCS; i++) {
		const struct binding *b = &bd->b[i];

		if (b->state < BIND_UNDECIDED || b->file != file)
			continue;
		lo = b->ef.vaddr < lo ? b->ef.vaddr : lo;
		hi = b->ef.vaddr + PLACEMENT_PROLOGUE_MAX > hi ? b->ef.vaddr + PLACEMENT_PROLOGUE_MAX : hi;
	}
	while (elf && lo < hi && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		for (size_t i = 0; i + 5 <= d->d_size; i++) {
			const uint8_t *c = (const uint8_t *)d->d_buf + i;
			uint64_t pc = sh.sh_addr + i, target;
			size_t len = c[0] == 0x0f ? 6 : 5;
			int32_t rel;

			if (!(c[0] == 0xe8 || c[0] == 0xe9 || (c[0] == 0x0f && c[1] >= 0x80 && c[1] <= 0x8f)) ||
			    i + len > d->d_size)
				continue;
			memcpy(&rel, c + len - 4, sizeof(rel));
			target = pc + len + (int64_t)rel;
			if (target > lo && target <= hi)
				note_outside_branch(bd, file, pc, target);
		}
	}
}

static int add_forwarder(struct probe_set *ps, size_t i, const struct binding *b, const char *path)
{
	struct forwarder *fw = &ps->fwd[ps->nr_fwd];

	fw->path = strdup(path);
	if (!fw->path)
		return -ENOMEM;
	fw->func = alloc_funcs[i].name;
	fw->to = b->to;
	fw->file_offset = b->ef.file_offset;
	fw->vaddr = b->ef.vaddr;
	fw->size = b->ef.size;
	ps->nr_fwd++;
	return 0;
}

static int bind_functions(struct probe_set *ps, struct elf_file **files, char *const *paths,
			  size_t n, bool skip_forwarders)
{
	struct binder *bd = calloc(1, sizeof(*bd));
	bool placed = !getenv("MEMTRACE_NO_PLACEMENT");
	int err = 0;

	if (!bd)
		return -ENOMEM;
	bd->files = files;
	bd->paths = paths;
	bd->n = n;
	bind_all(bd);
	for (size_t j = 0; j < n && placed; j++)
		scan_outside_branches(bd, j);
	for (size_t i = 0; i < NR_FUNCS && !err; i++) {
		struct binding *b = &bd->b[i];
		const char *path;

		if (b->state == BIND_NONE || b->state == BIND_SKIPPED)
			continue;
		path = paths[b->file];
		if (b->state == BIND_UNDECIDED)
			decide(bd, i);
		if (b->state == BIND_FORWARDER && placed && skip_forwarders)
			err = add_forwarder(ps, i, b, path);
		else if (!already_probed(ps, path, b->ef.file_offset))
			err = add_probe(ps, &alloc_funcs[i], files[b->file], path, &b->ef, placed, b->outside);
	}
	free(bd);
	return err;
}

static bool has_func(const struct probe_set *ps, const char *name)
{
	for (size_t i = 0; i < ps->nr; i++) {
		if (strcmp(ps->v[i].func, name) == 0)
			return true;
	}
	return false;
}

int probe_set__resolve(struct probe_set *ps, char *const *candidates, size_t n, const char *lib,
		       bool skip_forwarders)
{
	struct elf_file **files;
	char *const *paths = lib ? (char *const *)&lib : candidates;
	int err;

	if (lib)
		n = 1;
	memset(ps, 0, sizeof(*ps));
	ps->v = calloc(NR_FUNCS, sizeof(*ps->v));
	ps->fwd = calloc(NR_FUNCS, sizeof(*ps->fwd));
	files = calloc(n ? n : 1, sizeof(*files));
	if (!ps->v || !ps->fwd || !files) {
		free(files);
		probe_set__free(ps);
		return -ENOMEM;
	}
	for (size_t j = 0; j < n; j++)
		files[j] = elf_file__open(paths[j]);
	err = bind_functions(ps, files, paths, n, skip_forwarders);
	for (size_t j = 0; j < n; j++) {
		if (files[j] && !err)
			mark_nesting(ps, files[j], paths[j]);
		if (files[j])
			elf_file__close(files[j]);
	}
	free(files);
	if (!err && !(has_func(ps, "malloc") && has_func(ps, "free")))
		err = -ESRCH;
	if (err) {
		probe_set__free(ps);
		return err;
	}
	ps->nr_modules = count_modules(ps);
	return 0;
}

void probe_set__free(struct probe_set *ps)
{
	for (size_t i = 0; i < ps->nr; i++)
		free(ps->v[i].path);
	for (size_t i = 0; i < ps->nr_fwd; i++)
		free(ps->fwd[i].path);
	free(ps->v);
	free(ps->fwd);
	memset(ps, 0, sizeof(*ps));
}
