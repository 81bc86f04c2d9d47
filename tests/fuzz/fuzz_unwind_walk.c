// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer harness: damaged call frame information never makes the stack
 * walk report a frame that is not in the real stack.
 *
 * At start-up it runs two builds of tests/progs/unwind_levels kept in
 * tests/fuzz/walk/ (without frame pointers: CFI in .eh_frame; and with CFI
 * only in .debug_frame), each with its library, under ptrace, and stops
 * them at every malloc entry (the state the BPF probe sees) and, stepping
 * on from each, at every instruction they execute in the program itself
 * (prologues, epilogues, PLT stubs, return sites): registers plus a copy of
 * the stack. The true frame sequence of each stop is the walk with the
 * tables built from the files the process runs; a stop whose walk does not
 * reach the outermost frame is not used, and start-up fails unless the 17
 * allocations from main are whole stacks in each program.
 *
 * An input is {u8 program, CFI bytes}: the bytes replace the program's
 * .eh_frame_hdr and .eh_frame (program 0) or .debug_frame (program 1) in
 * its file, cut or zero-filled to the same length, so the code, headers
 * and symbols stay those the process ran. The damaged file's table
 * replaces the program's and every stop is walked again: the walk must
 * give a prefix of the true sequence. Stopping early (truncated) is fine,
 * a different frame is not. The walk is a model of bpf/unwind.bpf.h's,
 * with the same rules (bpf/unwind_rule.h); memory outside the copied stack
 * reads as a fault, as an unmapped address does for bpf_probe_read_user.
 */
#include "elf_util.h"
#include "fuzz_consume.h"
#include "unwind_table.h"
#include "unwind_rule.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_STOPS 400
#define MAX_FRAMES 64
#define MAX_MODS 32
#define STEPS_PER_HIT 3000
#define ALLOCATIONS_FROM_MAIN 17 /* 5 + 7 + 3 + 2: tests/progs/unwind_levels.cpp */

struct stop {
	uint64_t pc, sp, bp;
	uint64_t lo, hi; /* the stack copied: [sp, end of the stack mapping) */
	uint8_t *mem;
	uint64_t truth[MAX_FRAMES];
	int nr;
};

struct module {
	uint64_t start, end, bias;
	char path[256];
	struct unwind_table t;
	struct elf_file *file; /* for the code before a return address */
	bool target;           /* the program: its table comes from the input */
};

struct program {
	const char *exe, *lib; /* in tests/fuzz/walk/ */
	const char *sections[2]; /* the CFI an input replaces, adjacent in the file */
	uint8_t *file;          /* the program's bytes */
	size_t size;
	size_t cfi_off, cfi_len; /* where those sections are in it */
	struct module mods[MAX_MODS];
	int nmods;
	struct stop stops[MAX_STOPS];
	int nstops, malloc_stops;
};

static struct program programs[2] = {
	{ .exe = "unwind_levels_nofp", .lib = "libunwindlib_nofp.so", .sections = { ".eh_frame_hdr", ".eh_frame" } },
	{ .exe = "unwind_levels_dbgframe", .lib = "libunwindlib_dbgframe.so", .sections = { ".debug_frame" } },
};

static void die(const char *what)
{
	fprintf(stderr, "fuzz_unwind_walk: failed to %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint8_t *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc((size_t)n)) || fread(buf, 1, (size_t)n, f) != (size_t)n)
		die(path);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static void spill(const char *path, const uint8_t *buf, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0700);

	if (fd < 0 || write(fd, buf, size) != (ssize_t)size || close(fd))
		die(path);
}

/* Where P's CFI sections are in its file: one span from the first to the
 * end of the last. */
static void find_cfi(struct program *p, const char *path)
{
	struct elf_file *ef = elf_file__open(path);
	Elf *elf = ef ? elf_file__elf(ef) : NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx, lo = SIZE_MAX, hi = 0;
	GElf_Shdr sh;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx))
		die("read the program's section headers");
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		for (int i = 0; i < 2; i++) {
			if (p->sections[i] && !strcmp(name, p->sections[i])) {
				lo = sh.sh_offset < lo ? sh.sh_offset : lo;
				hi = sh.sh_offset + sh.sh_size > hi ? sh.sh_offset + sh.sh_size : hi;
			}
		}
	}
	elf_file__close(ef);
	if (lo >= hi || hi > p->size) {
		errno = ENOENT;
		die("find the program's CFI sections");
	}
	p->cfi_off = lo;
	p->cfi_len = hi - lo;
}

