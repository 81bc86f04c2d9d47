// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Python frames in allocation stacks (python.h has the rules). Everything
 * read here comes from the target: its ELF file (through the descriptor
 * procmaps holds, never its path) and its memory. Every length is bounded,
 * every string checked, and a read that fails names the frame by its
 * address rather than stopping the recording.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elf_util.h"
#include "file_memo.h"
#include "procmaps.h"
#include "python.h"
#include "python_lines.h"
#include "target_file.h"
#include "u64map.h"
#include "util.h"

#define NAME_MAX_BYTES 512     /* of a qualified name or file name read from the target */
#define TABLE_MAX_BYTES 65536  /* of a code object's location table */
#define LINE_BITS 24           /* a Python frame's address: code entry << LINE_BITS | line */
#define CODES_MAX (1u << 20)   /* code objects named per process: a service that makes code
				  without end (exec, lambdas compiled per request) must not grow the
				  recorder without end; past it, frames go unnamed */

/* Where a version keeps what user space reads of code objects and strings. */
struct code_layout {
	uint16_t firstlineno, filename, name, qualname, linetable, code_adaptive;
	uint16_t ascii_size;   /* sizeof(PyASCIIObject): where a compact ASCII string's bytes start */
	uint16_t compact_size; /* sizeof(PyCompactUnicodeObject): where other compact strings' start */
	uint16_t str_length;   /* PyASCIIObject.length */
	uint16_t str_state;    /* PyASCIIObject.state */
	uint16_t bytes_size;   /* PyVarObject.ob_size of a bytes object */
	uint16_t bytes_data;   /* PyBytesObject.ob_sval */
	bool instr_is_prev;    /* the frame holds the instruction before (prev_instr), not the current one */
};

struct version_layout {
	int minor;
	struct mt_py_layout bpf;
	struct code_layout code;
};

/* The tag covers co_argcount's neighbours up to co_name (bytes 56-127 in all
 * three, co_name last): fixed when the code object is made. The words
 * before hold 3.11's co_warmup, which counts calls, and those after the
 * caches. 3.12 and 3.13 number code objects as they make them (co_version,
 * byte 92); 3.11 does not, so its tag takes the name's hash (PyASCIIObject
 * byte 24, set when the name was interned). */

/* From CPython's own headers (Include/internal/pycore_{runtime,interp,frame,code}.h,
 * cpython/{pystate,code,unicodeobject,bytesobject}.h), x86-64, default build:
 * offsetof() printed by a program compiled against them. 3.11: Debian 12's
 * python3.11 3.11.2; 3.12: 3.12.1; 3.13: 3.13.0, whose _Py_DebugOffsets are
 * read from the interpreter in preference (python__find). */
static const struct version_layout layouts[] = {
	{ .minor = 11,
	  .bpf = { .interp_head = 40, .threads_head = 16, .ts_next = 8, .ts_native_tid = 160, .ts_frame = 56,
		   .cframe_frame = 8, .fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_owner = 69,
		   .fr_entry = 68, .code_tag = 56, .name_hash = 24,
		   .co_qualname = 128, .co_filename = 112, .co_firstlineno = 72, .co_linetable = 136, .str_state = 32,
		   .str_ascii = 48, .bytes_size = 16, .bytes_data = 32 },
	  .code = { .firstlineno = 72, .filename = 112, .name = 120, .qualname = 128, .linetable = 136,
		    .code_adaptive = 184, .ascii_size = 48, .compact_size = 72, .str_length = 16, .str_state = 32,
		    .bytes_size = 16, .bytes_data = 32, .instr_is_prev = true } },
	{ .minor = 12,
	  .bpf = { .interp_head = 40, .threads_head = 72, .ts_next = 8, .ts_native_tid = 144, .ts_frame = 56,
		   .cframe_frame = 0, .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70,
		   .fr_entry = MT_PY_NONE, .owner_cstack = 3, .code_tag = 56, .name_hash = MT_PY_NONE,
		   .co_qualname = 128, .co_filename = 112, .co_firstlineno = 68, .co_linetable = 136, .str_state = 32,
		   .str_ascii = 40, .bytes_size = 16, .bytes_data = 32 },
	  .code = { .firstlineno = 68, .filename = 112, .name = 120, .qualname = 128, .linetable = 136,
		    .code_adaptive = 192, .ascii_size = 40, .compact_size = 56, .str_length = 16, .str_state = 32,
		    .bytes_size = 16, .bytes_data = 32, .instr_is_prev = true } },
	{ .minor = 13,
	  .bpf = { .interp_head = 632, .threads_head = 7344, .ts_next = 8, .ts_native_tid = 160, .ts_frame = 72,
		   .cframe_frame = MT_PY_NONE, .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_owner = 70,
		   .fr_entry = MT_PY_NONE, .owner_cstack = 3, .code_tag = 56, .name_hash = MT_PY_NONE,
		   .co_qualname = 128, .co_filename = 112, .co_firstlineno = 68, .co_linetable = 136, .str_state = 32,
		   .str_ascii = 40, .bytes_size = 16, .bytes_data = 32 },
	  .code = { .firstlineno = 68, .filename = 112, .name = 120, .qualname = 128, .linetable = 136,
		    .code_adaptive = 200, .ascii_size = 40, .compact_size = 56, .str_length = 16, .str_state = 32,
		    .bytes_size = 16, .bytes_data = 32, .instr_is_prev = false } },
};

