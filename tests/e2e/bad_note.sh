#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# One malformed USDT note (its semaphore points into .text, where the kernel
# refuses a reference counter) in a module: that probe is skipped with one
# warning naming the module, provider and probe; every other probe is
# attached and the recording is as without it. The ELF is made here: the
# marks program with its first note's semaphore field rewritten.
. "$(dirname "$0")/lib.sh"
plan 17

cd "$TMP" || exit 1
if objcopy --dump-section .note.stapsdt=notes.bin "$PROGS/marks"; then ok "dumped marks' .note.stapsdt"; else not_ok "dump .note.stapsdt"; fi
# first note: namesz, descsz, type (4 bytes each), "stapsdt\0", then pc, base,
# semaphore (8 bytes each), provider and name
name=$(dd if=notes.bin bs=1 skip=$((20 + 24 + 9)) count=31 status=none | tr '\0' '\n' | head -n1)
expect_eq "first note's probe" "$name" zone_begin
main=$(nm "$PROGS/marks" | awk '$3 == "main" { print $1 }')
perl -e 'print pack("Q<", hex($ARGV[0]))' "$main" |
	dd of=notes.bin bs=1 seek=$((20 + 16)) count=8 conv=notrunc status=none
objcopy --update-section .note.stapsdt=notes.bin "$PROGS/marks" marks_bad
expect_eq "the rewritten note" \
	"$(readelf -n marks_bad | grep -m1 -o 'Semaphore: 0x[0-9a-f]*')" "Semaphore: 0x$(printf '%016x' $((16#$main)))"

record_cmd good.mtrace "$PROGS/marks"
expect_eq "unmodified: exit status" $? 0
good_marks=$(sed -n 's/.* \([0-9]*\) memtrace.h marks.*/\1/p' "$TMP/err")
report_json good.mtrace good.json

record_cmd bad.mtrace ./marks_bad
expect_eq "one bad note: recorded anyway (exit status)" $? 0
expect_eq "one bad note: the warning" "$(grep '^memtrace: warning:' "$TMP/err")" \
	"memtrace: warning: skipped the USDT probe memtrace:zone_begin in $TMP/marks_bad: its semaphore is not in writable data; every other probe is attached"
expect_eq "one bad note: every other mark attached" \
	"$(sed -n 's/.* \([0-9]*\) memtrace.h marks.*/\1/p' "$TMP/err")" "$((good_marks - 1))"
report_json bad.mtrace bad.json
for k in allocations frees allocated_bytes leaked_bytes; do
	expect_eq "one bad note: totals.$k as without it" "$(jqr bad.json ".totals.$k")" "$(jqr good.json ".totals.$k")"
done
expect_eq "one bad note: frame marks as without it" "$(jqr bad.json .frames.count)" "$(jqr good.json .frames.count)"

# A library whose section headers are garbage (e_shoff beyond the file): the
# dynamic linker needs only its program headers and loads it; memtrace traces
# the process all the same, with exact figures (see launch.sh).
mkdir badlib
cp "$PROGS/launch_ctor" "$PROGS/libctorlib.so" badlib/
printf '\xff\xff\xff\x7f\x00\x00\x00\x00' | dd of=badlib/libctorlib.so bs=1 seek=40 count=8 conv=notrunc status=none
record_cmd badlib.mtrace ./badlib/launch_ctor
expect_eq "library with broken section headers: exit status" $? 0
report_json badlib.mtrace badlib.json
expect_total badlib.json allocations 4
expect_total badlib.json allocated_bytes 1110
expect_site badlib.json main allocated_bytes 444
# its unwind table comes from the program header PT_GNU_EH_FRAME, as the
# dynamic linker finds it: the constructor's stack goes on to _dl_init
expect_eq "library with broken section headers: its stacks are unwound through it" \
	"$(jq "$NESTED"' | [.sites[] | select(.function == "ctor_block_333") | .stacks[0].frames[].function] | index("_dl_init") != null' badlib.json)" true
finish