/* The executable file mappings of PID, with load biases; returns where its
 * stack ends. */
static uint64_t read_maps(struct program *p, int pid, const char *exe)
{
	char file[64], line[512], path[256];
	uint64_t stack_end = 0;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/maps", pid);
	if (!(f = fopen(file, "r")))
		die(file);
	p->nmods = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perms[8];

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &lo, &hi, perms, &off, path) < 4)
			continue;
		if (!strcmp(path, "[stack]"))
			stack_end = hi;
		if (perms[2] != 'x' || path[0] != '/' || p->nmods == MAX_MODS)
			continue;
		struct module *m = &p->mods[p->nmods];
		struct elf_file *ef = elf_file__open(path);
		uint64_t vaddr;

		if (!ef)
			continue;
		if (!elf_vaddr_of_offset(elf_file__elf(ef), off, &vaddr)) {
			*m = (struct module){ .start = lo, .end = hi, .bias = lo - vaddr, .target = !strcmp(path, exe) };
			snprintf(m->path, sizeof(m->path), "%s", path);
			p->nmods++;
		}
		elf_file__close(ef);
	}
	fclose(f);
	return stack_end;
}

static const struct module *find_module(const struct program *p, uint64_t pc)
{
	for (int i = 0; i < p->nmods; i++)
		if (pc >= p->mods[i].start && pc < p->mods[i].end)
			return &p->mods[i];
	return NULL;
}

static const struct unwind_table *target_table(const struct program *p)
{
	for (int i = 0; i < p->nmods; i++)
		if (p->mods[i].target)
			return &p->mods[i].t;
	return NULL;
}

static bool read_stack(const struct stop *s, uint64_t addr, uint64_t *out)
{
	if (addr < s->lo || addr > s->hi - 8)
		return false;
	memcpy(out, s->mem + (addr - s->lo), 8);
	return true;
}

/* LEN bytes of code at ADDR of P's process, from the module's file (the
 * code a process runs is its file's). */
static bool read_code(const struct program *p, uint64_t addr, uint8_t *buf, size_t len)
{
	const struct module *m = find_module(p, addr);
	uint64_t off;

	return m && m->file && !elf_offset_of_vaddr(elf_file__elf(m->file), addr - m->bias, &off) &&
	       !elf_file__read(m->file, off, buf, len);
}

/* The walk of bpf/unwind.bpf.h's unwind_step over the stop S of P, with
 * TARGET as the program's table: frames (callers, first the caller of the
 * stopped function) into FRAMES; returns their number, *WHOLE set if it
 * reached the outermost frame. VERBOSE: each step on stderr. */
