// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ELF questions for probe placement and symbolization. Function symbols are
 * indexed once per open file (sorted by name, on the first lookup) because
 * the loader asks about some 35 allocator names per library.
 */
#include "elf_util.h"
#include "target_file.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

#define VERSYM_HIDDEN 0x8000 /* "name@VER" rather than the default "name@@VER" */

struct elf_sym {
	const char *name; /* into libelf's string table: valid while the Elf is open */
	uint64_t value;
	uint64_t size;
	uint8_t type;
	uint8_t rank; /* lower is preferred among symbols of the same name */
};

struct sym_index {
	struct elf_sym *syms;
	size_t nr;
};

struct elf_file {
	int fd;
	Elf *elf;
	struct sym_index dynsym;
	struct sym_index symtab;
	bool indexed; /* on first lookup: build-id readers never pay for it */
};

static int note_build_id(Elf_Data *data, uint8_t *buf, size_t cap, uint32_t *len)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		off = next;
		if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
		    memcmp(name, "GNU", 4) != 0)
			continue;
		if (nhdr.n_descsz > cap)
			return -ENOSPC;
		memcpy(buf, (const char *)data->d_buf + desc_off, nhdr.n_descsz);
		*len = nhdr.n_descsz;
		return 0;
	}
	return -ENODATA;
}

/* Program headers first: they survive section-header stripping and are what
 * the loader maps; sections are the fallback for odd files without PT_NOTE. */
int elf_build_id(Elf *elf, uint8_t *buf, size_t cap, uint32_t *len)
{
	Elf_Scn *scn = NULL;
	size_t phnum, i;
	int err;

	if (elf_getphdrnum(elf, &phnum) == 0) {
		for (i = 0; i < phnum; i++) {
			GElf_Phdr ph;
			Elf_Data *data;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE)
				continue;
			data = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
						    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			if (!data)
				continue;
			err = note_build_id(data, buf, cap, len);
			if (err != -ENODATA)
				return err;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data = NULL;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		while ((data = elf_getdata(scn, data))) {
			err = note_build_id(data, buf, cap, len);
			if (err != -ENODATA)
				return err;
		}
	}
	return -ENODATA;
}

#define MAPPING_PAGE 4096 /* x86-64 */

/* The PT_LOAD whose file bytes hold X (a file offset, BY_OFFSET, else a
 * vaddr). EXEC 0 or 1: only segments without or with PF_X, each as the
 * kernel maps it, from the page its first byte is on (X a file offset);
 * -1: any segment, its bytes alone. */
static int load_containing(Elf *elf, uint64_t x, bool by_offset, int exec, GElf_Phdr *out)
{
	size_t phnum, i;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return -EINVAL;
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t lo, hi;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
		    (exec >= 0 && !(ph.p_flags & PF_X) != !exec))
			continue;
		/* A segment whose bytes would run past 2^64 holds nothing: by
		 * vaddr it held a function its offset then did not. */
		if (ph.p_offset + ph.p_filesz < ph.p_offset || ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
			continue;
		lo = by_offset ? ph.p_offset : ph.p_vaddr;
		hi = lo + ph.p_filesz;
		if (exec >= 0)
			lo &= ~(uint64_t)(MAPPING_PAGE - 1);
		if (x >= lo && x < hi) {
			*out = ph;
			return 0;
		}
	}
	return -ERANGE;
}

int elf_vaddr_of_offset(Elf *elf, uint64_t offset, uint64_t *vaddr)
{
	GElf_Phdr ph;
	int err = load_containing(elf, offset, true, -1, &ph);

	if (!err)
		*vaddr = offset - ph.p_offset + ph.p_vaddr;
	return err;
}

int elf_vaddr_of_mapping(Elf *elf, uint64_t offset, bool exec, uint64_t *vaddr)
{
	GElf_Phdr ph;
	int err = load_containing(elf, offset, true, exec, &ph);

	if (err == -ERANGE)
		return elf_vaddr_of_offset(elf, offset, vaddr);
	if (!err)
		*vaddr = offset - ph.p_offset + ph.p_vaddr;
	return err;
}

int elf_offset_of_vaddr(Elf *elf, uint64_t vaddr, uint64_t *offset)
{
	GElf_Phdr ph;
	int err = load_containing(elf, vaddr, false, -1, &ph);

	if (!err)
		*offset = vaddr - ph.p_vaddr + ph.p_offset;
	return err;
}

int elf_segment_flags(Elf *elf, uint64_t vaddr, uint32_t *flags)
{
	GElf_Phdr ph;
	int err = load_containing(elf, vaddr, false, -1, &ph);

	if (!err)
		*flags = ph.p_flags;
	return err;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (int)x->rank - (int)y->rank;
}

/* Rank: default-version GLOBAL < default-version WEAK < hidden versions. */
static uint8_t sym_rank(const GElf_Sym *sym, Elf_Data *versym, size_t ndx)
{
	uint8_t rank = GELF_ST_BIND(sym->st_info) == STB_GLOBAL ? 0 : 1;
	GElf_Versym ver;

	if (versym && gelf_getversym(versym, (int)ndx, &ver) && (ver & VERSYM_HIDDEN))
		rank += 2;
	return rank;
}

