#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace export --format chrome (Chrome trace event JSON for ui.perfetto.dev
# and chrome://tracing) on fresh recordings: of tests/progs/marks (zones,
# frames and thread names as tests/progs/marks.c lists them), checked against
# report --json of the same trace; and of tests/progs/demo, whose 100k+
# events the heap counter thins to at most 2000 points, its maximum still
# the report's peak at the report's peak time.
source "$(dirname "$0")/lib.sh"
plan 67

export_chrome() { timeout -k 5 "$LIMIT" "$MEMTRACE" export --format chrome "$@"; }

# --- marks: zones, frames, thread names -------------------------------------
trace=$TMP/marks.mtrace
json=$TMP/marks.json
out=$TMP/marks.chrome.json
record_cmd "$trace" "$PROGS/marks"
expect_eq "marks: record exit status" "$?" 0
report_json "$trace" "$json"
expect_eq "marks: report --json exit status" "$?" 0

export_chrome "$trace" >"$out" 2>"$TMP/export.err"
expect_eq "export --format chrome exit status" "$?" 0
expect_eq "nothing on stderr when writing to stdout" "$(cat "$TMP/export.err")" ""
expect_eq "the output is a JSON object with a traceEvents array" \
	"$(jq -r '.traceEvents | type' "$out" 2>&1)" array
expect_eq "displayTimeUnit" "$(jqr "$out" .displayTimeUnit)" ms
pid=$(jqr "$json" .trace.pid)
expect_eq "every event carries the target's pid" \
	"$(jq --argjson p "$pid" '[.traceEvents[] | select(.pid != $p)] | length' "$out")" 0
expect_eq "every event has a name and a phase" \
	"$(jq '[.traceEvents[] | select((.name | type) != "string" or (.ph | type) != "string")] | length' "$out")" 0

# metadata
expect_eq "process_name metadata" \
	"$(jq -r '.traceEvents[] | select(.ph == "M" and .name == "process_name") | .args.name' "$out")" marks
for t in main worker-0 worker-1; do
	expect_eq "thread_name metadata for $t" \
		"$(jq --arg t "$t" '[.traceEvents[] | select(.ph == "M" and .name == "thread_name" and .args.name == $t)] | length' "$out")" 1
done
expect_eq "thread \"main\" is the target's main thread (tid = pid)" \
	"$(jq -r '.traceEvents[] | select(.ph == "M" and .name == "thread_name" and .args.name == "main") | .tid' "$out")" "$pid"

# zones: one complete slice per entry, counts and exclusive allocations as
# the report has them (tests/progs/marks.c's table)
zone_slices() { jq --arg n "$2" '[.traceEvents[] | select(.ph == "X" and .cat == "zone" and .name == $n)]' "$1"; }
while read -r name count allocs bytes; do
	expect_eq "zone $name: slices" "$(zone_slices "$out" "$name" | jq length)" "$count"
	expect_eq "zone $name: slices = report's count" "$(zone_slices "$out" "$name" | jq length)" \
		"$(jq --arg n "$name" '.zones[] | select(.name == $n) | .count' "$json")"
	expect_eq "zone $name: args.allocations summed" \
		"$(zone_slices "$out" "$name" | jq 'map(.args.allocations) | add')" "$allocs"
	expect_eq "zone $name: args.allocated_bytes summed" \
		"$(zone_slices "$out" "$name" | jq 'map(.args.allocated_bytes) | add')" "$bytes"
done <<'TABLE'
frame    4 0  0
update   4 8  800
physics  4 4  256
render   4 4  1024
job      8 24 1152
shutdown 1 1  1000
TABLE
expect_eq "zone slices have a duration >= 0" \
	"$(jq '[.traceEvents[] | select(.ph == "X") | select((.dur | type) != "number" or .dur < 0)] | length' "$out")" 0
worker_tid() { jq -r --arg t "$2" '.traceEvents[] | select(.ph == "M" and .name == "thread_name" and .args.name == $t) | .tid' "$1"; }
for w in worker-0 worker-1; do
	expect_eq "zone job: slices on $w's thread" \
		"$(jq --argjson t "$(worker_tid "$out" "$w")" '[.traceEvents[] | select(.ph == "X" and .name == "job" and .tid == $t)] | length' "$out")" 4
done
expect_eq "each physics slice lies inside an update slice of its thread" \
	"$(jq '[.traceEvents[] | select(.ph == "X")] as $x
		| [$x[] | select(.name == "physics") as $p
		   | select(any($x[]; .name == "update" and .tid == $p.tid and .ts <= $p.ts
				and .ts + .dur >= $p.ts + $p.dur))] | length' "$out")" 4