struct code_entry {
	uint64_t code;   /* the code object's address */
	uint32_t tag;    /* the BPF walk's tag of its first bytes */
	uint32_t next;   /* the next entry of the same address + 1; 0: none */
	int firstline;   /* co_firstlineno */
	char *name;      /* co_qualname; NULL: not read */
	char *file;      /* co_filename */
	uint8_t *table;  /* co_linetable */
	size_t table_len;
};

struct python {
	int pid;
	int parent;                    /* the process it was forked from (files_pid), or pid */
	struct mt_py_layout bpf;
	struct code_layout code;
	char version[24];
	uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault in the target */
	char *file;                    /* the interpreter's file, as held (/proc/self/fd/N) */
	uint64_t code_free;            /* file offset of its code_dealloc; 0: not found */
	struct u64map by_code;         /* code address -> first entry + 1 */
	struct code_entry *codes;
	size_t nr_codes, codes_cap;
	uint64_t read, failed;
	struct trace_frame frame;      /* python__resolve's answer */
	char unknown[64];
};

/* --- reading the target ------------------------------------------------- */

/* LEN bytes at ADDR in the target; if it is gone (a short-lived child of
 * a fork), in the process it was forked from, which holds what the child
 * inherited at the same addresses: a code object read there must still
 * carry the tag the child's walk saw (read_code checks). */