static int model_walk(const struct program *p, const struct stop *s, const struct unwind_table *target,
		      uint64_t *frames, bool *whole, bool verbose)
{
	uint64_t pc = s->pc, sp = s->sp, bp = s->bp, bp_at = 0, ra, sig[3];
	__u8 code[8];
	__u64 cfa;
	bool exact = true;
	int nr = 0;

	*whole = false;
	while (nr < MAX_FRAMES) {
		const struct module *m = find_module(p, pc);
		const struct unwind_table *t = m && m->target ? target : m ? &m->t : NULL;
		const struct mt_unwind_row *row;
		uint64_t addr;

		if (!t || !t->nr) {
			if (nr && !mt_unwind_keep_unmapped)
				nr--; /* a frame in no mapping with a table */
			break; /* truncated */
		}
		addr = mt_unwind_lookup_addr(pc, m->bias, exact);
		if (addr > 0xffffffffULL || !(row = unwind_table__find(t, addr)))
			break;
		if (verbose)
			fprintf(stderr, "  pc %#llx (%s+%#llx) sp %#llx: row at %#x kind %u cfa_off %d rbp %u %d\n",
				(unsigned long long)pc, m->target ? "program" : m->path, (unsigned long long)addr,
				(unsigned long long)sp, row->pc, row->cfa_kind, row->cfa_off, row->rbp_rule, row->rbp_off);
		if (bp_at && mt_unwind_needs_bp(row)) {
			if (!read_stack(s, bp_at, &bp))
				return nr;
			bp_at = 0;
		}
		switch (mt_unwind_cfa(row, pc, sp, bp, &cfa)) {
		case MT_NEXT_CALLER:
			break;
		case MT_NEXT_SIGNAL:
			if (!read_stack(s, sp + MT_SIGCONTEXT_RBP, &sig[0]) ||
			    !read_stack(s, sp + MT_SIGCONTEXT_RSP, &sig[1]) ||
			    !read_stack(s, sp + MT_SIGCONTEXT_RIP, &sig[2]) || !sig[2])
				return nr;
			frames[nr++] = sig[2];
			bp = sig[0];
			bp_at = 0;
			sp = sig[1];
			pc = sig[2];
			exact = true;
			continue;
		case MT_NEXT_END:
			*whole = true;
			return nr;
		default:
			return nr;
		}
		if (!read_stack(s, cfa - 8, &ra))
			return nr;
		if (!mt_unwind_caller_ok(ra, cfa, sp))
			return nr;
		if ((row->flags & MT_ROW_CHECK_RA) && !read_code(p, ra - 8, code, sizeof(code)))
			return nr; /* truncated */
		if ((row->flags & MT_ROW_CHECK_RA) && !mt_unwind_after_call(code))
			return nr;
		frames[nr++] = ra;
		if (row->rbp_rule == MT_RBP_AT_CFA)
			bp_at = cfa + row->rbp_off;
		sp = cfa;
		pc = ra;
		exact = false;
	}
	return nr;
}

static void take_stop(struct program *p, int pid, const struct user_regs_struct *r, uint64_t stack_end,
		      bool at_malloc)
{
	struct stop *s = &p->stops[p->nstops];
	char file[64];
	bool whole;
	int fd;

	if (p->nstops == MAX_STOPS || r->rsp >= stack_end)
		return;
	*s = (struct stop){ .pc = r->rip, .sp = r->rsp, .bp = r->rbp, .lo = r->rsp, .hi = stack_end };
	s->mem = malloc(s->hi - s->lo);
	snprintf(file, sizeof(file), "/proc/%d/mem", pid);
	if (!s->mem || (fd = open(file, O_RDONLY)) < 0)
		die(file);
	if (pread(fd, s->mem, s->hi - s->lo, (off_t)s->lo) != (ssize_t)(s->hi - s->lo))
		die("read the stack");
	close(fd);
	s->nr = model_walk(p, s, target_table(p), s->truth, &whole, false);
	if (!whole || s->nr < 3) {
		free(s->mem);
		return; /* not a stop whose true stack the tables give */
	}
	p->nstops++;
	p->malloc_stops += at_malloc;
}

/* Write BYTE at ADDR of the stopped PID; the byte it replaced. (Through
 * /proc/PID/mem: ASan's ptrace interceptor gets PTRACE_PEEKTEXT wrong.) */
static uint8_t set_byte(int pid, uint64_t addr, uint8_t byte)
{
	char file[64];
	uint8_t old;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/mem", pid);
	if ((fd = open(file, O_RDWR)) < 0 || pread(fd, &old, 1, (off_t)addr) != 1 ||
	    pwrite(fd, &byte, 1, (off_t)addr) != 1)
		die("set a breakpoint");
	close(fd);
	return old;
}

/* Start P's program under ptrace in DIR; its pid, stopped at its entry
 * point (the libraries are mapped then). */
