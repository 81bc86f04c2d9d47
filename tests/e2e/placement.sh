#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Probe placement as record -v reports it (user/record/placement_x86.c):
# - glibc's malloc and free: the exact lines, with the site derived here
#   from objdump of the host's libc by the same rule (the first push, direct
#   jmp/jcc/call or nop, walking only over endbr64, test and cmp, that no
#   branch of the function lands on or before);
# - libstdc++'s operator new and delete and glibc's reallocarray only forward:
#   no probe, and the exact line saying where they forward to;
# - no probe single-stepped on glibc, jemalloc, tcmalloc or mimalloc (each has
#   an emulated site that meets the rule; mimalloc's after argument copies);
# - a replacement operator new with its own code (jemalloc's, tcmalloc's,
#   mimalloc's, a program's pool) keeps its probe, and the C++ sites of tests/progs/cxx_new_delete stay
#   exact under each allocator.
. "$(dirname "$0")/lib.sh"
plan 57

LIBDIR=/usr/lib/x86_64-linux-gnu
LIBC=$(realpath /lib/x86_64-linux-gnu/libc.so.6)
LIBSTDCXX=$(realpath $LIBDIR/libstdc++.so.6)

# HEX: an awk function for hexadecimal numbers (mawk has no strtonum).
HEX='function hex(s,  i, v) { v = 0; s = tolower(s); sub(/^ *0x/, "", s); gsub(/[^0-9a-f]/, "", s)
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v }'

# sym_hex FILE NAME: the address of dynamic symbol NAME (default version), hex without 0x.
sym_hex() { nm -D --defined-only "$1" | awk -v n="$2" '$3 == n || $3 == n "@@" substr($3, index($3, "@@") + 2) { print $1; exit }'; }
sym_size() { nm -DS --defined-only "$1" | awk -v n="$2" "$HEX"'{ split($4, s, "@") } s[1] == n && $4 ~ /@@|^[^@]*$/ { print hex($2); exit }'; }

# file_offset FILE HEXADDR: the file offset of an address, through its PT_LOAD.
file_offset() {
	readelf -lW "$1" | awk -v a=$((0x$2)) "$HEX"'$1 == "LOAD" {
		off = hex($2); va = hex($3); fs = hex($5)
		if (a >= va && a < va + fs) { printf "0x%x\n", a - va + off; exit } }'
}

# objdump_site FILE NAME: "OFFSET INSTRUCTION" of the rule above, from objdump (Intel syntax).
objdump_site() {
	local a size
	a=$(sym_hex "$1" "$2")
	size=$(sym_size "$1" "$2")
	objdump -d -M intel --no-show-raw-insn --start-address=0x$a --stop-address=$((0x$a + size)) "$1" |
		awk -v start=$((0x$a)) -F'\t' "$HEX"'
		/^ *[0-9a-f]+:\t/ {
			addr = hex($1); ins = $2; gsub(/ +/, " ", ins); sub(/ $/, "", ins)
			split(ins, w, " "); op = w[1]
			n++; A[n] = addr; I[n] = ins; O[n] = op
			# every direct branch target inside the function
			if (op ~ /^(j|call)/ && w[2] ~ /^[0-9a-f]+$/) T[hex(w[2]) - start] = 1
		}
		END {
			for (i = 1; i <= n; i++) {
				op = O[i]; off = A[i] - start
				if (op ~ /^(push|nop|jmp|call)$/ || op ~ /^j[a-z]+$/) {
					for (t in T) if (t + 0 > 0 && t + 0 <= off) { off = -1 }
					if (off < 0) break
					ins = I[i]
					if (op ~ /^(j|call)/) { split(ins, w, " "); ins = op " 0x" w[2] }
					printf "0x%x %s\n", off, ins; exit
				}
				if (op !~ /^(endbr64|test|cmp)$/) break
			}
			print "none"
		}'
}