static int read_mem(const struct python *py, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr)
		return -EFAULT;
	if (process_vm_readv(py->pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return 0;
	if (py->parent == py->pid)
		return -EFAULT;
	return process_vm_readv(py->parent, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int read_u64(const struct python *py, uint64_t addr, uint64_t *v)
{
	return read_mem(py, addr, v, sizeof(*v));
}

/* A str object at ADDR as UTF-8, NULL if it is not one memtrace can read. */
static char *read_str(const struct python *py, uint64_t addr)
{
	const struct code_layout *l = &py->code;
	uint64_t length = 0;
	uint32_t state = 0;
	unsigned kind, compact, ascii;
	size_t bytes, out_len = 0;
	uint8_t *raw;
	char *out;

	if (read_u64(py, addr + l->str_length, &length) || read_mem(py, addr + l->str_state, &state, 4))
		return NULL;
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
		return NULL;
	if (length > NAME_MAX_BYTES)
		length = NAME_MAX_BYTES;
	bytes = length * kind;
	raw = malloc(bytes + 1);
	out = malloc(length * 4 + 1);
	if (!raw || !out || read_mem(py, addr + (ascii ? l->ascii_size : l->compact_size), raw, bytes)) {
		free(raw);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < length; i++) {
		uint32_t cp = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] : ((uint32_t *)raw)[i];

		if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			cp = '?'; /* a name is text: nothing a terminal or JSON would take as more */
		if (cp < 0x80) {
			out[out_len++] = (char)(cp < 0x20 || cp == 0x7f ? '?' : cp);
		} else if (cp < 0x800) {
			out[out_len++] = (char)(0xc0 | cp >> 6);
			out[out_len++] = (char)(0x80 | (cp & 63));
		} else if (cp < 0x10000) {
			out[out_len++] = (char)(0xe0 | cp >> 12);
			out[out_len++] = (char)(0x80 | ((cp >> 6) & 63));
			out[out_len++] = (char)(0x80 | (cp & 63));
		} else {
			out[out_len++] = (char)(0xf0 | cp >> 18);
			out[out_len++] = (char)(0x80 | ((cp >> 12) & 63));
			out[out_len++] = (char)(0x80 | ((cp >> 6) & 63));
			out[out_len++] = (char)(0x80 | (cp & 63));
		}
	}
	out[out_len] = 0;
	free(raw);
	return out;
}

/* The tag bpf/python.bpf.h computes of the same bytes. */
static uint32_t code_tag(const struct python *py, const uint64_t *words)
{
	uint64_t h = 0xcbf29ce484222325ULL, name_hash = 0;

	if (py->bpf.name_hash != MT_PY_NONE && read_u64(py, words[MT_PY_TAG_BYTES / 8 - 1] + py->bpf.name_hash, &name_hash))
		name_hash = 0;
	for (int i = 0; i < MT_PY_TAG_BYTES / 8; i++)
		h = (h ^ words[i]) * 0x100000001b3ULL;
	h = (h ^ name_hash) * 0x100000001b3ULL;
	return (uint32_t)(h ^ (h >> 32)) | 1;
}

/* Name, file, first line and location table of E's code object, if its
 * bytes still have E's tag (the object the walk saw, not a newer one). */
static void read_code(struct python *py, struct code_entry *e)
{
	const struct code_layout *l = &py->code;
	uint64_t words[MT_PY_TAG_BYTES / 8], qualname, filename, table, len = 0;
	int32_t firstline = 0;

	py->read++;
	if (read_mem(py, e->code + py->bpf.code_tag, words, sizeof(words)) || code_tag(py, words) != e->tag ||
	    read_u64(py, e->code + l->qualname, &qualname) || read_u64(py, e->code + l->filename, &filename) ||
	    read_u64(py, e->code + l->linetable, &table) || read_mem(py, e->code + l->firstlineno, &firstline, 4)) {
		py->failed++;
		return;
	}
	e->firstline = firstline;
	e->name = read_str(py, qualname);
	e->file = read_str(py, filename);
	if (!e->name)
		py->failed++;
	if (read_u64(py, table + l->bytes_size, &len) || len > TABLE_MAX_BYTES)
		return;
	e->table = malloc(len ? len : 1);
	if (e->table && !read_mem(py, table + l->bytes_data, e->table, len))
		e->table_len = len;
}

/* The entry of CODE with TAG, made on first sight (*MADE set); its index
 * + 1, 0 if out of memory. */
static uint32_t code_find(struct python *py, uint64_t code, uint32_t tag, bool *made)
{
	struct u64map_entry *m;
	struct code_entry *e;
	bool existed;
	uint32_t i;

	*made = false;
	m = u64map__insert(&py->by_code, code, &existed);
	if (!m)
		return 0;
	for (i = existed ? (uint32_t)m->val : 0; i; i = py->codes[i - 1].next)
		if (py->codes[i - 1].tag == tag)
			return i;
	if (py->nr_codes >= CODES_MAX ||
	    array_reserve((void **)&py->codes, &py->codes_cap, py->nr_codes + 1, sizeof(*py->codes))) {
		if (!existed)
			u64map__remove(&py->by_code, m);
		return 0;
	}
	e = &py->codes[py->nr_codes];
	*e = (struct code_entry){ .code = code, .tag = tag, .next = existed ? (uint32_t)m->val : 0 };
	m->val = ++py->nr_codes;
	*made = true;
	return (uint32_t)py->nr_codes;
}

/* The entry of CODE with TAG, read from the target on first sight unless
 * the walk sent it (python__learn). */
static uint32_t code_entry(struct python *py, uint64_t code, uint32_t tag)
{
	bool made;
	uint32_t i = code_find(py, code, tag, &made);

	if (made)
		read_code(py, &py->codes[i - 1]);
	return i;
}

/* Text the target sent, made safe to print: control characters and
 * anything not ASCII (the walk sends ASCII only) become '?'. */
static char *sent_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);
	char *out = n ? malloc(n + 1) : NULL;

	for (size_t i = 0; out && i < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
	if (out)
		out[n] = 0;
	return out;
}

int python__learn(struct python *py, const struct mt_pycode_event *ev)
{
	struct code_entry *e;
	bool made;
	uint32_t i = code_find(py, ev->code & MT_PY_CODE_MASK, ev->tag, &made);

	if (!i)
		return -ENOMEM;
	if (!made)
		return 0;
	e = &py->codes[i - 1];
	e->firstline = ev->firstlineno;
	e->name = sent_text(ev->name, sizeof(ev->name));
	e->file = sent_text(ev->file, sizeof(ev->file));
	if (ev->table_len <= MT_PY_TABLE_MAX) {
		e->table = malloc(ev->table_len ? ev->table_len : 1);
		if (e->table) {
			memcpy(e->table, ev->table, ev->table_len);
			e->table_len = ev->table_len;
		}
	}
	/* what did not fit (a name not in ASCII, a longer table): from memory */
	if (!e->name || !e->file || !e->table) {
		struct code_entry r = *e;

		r.name = r.file = NULL;
		r.table = NULL;
		r.table_len = 0;
		read_code(py, &r);
		if (!e->name)
			e->name = r.name;
		else
			free(r.name);
		if (!e->file)
			e->file = r.file;
		else
			free(r.file);
		if (!e->table) {
			e->table = r.table;
			e->table_len = r.table_len;
		} else {
			free(r.table);
		}
	}
	return 0;
}

/* The address standing for frame F. */
static uint64_t frame_addr(struct python *py, const struct mt_py_frame *f)
{
	uint32_t i = code_entry(py, f->code & MT_PY_CODE_MASK, f->tag);
	const struct code_entry *e;
	int64_t index;
	uint32_t line;

	if (!i)
		return PYTHON_ADDR_BASE;
	e = &py->codes[i - 1];
	index = ((int64_t)f->instr - py->code.code_adaptive) / 2;
	if (py->code.instr_is_prev && f->instr < py->code.code_adaptive)
		index = -1; /* the frame has not run an instruction yet */
	line = e->table ? python_line(e->table, e->table_len, e->firstline, index) : 0;
	if (line >= (1u << LINE_BITS))
		line = 0;
	return PYTHON_ADDR_BASE | (uint64_t)i << LINE_BITS | line;
}

uint32_t python__compose(struct python *py, const uint64_t *frames, uint32_t nr, const struct mt_pystack_event *ev,
			 uint64_t *out, uint32_t cap)
{
	uint32_t n = 0, next = 0, pnr = ev->nr < MT_PY_MAX_FRAMES ? ev->nr : MT_PY_MAX_FRAMES;
	uint64_t cut = 0;

	for (uint32_t i = 0; i < nr && n < cap; i++) {
		/* a return address lies in (start, end] of its caller */
		if (frames[i] <= py->eval_start || frames[i] > py->eval_end || next >= pnr) {
			out[n++] = frames[i];
			continue;
		}
		do {
			out[n++] = frame_addr(py, &ev->frames[next]);
		} while (!(ev->frames[next++].code & MT_PY_ENTRY) && next < pnr && n < cap);
		if (next == pnr && ev->truncated) {
			/* the Python frames past the walk's bound: the stack is cut here */
			if (n < cap)
				out[n++] = TRACE_FRAME_PY_CUT;
			return n;
		}
	}
	/* Python frames the native walk reached no evaluation frame for (it was
	 * cut, or lost its way): after its frames, before the mark of its cut,
	 * which stays last */
	if (next < pnr && n && (out[n - 1] == MT_STACK_TRUNCATED || out[n - 1] == MT_STACK_DEPTH_CUT))
		cut = out[--n];
	while (next < pnr && n < cap)
		out[n++] = frame_addr(py, &ev->frames[next++]);
	if (ev->truncated && !cut)
		cut = TRACE_FRAME_PY_CUT;
	if (cut && n < cap)
		out[n++] = cut;
	return n;
}

int python__resolve(struct python *py, uint64_t addr, struct trace_symbol *out)
{
	uint64_t i = (addr & ~PYTHON_ADDR_MASK) >> LINE_BITS;
	const struct code_entry *e;

	if (!python_is_addr(addr) || !i || i > py->nr_codes)
		return -ENOENT;
	e = &py->codes[i - 1];
	py->frame = (struct trace_frame){ .function = e->name, .file = e->file,
					  .line = (uint32_t)(addr & ((1u << LINE_BITS) - 1)) };
	if (!e->name) {
		snprintf(py->unknown, sizeof(py->unknown), "[python code at 0x%llx]", (unsigned long long)e->code);
		py->frame.function = py->unknown;
	}
	*out = (struct trace_symbol){ .addr = addr, .module = -1, .nframes = 1, .frames = &py->frame,
				      .language = TRACE_LANG_PYTHON };
	return 0;
}

/* --- finding the interpreter -------------------------------------------- */

/* A defined symbol NAME of any type in F's .dynsym. */
static int dynsym_find(Elf *elf, const char *name, GElf_Sym *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -ESRCH;
		n = data->d_size / gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
		for (size_t i = 0; i < n; i++) {
			const char *s;

			if (!gelf_getsym(data, (int)i, out) || out->st_shndx == SHN_UNDEF)
				continue;
			s = elf_strptr(elf, sh.sh_link, out->st_name);
			if (s && !strcmp(s, name))
				return 0;
		}
	}
	return -ESRCH;
}

