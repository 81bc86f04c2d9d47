#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# report --html of a --rss trace shows where the resident memory goes as
# report --json and the text report have it: tests/progs/rss_merged (its own
# 64 MiB mmap merged by the kernel with a 96 MiB malloc block, a 16 MiB
# munmap hole, 32 MiB of the block given back by madvise, 7.7 MB of small
# chunks freed among live ones; 700 ms between its steps) recorded with
# --rss, and with --rss=only (no heap: the allocator's part not split), and
# tests/progs/glibc_probes (glibc's own allocator probes). The page is
# rendered in Debian's headless Chromium (rss_html.py, chromium-driver and
# python3-selenium) and every figure of its --rss views read back: the
# samples and smaps_rollup, the reconciliation at the end and at the peak,
# its parts stacked over time, the program's mappings by site, glibc's
# probes, the pages first written by site, and the flame graph's
# first-written and resident bytes, each equal to report --json's; the
# chart's layers hold rss_merged's steps as the program made them.
# A screenshot of the section is kept in build/html-artifacts/.
source "$(dirname "$0")/lib.sh"
plan 76

if ! [ -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
	[ "$(id -u)" = 0 ] && "$TOP/tests/install-deps.sh" >/dev/null 2>&1
	if ! [ -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
		not_ok "chromium-driver or python3-selenium missing (run tests/install-deps.sh as root): the page went unchecked"
		skip_rest "no chromium-driver or python3-selenium"
		finish
	fi
fi
ARTIFACTS=$TOP/build/html-artifacts
mkdir -p "$ARTIFACTS"

# page LABEL TRACE: report --json and --html of TRACE, then the page in the browser
page() {
	local label=$1 trace=$2 status tap=$TMP/$1.tap
	report_json "$trace" "$TMP/$label.json"
	expect_status "$label: report --json exit status" $? 0 "$TMP/report.err"
	timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/$label.html" "$trace" 2>"$TMP/$label.html.err"
	expect_status "$label: report --html exit status" $? 0 "$TMP/$label.html.err"
	timeout -k 5 120 /usr/bin/python3 "$TOP/tests/e2e/rss_html.py" "$TMP/$label.html" "$TMP/$label.json" "$label" \
		"$ARTIFACTS" >"$tap" 2>"$TMP/$label.py.err"
	status=$?
	grep '^ok\|^not ok' "$tap"
	FAILS=$((FAILS + $(grep -c '^not ok' "$tap")))
	for _ in $(seq "$(grep -c '^ok\|^not ok' "$tap")"); do printf . >>"$CHECKS"; done
	if grep -q '^# rss_html.py: every check ran' "$tap"; then
		ok "$label: rss_html.py ran every check"
	else
		not_ok "$label: rss_html.py ran every check (exit $status): $(tail -n 1 "$TMP/$label.py.err")"
	fi
}

# truth NAME: rss_merged's own figure NAME from its line
truth() { sed -n "s/^rss_merged .*$1=\([0-9]*\).*/\1/p" "$TMP/g.out"; }

# 700 ms after each step: a resident snapshot (one at least every half second) between any two
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -o "$TMP/g.mtrace" -- "$PROGS/rss_merged" 1200 700 >"$TMP/g.out" 2>"$TMP/g.err"
expect_status "rss_merged: record --rss exit status" $? 0 "$TMP/g.err"
page merged "$TMP/g.mtrace"
# what the page answers, against the program's own truth (rss_reconcile.sh checks the analysis itself)
expect_eq "merged: the page's row 'mapped by the program outside the allocator' is the program's own mapping" \
	"$(sed -n 's/^# rss_html.py: reconcile //p' "$TMP/merged.tap" | jq '."outside_resident_bytes/last"')" "$(truth outside)"
# the chart's layers hold each step in order, as [outside, live heap resident]: the small blocks'
# half left live, the 96 MiB block touched, the program's 64 MiB mapped and touched, 16 MiB of it
# unmapped, 32 MiB of the block given back
MiB=$((1 << 20))
small=$(($(truth live) - 96 * MiB))
steps="[[0,$small],[0,$(truth live)],[$((64 * MiB)),$(truth live)],[$(truth outside),$(truth live)],[$(truth outside),$(truth live_resident)]]"
expect_eq "merged: the stacked chart holds each of the program's steps in order (outside, live heap resident)" \
	"$(sed -n 's/^# rss_html.py: layers //p' "$TMP/merged.tap" | jq -c --argjson want "$steps" '
		[.outside_resident_bytes, .heap_live_resident_bytes] | transpose as $p
		| reduce $want[] as $w ({i: 0, seen: []}; (($p[.i:] | index([$w])) as $k
			| if $k == null then .i = ($p | length) else .i += $k + 1 | .seen += [$w] end))
		| .seen')" "$steps"

timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=only -o "$TMP/o.mtrace" -- "$PROGS/rss_merged" 1200 >"$TMP/o.out" 2>"$TMP/o.err"
expect_status "rss_merged: record --rss=only exit status" $? 0 "$TMP/o.err"
page rss-only "$TMP/o.mtrace"
# glibc's own allocator probes, fired by tests/progs/glibc_probes (Debian's glibc has none)
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -o "$TMP/p.mtrace" -- "$PROGS/glibc_probes" >"$TMP/p.out" 2>"$TMP/p.err"
expect_status "glibc_probes: record --rss exit status" $? 0 "$TMP/p.err"
page glibc-probes "$TMP/p.mtrace"

expect_eq "rss-only: no live heap row, the allocator's part whole" \
	"$(sed -n 's/^# rss_html.py: reconcile //p' "$TMP/rss-only.tap" | jq -c 'keys | map(sub("/.*"; "")) | unique | map(select(test("^(heap_live|allocator)")))')" \
	'["allocator_resident_bytes"]'
finish
