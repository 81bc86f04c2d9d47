#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Ring buffers too small for the rate: events are dropped, every drop is
# counted, the recorder says so, and the report says so first. The target is
# unharmed (it finishes and exits normally). And a small ring that wraps over
# and over without dropping: every record read whole, those that run past
# its end too (its data is mapped once: user/record/ring_set.c).
. "$(dirname "$0")/lib.sh"
plan 8

timeout 60 "$MEMTRACE" record --buffer-size 4K -o "$TMP/d.mtrace" -- "$PROGS/heap_workload" \
	>"$TMP/out" 2>"$TMP/err"
expect_status "tiny buffers: target exit status passed through" $? 0 "$TMP/err"
expect_eq "tiny buffers: target finished its work" "$(cat "$TMP/out")" "heap_workload: done"
expect_eq "tiny buffers: recorder warns about drops" "$(grep -c 'events dropped; use a larger --buffer-size' "$TMP/err")" 1
report_json "$TMP/d.mtrace" "$TMP/d.json"
dropped=$(jqr "$TMP/d.json" .totals.dropped_events)
written=$(sed -n 's/^memtrace: wrote .* (.*, \([0-9]*\) events); next: .*/\1/p' "$TMP/err")
if [ "$dropped" -gt 0 ] && [ $((dropped + written)) -ge 400000 ]; then
	ok "tiny buffers: $dropped dropped + $written written cover the 400000 allocation and free events"
else
	not_ok "tiny buffers: dropped $dropped, written $written"
fi
expect_eq "tiny buffers: the report's first line is the drop warning" \
	"$("$MEMTRACE" report "$TMP/d.mtrace" | head -n1)" "WARNING: $dropped events dropped: figures are lower bounds"
# a 4 KiB ring, lanes off (every record by the ring), at leak_rate's 300
# events a second (15 KB/s: a dozen wraps in its 3 s, drained every 10 ms):
# its 300 steps exactly
MEMTRACE_LANE_BYTES=0 timeout 60 "$MEMTRACE" record --buffer-size 4K -o "$TMP/w.mtrace" -- "$PROGS/leak_rate" 3 \
	>"$TMP/out" 2>"$TMP/err"
expect_status "a wrapping 4 KiB ring: target exit status passed through" $? 0 "$TMP/err"
report_json "$TMP/w.mtrace" "$TMP/w.json"
expect_eq "a wrapping 4 KiB ring: nothing dropped" "$(jqr "$TMP/w.json" .totals.dropped_events)" 0
expect_eq "a wrapping 4 KiB ring: leak_step's and churn's allocations and bytes, exactly" \
	"$(jqr "$TMP/w.json" '[.sites[] | select(.function == "leak_step" or .function == "churn") |
		"\(.function) \(.allocations) \(.allocated_bytes)"] | sort | join(",")')" \
	"churn 300 1200000,leak_step 300 300000"
finish
