#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Truncated and hostile ELF files for the ELF harnesses (fuzz_elf_util,
fuzz_symbolize, fuzz_usdt, fuzz_unwind_table), as a target that controls its
files can make them.

usage: tests/fuzz/gen_elf_corpus.py [OUTDIR]   (default tests/fuzz/corpus/elf)

It builds tests/fuzz/seed_elf.c with $CC (cc) into two small libraries, the
damaged copies' sources, which are kept as seeds too:
  seed-dwarf5.so  -O1, DWARF 5, frame pointers, .note.stapsdt, versioned free
  seed-dwarf4z.so -O2, DWARF 4 in compressed sections (SHF_COMPRESSED)
and, from seed-dwarf5.so with its DWARF stripped (small, for what does not
need DWARF), copies with:
  - the file cut at the headers', notes', CFI's, DWARF's and symbols' edges;
  - section and program headers with offsets and sizes past the end or near
    2^64, zero and odd entry sizes, bad links, overlapping sections, the
    header table past the end or of 0xffff entries;
  - notes (build-id, stapsdt) with bogus name and desc lengths, strings
    without their NUL, base and semaphore addresses outside every segment;
  - .eh_frame with FDEs whose CIE pointer is 0, outside the section, into
    the middle of a CIE or at another FDE, lengths huge, zero or 64-bit,
    address ranges of 4 GiB, and .eh_frame_hdr tables with bogus encodings,
    counts and entries;
  - DWARF (full copy): unit and line-program headers with bogus lengths,
    versions, address sizes, abbrev offsets, line_range 0 and opcode_base 0,
    abbrevs of unknown forms, string offsets past .debug_str, compressed
    sections whose header claims 2^63 bytes;
  - symbols with names, values, sizes and section indexes out of range, and
    versym entries of unknown versions.
Every run writes the same files for the same compiler output. Files are
named for what was done to them.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EH = struct.Struct('<16sHHIQQQIHHHHHH')   # Elf64_Ehdr
SH = struct.Struct('<IIQQQQIIQQ')         # Elf64_Shdr
PH = struct.Struct('<IIQQQQQQ')           # Elf64_Phdr
SYM = struct.Struct('<IBBHQQ')            # Elf64_Sym
HUGE = 0xfffffffffffff000
PT_LOAD, PT_NOTE = 1, 4


class Elf:
    def __init__(self, data):
        self.data = bytearray(data)
        f = EH.unpack_from(self.data, 0)
        self.phoff, self.shoff = f[5], f[6]
        self.phnum, self.shnum, self.shstrndx = f[10], f[12], f[13]
        self.sh = [list(SH.unpack_from(self.data, self.shoff + i * SH.size)) for i in range(self.shnum)]
        self.ph = [list(PH.unpack_from(self.data, self.phoff + i * PH.size)) for i in range(self.phnum)]
        strtab = self.sh[self.shstrndx]
        self.names = {}
        for i, s in enumerate(self.sh):
            off = strtab[4] + s[0]
            self.names[self.data[off:self.data.index(0, off)].decode()] = i

    def sec(self, name):
        return self.sh[self.names[name]]

    def copy(self):
        return bytearray(self.data)

    def set_sh(self, out, name, field, value):
        i = self.names[name]
        s = list(self.sh[i])
        s[field] = value & 0xffffffffffffffff if field >= 2 and field not in (6, 7) else value & 0xffffffff
        SH.pack_into(out, self.shoff + i * SH.size, *s)

    def set_ph(self, out, i, field, value):
        p = list(self.ph[i])
        p[field] = value & (0xffffffff if field < 2 else 0xffffffffffffffff)
        PH.pack_into(out, self.phoff + i * PH.size, *p)

    def ph_index(self, ptype, n=0):
        return [i for i, p in enumerate(self.ph) if p[0] == ptype][n]

    def set_eh(self, out, fmt, off, value):
        struct.pack_into(fmt, out, off, value)


SH_OFFSET, SH_SIZE, SH_LINK, SH_ENTSIZE, SH_TYPE, SH_NAME = 4, 5, 6, 9, 1, 0
PH_OFFSET, PH_VADDR, PH_FILESZ, PH_ALIGN = 2, 3, 5, 7


def put(b, off, fmt, value):
    struct.pack_into(fmt, b, off, value)
    return b


