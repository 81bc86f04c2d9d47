#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A program whose malloc/calloc/realloc/free come from libtinyalloc.so, not
# glibc (tests/progs/uses_tinyalloc.c): memtrace must probe the allocator the
# process resolves. glibc's malloc is never called here, so these counts can
# only be right if the probes sit in libtinyalloc.so.
source "$(dirname "$0")/lib.sh"
plan 33

trace=$TMP/tiny.mtrace
json=$TMP/tiny.json

expect_eq "uses_tinyalloc links libtinyalloc.so" \
	"$(ldd "$PROGS/uses_tinyalloc" | grep -c 'libtinyalloc.so => /')" 1
record_cmd "$trace" "$PROGS/uses_tinyalloc"
expect_eq "record exit status" "$?" 0
expect_eq "command stdout passes through" "$(cat "$TMP/out")" "uses_tinyalloc: done"
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0

while read -r fn allocs bytes leaked leaked_bytes temp; do
	expect_site "$json" "$fn" allocations "$allocs"
	expect_site "$json" "$fn" allocated_bytes "$bytes"
	expect_site "$json" "$fn" leaked_allocations "$leaked"
	expect_site "$json" "$fn" leaked_bytes "$leaked_bytes"
	expect_site "$json" "$fn" temporary_allocations "$temp"
done <<'TABLE'
site_tiny_malloc_64    6  384   1  64   0
site_tiny_calloc_5x20  4  400   1  100  0
site_tiny_realloc_200  3  600   0  0    0
site_tiny_big_4096     1  4096  0  0    1
TABLE
# nothing else allocates in this program (checked with uprobes on both
# libtinyalloc.so and libc), so the totals are exact
expect_total "$json" allocations 14
expect_total "$json" frees 12
expect_total "$json" allocated_bytes 5480
expect_total "$json" peak_bytes 5288
expect_total "$json" leaked_allocations 2
expect_total "$json" leaked_bytes 164
expect_total "$json" temporary_allocations 1
expect_total "$json" unmatched_frees 0
expect_total "$json" dropped_events 0
finish
