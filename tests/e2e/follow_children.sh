#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --follow-children: every process the command forks, and every program a
# process execs, gets its own trace with exact figures; threads stay in their
# process's trace; memtrace exits with the command's status.
. "$(dirname "$0")/lib.sh"
plan 35

cd "$TMP" || exit 1
timeout 60 "$MEMTRACE" record --follow-children -o tree.mtrace -- \
	"$PROGS/forker" "$PROGS/alloc_patterns" >"$TMP/out" 2>"$TMP/err"
expect_status "forker: exit status passed through" $? 0 "$TMP/err"
expect_eq "forker: stdout of the exec'd program passes through" "$(cat "$TMP/out")" "alloc_patterns: done"
expect_eq "one 'attached' line per process and program" "$(grep -c '^memtrace: attached' "$TMP/err")" 4

report_json tree.mtrace root.json
expect_site root.json site_parent allocations 10
expect_site root.json site_parent leaked_bytes 1000
expect_eq "root trace holds only the parent's allocations" "$(jqr root.json .totals.allocations)" 10

children=$(ls tree.*.mtrace | grep -v "^tree.mtrace$" | sort)
expect_eq "child traces" "$(echo "$children" | wc -l)" 3
a=$(for f in $children; do
	"$MEMTRACE" report --json "$f" | jq -e '.sites[] | select(.function == "site_child")' >/dev/null && echo "$f"
done | head -n1)
report_json "$a" a.json
expect_site a.json site_child allocations 20
expect_site a.json site_child leaked_bytes 4000
expect_eq "child A: its parent's allocations are not in its trace" "$(site a.json site_parent allocations)" 0

b=$(echo "$children" | grep '\.[0-9]*\.1\.mtrace$')
report_json "$b" b.json
expect_eq "child B after exec: the program" "$(jqr b.json .trace.comm)" alloc_patterns
for f in allocations:56 frees:48 allocated_bytes:8400544 peak_bytes:8393460 leaked_bytes:4852; do
	expect_eq "child B after exec: totals.${f%%:*}" "$(jqr b.json ".totals.${f%%:*}")" "${f#*:}"
done

# -p PID --follow-children: the same tree, joined while it runs.
rm -f seized*.mtrace
"$PROGS/forker" wait "$PROGS/alloc_patterns" >"$TMP/out2" &
target=$!
wait_exec "$target" "$PROGS/forker"
timeout 60 "$MEMTRACE" record --follow-children -p "$target" -o seized.mtrace 2>"$TMP/err2" &
recorder=$!
if wait_for_line "$TMP/err2" "memtrace: attached" 10; then ok "-p: attached"; else not_ok "-p: never attached"; fi
kill -USR1 "$target"
wait "$target"
expect_eq "-p: target exit status" $? 0
wait "$recorder"
expect_eq "-p: memtrace exit status" $? 0
expect_eq "-p: traces" "$(ls seized*.mtrace | wc -l)" 4
report_json seized.mtrace s.json
expect_site s.json site_parent allocations 10
b=$(ls seized.*.1.mtrace)
report_json "$b" sb.json
expect_eq "-p: child B after exec: totals.allocations" "$(jqr sb.json .totals.allocations)" 56

# -p --follow-children stopped by SIGINT: the process runs on, untraced.
"$PROGS/forever" >"$TMP/forever.out" &
target=$!
wait_exec "$target" "$PROGS/forever"
timeout 60 "$MEMTRACE" record --follow-children -p "$target" -o f.mtrace 2>"$TMP/err3" &
recorder=$!
if wait_for_line "$TMP/err3" "memtrace: attached" 10; then ok "-p forever: attached"; else not_ok "-p forever: never attached"; fi
sleep 1
kill -INT "$recorder"
wait "$recorder"
expect_eq "-p forever: memtrace exit status after SIGINT" $? 0
sleep 0.5
if kill -0 "$target" 2>/dev/null; then ok "-p forever: the process runs on"; else not_ok "-p forever: the process is gone"; fi
expect_eq "-p forever: no longer traced" "$(awk '/^TracerPid/ { print $2 }' "/proc/$target/status")" 0
kill -TERM "$target"
wait "$target"
expect_eq "-p forever: it exits normally" "$(cat "$TMP/forever.out")" "forever: clean exit"
report_json f.mtrace f.json
if [ "$(jqr f.json .totals.allocations)" -gt 100 ]; then ok "-p forever: its trace holds allocations"; else not_ok "-p forever: empty trace"; fi

# Threads are not processes: one trace, with every thread's allocations.
rm -f th*.mtrace
timeout 60 "$MEMTRACE" record --follow-children -o th.mtrace -- "$PROGS/threads" >/dev/null 2>"$TMP/err"
expect_status "threads: exit status" $? 0 "$TMP/err"
expect_eq "threads: one trace" "$(ls th*.mtrace | wc -l)" 1
report_json th.mtrace th.json
expect_site th.json site_thread_work allocations 4000
expect_site th.json site_thread_leak leaked_bytes 4000
# A followed process's lanes are sized for its rings (1 MiB a CPU: 256 KiB
# lanes), not for the shared load's unused 4 KiB rings: at heap_workload's
# rate a 4 KiB lane, drained every 10 ms, took about 1% of its 400000 records
# (the rest paid for the ring buffer); now most. -v prints each followed
# process's split.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v --follow-children -o lanes.mtrace -- "$PROGS/heap_workload" \
	>/dev/null 2>"$TMP/lanes.err"
expect_status "followed heap_workload under -v" $? 0 "$TMP/lanes.err"
split=$(sed -n 's/^memtrace: PID [0-9]*: \([0-9]*\) allocation and free records by the lanes, \([0-9]*\) by the ring buffers$/\1 \2/p' \
	"$TMP/lanes.err")
read -r by_lane by_ring <<<"${split:-x x}"
expect_eq "followed heap_workload: -v counts every record once" "$((by_lane + by_ring))" 400000
if [ "$by_lane" -ge 100000 ]; then ok "followed heap_workload: $by_lane of 400000 records by the lanes"; else
	not_ok "followed heap_workload: $by_lane of 400000 records by the lanes (a 4 KiB lane takes about 4000)"; fi
finish