# expect_probe_line NAME FILE: the exact -v line of an emulated probe.
expect_probe_line() {
	local name=$1 file=$2 ret=$3 off insn a want
	read -r off insn <<<"$(objdump_site "$file" "$name")"
	if [ "$off" = none ]; then
		not_ok "$name: objdump of $file shows no emulated site; the expected line cannot be derived"
		return
	fi
	a=$(sym_hex "$file" "$name")
	want=$(printf 'memtrace: probe %-36s %s+%s (file offset %s) on %s: emulated%s' "$name" \
		"$(basename "$file")" "$off" "$(file_offset "$file" "$(printf '%x' $((0x$a + off)))")" "$insn" "$ret")
	expect_eq "$name: -v line '$want'" "$(grep -F -x -c "$want" "$TMP/v.err")" 1
}

# glibc alone, and libstdc++ on top of it.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/v.mtrace" -- "$PROGS/cxx_new_delete" >/dev/null 2>"$TMP/v.err"
expect_status "record -v exit status" $? 0 "$TMP/v.err"
expect_probe_line malloc "$LIBC" ", with return probe"
expect_probe_line free "$LIBC" ""
expect_eq "no probe single-stepped in libc.so.6" "$(grep -c '^memtrace: probe .* libc\.so\.6+.*single-stepped' "$TMP/v.err")" 0

# forwarders: NAME FILE TARGET
while read -r name lib to; do
	file=$([ "$lib" = libc ] && echo "$LIBC" || echo "$LIBSTDCXX")
	want=$(printf 'memtrace: probe %-36s %s+0x0 (file offset %s) none: forwards to %s' "$name" \
		"$(basename "$file")" "$(file_offset "$file" "$(sym_hex "$file" "$name")")" "$to")
	expect_eq "$name only forwards to $to: no probe" "$(grep -F -x -c "$want" "$TMP/v.err")" 1
done <<'TABLE'
reallocarray           libc       realloc
_Znwm                  libstdcxx  malloc
_Znam                  libstdcxx  _Znwm
_ZnwmRKSt9nothrow_t    libstdcxx  _Znwm
_ZnwmSt11align_val_t   libstdcxx  aligned_alloc
_ZdlPv                 libstdcxx  free
_ZdaPv                 libstdcxx  _ZdlPv
_ZdlPvm                libstdcxx  _ZdlPv
TABLE
expect_eq "no probe in libstdc++ (all 20 of its operator new and delete forward)" \
	"$(grep -c "^memtrace: probe .* libstdc++.*) on " "$TMP/v.err")" 0
expect_eq "libstdc++ functions listed as forwarders" \
	"$(grep -c "^memtrace: probe .* libstdc++.* none: forwards to " "$TMP/v.err")" 20

# Stacks by frame pointers only (--unwind-rows 0) cannot walk through a
# forwarder's code (libstdc++ has no frame pointers): then operator new keeps
# its own probe, and every C++ site stays exact.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v --unwind-rows 0 -o "$TMP/fp.mtrace" -- "$PROGS/cxx_new_delete" \
	>/dev/null 2>"$TMP/fp.err"
expect_status "frame pointers only: record exit status" $? 0 "$TMP/fp.err"
expect_eq "frame pointers only: no function left unprobed as a forwarder" "$(grep -c 'none: forwards to' "$TMP/fp.err")" 0
expect_eq "frame pointers only: _Znwm probed" "$(grep -c '^memtrace: probe _Znwm .*) on ' "$TMP/fp.err")" 1
report_json "$TMP/fp.mtrace" "$TMP/fp.json"
expect_eq "frame pointers only: sites named site_*" \
	"$(jq '[.sites[] | select(.function // "" | startswith("site_"))] | length' "$TMP/fp.json")" 16
expect_eq "frame pointers only: allocations at site_* sites" \
	"$(jq '[.sites[] | select(.function // "" | startswith("site_")) | .allocations] | add' "$TMP/fp.json")" 18

# A program's own operator new that serves small blocks from a pool and
# calls malloc only for large ones is no forwarder: it keeps its probe, and
# the pool blocks count (tests/progs/pool_new.cpp). Its sized delete, which
# only calls its plain delete, is one.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/pool.mtrace" -- "$PROGS/pool_new" >/dev/null 2>"$TMP/pool.err"
expect_status "pool_new: record exit status" $? 0 "$TMP/pool.err"
expect_eq "pool_new: its operator new is probed" \
	"$(grep -c '^memtrace: probe _Znwm  *pool_new+.*) on .*: emulated, with return probe$' "$TMP/pool.err")" 1