expect_eq "zone shutdown (open at exit) ends at the trace's end" \
	"$(jq --argjson d "$(jqr "$json" .trace.duration_ns)" \
		'.traceEvents[] | select(.ph == "X" and .name == "shutdown") | (.ts + .dur) * 1000 - $d | fabs < 1' "$out")" true

# frame marks: one process-scoped instant event each
frames=$(jqr "$json" .frames.count)
expect_eq "frame instant events = frames.count ($frames)" \
	"$(jq '[.traceEvents[] | select(.ph == "i" and .cat == "frame")] | length' "$out")" "$frames"
expect_eq "frame events are process-scoped" \
	"$(jq '[.traceEvents[] | select(.ph == "i" and .cat == "frame" and .s != "p")] | length' "$out")" 0
expect_eq "frame 0 is named by its label" \
	"$(jq -r '.traceEvents[] | select(.ph == "i" and .cat == "frame" and .args.frame == 0) | .name' "$out")" startup
expect_eq "frame events are numbered 0..count-1" \
	"$(jq -c '[.traceEvents[] | select(.ph == "i" and .cat == "frame") | .args.frame] | sort' "$out")" \
	"$(jq -c '[range(0; .frames.count)]' "$json")"
expect_eq "frame marks sit where the report's frames end (us)" \
	"$(jq -c '[.traceEvents[] | select(.ph == "i" and .cat == "frame") | .ts] | sort' "$out")" \
	"$(jq -c '[.frames.frames[].end_ns / 1000] | sort' "$json")"

# heap counter: its maximum is the report's peak, at the peak's time
check_counter() { # LABEL CHROME_JSON REPORT_JSON
	local n peak
	n=$(jq '[.traceEvents[] | select(.ph == "C" and .name == "heap")] | length' "$2")
	if [ "$n" -ge 2 ] && [ "$n" -le 2000 ]; then
		ok "$1: heap counter has $n points (2..2000)"
	else
		not_ok "$1: heap counter has $n points, want 2..2000"
	fi
	peak=$(jqr "$3" .totals.peak_bytes)
	expect_eq "$1: heap counter max = report's peak_bytes" \
		"$(jq '[.traceEvents[] | select(.ph == "C" and .name == "heap") | .args.bytes] | max' "$2")" "$peak"
	expect_eq "$1: first point at the max is at the report's peak_time_ns" \
		"$(jq --argjson p "$peak" --argjson t "$(jqr "$3" .totals.peak_time_ns)" \
			'[.traceEvents[] | select(.ph == "C" and .name == "heap" and .args.bytes == $p)][0].ts == $t / 1000' "$2")" true
	expect_eq "$1: heap counter ends at the report's leaked_bytes" \
		"$(jq '[.traceEvents[] | select(.ph == "C" and .name == "heap")] | last | .args.bytes' "$2")" \
		"$(jqr "$3" .totals.leaked_bytes)"
	expect_eq "$1: heap counter in time order, starting at 0" \
		"$(jq '[.traceEvents[] | select(.ph == "C" and .name == "heap") | .ts] | (. == sort) and .[0] == 0' "$2")" true
}
check_counter marks "$out" "$json"

# -o: a new file, never over an existing one
export_chrome -o "$TMP/out.json" "$trace" 2>"$TMP/export.err"
expect_eq "-o OUT exit status" "$?" 0
expect_eq "-o OUT: same content as stdout" "$(cmp -s "$TMP/out.json" "$out" && echo same)" same
expect_eq "-o OUT: says where it wrote" "$(cat "$TMP/export.err")" "memtrace: wrote $TMP/out.json"
export_chrome -o "$TMP/out.json" "$trace" 2>"$TMP/export.err"
expect_one_error "-o over an existing file" "$?" "$TMP/export.err"

# --- demo: thinning of a long series ----------------------------------------
trace=$TMP/demo.mtrace
json=$TMP/demo.json
out=$TMP/demo.chrome.json
record_cmd "$trace" "$PROGS/demo"
expect_eq "demo: record exit status" "$?" 0
report_json "$trace" "$json"
expect_eq "demo: report --json exit status" "$?" 0
events=$(jqr "$json" '.totals.allocations + .totals.frees')
if [ "$events" -gt 4000 ]; then ok "demo: $events events, more than the counter keeps"; else not_ok "demo: only $events events"; fi
export_chrome "$trace" >"$out" 2>"$TMP/export.err"
expect_eq "demo: export --format chrome exit status" "$?" 0
check_counter demo "$out" "$json"
expect_eq "demo: no zones or frames without marks" \
	"$(jq '[.traceEvents[] | select(.ph == "X" or .ph == "i")] | length' "$out")" 0

finish