/* LEN bytes of F at ELF address VADDR (initialized data or code). */
static int read_vaddr(struct elf_file *f, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;

	if (elf_offset_of_vaddr(elf_file__elf(f), vaddr, &off))
		return -ERANGE;
	return elf_file__read(f, off, buf, len);
}

/* 3.13's _Py_DebugOffsets, at the start of _PyRuntime: the offsets the
 * interpreter says it has, where they differ from the table's. */
static int debug_offsets(struct elf_file *f, uint64_t runtime_vaddr, struct python *py)
{
	uint64_t w[44];

	if (read_vaddr(f, runtime_vaddr, w, sizeof(w)) || memcmp(w, "xdebugpy", 8))
		return -ENODATA;
	if (w[2])
		return -EPROTONOSUPPORT; /* free-threaded: another layout altogether */
	for (int i = 5; i < 44; i++)
		if (w[i] > 0xfff0 && i != 3 && i != 6 && i != 19)
			return -EINVAL;
	py->bpf.interp_head = (uint16_t)w[5];
	py->bpf.threads_head = (uint16_t)w[9];
	py->bpf.ts_next = (uint16_t)w[21];
	py->bpf.ts_frame = (uint16_t)w[23];
	py->bpf.ts_native_tid = (uint16_t)w[25];
	py->bpf.fr_previous = (uint16_t)w[29];
	py->bpf.fr_code = (uint16_t)w[30];
	py->bpf.fr_instr = (uint16_t)w[31];
	py->bpf.fr_owner = (uint16_t)w[33];
	py->bpf.co_filename = py->code.filename = (uint16_t)w[35];
	py->code.name = (uint16_t)w[36];
	py->bpf.co_qualname = py->code.qualname = (uint16_t)w[37];
	py->bpf.co_linetable = py->code.linetable = (uint16_t)w[38];
	py->bpf.co_firstlineno = py->code.firstlineno = (uint16_t)w[39];
	py->code.code_adaptive = (uint16_t)w[43];
	return 0;
}

