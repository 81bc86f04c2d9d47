#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace agrees with heaptrack on tests/progs/heap_workload (200000
# allocations, one peak of 27.1 MB): allocations within 1%, peak within 3%.
# heaptrack counts one allocation more and 72704 bytes more peak: the
# libstdc++ emergency pool its preload library brings into the process.
source "$(dirname "$0")/lib.sh"
plan 15

prog=$PROGS/heap_workload
if ! command -v heaptrack >/dev/null || ! command -v heaptrack_print >/dev/null; then
	not_ok "heaptrack is not installed (apt-get install heaptrack)"
	skip_rest "no heaptrack to compare with"
	finish
fi

# bytes from heaptrack's human units: 27.19M (SI: K, M, G = 1000^n)
to_bytes() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = substr(v, length(v), 1)
		m = (u == "K") ? 1e3 : (u == "M") ? 1e6 : (u == "G") ? 1e9 : (u == "T") ? 1e12 : 1
		printf "%.0f\n", n * m }'
}

timeout -k 5 "$LIMIT" heaptrack -o "$TMP/ht" "$prog" >"$TMP/ht.out" 2>&1
expect_eq "heaptrack run exit status" "$?" 0
htfile=$(ls "$TMP"/ht.* 2>/dev/null | grep -E '\.(zst|gz)$' | head -n1)
if [ -z "$htfile" ]; then
	not_ok "heaptrack wrote no data file: $(tail -n3 "$TMP/ht.out" | tr '\n' '|')"
	fail_rest "no heaptrack data to compare with"
	finish
fi
timeout -k 5 "$LIMIT" heaptrack_print -f "$htfile" -p 0 -a 0 -T 0 -l 0 >"$TMP/ht.txt" 2>&1
ht_allocs=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$TMP/ht.txt")
ht_peak=$(to_bytes "$(sed -n 's/^peak heap memory consumption: \([0-9.]*[BKMGT]\).*/\1/p' "$TMP/ht.txt")")
if [ -n "$ht_allocs" ] && [ "$ht_peak" -gt 0 ] 2>/dev/null; then
	ok "heaptrack_print: $ht_allocs allocations, peak $ht_peak bytes"
else
	not_ok "could not parse heaptrack_print's summary: $(tail -n5 "$TMP/ht.txt" | tr '\n' '|')"
	fail_rest "no heaptrack figures to compare with"
	finish
fi

record_cmd "$TMP/w.mtrace" "$prog"
expect_eq "memtrace record exit status" "$?" 0
report_json "$TMP/w.mtrace" "$TMP/w.json"
expect_eq "report --json exit status" "$?" 0
mt_allocs=$(jqr "$TMP/w.json" .totals.allocations)
mt_peak=$(jqr "$TMP/w.json" .totals.peak_bytes)
expect_within "allocations: memtrace vs heaptrack" "$mt_allocs" "$ht_allocs" 1
expect_within "peak bytes: memtrace vs heaptrack" "$mt_peak" "$ht_peak" 3
# and memtrace's own figures are exact (heap_workload.c's comment)
expect_total "$TMP/w.json" allocations 200000
expect_total "$TMP/w.json" frees 200000
expect_total "$TMP/w.json" allocated_bytes 40683789
expect_total "$TMP/w.json" peak_bytes 27117795
expect_total "$TMP/w.json" leaked_bytes 0
expect_total "$TMP/w.json" dropped_events 0
expect_site "$TMP/w.json" site_build_node allocations 87500
expect_site "$TMP/w.json" site_build_array allocations 12500
expect_site "$TMP/w.json" site_churn allocations 100000
finish
