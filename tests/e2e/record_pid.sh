#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace record -p PID on a running alloc_patterns: it allocates 4 blocks,
# waits for SIGUSR1 (sent once memtrace says it attached), frees them (4
# unmatched frees: allocated before the trace) and runs the same pattern as
# record_cmd.sh; memtrace stops by itself when the process exits.
source "$(dirname "$0")/lib.sh"

trace=$TMP/pid.mtrace
json=$TMP/pid.json

if record_pid_usr1 "$trace" "$PROGS/alloc_patterns" wait 5; then
	ok "memtrace -p printed 'memtrace: attached'"
else
	not_ok "memtrace -p did not print 'memtrace: attached' within 10 s: $(head -c 300 "$TMP/err")"
fi
expect_eq "target exit status" "$TARGET_STATUS" 5
expect_eq "memtrace -p exit status when the target exits" "$RECORD_STATUS" 0
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0

# function allocs bytes leaked leaked_bytes temporary peak_bytes
while read -r fn allocs bytes leaked leaked_bytes temp peak; do
	expect_site "$json" "$fn" allocations "$allocs"
	expect_site "$json" "$fn" allocated_bytes "$bytes"
	expect_site "$json" "$fn" leaked_allocations "$leaked"
	expect_site "$json" "$fn" leaked_bytes "$leaked_bytes"
	expect_site "$json" "$fn" temporary_allocations "$temp"
	expect_site "$json" "$fn" peak_bytes "$peak"
done <<'TABLE'
site_before_attach   0   0        0  0     0  0
site_malloc_100      10  1000     1  100   0  100
site_calloc_10x32    5   1600     1  320   0  320
site_realloc_grow    5   2000     0  0     0  0
site_realloc_shrink  5   200      0  0     0  0
site_realloc_null    3   192      1  64    0  64
site_reallocarray    2   328      0  0     0  0
site_posix_memalign  2   400      1  200   0  200
site_aligned_alloc   2   512      0  0     0  0
site_memalign        2   200      0  0     0  0
site_valloc          1   1000     0  0     0  0
site_pvalloc         1   4096     1  4096  0  4096
site_temporary       7   336      0  0     7  0
site_peak_block      8   8388608  0  0     0  8388608
site_leak_24         3   72       3  72    0  72
TABLE

expect_total "$json" allocations 56
expect_total "$json" frees 48
expect_total "$json" allocated_bytes 8400544
expect_total "$json" peak_bytes 8393460
expect_total "$json" leaked_allocations 8
expect_total "$json" leaked_bytes 4852
expect_total "$json" temporary_allocations 7
expect_total "$json" unmatched_frees 4
expect_total "$json" dropped_events 0

# -p with -d: stops at the deadline while the target keeps running
"$PROGS/alloc_patterns" wait >/dev/null 2>"$TMP/target2.err" &
target=$!
wait_for_line "$TMP/target2.err" "alloc_patterns: waiting" 10
start=$SECONDS
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/d.mtrace" -d 1 -p "$target" 2>"$TMP/d.err"
expect_eq "memtrace -p -d 1 exit status" "$?" 0
elapsed=$((SECONDS - start))
if [ "$elapsed" -le 10 ]; then ok "memtrace -d 1 stopped after ${elapsed}s"; else not_ok "memtrace -d 1 took ${elapsed}s"; fi
if kill -0 "$target" 2>/dev/null; then ok "target still running after memtrace -d"; else not_ok "target died with memtrace -d"; fi
kill -USR1 "$target" 2>/dev/null
wait "$target"
expect_eq "target exit status after detach" "$?" 0
report_json "$TMP/d.mtrace" "$TMP/d.json"
expect_eq "report of the -d trace exit status" "$?" 0
expect_total "$TMP/d.json" allocations 0

# -p ended by SIGINT: a readable trace
"$PROGS/alloc_patterns" wait >/dev/null 2>"$TMP/target3.err" &
target=$!
wait_for_line "$TMP/target3.err" "alloc_patterns: waiting" 10
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/int.mtrace" -p "$target" 2>"$TMP/int.err" &
rec=$!
wait_for_line "$TMP/int.err" "memtrace: attached" 10
kill -INT "$rec"
wait "$rec"
expect_eq "memtrace -p exit status after SIGINT" "$?" 0
kill -USR1 "$target" 2>/dev/null
wait "$target"
report_json "$TMP/int.mtrace" "$TMP/int.json"
expect_eq "report of the SIGINT trace exit status" "$?" 0
expect_total "$TMP/int.json" allocations 0
finish