static int start(struct program *p, const char *dir, char *exe, size_t cap, uint64_t *stack_end)
{
	struct user_regs_struct r;
	char from[512], lib[256];
	uint64_t entry;
	uint8_t saved;
	int pid, status;

	snprintf(exe, cap, "%s/unwind_levels", dir);
	snprintf(lib, sizeof(lib), "%s/libunwindlib.so", dir);
	snprintf(from, sizeof(from), "%s/%s", MT_FUZZ_WALK, p->exe);
	p->file = slurp(from, &p->size);
	spill(exe, p->file, p->size);
	find_cfi(p, exe);
	{
		size_t n;
		uint8_t *l;

		snprintf(from, sizeof(from), "%s/%s", MT_FUZZ_WALK, p->lib);
		l = slurp(from, &n);
		spill(lib, l, n);
		free(l);
	}
	pid = fork();
	if (pid == 0) {
		char *argv[] = { exe, NULL };
		char *envp[] = { "LD_BIND_NOW=1", NULL }; /* no lazy binding in the stops */

		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execve(exe, argv, envp);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		die("start tests/progs/unwind_levels under ptrace");
	{
		struct elf_file *ef = elf_file__open(exe);
		GElf_Ehdr eh;

		if (!ef || !gelf_getehdr(elf_file__elf(ef), &eh))
			die("read the program's ELF header");
		entry = eh.e_entry;
		elf_file__close(ef);
	}
	read_maps(p, pid, exe);
	for (int i = 0; i < p->nmods; i++)
		if (p->mods[i].target)
			entry += p->mods[i].bias;
	saved = set_byte(pid, entry, 0xcc);
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		die("run to the entry point");
	set_byte(pid, entry, saved);
	ptrace(PTRACE_GETREGS, pid, NULL, &r);
	r.rip = entry;
	ptrace(PTRACE_SETREGS, pid, NULL, &r);
	*stack_end = read_maps(p, pid, exe);
	for (int i = 0; i < p->nmods; i++) {
		if (unwind_table__load(p->mods[i].path, NULL, &p->mods[i].t))
			memset(&p->mods[i].t, 0, sizeof(p->mods[i].t));
		p->mods[i].file = elf_file__open(p->mods[i].path);
	}
	return pid;
}

static void capture(struct program *p)
{
	char dir[] = "/tmp/fuzz_unwind_walk.XXXXXX", exe[128], lib[160];
	struct elf_function malloc_fn;
	struct user_regs_struct r;
	uint64_t malloc_at = 0, stack_end;
	uint8_t saved;
	int pid, status, deepest = 0;

	if (!mkdtemp(dir))
		die("mkdtemp");
	pid = start(p, dir, exe, sizeof(exe), &stack_end);
	for (int i = 0; i < p->nmods; i++)
		if (strstr(p->mods[i].path, "/libc.so") && !elf_find_function(p->mods[i].path, "malloc", &malloc_fn))
			malloc_at = malloc_fn.vaddr + p->mods[i].bias;
	if (!malloc_at)
		die("find malloc in libc");
	saved = set_byte(pid, malloc_at, 0xcc);
	for (int deliver = 0;;) {
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)deliver);
		deliver = 0;
		if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
			break; /* it exited */
		if (WSTOPSIG(status) != SIGTRAP) {
			deliver = WSTOPSIG(status); /* its own SIGUSR2 */
			continue;
		}
		ptrace(PTRACE_GETREGS, pid, NULL, &r);
		if (r.rip != malloc_at + 1)
			continue;
		r.rip = malloc_at;
		ptrace(PTRACE_SETREGS, pid, NULL, &r);
		set_byte(pid, malloc_at, saved);
		take_stop(p, pid, &r, stack_end, true);
		/* Step on: every instruction of the program itself is a stop. */
		for (int i = 0; i < STEPS_PER_HIT; i++) {
			const struct module *m;

			if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) || waitpid(pid, &status, 0) != pid ||
			    !WIFSTOPPED(status))
				goto out; /* it exited */
			if (WSTOPSIG(status) != SIGTRAP) {
				deliver = WSTOPSIG(status); /* on the next PTRACE_CONT */
				break;
			}
			ptrace(PTRACE_GETREGS, pid, NULL, &r);
			if (r.rip == malloc_at)
				break; /* the next allocation: taken at its breakpoint */
			if ((m = find_module(p, r.rip)) && m->target)
				take_stop(p, pid, &r, stack_end, false);
		}
		set_byte(pid, malloc_at, 0xcc);
	}