expect_eq "pool_new: its sized delete forwards to its delete" \
	"$(grep -c '^memtrace: probe _ZdlPvm  *pool_new+0x0 .* none: forwards to _ZdlPv$' "$TMP/pool.err")" 1
report_json "$TMP/pool.mtrace" "$TMP/pool.json"
for kv in "site_pool_small() allocations 5" "site_pool_small() allocated_bytes 80" \
	"site_pool_small() leaked_bytes 0" "site_large() allocations 3" "site_large() allocated_bytes 3000" \
	"site_large() leaked_bytes 0"; do
	read -r fn field want <<<"$kv"
	expect_eq "pool_new: $fn $field" "$(jq --arg f "$fn" "[.sites[] | select(.function == \$f) | .$field] | add" "$TMP/pool.json")" "$want"
done

# Under an LD_PRELOAD'd allocator: no single-stepped probe where the rule
# finds an emulated site, its own operator new probed, the C++ sites exact.
sum() { jq "[.sites[] | select(.function // \"\" | startswith(\"site_\")) | .$2] | add // 0" "$1"; }
while read -r alloc lib stepped newprobe; do
	LD_PRELOAD=$LIBDIR/$lib timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/$alloc.mtrace" -- \
		"$PROGS/cxx_new_delete" >/dev/null 2>"$TMP/$alloc.err"
	expect_status "$alloc: record exit status" $? 0 "$TMP/$alloc.err"
	expect_eq "$alloc: probes single-stepped" "$(grep -c '^memtrace: probe .*single-stepped' "$TMP/$alloc.err")" "$stepped"
	expect_eq "$alloc: its own operator new is probed" \
		"$(grep -c "^memtrace: probe _Znwm  *${lib%%.so*}.*) on .*: emulated, with return probe$" "$TMP/$alloc.err")" "$newprobe"
	report_json "$TMP/$alloc.mtrace" "$TMP/$alloc.json"
	expect_eq "$alloc: allocations at site_* sites" "$(sum "$TMP/$alloc.json" allocations)" 18
	expect_eq "$alloc: bytes at site_* sites" "$(sum "$TMP/$alloc.json" allocated_bytes)" 2260
	expect_eq "$alloc: leaked bytes at site_* sites" "$(sum "$TMP/$alloc.json" leaked_bytes)" 48
	expect_eq "$alloc: site_new_array_40() allocations" "$(jq '[.sites[] | select(.function == "site_new_array_40()") | .allocations] | add' "$TMP/$alloc.json")" 1
done <<'TABLE'
jemalloc   libjemalloc.so.2           0  1
tcmalloc   libtcmalloc_minimal.so.4   0  1
mimalloc   libmimalloc.so.2           0  1
TABLE

# mimalloc's malloc, calloc and realloc copy their arguments to other
# registers and reuse the ABI ones before their first emulated instruction:
# the probe sits there and reads each argument where the copy is (the attach
# cookie says where). Exact figures of alloc_patterns prove the sizes and
# pointers read, with every way of attaching (cookies reach the program
# through a multi-uprobe link or a perf-event uprobe).
expect_eq "mimalloc: malloc probed past the copy, reading the size from rsi" \
	"$(grep -c '^memtrace: probe malloc .*libmimalloc.* on ja .*: emulated, argument 1 in rsi, with return probe$' "$TMP/mimalloc.err")" 1
expect_eq "mimalloc: realloc probed on its tail jump, arguments in rsi and rdx" \
	"$(grep -c '^memtrace: probe realloc .*libmimalloc.* on jmp .*: emulated, argument 1 in rsi, argument 2 in rdx, with return probe$' "$TMP/mimalloc.err")" 1
for mode in session classic; do
	MEMTRACE_ATTACH=$mode LD_PRELOAD=$LIBDIR/libmimalloc.so.2 record_cmd "$TMP/mi-$mode.mtrace" "$PROGS/alloc_patterns"
	expect_eq "mimalloc, $mode: record exit status" $? 0
	report_json "$TMP/mi-$mode.mtrace" "$TMP/mi-$mode.json"
	expect_alloc_patterns "$TMP/mi-$mode.json" 0 "mimalloc, $mode"
done
finish
