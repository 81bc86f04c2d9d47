// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Unwind tables from call frame information, with libdw evaluating the
 * CIE and FDE programs (dwarf_cfi_addrframe) and .eh_frame_hdr's sorted
 * table saying where each FDE starts. See unwind_table.h for the rules.
 */
#include "unwind_table.h"
#include "cfi_check.h"
#include "elf_util.h"
#include "util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define MAX_ROWS_PER_FDE 65536 /* a damaged FDE cannot make us loop long */
#define MAX_FDES (1 << 22)

static int push_row(struct unwind_table *t, const struct mt_unwind_row *row)
{
	struct mt_unwind_row *last = t->nr ? &t->rows[t->nr - 1] : NULL;

	if (last && last->pc >= row->pc)
		return 0; /* out of order (overlapping FDEs): the earlier one wins */
	if (last && last->cfa_kind == row->cfa_kind && last->cfa_off == row->cfa_off &&
	    last->rbp_rule == row->rbp_rule && last->rbp_off == row->rbp_off && last->flags == row->flags)
		return 0; /* same rule: the earlier row covers it */
	if (array_reserve((void **)&t->rows, &t->cap, t->nr + 1, sizeof(*t->rows)))
		return -ENOMEM;
	t->rows[t->nr++] = *row;
	return 0;
}

/* An offset(N) rule: the value is saved at CFA + N. libdw gives it as
 * DW_OP_call_frame_cfa followed by an addition of N. */
static bool saved_at_cfa(const Dwarf_Op *ops, size_t n, int64_t *off)
{
	if (n < 1 || ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (n == 1) {
		*off = 0;
		return true;
	}
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	if (n == 3 && ops[2].atom == DW_OP_plus &&
	    (ops[1].atom == DW_OP_consts || ops[1].atom == DW_OP_constu)) {
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* The expression GCC and binutils give PLT stubs: rsp + 8, plus 8 once the
 * stub has pushed its index (pc & 15 >= 11 or >= 10). */
static bool is_plt_expression(const Dwarf_Op *ops, size_t n)
{
	return n >= 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
	       ops[1].atom == DW_OP_breg16 && ops[3].atom == DW_OP_and && ops[5].atom == DW_OP_ge;
}

static void cfa_rule(Dwarf_Frame *fr, struct mt_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	int reg = -1;
	int64_t off = 0;

	row->cfa_kind = MT_CFA_NONE;
	if (dwarf_frame_cfa(fr, &ops, &n) || n == 0)
		return;
	if (n == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else if (n == 1 && ops[0].atom == DW_OP_bregx) {
		reg = (int)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (is_plt_expression(ops, n) && ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit31) {
		row->cfa_kind = MT_CFA_PLT;
		row->cfa_off = ops[4].atom - DW_OP_lit0; /* 11 in .plt, 10 in .plt.sec */
		return;
	}
	if ((reg != REG_RSP && reg != REG_RBP) || off < INT32_MIN || off > INT32_MAX)
		return;
	row->cfa_kind = reg == REG_RSP ? MT_CFA_RSP : MT_CFA_RBP;
	row->cfa_off = (int32_t)off;
}

/* The row of the frame state FR, which applies at PC. */
static void make_row(Dwarf_Frame *fr, uint64_t pc, bool signal, struct mt_unwind_row *row)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	int64_t off;

	memset(row, 0, sizeof(*row));
	row->pc = (uint32_t)pc;
	if (signal) {
		row->cfa_kind = MT_CFA_SIGNAL;
		return;
	}
	cfa_rule(fr, row);
	if (row->cfa_kind == MT_CFA_NONE || row->cfa_kind == MT_CFA_PLT)
		return;
	/* The return address: undefined marks the outermost frame; anything
	 * but "at CFA - 8" is a rule we do not follow. */
	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &n) == 0 && n == 0 && ops == mem) {
		row->cfa_kind = MT_CFA_END;
		return;
	}
	if (dwarf_frame_register(fr, REG_RA, mem, &ops, &n) || !saved_at_cfa(ops, n, &off) || off != -8) {
		row->cfa_kind = MT_CFA_NONE;
		return;
	}
	if (dwarf_frame_register(fr, REG_RBP, mem, &ops, &n) == 0 && n && saved_at_cfa(ops, n, &off) &&
	    off >= INT16_MIN && off <= INT16_MAX) {
		row->rbp_rule = MT_RBP_AT_CFA;
		row->rbp_off = (int16_t)off;
	}
}

/* A pointer of .eh_frame_hdr in ENC, at P (whose vaddr is AT), relative to
 * the header's vaddr HDR for datarel. */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t at, uint64_t hdr,
			uint64_t *out)
{
	uint64_t v; /* wraps as the address arithmetic does: a bogus pointer must not overflow */

	switch (enc & 0x0f) {
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4: {
		int32_t s;
		uint32_t u;

		if (end - *p < 4)
			return -EINVAL;
		memcpy(&u, *p, 4);
		memcpy(&s, *p, 4);
		v = (enc & 0x0f) == DW_EH_PE_sdata4 ? (uint64_t)(int64_t)s : u;
		*p += 4;
		break;
	}
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (end - *p < 8)
			return -EINVAL;
		memcpy(&v, *p, 8);
		*p += 8;
		break;
	default:
		return -ENOTSUP;
	}
	switch (enc & 0x70) {
	case 0: break;
	case DW_EH_PE_pcrel: v += at; break;
	case DW_EH_PE_datarel: v += hdr; break;
	default: return -ENOTSUP;
	}
	*out = v;
	return 0;
}

/* The bytes of the section named WANT, and its header in SH. */
static Elf_Data *section_data(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, sh) && sh->sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh->sh_name)) && !strcmp(name, want))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