out:
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	unlink(exe);
	snprintf(lib, sizeof(lib), "%s/libunwindlib.so", dir);
	unlink(lib);
	rmdir(dir);
	for (int i = 0; i < p->nstops; i++)
		deepest = p->stops[i].nr > deepest ? p->stops[i].nr : deepest;
	fprintf(stderr, "fuzz_unwind_walk: %s: %d stops (%d at malloc), the deepest %d frames; CFI %zu bytes\n",
		p->exe, p->nstops, p->malloc_stops, deepest, p->cfi_len);
	if (p->malloc_stops < ALLOCATIONS_FROM_MAIN) {
		fprintf(stderr, "fuzz_unwind_walk: %s: %d whole stacks at malloc, want %d or more\n", p->exe,
			p->malloc_stops, ALLOCATIONS_FROM_MAIN);
		exit(1);
	}
}

/* Walks over damaged tables, and those that left out a true frame (every
 * frame real, one skipped: a damaged rule that moved the CFA by a whole
 * frame, which no check of the rows can tell from a true one). */
static unsigned long walks, not_prefix;

static void print_counts(void)
{
	fprintf(stderr, "fuzz_unwind_walk: %lu walks over damaged tables, %lu skipped a frame, none had a frame not in the stack\n",
		walks, not_prefix);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	atexit(print_counts);
	for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		capture(&programs[i]);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct program *p;
	struct unwind_table t;
	struct elf_file *f;
	uint8_t *file;
	char path[64];
	int fd;

	if (size < 1)
		return 0;
	p = &programs[data[0] & 1];
	if (!(file = malloc(p->size)))
		return 0;
	memcpy(file, p->file, p->size);
	memset(file + p->cfi_off, 0, p->cfi_len);
	memcpy(file + p->cfi_off, data + 1, size - 1 < p->cfi_len ? size - 1 : p->cfi_len);
	fd = fuzz_memfd(file, p->size, path, sizeof(path));
	free(file);
	if (fd < 0)
		return 0;
	f = elf_file__open(path);
	if (!f || unwind_table__build(elf_file__elf(f), &t))
		memset(&t, 0, sizeof(t));
	for (int i = 0; i < p->nstops; i++) {
		const struct stop *s = &p->stops[i];
		uint64_t frames[MAX_FRAMES];
		bool whole;
		int nr = model_walk(p, s, &t, frames, &whole, false);

		int k = 0, j;

		walks++;
		for (j = 0; j < nr && j < s->nr && frames[j] == s->truth[j]; j++)
			;
		if (j < nr) {
			not_prefix++;
			if (getenv("FUZZ_WALK_VERBOSE")) {
				fprintf(stderr, "%s stop %d skipped:\n", p->exe, i);
				model_walk(p, s, &t, frames, &whole, true);
				fprintf(stderr, "true:\n");
				model_walk(p, s, target_table(p), frames, &whole, true);
			}
		}
		/* Every frame one of the true ones, in their order. */
		for (j = 0; j < nr; j++, k++) {
			while (k < s->nr && s->truth[k] != frames[j])
				k++;
			if (k == s->nr)
				break;
		}
		if (j == nr)
			continue;
		fprintf(stderr, "%s, stop %d (pc %#llx): frame %d, %#llx, is not in the real stack\n", p->exe, i,
			(unsigned long long)s->pc, j, (unsigned long long)frames[j]);
		fprintf(stderr, "the walk with the damaged table:\n");
		model_walk(p, s, &t, frames, &whole, true);
		fprintf(stderr, "the walk with the true table:\n");
		model_walk(p, s, target_table(p), frames, &whole, true);
		abort();
	}
	unwind_table__free(&t);
	if (f)
		elf_file__close(f);
	close(fd);
	return 0;
}
