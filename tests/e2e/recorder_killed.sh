#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The recorder killed with SIGKILL mid-recording: the target keeps running
# normally, and the trace reads as partial up to its last complete chunk
# (the recorder flushes a chunk every 250 ms, from the first interval after
# attach on: a kill loses under 300 ms of events, docs/usage.md says so).
. "$(dirname "$0")/lib.sh"
plan 16

# start_forever [OUT]: tests/progs/forever in the background, as TARGET.
start_forever() {
	"$PROGS/forever" >"${1:-/dev/null}" &
	target=$!
	wait_exec "$target" "$PROGS/forever"
}

# start_recording TRACE ERR: memtrace record -p TARGET under timeout until it
# is attached. WATCHER is timeout (to wait for), RECORDER memtrace itself:
# the process a kill must hit (killing timeout would leave memtrace running).
start_recording() {
	timeout 60 "$MEMTRACE" record -p "$target" -o "$1" 2>"$2" &
	watcher=$!
	wait_for_line "$2" "memtrace: attached" 10 || return 1
	recorder=$(pgrep -P "$watcher" -x memtrace)
	[ -n "$recorder" ]
}

start_forever "$TMP/forever.out"
if start_recording "$TMP/k.mtrace" "$TMP/err"; then ok "attached"; else not_ok "never attached"; fi
sleep 2.5
kill -KILL "$recorder"
wait "$watcher" 2>/dev/null
sleep 0.5
if kill -0 "$target" 2>/dev/null; then ok "target still running after the recorder was killed"; else not_ok "target died"; fi
kill -TERM "$target"
wait "$target"
expect_eq "target exit status" $? 0
expect_eq "target's memory was intact throughout" "$(cat "$TMP/forever.out")" "forever: clean exit"

timeout 60 "$MEMTRACE" report "$TMP/k.mtrace" >"$TMP/report.txt" 2>&1
expect_eq "report of the cut trace: exit status" $? 0
expect_eq "report says the trace is partial, first" \
	"$(head -n1 "$TMP/report.txt" | grep -c '^WARNING: trace is partial')" 1
report_json "$TMP/k.mtrace" "$TMP/k.json"
allocs=$(jqr "$TMP/k.json" .totals.allocations)
frees=$(jqr "$TMP/k.json" .totals.frees)
if [ "$allocs" -gt 1000 ] && [ $((allocs - frees)) -le 1 ] && [ $((allocs - frees)) -ge 0 ]; then
	ok "the flushed chunks hold $allocs allocations and $frees frees"
else
	not_ok "cut trace: $allocs allocations, $frees frees"
fi

# Killed 0.5 s after "attached": the trace holds the events of at least the
# first 200 ms (0.5 s less the 300 ms bound); before the bound it held none.
start_forever
if start_recording "$TMP/early.mtrace" "$TMP/err3"; then ok "attached (early kill)"; else not_ok "never attached (early kill)"; fi
sleep 0.5
kill -KILL "$recorder"
wait "$watcher" 2>/dev/null
kill -TERM "$target"
wait "$target"
report_json "$TMP/early.mtrace" "$TMP/early.json"
expect_eq "early kill: the trace is partial" "$(jqr "$TMP/early.json" .trace.partial)" true
last=$(jqr "$TMP/early.json" .trace.duration_ns)
if [ "$last" -ge 200000000 ]; then
	ok "early kill: events up to $((last / 1000000)) ms after attach are in the trace (want >= 200)"
else
	not_ok "early kill: the last event in the trace is at $((last / 1000000)) ms after attach; want >= 200"
fi
if [ "$(jqr "$TMP/early.json" .totals.allocations)" -gt 100 ]; then
	ok "early kill: $(jqr "$TMP/early.json" .totals.allocations) allocations kept"
else
	not_ok "early kill: $(jqr "$TMP/early.json" .totals.allocations) allocations kept"
fi

# The other way round: the target killed with SIGKILL mid-recording. The
# recorder sees it go, finishes the trace normally (complete, not partial).
start_forever
if start_recording "$TMP/t.mtrace" "$TMP/err2"; then ok "attached (2)"; else not_ok "never attached (2)"; fi
sleep 1
kill -KILL "$target"
wait "$target" 2>/dev/null
wait "$watcher"
expect_eq "recorder exit status after the target was killed" $? 0
timeout 60 "$MEMTRACE" report "$TMP/t.mtrace" >"$TMP/report2.txt" 2>&1
expect_eq "report of that trace: exit status" $? 0
expect_eq "that trace is complete (no partial warning)" "$(grep -c '^WARNING' "$TMP/report2.txt")" 0
report_json "$TMP/t.mtrace" "$TMP/t.json"
if [ "$(jqr "$TMP/t.json" .totals.allocations)" -gt 100 ]; then ok "it holds the allocations made before the kill"; else not_ok "no allocations in it"; fi
finish