def eh_frame_entries(e):
    """(offset in the file, length, id field value, is_cie) of each .eh_frame entry."""
    s = e.sec('.eh_frame')
    off, end, out = s[SH_OFFSET], s[SH_OFFSET] + s[SH_SIZE], []
    while off + 8 <= end:
        length, cid = struct.unpack_from('<II', e.data, off)
        if length == 0:
            break
        out.append((off, length, cid, cid == 0))
        off += 4 + length
    return out


def notes(e, name):
    """(offset, namesz, descsz) of each note in section NAME."""
    s = e.sec(name)
    off, end, out = s[SH_OFFSET], s[SH_OFFSET] + s[SH_SIZE], []
    while off + 12 <= end:
        namesz, descsz, _ = struct.unpack_from('<III', e.data, off)
        out.append((off, namesz, descsz))
        off += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return out


def structural(e):
    """Headers, notes, CFI and symbols of the stripped copy."""
    v = {}
    d = e.data
    n = len(d)
    # cut at the edges of what the readers walk
    cuts = {0, 4, 16, 63, 64, e.phoff + PH.size, e.phoff + e.phnum * PH.size - 1, e.shoff, e.shoff + SH.size * 3,
            n - SH.size, n - 1}
    for name in ('.note.gnu.build-id', '.dynsym', '.eh_frame_hdr', '.eh_frame', '.note.stapsdt', '.symtab',
                 '.strtab'):
        s = e.sec(name)
        cuts.add(s[SH_OFFSET] + s[SH_SIZE] // 2)
    for c in sorted(cuts):
        v['trunc-%05x' % c] = d[:c]
    # the ELF header
    v['ehdr-shoff-huge'] = put(e.copy(), 0x28, '<Q', HUGE)
    v['ehdr-shnum-ffff'] = put(e.copy(), 0x3c, '<H', 0xffff)
    v['ehdr-shstrndx-bogus'] = put(e.copy(), 0x3e, '<H', 0xfff0)
    v['ehdr-shentsize-0'] = put(e.copy(), 0x3a, '<H', 0)
    v['ehdr-phoff-past-end'] = put(e.copy(), 0x20, '<Q', n - 8)
    v['ehdr-phnum-ffff'] = put(e.copy(), 0x38, '<H', 0xffff)
    v['ehdr-class-32'] = put(e.copy(), 4, '<B', 1)
    # section headers
    for name, tag in (('.eh_frame', 'ehframe'), ('.eh_frame_hdr', 'ehhdr'), ('.note.stapsdt', 'stapsdt'),
                      ('.dynsym', 'dynsym'), ('.symtab', 'symtab'), ('.note.gnu.build-id', 'buildid')):
        v['sh-%s-offset-huge' % tag] = e.copy()
        e.set_sh(v['sh-%s-offset-huge' % tag], name, SH_OFFSET, HUGE)
        if tag in ('ehframe', 'stapsdt', 'symtab'):
            v['sh-%s-size-huge' % tag] = e.copy()
            e.set_sh(v['sh-%s-size-huge' % tag], name, SH_SIZE, HUGE)
        if tag in ('ehframe', 'stapsdt', 'symtab'):
            v['sh-%s-size-past-end' % tag] = e.copy()
            e.set_sh(v['sh-%s-size-past-end' % tag], name, SH_SIZE, n - e.sec(name)[SH_OFFSET] + 1)
    for name, tag in (('.dynsym', 'dynsym'), ('.symtab', 'symtab')):
        for es in (0, 1):
            b = e.copy()
            e.set_sh(b, name, SH_ENTSIZE, es)
            v['sh-%s-entsize-%d' % (tag, es)] = b
        b = e.copy()
        e.set_sh(b, name, SH_LINK, 0xffff)
        v['sh-%s-link-bogus' % tag] = b
    b = e.copy()
    e.set_sh(b, '.symtab', SH_LINK, e.names['.symtab'])
    v['sh-symtab-link-self'] = b
    b = e.copy()
    e.set_sh(b, '.symtab', SH_OFFSET, e.sec('.strtab')[SH_OFFSET])
    v['overlap-symtab-on-strtab'] = b
    b = e.copy()
    e.set_sh(b, '.eh_frame', SH_OFFSET, e.sec('.eh_frame_hdr')[SH_OFFSET])
    v['overlap-ehframe-on-ehhdr'] = b
    b = e.copy()
    e.set_sh(b, '.note.stapsdt', SH_OFFSET, 0)
    v['overlap-stapsdt-on-ehdr'] = b
    b = e.copy()
    e.set_sh(b, '.note.gnu.build-id', SH_TYPE, 8)  # SHT_NOBITS
    e.set_sh(b, '.eh_frame', SH_TYPE, 8)
    v['sh-nobits-notes-and-cfi'] = b
    b = e.copy()
    e.set_sh(b, '.strtab', SH_TYPE, 7)  # a note where a string table was
    e.set_sh(b, '.symtab', SH_TYPE, 11)  # a second dynsym
    v['sh-types-swapped'] = b
    b = e.copy()
    for name in ('.eh_frame', '.eh_frame_hdr', '.note.stapsdt', '.stapsdt.base'):
        e.set_sh(b, name, SH_NAME, 0xffffff)
    v['sh-names-bogus'] = b
    # program headers
    load0, load1, note = e.ph_index(PT_LOAD, 0), e.ph_index(PT_LOAD, 1), e.ph_index(PT_NOTE)
    b = e.copy()
    e.set_ph(b, note, PH_FILESZ, HUGE)
    v['ph-note-filesz-huge'] = b
    b = e.copy()
    e.set_ph(b, note, PH_OFFSET, n - 4)
    e.set_ph(b, note, PH_FILESZ, 0x100)
    v['ph-note-past-end'] = b
    b = e.copy()
    e.set_ph(b, note, PH_ALIGN, 8)
    v['ph-note-align-8'] = b
    b = e.copy()
    e.set_ph(b, load0, PH_FILESZ, HUGE)
    e.set_ph(b, load1, PH_OFFSET, HUGE)
    v['ph-load-sizes-huge'] = b
    b = e.copy()
    e.set_ph(b, load1, PH_OFFSET, 0)
    e.set_ph(b, load1, PH_VADDR, e.ph[load0][PH_VADDR] + 0x10)
    e.set_ph(b, load1, PH_FILESZ, n)
    v['ph-loads-overlap'] = b
    b = e.copy()
    e.set_ph(b, load0, PH_VADDR, HUGE)
    v['ph-load-vaddr-wraps'] = b
    # notes: build-id
    off, _, _ = notes(e, '.note.gnu.build-id')[0]
    v['note-buildid-descsz-huge'] = put(e.copy(), off + 4, '<I', 0xffffffff)
    v['note-buildid-descsz-33'] = put(e.copy(), off + 4, '<I', 33)
    v['note-buildid-descsz-0'] = put(e.copy(), off + 4, '<I', 0)
    v['note-buildid-namesz-huge'] = put(e.copy(), off, '<I', 0xfffffff0)
    # notes: stapsdt
    sd = notes(e, '.note.stapsdt')
    off0, namesz, descsz = sd[0]
    desc0 = off0 + 12 + ((namesz + 3) & ~3)
    v['note-stapsdt-namesz-huge'] = put(e.copy(), off0, '<I', 0x7ffffff0)
    v['note-stapsdt-descsz-huge'] = put(e.copy(), off0 + 4, '<I', 0xfffffff0)
    v['note-stapsdt-descsz-0'] = put(e.copy(), off0 + 4, '<I', 0)
    v['note-stapsdt-descsz-25'] = put(e.copy(), off0 + 4, '<I', 25)  # the strings cut off
    v['note-stapsdt-namesz-0'] = put(e.copy(), off0, '<I', 0)
    last_off, last_namesz, last_descsz = sd[-1]
    v['note-stapsdt-last-descsz-past-end'] = put(e.copy(), last_off + 4, '<I', last_descsz + 64)
    b = e.copy()
    s = e.sec('.note.stapsdt')
    for i in range(s[SH_OFFSET], s[SH_OFFSET] + s[SH_SIZE]):
        if b[i] == 0 and i >= desc0 + 24:
            b[i] = 0x41
    v['note-stapsdt-no-nuls'] = b
    b = e.copy()
    for off, namesz, _ in sd:
        d_ = off + 12 + ((namesz + 3) & ~3)
        put(b, d_ + 8, '<Q', HUGE)  # base
        put(b, d_ + 16, '<Q', 0x7fffffffffffffff)  # semaphore
    v['note-stapsdt-base-sema-bogus'] = b
    b = e.copy()
    for off, namesz, _ in sd:
        d_ = off + 12 + ((namesz + 3) & ~3)
        put(b, d_, '<Q', 0)  # pc
        put(b, d_ + 8, '<Q', e.sec('.stapsdt.base')[3] + 0x10000)  # base after the pc: it goes negative
    v['note-stapsdt-pc-below-base'] = b
    b = e.copy()
    arg = b.find(b'-4@', s[SH_OFFSET])
    if arg > 0:
        b[arg:arg + 3] = b'%%('
    v['note-stapsdt-args-garbage'] = b
    # the first site's name and arguments rewritten in place: a width of
    # LONG_MIN bytes (labs() of it overflows)
    b = e.copy()
    name_at = desc0 + 24 + b[desc0 + 24:].index(0) + 1
    end = desc0 + descsz
    new = b'a\0-9223372036854775808@$0\0'
    b[name_at:end] = new + bytes(end - name_at - len(new))
    v['note-stapsdt-arg-width-long-min'] = b
    # .eh_frame
    ents = eh_frame_entries(e)
    cies = [x for x in ents if x[3]]
    fdes = [x for x in ents if not x[3]]
    sec = e.sec('.eh_frame')
    f0 = fdes[0][0]
    v['ehframe-fde-cie-ptr-zero'] = put(e.copy(), f0 + 4, '<I', 0)  # the FDE reads as a CIE
    v['ehframe-fde-cie-ptr-before-section'] = put(e.copy(), f0 + 4, '<I', f0 + 4 - sec[SH_OFFSET] + 0x40)
    v['ehframe-fde-cie-ptr-huge'] = put(e.copy(), f0 + 4, '<I', 0xfffffff0)
    v['ehframe-fde-cie-ptr-mid-cie'] = put(e.copy(), f0 + 4, '<I', f0 + 4 - cies[0][0] - 6)
    v['ehframe-fde-cie-ptr-self'] = put(e.copy(), f0 + 4, '<I', 4)
    b = e.copy()
    for off, _, _, _ in fdes[1:]:
        put(b, off + 4, '<I', off + 4 - f0)  # every other FDE's CIE is the first FDE
    v['ehframe-fde-cie-ptr-at-fde'] = b
    v['ehframe-cie-length-64bit'] = put(e.copy(), cies[0][0], '<I', 0xffffffff)
    v['ehframe-fde-length-huge'] = put(e.copy(), f0, '<I', 0xfffffff0)
    v['ehframe-fde-length-short'] = put(e.copy(), f0, '<I', 6)
    v['ehframe-fde-length-zero'] = put(e.copy(), f0, '<I', 0)
    b = e.copy()
    for off, _, _, _ in fdes:
        put(b, off + 12, '<I', 0xffffffff)  # pc_range (pcrel sdata4 begin, udata4 range)
    v['ehframe-fde-ranges-4g'] = b
    b = e.copy()
    c = cies[0][0]
    b[c + 9:c + 9 + 4] = b'zzzz'  # the augmentation string runs into the CIE's fields
    v['ehframe-cie-augmentation-bogus'] = b
    b = e.copy()
    b[c + 8] = 0x7f  # CIE version
    v['ehframe-cie-version-bogus'] = b
    b = e.copy()
    for off, length, _, _ in fdes:
        for i in range(off + 17, off + 4 + length):
            b[i] = 0x2f  # DW_CFA_GNU_args_size... over and over, then garbage operands
    v['ehframe-fde-instructions-garbage'] = b
    # .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc, eh_frame_ptr, fde_count, table
    h = e.sec('.eh_frame_hdr')[SH_OFFSET]
    v['ehhdr-version-2'] = put(e.copy(), h, '<B', 2)
    v['ehhdr-encodings-bogus'] = put(e.copy(), h + 1, '<I', 0xffffffff)
    v['ehhdr-fde-count-huge'] = put(e.copy(), h + 8, '<I', 0x7fffffff)
    b = e.copy()
    cnt = struct.unpack_from('<I', b, h + 8)[0]
    for i in range(cnt):
        put(b, h + 12 + 8 * i + 4, '<i', -0x7ffffff0 + i)  # FDE pointers far outside
    v['ehhdr-table-fdes-outside'] = b
    b = e.copy()
    for i in range(cnt):
        put(b, h + 12 + 8 * i, '<i', 0x100 - 0x10 * i)  # unsorted initial locations
    v['ehhdr-table-unsorted'] = b
    b = e.copy()
    put(b, h + 4, '<i', 0x7ffffff0)
    v['ehhdr-eh-frame-ptr-bogus'] = b
    # symbols
    sy = e.sec('.symtab')
    b = e.copy()
    for i in range(1, sy[SH_SIZE] // SYM.size):
        o = sy[SH_OFFSET] + i * SYM.size
        put(b, o, '<I', 0xfffffff0 - i)                 # st_name
        put(b, o + 8, '<Q', HUGE + i)                   # st_value
    v['sym-names-values-bogus'] = b
    b = e.copy()
    ds = e.sec('.dynsym')
    for i in range(1, ds[SH_SIZE] // SYM.size):
        o = ds[SH_OFFSET] + i * SYM.size
        put(b, o + 6, '<H', 0xffff if i % 2 else 0xfff1)  # SHN_XINDEX without a table, SHN_ABS
        put(b, o + 16, '<Q', 0xffffffffffffffff)          # st_size
    v['sym-shndx-size-bogus'] = b
    b = e.copy()
    vs = e.sec('.gnu.version')
    for i in range(vs[SH_SIZE] // 2):
        put(b, vs[SH_OFFSET] + 2 * i, '<H', 0x7fff if i % 2 else 0xffff)
    v['versym-bogus'] = b
    b = e.copy()
    e.set_sh(b, '.gnu.version', SH_SIZE, 2)  # fewer entries than symbols
    v['versym-short'] = b
    return v


def dwarf(e):
    """The DWARF of the full copy."""
    v = {}
    d = e.data
    n = len(d)
    cuts = {n - 1}
    for name in ('.debug_info', '.debug_abbrev', '.debug_line', '.debug_str'):
        s = e.sec(name)
        cuts.add(s[SH_OFFSET] + s[SH_SIZE] // 2)
    for c in sorted(cuts):
        v['dwarf-trunc-%05x' % c] = d[:c]
    info = e.sec('.debug_info')[SH_OFFSET]
    line = e.sec('.debug_line')[SH_OFFSET]
    abbrev = e.sec('.debug_abbrev')
    v['dwarf-info-unit-length-64bit'] = put(e.copy(), info, '<I', 0xffffffff)
    v['dwarf-info-unit-length-huge'] = put(e.copy(), info, '<I', 0x7ffffff0)
    v['dwarf-info-version-6'] = put(e.copy(), info + 4, '<H', 6)
    # DWARF 5: length, version, unit_type, address_size, debug_abbrev_offset
    v['dwarf-info-address-size-3'] = put(e.copy(), info + 7, '<B', 3)
    v['dwarf-info-abbrev-offset-huge'] = put(e.copy(), info + 8, '<I', 0xfffffff0)
    # DWARF 5 line header: unit_length, version, address_size, seg_sel_size, header_length,
    # minimum_instruction_length, maximum_operations_per_instruction, default_is_stmt,
    # line_base, line_range, opcode_base
    v['dwarf-line-unit-length-huge'] = put(e.copy(), line, '<I', 0x7ffffff0)
    v['dwarf-line-header-length-huge'] = put(e.copy(), line + 8, '<I', 0x7ffffff0)
    v['dwarf-line-range-0'] = put(e.copy(), line + 16, '<B', 0)
    v['dwarf-line-opcode-base-0'] = put(e.copy(), line + 17, '<B', 0)
    b = e.copy()
    for i in range(line + 18, line + e.sec('.debug_line')[SH_SIZE]):
        b[i] = 0xff  # unknown opcodes and LEB128s that never end
    v['dwarf-line-program-ff'] = b
    b = e.copy()
    for i in range(abbrev[SH_OFFSET] + 3, abbrev[SH_OFFSET] + abbrev[SH_SIZE], 7):
        b[i] = 0x7f  # forms nobody knows
    v['dwarf-abbrev-forms-bogus'] = b
    b = e.copy()
    for i in range(abbrev[SH_OFFSET], abbrev[SH_OFFSET] + abbrev[SH_SIZE]):
        b[i] = 0x80  # one LEB128 to the end of the section
    v['dwarf-abbrev-leb-endless'] = b
    b = e.copy()
    e.set_sh(b, '.debug_str', SH_SIZE, 8)
    e.set_sh(b, '.debug_line_str', SH_SIZE, 8)
    v['dwarf-str-short'] = b
    b = e.copy()
    e.set_sh(b, '.debug_info', SH_OFFSET, abbrev[SH_OFFSET])
    v['dwarf-overlap-info-on-abbrev'] = b
    b = e.copy()
    e.set_sh(b, '.debug_info', SH_SIZE, HUGE)
    e.set_sh(b, '.debug_line', SH_OFFSET, HUGE)
    v['dwarf-sh-huge'] = b
    ar = e.sec('.debug_aranges')[SH_OFFSET]
    b = e.copy()
    put(b, ar + 6, '<I', 0x7ffffff0)  # debug_info_offset
    put(b, ar + 16, '<Q', HUGE)       # first range's start
    put(b, ar + 24, '<Q', HUGE)       # and length
    v['dwarf-aranges-bogus'] = b
    rn = e.sec('.debug_rnglists')[SH_OFFSET]
    v['dwarf-rnglists-offset-count-huge'] = put(e.copy(), rn + 8, '<I', 0x7fffffff)
    b = e.copy()
    lo = e.sec('.debug_loclists')
    for i in range(lo[SH_OFFSET] + 12, lo[SH_OFFSET] + lo[SH_SIZE]):
        b[i] ^= 0x5a
    v['dwarf-loclists-garbage'] = b
    return v


def compressed(e):
    """DWARF 4 in SHF_COMPRESSED sections: Elf64_Chdr is ch_type, ch_reserved, ch_size, ch_addralign."""
    v = {}
    info = e.sec('.debug_info')[SH_OFFSET]
    line = e.sec('.debug_line')[SH_OFFSET]
    v['zdwarf-chdr-size-huge'] = put(e.copy(), info + 8, '<Q', 0x7fffffffffffffff)
    v['zdwarf-chdr-size-0'] = put(e.copy(), line + 8, '<Q', 0)
    v['zdwarf-chdr-type-bogus'] = put(e.copy(), info, '<I', 0x7f)
    b = e.copy()
    for i in range(line + 24, line + 40):
        b[i] ^= 0xff  # the zlib stream
    v['zdwarf-stream-damaged'] = b
    d = e.data
    s = e.sec('.debug_info')
    v['zdwarf-trunc-%05x' % (s[SH_OFFSET] + s[SH_SIZE] // 2)] = d[:s[SH_OFFSET] + s[SH_SIZE] // 2]
    return v


def build(tmp):
    cc = os.environ.get('CC', 'cc')
    src = os.path.join(TOP, 'tests/fuzz/seed_elf.c')
    vmap = os.path.join(tmp, 'seed.map')
    with open(vmap, 'w') as f:
        f.write('SEED_0 { global: free; };\nSEED_1 { global: malloc; free; seed_alloc; seed_frame; local: *; } SEED_0;\n')
    common = ['-shared', '-fPIC', '-nostdlib', '-I' + os.path.join(TOP, 'inproc'), '-Wl,--build-id=sha1',
              '-Wl,-z,noseparate-code', '-Wl,-z,norelro', '-Wl,--hash-style=gnu', '-Wl,--version-script=' + vmap]
    out = {}
    for name, flags in (('seed-dwarf5.so', ['-g', '-gdwarf-5', '-O1', '-fno-omit-frame-pointer']),
                        ('seed-dwarf4z.so', ['-gdwarf-4', '-gz', '-O2'])):
        path = os.path.join(tmp, name)
        subprocess.run([cc] + flags + common + ['-o', path, src], check=True)
        out[name] = path
    stripped = os.path.join(tmp, 'seed-nodebug.so')
    subprocess.run(['objcopy', '--strip-debug', '--remove-section=.comment', out['seed-dwarf5.so'], stripped],
                   check=True)
    out['seed-nodebug.so'] = stripped
    return out


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, 'tests/fuzz/corpus/elf')
    tmp = tempfile.mkdtemp()
    try:
        seeds = build(tmp)
        files = {}
        for name, path in seeds.items():
            with open(path, 'rb') as f:
                files[name] = f.read()
        files.update(structural(Elf(files['seed-nodebug.so'])))
        files.update(dwarf(Elf(files['seed-dwarf5.so'])))
        files.update(compressed(Elf(files['seed-dwarf4z.so'])))
    finally:
        shutil.rmtree(tmp)
    os.makedirs(outdir, exist_ok=True)
    for old in os.listdir(outdir):
        os.unlink(os.path.join(outdir, old))
    for name, data in sorted(files.items()):
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(data)
    print('%d files, %d bytes in %s' % (len(files), sum(len(d) for d in files.values()), outdir))


if __name__ == '__main__':
    main()
