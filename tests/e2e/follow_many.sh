#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --follow-children on a burst: tests/progs/fork_many forks 50 children at
# once; 45 allocate 12 blocks of 96 bytes as their very first act, 5 exec
# alloc_patterns. Every child must get a trace with exactly its 12 blocks
# (one allocated before its probes were live would be missing), every exec'd
# program the exact alloc_patterns figures; with -- CMD and with -p joined to
# the running parent. The BPF programs are loaded once for the whole tree:
# one load whatever the number of children.
. "$(dirname "$0")/lib.sh"
plan 15

N=50
cd "$TMP" || exit 1

# check NAME PREFIX: the traces PREFIX.PID.mtrace and PREFIX.PID.1.mtrace
check() {
	local name=$1 prefix=$2 f first=0 exact=0 execd=0 exact_exec=0 bad=""
	for f in "$prefix".*.mtrace; do
		case $f in "$prefix".*.1.mtrace) continue ;; esac
		report_json "$f" "$f.json" || { bad="$bad $f"; continue; }
		[ "$(site "$f.json" site_first_act allocations)" = 0 ] && continue
		first=$((first + 1))
		[ "$(site "$f.json" site_first_act allocations)/$(site "$f.json" site_first_act leaked_bytes)/$(jqr "$f.json" .totals.allocations)" = "12/1152/12" ] &&
			exact=$((exact + 1))
	done
	for f in "$prefix".*.1.mtrace; do
		[ -f "$f" ] || continue
		execd=$((execd + 1))
		report_json "$f" "$f.json" || continue
		[ "$(jqr "$f.json" .totals.allocations)/$(jqr "$f.json" .totals.frees)/$(jqr "$f.json" .totals.leaked_bytes)" = "56/48/4852" ] &&
			exact_exec=$((exact_exec + 1))
	done
	expect_eq "$name: children with a trace of their first act" "$first" 45
	expect_eq "$name: children with exactly 12 blocks, 1152 bytes leaked, nothing else" "$exact" 45
	expect_eq "$name: exec'd children with a trace of alloc_patterns" "$execd" 5
	expect_eq "$name: exec'd children with alloc_patterns' exact totals" "$exact_exec" 5
	expect_eq "$name: unreadable traces" "$bad" ""
}

timeout -k 5 120 "$MEMTRACE" record --follow-children -o cmd.mtrace -- \
	"$PROGS/fork_many" "$N" "$PROGS/alloc_patterns" >"$TMP/out" 2>"$TMP/err"
expect_status "-- CMD: fork_many's exit status passed through" $? 0 "$TMP/err"
expect_eq "-- CMD: one 'attached' line per process and program" "$(grep -c '^memtrace: attached' "$TMP/err")" $((1 + N + 5))
check "-- CMD" cmd

"$PROGS/fork_many" wait "$N" "$PROGS/alloc_patterns" >"$TMP/out2" &
target=$!
wait_exec "$target" "$PROGS/fork_many"
timeout -k 5 120 "$MEMTRACE" record -p "$target" --follow-children -o pid.mtrace 2>"$TMP/err2" &
rec=$!
if wait_for_line "$TMP/err2" "memtrace: attached" 20; then ok "-p: attached to the parent"; else not_ok "-p: never attached"; fi
kill -USR1 "$target"
wait "$target"
expect_eq "-p: fork_many exit status" $? 0
# the recorders end as their processes do; the supervisor with the parent
wait "$rec"
expect_eq "-p: memtrace exit status" $? 0
check "-p" pid
finish