static bool sym_is_defined_function(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info), bind = GELF_ST_BIND(sym->st_info);

	return sym->st_shndx != SHN_UNDEF &&
	       (type == STT_FUNC || type == STT_GNU_IFUNC) &&
	       (bind == STB_GLOBAL || bind == STB_WEAK);
}

static Elf_Data *find_versym(Elf *elf)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym)
			return elf_getdata(scn, NULL);
	return NULL;
}

static int index_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *versym,
			 struct sym_index *idx)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t sym_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT), n, i;

	if (!data || !sh->sh_entsize || !sym_size)
		return 0;
	/* As many as the section's data holds, whatever its sh_entsize says:
	 * a hostile entry size of 1 made 32 bytes of index per byte of file. */
	n = data->d_size / sym_size;
	idx->syms = calloc(n ? n : 1, sizeof(*idx->syms));
	if (!idx->syms)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct elf_sym *e = &idx->syms[idx->nr];
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) || !sym_is_defined_function(&sym))
			continue;
		e->name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!e->name || !*e->name)
			continue;
		e->value = sym.st_value;
		e->size = sym.st_size;
		e->type = GELF_ST_TYPE(sym.st_info);
		e->rank = sym_rank(&sym, versym, i);
		idx->nr++;
	}
	qsort(idx->syms, idx->nr, sizeof(*idx->syms), sym_cmp);
	return 0;
}

static int index_file(struct elf_file *f)
{
	Elf_Data *versym = find_versym(f->elf);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int err;

	while ((scn = elf_nextscn(f->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM && !f->dynsym.syms)
			err = index_symbols(f->elf, scn, &sh, versym, &f->dynsym);
		else if (sh.sh_type == SHT_SYMTAB && !f->symtab.syms)
			err = index_symbols(f->elf, scn, &sh, NULL, &f->symtab);
		else
			continue;
		if (err)
			goto err_free;
	}
	return 0;

err_free:
	free(f->dynsym.syms);
	free(f->symtab.syms);
	memset(&f->dynsym, 0, sizeof(f->dynsym));
	memset(&f->symtab, 0, sizeof(f->symtab));
	return err;
}

struct elf_file *elf_file__open(const char *path)
{
	struct elf_file *f;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	/* Never waits on a FIFO; reads nothing but a regular file. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (f->fd < 0) {
		err = -errno;
		goto err_free;
	}
	if (target_file_check_fd(f->fd)) {
		err = -EINVAL;
		goto err_close;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		err = -EINVAL;
		goto err_close;
	}
	return f;

err_close:
	elf_end(f->elf);
	close(f->fd);
err_free:
	free(f);
	errno = -err;
	return NULL;
}

void elf_file__close(struct elf_file *f)
{
	if (!f)
		return;
	free(f->dynsym.syms);
	free(f->symtab.syms);
	elf_end(f->elf);
	close(f->fd);
	free(f);
}

Elf *elf_file__elf(struct elf_file *f)
{
	return f->elf;
}

/* The best-ranked entry of NAME: the first of its run, since ties sort by rank. */
static const struct elf_sym *index_lookup(const struct sym_index *idx, const char *name)
{
	size_t lo = 0, hi = idx->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(idx->syms[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < idx->nr && strcmp(idx->syms[lo].name, name) == 0)
		return &idx->syms[lo];
	return NULL;
}

int elf_file__find_function(struct elf_file *f, const char *name, struct elf_function *out)
{
	const struct elf_sym *s;
	int err;

	if (!f->indexed) {
		err = index_file(f);
		if (err)
			return err;
		f->indexed = true;
	}
	s = index_lookup(&f->dynsym, name);
	if (!s)
		s = index_lookup(&f->symtab, name);
	if (!s)
		return -ESRCH;
	out->vaddr = s->value;
	out->size = s->size;
	out->is_ifunc = s->type == STT_GNU_IFUNC;
	err = elf_offset_of_vaddr(f->elf, s->value, &out->file_offset);
	/* A symbol outside every PT_LOAD cannot be probed; treat it as absent. */
	return err == -ERANGE ? -ESRCH : err;
}

int elf_file__read(struct elf_file *f, uint64_t file_offset, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(f->fd, p, len, (off_t)file_offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		file_offset += (uint64_t)n;
	}
	return 0;
}

int elf_file__build_id(struct elf_file *f, uint8_t *buf, size_t cap, uint32_t *len)
{
	return elf_build_id(f->elf, buf, cap, len);
}

int elf_read_build_id(const char *path, uint8_t *buf, size_t cap, uint32_t *len)
{
	struct elf_file *f = elf_file__open(path);
	int err;

	if (!f)
		return -errno;
	err = elf_file__build_id(f, buf, cap, len);
	elf_file__close(f);
	return err;
}

int elf_find_function(const char *path, const char *name, struct elf_function *out)
{
	struct elf_file *f = elf_file__open(path);
	int err;

	if (!f)
		return -errno;
	err = elf_file__find_function(f, name, out);
	elf_file__close(f);
	return err;
}
