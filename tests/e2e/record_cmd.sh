#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace record -- CMD on tests/progs/alloc_patterns: every C allocation
# entry point, exact per-site figures and totals (see the table in
# alloc_patterns.c), the exit status and stdout passing through.
source "$(dirname "$0")/lib.sh"
plan 16

prog=$PROGS/alloc_patterns
trace=$TMP/cmd.mtrace
json=$TMP/cmd.json

record_cmd "$trace" "$prog" 3
expect_eq "record exit status is the command's" "$?" 3
expect_eq "command stdout passes through" "$(cat "$TMP/out")" "alloc_patterns: done"
if grep -q '^memtrace: attached' "$TMP/err"; then
	ok "stderr says 'memtrace: attached'"
else
	not_ok "no 'memtrace: attached' line on stderr: $(head -c 300 "$TMP/err")"
fi
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0
expect_eq "report --json: the first key is the format, 2" "$(jq -r 'keys_unsorted[0] + "=" + (.format | tostring)' "$json")" format=2

expect_alloc_patterns "$json" 0
expect_eq "sites outside alloc_patterns' site_* functions" \
	"$(jq -c "$NESTED"' | [.sites[] | select(.function // "?" | startswith("site_") | not)
		| {function, allocations, frame0: .stacks[0].frames[0].address}]' "$json")" "[]"
expect_eq "peak_time_ns is set" "$(jq '.totals.peak_time_ns > 0' "$json")" true

# where: the site's file and line, and a stack that reaches main
expect_eq "site_malloc_100 file" \
	"$(jq -r '[.sites[] | select(.function == "site_malloc_100") | .file] | first | split("/") | last' "$json")" \
	alloc_patterns.c
expect_eq "site_malloc_100 has a line" \
	"$(jq '[.sites[] | select(.function == "site_malloc_100") | .line] | first > 0' "$json")" true
expect_eq "site_malloc_100 module" \
	"$(jq -r '[.sites[] | select(.function == "site_malloc_100") | .module] | first | split("/") | last' "$json")" \
	alloc_patterns
expect_eq "site_malloc_100 stack: site_malloc_100 < phase_allocate < run_pattern < main" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "site_malloc_100") | .stacks[0].frames[].function]
		| map(select(. == "site_malloc_100" or . == "phase_allocate" or . == "run_pattern" or . == "main"))
		| join(" ")' "$json")" \
	"site_malloc_100 phase_allocate run_pattern main"

# a normal exit status passes through too
record_cmd "$TMP/cmd0.mtrace" "$prog"
expect_eq "record exit status 0 when the command exits 0" "$?" 0
# and the text report works on the same trace
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$trace" >"$TMP/report.txt" 2>"$TMP/report.err"
expect_eq "text report exit status" "$?" 0
if grep -q site_peak_block "$TMP/report.txt"; then
	ok "text report names site_peak_block"
else
	not_ok "text report does not name site_peak_block"
fi
finish
