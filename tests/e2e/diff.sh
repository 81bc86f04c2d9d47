#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace diff finds a planted growth: tests/progs/diff_growth.c recorded
# with N = 1 and N = 5 grows exactly one site, site_grow, by 4 x 1000 bytes
# (its header has every figure). --fail-on-growth exits 3 just below the
# growth of leaked and peak bytes (+4016) and 0 at it.
source "$(dirname "$0")/lib.sh"
plan 39

base=$TMP/base.mtrace
new=$TMP/new.mtrace
json=$TMP/diff.json

diff_cmd() { timeout -k 5 "$LIMIT" "$MEMTRACE" diff "$@"; }

record_cmd "$base" "$PROGS/diff_growth" 1
expect_eq "record N=1 exit status" "$?" 0
record_cmd "$new" "$PROGS/diff_growth" 5
expect_eq "record N=5 exit status" "$?" 0

diff_cmd --json "$base" "$new" >"$json" 2>"$TMP/err"
expect_eq "diff --json exit status" "$?" 0
expect_eq "diff --json: the first key is the format, 2" "$(jq -r 'keys_unsorted[0] + "=" + (.format | tostring)' "$json")" format=2
expect_eq "the largest growth is site_grow" "$(jqr "$json" '.sites[0].function')" site_grow
expect_eq "site_grow's file and line" "$(jqr "$json" '.sites[0] | "\(.file):\(.line)"')" \
	"$TOP/tests/progs/diff_growth.c:$(grep -n 'site_grow(void)' "$TOP/tests/progs/diff_growth.c" | cut -d: -f1)"
expect_eq "site_grow allocated_bytes a, b, delta" \
	"$(jqr "$json" '.sites[0].allocated_bytes | "\(.a) \(.b) \(.delta)"')" "1000 5000 4000"
expect_eq "site_grow leaked_bytes delta" "$(jqr "$json" '.sites[0].leaked_bytes.delta')" 4000
expect_eq "site_grow allocations delta" "$(jqr "$json" '.sites[0].allocations.delta')" 4
sitef() { jq -r --arg f "$1" --arg k "$2" '.sites[] | select(.function == $f) | .[$k] | "\(.a) \(.b) \(.delta)"' "$json"; }
expect_eq "site_steady is unchanged" "$(sitef site_steady allocations)" "10 10 0"
expect_eq "site_steady temporaries unchanged" "$(sitef site_steady temporary_allocations)" "10 10 0"
expect_eq "site_only_base: only in base" "$(sitef site_only_base allocated_bytes)" "32 0 -32"
expect_eq "site_only_new: only in new" "$(sitef site_only_new allocated_bytes)" "0 48 48"
expect_eq "the site that shrank most is last" "$(jqr "$json" '.sites[-1].function')" site_only_base
expect_eq "4 sites" "$(jqr "$json" '.sites | length')" 4
tot() { jqr "$json" ".totals.$1 | \"\(.a) \(.b) \(.delta)\""; }
expect_eq "totals.allocations" "$(tot allocations)" "12 16 4"
expect_eq "totals.allocated_bytes" "$(tot allocated_bytes)" "2032 6048 4016"
expect_eq "totals.leaked_bytes" "$(tot leaked_bytes)" "1032 5048 4016"
expect_eq "totals.peak_bytes" "$(tot peak_bytes)" "1032 5048 4016"

diff_cmd "$base" "$new" >"$TMP/diff.txt" 2>"$TMP/err"
expect_eq "diff (text) exit status" "$?" 0
row=$(grep -A2 '^Sites that grew' "$TMP/diff.txt" | tail -n1)
expect_eq "text: the first site that grew is site_grow, +400.0% ($row)" \
	"$([[ $row == *" +400.0% "*" site_grow "* ]] && echo yes)" yes

# the CI gate: "grew by more than SIZE"
gate() {
	diff_cmd --fail-on-growth="$1" "$base" "$new" >/dev/null 2>"$TMP/gate.err"
	expect_eq "--fail-on-growth=$1 exit status" "$?" "$2"
}
gate 4015 3
expect_eq "it says which grew and by how much" "$(cat "$TMP/gate.err")" \
	"memtrace: grew by more than 4015 bytes (--fail-on-growth): leaked bytes +4016 (1032 -> 5048), peak bytes +4016 (1032 -> 5048)"
gate 4016 0
expect_eq "nothing on stderr under the limit" "$(cat "$TMP/gate.err")" ""
gate 3K 3
gate 4K 0
gate 0 3
diff_cmd --fail-on-growth=0 "$new" "$base" >/dev/null 2>&1
expect_eq "shrinking passes --fail-on-growth=0" "$?" 0
diff_cmd --fail-on-growth=0 --json "$base" "$base" >"$TMP/same.json" 2>&1
expect_eq "a trace against itself passes --fail-on-growth=0" "$?" 0
expect_eq "a trace against itself: no delta is non-zero" \
	"$(jq '[.. | objects | select(has("delta")) | select(.delta != 0)] | length' "$TMP/same.json")" 0

# errors: one line, non-zero
echo "not a trace" >"$TMP/not-a-trace"
diff_cmd "$base" "$TMP/not-a-trace" >/dev/null 2>"$TMP/err"
expect_one_error "diff against a non-trace file" "$?" "$TMP/err"
diff_cmd "$TMP/missing.mtrace" "$new" >/dev/null 2>"$TMP/err"
expect_one_error "diff of a missing file" "$?" "$TMP/err"
diff_cmd "$base" >/dev/null 2>"$TMP/err"
expect_eq "diff with one trace: exit status (usage error)" "$?" 2
expect_eq "diff with one trace: its usage line" "$(cat "$TMP/err")" \
	"usage: memtrace diff [--json | --html OUT] [--top N] [--fail-on-growth=SIZE] [--alloc-fn GLOB]... [--strict] [--symfs DIR] BASE NEW"
diff_cmd --fail-on-growth=lots "$base" "$new" >/dev/null 2>"$TMP/err"
expect_one_error "--fail-on-growth=lots" "$?" "$TMP/err"
finish