/* Where the interpreter frees code objects: PyCode_Type's tp_dealloc
 * (PyTypeObject byte 48 in every version), as the file holds it (the
 * linker writes a relocated pointer's addend there too); its file offset
 * if it is code, else 0. */
static void code_free_offset(struct elf_file *f, struct python *py)
{
	GElf_Sym type;
	uint64_t fn = 0, off;
	uint32_t flags;

	if (dynsym_find(elf_file__elf(f), "PyCode_Type", &type) || read_vaddr(f, type.st_value + 48, &fn, sizeof(fn)) ||
	    elf_segment_flags(elf_file__elf(f), fn, &flags) || !(flags & PF_X) ||
	    elf_offset_of_vaddr(elf_file__elf(f), fn, &off))
		return;
	py->code_free = off;
}

/* Whether FILE (mapped from PATH) is worth opening for _PyRuntime: the
 * executable, or a library named for Python. */
static bool may_be_python(const char *path, bool exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return exe || strstr(base, "python");
}

static int try_module(struct python *py, const struct trace_module *m, const char *file, char *why, size_t cap)
{
	struct elf_file *f;
	GElf_Sym runtime, version, eval;
	uint64_t vaddr, bias, none;
	uint32_t hex = 0;
	int err = -ESRCH;
	size_t i;

	/* a program's own file is always looked at: remembered (file_memo.h)
	 * when it is no interpreter, a scan of its dynamic symbols (0.1-0.3 ms
	 * for PostgreSQL's) that every recorder of a followed tree made again */
	if (!file_memo__get(file, FILE_NO_PYTHON, 0, &none) && none)
		return -ESRCH;
	f = elf_file__open(file);
	if (!f)
		return -ESRCH;
	if (dynsym_find(elf_file__elf(f), "_PyRuntime", &runtime) || GELF_ST_TYPE(runtime.st_info) != STT_OBJECT) {
		file_memo__put(file, FILE_NO_PYTHON, 0, 1);
		goto out;
	}
	err = -EPROTONOSUPPORT;
	if (dynsym_find(elf_file__elf(f), "Py_Version", &version) ||
	    read_vaddr(f, version.st_value, &hex, sizeof(hex))) {
		snprintf(why, cap, "%s exports no Py_Version (CPython before 3.11)", m->path);
		goto out;
	}
	snprintf(py->version, sizeof(py->version), "%u.%u.%u", hex >> 24, (hex >> 16) & 255, (hex >> 8) & 255);
	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (hex >> 24 == 3 && ((hex >> 16) & 255) == (unsigned)layouts[i].minor)
			break;
	if (i == sizeof(layouts) / sizeof(layouts[0])) {
		snprintf(why, cap, "CPython %s in %s: memtrace knows the frames of 3.11, 3.12 and 3.13", py->version,
			 m->path);
		goto out;
	}
	py->bpf = layouts[i].bpf;
	py->code = layouts[i].code;
	if (layouts[i].minor >= 13 && debug_offsets(f, runtime.st_value, py) == -EPROTONOSUPPORT) {
		snprintf(why, cap, "CPython %s in %s is free-threaded: memtrace knows the default build only",
			 py->version, m->path);
		goto out;
	}
	if (dynsym_find(elf_file__elf(f), "_PyEval_EvalFrameDefault", &eval) || !eval.st_size) {
		snprintf(why, cap, "CPython %s in %s exports no _PyEval_EvalFrameDefault", py->version, m->path);
		goto out;
	}
	if (elf_vaddr_of_mapping(elf_file__elf(f), m->file_offset, true, &vaddr)) {
		snprintf(why, cap, "CPython %s in %s: its mapping is not one of its segments", py->version, m->path);
		goto out;
	}
	bias = m->start - vaddr;
	code_free_offset(f, py);
	py->bpf.runtime = bias + runtime.st_value;
	py->eval_start = bias + eval.st_value;
	py->eval_end = py->eval_start + eval.st_size;
	err = 0;
out:
	elf_file__close(f);
	return err;
}

