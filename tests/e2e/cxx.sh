#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# C++: every operator new / operator delete variant of C++17, one site each
# (tests/progs/cxx_new_delete.cpp). Each new is ONE allocation even though
# libstdc++'s operator new calls malloc (new[] calls new, aligned new calls
# aligned_alloc); each delete variant frees its block.
source "$(dirname "$0")/lib.sh"
plan 80

trace=$TMP/cxx.mtrace
json=$TMP/cxx.json

record_cmd "$trace" "$PROGS/cxx_new_delete"
expect_eq "record exit status" "$?" 0
expect_eq "command stdout passes through" "$(cat "$TMP/out")" "cxx_new_delete: done"
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0

# demangled C++ site (with its empty parameter list), allocs, bytes, leaked
measured=0
while read -r fn allocs bytes leaked; do
	expect_site "$json" "$fn" allocations "$allocs"
	expect_site "$json" "$fn" allocated_bytes "$bytes"
	expect_site "$json" "$fn" leaked_allocations "$leaked"
	expect_site "$json" "$fn" temporary_allocations 0
	measured=$((measured + allocs))
done <<'TABLE'
site_new_24()                        1  24   0
site_new_array_40()                  1  40   0
site_new_32_sized()                  1  32   0
site_new_array_48_sized()            1  48   0
site_new_nothrow_56()                1  56   0
site_new_array_nothrow_72()          1  72   0
site_new_aligned_128()               1  128  0
site_new_array_aligned_192()         1  192  0
site_new_aligned_256_sized()         1  256  0
site_new_array_aligned_320_sized()   1  320  0
site_new_aligned_nothrow_384()       1  384  0
site_new_array_aligned_nothrow_448() 1  448  0
site_new_expr_obj()                  1  48   0
site_new_expr_int_array()            1  100  0
site_new_expr_aligned()              1  64   0
site_new_leak_16()                   3  48   3
TABLE

# The measured part: 18 allocations, 2260 bytes, all but the 3 leaks freed
# by their delete variant. Outside it, exactly one allocation: libstdc++'s
# emergency exception pool before main (72704 bytes with gcc 12), never freed.
sum() { jq "[.sites[] | select(.function // \"\" | startswith(\"site_\")) | .$1] | add // 0" "$json"; }
expect_eq "allocations at site_* sites" "$(sum allocations)" 18
expect_eq "bytes at site_* sites" "$(sum allocated_bytes)" 2260
expect_eq "leaked bytes at site_* sites" "$(sum leaked_bytes)" 48
expect_eq "allocations outside site_* sites (the emergency pool)" \
	"$(jq '[.sites[] | select(.function // "" | startswith("site_") | not) | .allocations] | add // 0' "$json")" 1
expect_total "$json" allocations 19
expect_total "$json" allocated_bytes 74964
expect_total "$json" frees 15
expect_total "$json" leaked_allocations 4
expect_total "$json" leaked_bytes 72752
expect_total "$json" peak_bytes 74964
expect_total "$json" temporary_allocations 0
expect_total "$json" unmatched_frees 0
expect_total "$json" dropped_events 0
finish