/* .eh_frame_hdr's bytes and vaddr: by section, else by its program header
 * (what the dynamic linker and libdw use; section headers may be gone). */
static int eh_frame_hdr(Elf *elf, const uint8_t **buf, size_t *len, uint64_t *vaddr)
{
	Elf_Data *d;
	size_t phnum, size;
	GElf_Shdr sh;
	GElf_Phdr ph;
	const char *raw;

	d = section_data(elf, ".eh_frame_hdr", &sh);
	if (d && d->d_buf) {
		*buf = d->d_buf;
		*len = d->d_size;
		*vaddr = sh.sh_addr;
		return 0;
	}
	if (elf_getphdrnum(elf, &phnum) || !(raw = elf_rawfile(elf, &size)))
		return -ENODATA;
	for (size_t i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			return -ENODATA;
		*buf = (const uint8_t *)raw + ph.p_offset;
		*len = ph.p_filesz;
		*vaddr = ph.p_vaddr;
		return 0;
	}
	return -ENODATA;
}

/* Where every FDE starts, sorted, from .eh_frame_hdr's binary search table. */
static int fde_starts(Elf *elf, uint64_t **out, size_t *n)
{
	const uint8_t *b;
	size_t len;
	uint64_t hdr;

	*out = NULL;
	*n = 0;
	if (eh_frame_hdr(elf, &b, &len, &hdr) || len < 4 || b[0] != 1)
		return -ENODATA;
	const uint8_t *p = b + 4, *end = b + len;
	uint64_t ptr, count;
	if (read_encoded(&p, end, b[1], hdr + (p - b), hdr, &ptr) ||
	    read_encoded(&p, end, b[2], hdr + (p - b), hdr, &count) || count > MAX_FDES)
		return -ENODATA;
	*out = malloc((count ? count : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start, fde;

		if (read_encoded(&p, end, b[3], hdr + (p - b), hdr, &start) ||
		    read_encoded(&p, end, b[3], hdr + (p - b), hdr, &fde))
			break; /* damaged: keep what was read */
		if (*n && start <= (*out)[*n - 1])
			continue; /* must be sorted: skip what is not */
		(*out)[(*n)++] = start;
	}
	return 0;
}

/* The rows of the FDE that starts at START, up to NEXT at most. */
static int fde_rows(struct unwind_table *t, Elf *elf, Dwarf_CFI *cfi, uint64_t start, uint64_t next)
{
	struct cfi_fde_state st = { .first = true };
	uint64_t pc = start;
	int err = 0;

	for (int i = 0; i < MAX_ROWS_PER_FDE && pc < next && !err; i++) {
		Dwarf_Frame *fr = NULL;
		Dwarf_Addr lo, hi;
		struct mt_unwind_row row;
		bool signal = false;

		if (dwarf_cfi_addrframe(cfi, pc, &fr) || dwarf_frame_info(fr, &lo, &hi, &signal) < 0 ||
		    lo > pc || hi <= pc) {
			free(fr);
			break;
		}
		make_row(fr, pc, signal, &row);
		free(fr);
		if (!i && lo != start) {
			/* The FDE libdw found for the start .eh_frame_hdr gives
			 * begins elsewhere: one of the two is damaged. */
			t->implausible++;
			break;
		}
		if (hi > next || !cfi_row_plausible(elf, &row, &st, hi)) {
			/* the next row's change is judged against what CFI said, unchecked */
			st.prev = row;
			st.prev.flags = MT_ROW_CHECK_RA;
			row.cfa_kind = MT_CFA_NONE;
			row.flags = 0;
			t->implausible++;
		} else {
			st.prev = row;
			cfi_fde_state_add(&st, &row);
		}
		st.first = false;
		t->unsupported += row.cfa_kind == MT_CFA_NONE;
		err = push_row(t, &row);
		pc = hi;
	}
	if (!err && pc < next) {
		/* A gap before the next FDE: no table there. */
		struct mt_unwind_row gap = { .pc = (uint32_t)pc, .cfa_kind = MT_CFA_NONE };

		err = push_row(t, &gap);
	}
	return err;
}

/* Frame-pointer code keeps CFA = rbp + 16 with rbp saved at CFA - 16 over
 * most of its bytes; the walker then takes callers' frames by rbp. */
static bool mostly_frame_pointers(const struct unwind_table *t)
{
	uint64_t fp = 0, all = 0;

	for (size_t i = 0; i + 1 < t->nr; i++) {
		uint64_t len = t->rows[i + 1].pc - t->rows[i].pc;

		if (t->rows[i].cfa_kind != MT_CFA_RSP && t->rows[i].cfa_kind != MT_CFA_RBP)
			continue; /* PLT stubs, start-up code */
		all += len;
		if (t->rows[i].cfa_kind == MT_CFA_RBP && t->rows[i].cfa_off == 16)
			fp += len;
	}
	/* Code built without frame pointers uses rbp for a CFA only in the
	 * rare function with a variable-sized frame. */
	return all && fp * 2 >= all;
}

/* Where an FDE's rows come from: .eh_frame (end found by walking its rows)
 * or .debug_frame (CFI kept only with the debug info). */
struct fde_span {
	uint64_t start;
	uint64_t end; /* 0: up to the next span */
	int debug;    /* from .debug_frame */
};

static int span_cmp(const void *x, const void *y)
{
	const struct fde_span *a = x, *b = y;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->debug - b->debug; /* .eh_frame first: the one the program runs with */
}

/* FDE ranges of .debug_frame: 8-byte initial location and range, since
 * no augmentation encodes them there. */
static int debug_frame_spans(Elf *elf, struct fde_span **v, size_t *n, size_t *cap)
{
	GElf_Shdr sh;
	Elf_Data *d = section_data(elf, ".debug_frame", &sh);
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry e;

	if (!d || !ident || ident[EI_CLASS] != ELFCLASS64)
		return 0;
	for (size_t k = 0; k < MAX_FDES && dwarf_next_cfi(ident, d, false, off, &next, &e) == 0; k++, off = next) {
		uint64_t start, range;

		if (dwarf_cfi_cie_p(&e) || e.fde.end - e.fde.start < 16)
			continue;
		memcpy(&start, e.fde.start, 8);
		memcpy(&range, e.fde.start + 8, 8);
		if (!range || start > UINT32_MAX || range > UINT32_MAX)
			continue;
		if (array_reserve((void **)v, cap, *n + 1, sizeof(**v)))
			return -ENOMEM;
		(*v)[(*n)++] = (struct fde_span){ start, start + range, 1 };
	}
	return 0;
}

/* Whether every FDE pointer of the binary search table of the .eh_frame_hdr
 * at [B, B + LEN) (vaddr HDR) lands on one of FDES, the FDEs of the
 * .eh_frame at vaddr EH that cfi_programs_sane walked: libdw parses an entry
 * wherever the table points. A table we cannot read whole is not trusted. */
static bool search_table_sane(const uint8_t *b, size_t len, uint64_t hdr, uint64_t eh, const struct cfi_fdes *fdes)
{
	const uint8_t *p = b + 4, *end = b + len;
	uint64_t ptr, count;

	if (len < 4 || b[0] != 1)
		return true; /* libdw refuses the CFI */
	if (b[2] == DW_EH_PE_omit || b[3] == DW_EH_PE_omit)
		return true; /* no table: libdw walks the entries, all checked */
	if (read_encoded(&p, end, b[1], hdr + (p - b), hdr, &ptr) ||
	    read_encoded(&p, end, b[2], hdr + (p - b), hdr, &count) || count > MAX_FDES)
		return false;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t start, fde;

		if (read_encoded(&p, end, b[3], hdr + (p - b), hdr, &start) ||
		    read_encoded(&p, end, b[3], hdr + (p - b), hdr, &fde) || fde < eh ||
		    !cfi_fdes_has(fdes, fde - eh))
			return false;
	}
	return true;
}