/* The interpreter a "#!" line of PATH names ("/usr/bin/env NAME": NAME in
 * $PATH), into BUF; 0 or -ENOENT. */
static int shebang(const char *path, char *buf, size_t cap)
{
	char line[256], *p, *end, *name;
	/* as elf_file__open: never waits on a FIFO, reads a regular file only */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	ssize_t n = fd >= 0 && !target_file_check_fd(fd) ? read(fd, line, sizeof(line) - 1) : 0;
	const char *dirs = getenv("PATH");

	if (fd >= 0)
		close(fd);
	n = n > 0 ? n : 0;
	line[n] = 0;
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -ENOENT;
	end = strchr(line, '\n');
	if (end)
		*end = 0;
	p = line + 2 + strspn(line + 2, " \t");
	name = strtok_r(p, " \t", &end);
	if (!name)
		return -ENOENT;
	if (strcmp(name, "/usr/bin/env") && strcmp(name, "/bin/env")) {
		snprintf(buf, cap, "%s", name);
		return 0;
	}
	while ((name = strtok_r(NULL, " \t", &end)) && name[0] == '-')
		;
	if (!name)
		return -ENOENT;
	for (dirs = dirs ? dirs : "/usr/bin:/bin"; *dirs;) {
		size_t len = strcspn(dirs, ":");

		snprintf(buf, cap, "%.*s/%s", (int)len, dirs, name);
		if (!access(buf, X_OK))
			return 0;
		dirs += len + (dirs[len] == ':');
	}
	return -ENOENT;
}

