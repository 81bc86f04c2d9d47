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

static int add_probe(struct probe_set *ps, const struct alloc_func *fn, struct elf_file *f,
		     const char *path, const struct elf_function *ef)
{
	struct probe *p = &ps->v[ps->nr];
	static uint8_t code[MAX_CODE];
	size_t len = ef->size < MAX_CODE ? ef->size : MAX_CODE;
	struct placement pl = { 0, false, "?" };

	if (len && !elf_file__read(f, ef->file_offset, code, len))
		if (!getenv("MEMTRACE_NO_PLACEMENT")) placement_choose(code, len, &pl);

	p->path = strdup(path);
	if (!p->path)
		return -ENOMEM;
	p->func = fn->name;
	p->offset = ef->file_offset + pl.offset;
	p->skipped = pl.offset;
	p->emulated = pl.emulated;
	p->insn = pl.insn;
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
	static uint8_t code[MAX_CODE];
	size_t nstarts = 0, nplt = plt_ranges(f, plt, 8);

	for (size_t i = 0; i < ps->nr; i++) {
		if (!strcmp(ps->v[i].path, path))
			starts[nstarts++] = (struct code_range){ ps->v[i].vaddr, ps->v[i].vaddr + 1 };
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

/* Bind every function to the first file that defines it. */
static int bind_functions(struct probe_set *ps, struct elf_file **files, char *const *paths,
			  size_t n)
{
	struct elf_function f;
	int err;

	for (size_t i = 0; i < NR_FUNCS; i++) {
		for (size_t j = 0; j < n; j++) {
			if (!files[j] || elf_file__find_function(files[j], alloc_funcs[i].name, &f))
				continue;
			if (!f.is_ifunc && !already_probed(ps, paths[j], f.file_offset)) {
				err = add_probe(ps, &alloc_funcs[i], files[j], paths[j], &f);
				if (err)
					return err;
			}
			break;
		}
	}
	return 0;
}

static bool has_func(const struct probe_set *ps, const char *name)
{
	for (size_t i = 0; i < ps->nr; i++) {
		if (strcmp(ps->v[i].func, name) == 0)
			return true;
	}
	return false;
}

int probe_set__resolve(struct probe_set *ps, char *const *candidates, size_t n, const char *lib)
{
	struct elf_file **files;
	char *const *paths = lib ? (char *const *)&lib : candidates;
	int err;

	if (lib)
		n = 1;
	memset(ps, 0, sizeof(*ps));
	ps->v = calloc(NR_FUNCS, sizeof(*ps->v));
	files = calloc(n ? n : 1, sizeof(*files));
	if (!ps->v || !files) {
		free(files);
		probe_set__free(ps);
		return -ENOMEM;
	}
	for (size_t j = 0; j < n; j++)
		files[j] = elf_file__open(paths[j]);
	err = bind_functions(ps, files, paths, n);
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
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}
