#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Ring buffers too small for the rate: events are dropped, every drop is
# counted, the recorder says so, and the report says so first. The target is
# unharmed (it finishes and exits normally).
. "$(dirname "$0")/lib.sh"
plan 5

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
finish