bool python_file_may_run(const char *path, int depth)
{
	struct elf_file *f;
	char interp[4096];
	GElf_Sym sym;
	bool yes = false;

	if (depth > 2)
		return false;
	f = elf_file__open(path);
	if (!f)
		return !shebang(path, interp, sizeof(interp)) && python_file_may_run(interp, depth + 1);
	if (!dynsym_find(elf_file__elf(f), "_PyRuntime", &sym)) {
		yes = true;
	} else {
		Elf *elf = elf_file__elf(f);
		Elf_Scn *scn = NULL;
		GElf_Shdr sh;

		/* linked against libpython: DT_NEEDED */
		while (!yes && (scn = elf_nextscn(elf, scn))) {
			Elf_Data *d;
			GElf_Dyn dyn;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
				continue;
			for (int i = 0; gelf_getdyn(d, i, &dyn); i++) {
				const char *s = dyn.d_tag == DT_NEEDED ? elf_strptr(elf, sh.sh_link, dyn.d_un.d_val) : NULL;

				if (s && !strncmp(s, "libpython", 9))
					yes = true;
			}
		}
	}
	elf_file__close(f);
	return yes;
}

struct python *python__find(int files_pid, int pid, const struct procmaps *pm, char *why, size_t cap)
{
	struct python *py = calloc(1, sizeof(*py));
	char exe[4096];
	int err = -ESRCH;

	if (!py)
		return NULL;
	py->pid = pid;
	py->parent = files_pid;
	why[0] = 0;
	if (proc_exe_path(files_pid, exe, sizeof(exe)))
		exe[0] = 0;
	for (size_t i = 0; i < pm->nr && err == -ESRCH; i++) {
		const struct trace_module *m = &pm->mods[i];
		char *file;

		if (i && pm->mods[i - 1].path == m->path)
			continue; /* the same file's next mapping */
		if (!may_be_python(m->path, !strcmp(m->path, exe)))
			continue;
		file = procmaps__held_file(files_pid, m->path, m->build_id, m->build_id_len);
		if (!file)
			continue;
		err = try_module(py, m, file, why, cap);
		if (!err)
			py->file = file;
		else
			free(file);
	}
	if (err) {
		free(py);
		errno = -err;
		return NULL;
	}
	return py;
}

const struct mt_py_layout *python__layout(const struct python *py)
{
	return &py->bpf;
}

const char *python__code_free(const struct python *py, uint64_t *offset)
{
	*offset = py->code_free;
	return py->code_free ? py->file : NULL;
}

const char *python__version(const struct python *py)
{
	return py->version;
}

void python__counts(const struct python *py, uint64_t *read, uint64_t *failed)
{
	*read = py->read;
	*failed = py->failed;
}

void python__free(struct python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->nr_codes; i++) {
		free(py->codes[i].name);
		free(py->codes[i].file);
		free(py->codes[i].table);
	}
	free(py->codes);
	u64map__free(&py->by_code);
	free(py->file);
	free(py);
}