/* The .eh_frame libdw runs when no section has that name (section headers
 * gone or damaged: dwarf_getcfi_elf then takes the first PT_GNU_EH_FRAME):
 * from where its eh_frame_ptr points to the end of the file. Whether its
 * programs and search table are sane; false for a header we cannot read
 * and libdw might. */
static bool phdr_eh_frame_sane(Elf *elf)
{
	size_t phnum, size;
	const char *raw = elf_rawfile(elf, &size);

	if (elf_getphdrnum(elf, &phnum) || !raw)
		return true; /* libdw finds no CFI either */
	for (size_t i = 0; i < phnum; i++) {
		const uint8_t *b, *p;
		uint64_t ptr, off;
		struct cfi_fdes fdes = { 0 };
		Elf_Data d;
		GElf_Phdr ph;
		bool sane;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return true;
		if (ph.p_type != PT_GNU_EH_FRAME)
			continue;
		if (ph.p_filesz < 4 || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			return true; /* libdw cannot read the header */
		b = (const uint8_t *)raw + ph.p_offset;
		p = b + 4;
		if (b[0] != 1 || read_encoded(&p, b + ph.p_filesz, b[1], ph.p_vaddr + 4, ph.p_vaddr, &ptr))
			return false;
		off = ptr - ph.p_vaddr + ph.p_offset;
		if (off >= size)
			return true;
		d = (Elf_Data){ .d_buf = (void *)(raw + off), .d_size = size - off, .d_type = ELF_T_BYTE };
		sane = cfi_programs_sane(elf, &d, true, &fdes) &&
		       search_table_sane(b, ph.p_filesz, ph.p_vaddr, ptr, &fdes);
		cfi_fdes_free(&fdes);
		return sane;
	}
	return true;
}

/* How many sections (with bytes) are named WANT. */
static int sections_named(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int n = 0;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		n += gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		     (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(name, want);
	}
	return n;
}

/* Whether libdw may run the CFA programs of section NAME (cfi_check.h),
 * or, for an .eh_frame with no section, of what libdw finds instead. Two
 * sections of one name are refused: libdw may pair another than the one
 * checked. */
static bool section_sane(Elf *elf, const char *name, bool eh_frame)
{
	GElf_Shdr sh, hsh;
	Elf_Data *d = section_data(elf, name, &sh), *h;
	struct cfi_fdes fdes = { 0 };
	bool sane;

	if (!d && eh_frame)
		return phdr_eh_frame_sane(elf);
	if (!d)
		return true;
	if (sections_named(elf, name) > 1 || (eh_frame && sections_named(elf, ".eh_frame_hdr") > 1))
		return false;
	sane = cfi_programs_sane(elf, d, eh_frame, &fdes);
	h = eh_frame ? section_data(elf, ".eh_frame_hdr", &hsh) : NULL;
	if (sane && h && h->d_buf)
		sane = search_table_sane(h->d_buf, h->d_size, hsh.sh_addr, sh.sh_addr, &fdes);
	cfi_fdes_free(&fdes);
	return sane;
}

int unwind_table__build(Elf *elf, struct unwind_table *t)
{
	Dwarf_CFI *eh = NULL, *dbg = NULL;
	Dwarf *dwarf = NULL;
	struct fde_span *spans = NULL;
	uint64_t *starts;
	size_t n, nspans = 0, cap = 0;
	int err;

	memset(t, 0, sizeof(*t));
	err = fde_starts(elf, &starts, &n);
	if (err == -ENOMEM)
		return err;
	if (!err && n && (spans = malloc(n * sizeof(*spans)))) {
		for (size_t i = 0; i < n; i++)
			spans[i] = (struct fde_span){ starts[i], 0, 0 };
		nspans = cap = n;
	}
	free(starts);
	if (!err && n && !spans)
		return -ENOMEM;
	err = debug_frame_spans(elf, &spans, &nspans, &cap);
	if (!err && nspans) {
		eh = section_sane(elf, ".eh_frame", true) ? dwarf_getcfi_elf(elf) : NULL;
		dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		dbg = dwarf && section_sane(elf, ".debug_frame", false) ? dwarf_getcfi(dwarf) : NULL;
		qsort(spans, nspans, sizeof(*spans), span_cmp);
	}
	for (size_t i = 0; !err && i < nspans; i++) {
		Dwarf_CFI *cfi = spans[i].debug ? dbg : eh;
		uint64_t next = i + 1 < nspans ? spans[i + 1].start : UINT32_MAX;

		if (spans[i].start > UINT32_MAX)
			break;
		if (!cfi || (i && spans[i].start == spans[i - 1].start))
			continue;
		if (spans[i].end && spans[i].end < next) {
			/* Its range is known: rows up to its end, no table after. */
			struct mt_unwind_row gap = { .pc = (uint32_t)spans[i].end, .cfa_kind = MT_CFA_NONE };

			err = fde_rows(t, elf, cfi, spans[i].start, spans[i].end);
			if (!err)
				err = push_row(t, &gap);
			continue;
		}
		err = fde_rows(t, elf, cfi, spans[i].start, next);
	}
	t->fdes = nspans;
	if (eh)
		dwarf_cfi_end(eh);
	if (dwarf)
		dwarf_end(dwarf); /* ends its CFI too */
	free(spans);
	if (err) {
		unwind_table__free(t);
		return err;
	}
	t->frame_pointers = mostly_frame_pointers(t);
	return t->nr ? 0 : -ENODATA;
}

const struct mt_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->nr;

	while (lo < hi) { /* the first row with pc > vaddr */
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

void unwind_table__free(struct unwind_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

/* Bumped whenever the builder changes what it makes: a cached table of an
 * older builder is then rebuilt, not trusted. */
#define CACHE_MAGIC 0x35574e554d544dULL /* "MTMUNW5" */

_Static_assert(sizeof(struct mt_unwind_row) == 16, "ABI: unwind row, the BPF array's element size");
_Static_assert(sizeof(struct mt_unwind_map) == 40, "ABI: unwind map");

struct cache_header {
	uint64_t magic;
	uint64_t nr;
	uint32_t frame_pointers;
	uint32_t row_size;
};

static void cache_path(const char *dir, const uint8_t *id, uint32_t len, char *buf, size_t cap)
{
	size_t at = (size_t)snprintf(buf, cap, "%s/", dir);

	for (uint32_t i = 0; i < len && at + 3 < cap; i++)
		at += (size_t)snprintf(buf + at, cap - at, "%02x", id[i]);
}

static int cache_read(const char *file, struct unwind_table *t)
{
	struct cache_header h;
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t want;

	if (fd < 0)
		return -errno;
	memset(t, 0, sizeof(*t));
	if (read(fd, &h, sizeof(h)) != sizeof(h) || h.magic != CACHE_MAGIC ||
	    h.row_size != sizeof(struct mt_unwind_row) || !h.nr || h.nr > (1u << 26))
		goto bad;
	t->rows = malloc(h.nr * sizeof(*t->rows));
	want = (ssize_t)(h.nr * sizeof(*t->rows));
	if (!t->rows || read(fd, t->rows, want) != want)
		goto bad;
	t->nr = t->cap = h.nr;
	t->frame_pointers = h.frame_pointers;
	close(fd);
	return 0;
bad:
	close(fd);
	unwind_table__free(t);
	return -EINVAL;
}

/* Written to a temporary name and renamed: a reader never sees half. */
static void cache_write(const char *dir, const char *file, const struct unwind_table *t)
{
	struct cache_header h = { CACHE_MAGIC, t->nr, t->frame_pointers, sizeof(struct mt_unwind_row) };
	char tmp[PATH_MAX + 16];
	size_t len = t->nr * sizeof(*t->rows);
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return;
	snprintf(tmp, sizeof(tmp), "%s.%d", file, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, &h, sizeof(h)) == sizeof(h) && write(fd, t->rows, len) == (ssize_t)len &&
	    !close(fd)) {
		rename(tmp, file);
		return;
	}
	unlink(tmp);
}

int unwind_table__load(const char *path, const char *cache_dir, struct unwind_table *t)
{
	struct elf_file *f = elf_file__open(path);
	char file[PATH_MAX];
	uint8_t id[64];
	uint32_t len = 0;
	int err;

	memset(t, 0, sizeof(*t));
	if (!f)
		return -errno;
	if (cache_dir && !elf_file__build_id(f, id, sizeof(id), &len) && len) {
		cache_path(cache_dir, id, len, file, sizeof(file));
		if (!cache_read(file, t)) {
			elf_file__close(f);
			return 0;
		}
	}
	err = unwind_table__build(elf_file__elf(f), t);
	if (!err && cache_dir && len)
		cache_write(cache_dir, file, t);
	elf_file__close(f);
	return err;
}
