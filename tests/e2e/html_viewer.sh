#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The HTML viewer in a real browser: Debian's chromium driven through
# chromium-driver by python3-selenium (html_viewer.py), headless. It opens
# report --html of tests/progs/threads, types into the search box, sorts the
# site table, selects each thread and time ranges dragged on the chart and
# checks the totals and the size histogram against report --json and
# threads.c's known figures, selects each zone of tests/progs/marks against
# report --json's zone figures, switches to bottom-up, and opens diff --html of
# diff_growth 1 against 5. Screenshots at 800 and 1920 px wide are kept in
# build/html-artifacts/. When the packages are missing and cannot be
# installed (tests/install-deps.sh installs them), one failure and the rest
# skipped.
source "$(dirname "$0")/lib.sh"
plan 66

if ! [ -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
	[ "$(id -u)" = 0 ] && "$TOP/tests/install-deps.sh" >/dev/null 2>&1
	if ! [ -x /usr/bin/chromedriver ] || ! /usr/bin/python3 -c 'import selenium' 2>/dev/null; then
		not_ok "chromium-driver or python3-selenium missing (run tests/install-deps.sh as root): the viewer went unchecked"
		skip_rest "no chromium-driver or python3-selenium"
		finish
	fi
fi
ARTIFACTS=$TOP/build/html-artifacts
mkdir -p "$ARTIFACTS"

record_cmd "$TMP/threads.mtrace" "$PROGS/threads"
expect_eq "threads: record exit status" "$?" 0
report_json "$TMP/threads.mtrace" "$TMP/threads.json"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/threads.html" "$TMP/threads.mtrace" 2>/dev/null
expect_eq "threads: report --html exit status" "$?" 0

record_cmd "$TMP/marks.mtrace" "$PROGS/marks"
expect_eq "marks: record exit status" "$?" 0
report_json "$TMP/marks.mtrace" "$TMP/marks.json"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/marks.html" "$TMP/marks.mtrace" 2>/dev/null
expect_eq "marks: report --html exit status" "$?" 0

# bounded: 131072 distinct stacks, 2000 kept by bytes (and the one that
# leaks: the last block), the rest folded, every one of them still counted
record_cmd "$TMP/many.mtrace" "$PROGS/many_stacks" 17
expect_eq "many_stacks 17: record exit status" "$?" 0
report_json "$TMP/many.mtrace" "$TMP/many.json"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/many.html" "$TMP/many.mtrace" 2>/dev/null
expect_eq "many_stacks 17: report --html exit status" "$?" 0
size=$(stat -c %s "$TMP/many.html")
if [ "$size" -lt 5000000 ]; then ok "many_stacks 17: the page is $size bytes (< 5 MB)"; else not_ok "many_stacks 17: the page is $size bytes"; fi
sed -n '/<script type="application\/json" id="memtrace-data">/,/<\/script>/p' "$TMP/many.html" | sed '1d;$d' >"$TMP/many.data"
expect_eq "many_stacks 17: kept and folded stacks are every stack" \
	"$(jq '.view.folded.stacks + (.view.stacks | length)' "$TMP/many.data")" "$(jq '.stacks | length' "$TMP/many.json")"
expect_eq "many_stacks 17: 2001 stacks kept" "$(jq '.view.stacks | length' "$TMP/many.data")" 2001
expect_eq "many_stacks 17: the cells still count every allocation" \
	"$(jq '.view.cells as $c | [range(5; $c | length; 11) | $c[.]] | add' "$TMP/many.data")" "$(jqr "$TMP/many.json" .totals.allocations)"

diff_page=-
record_cmd "$TMP/base.mtrace" "$PROGS/diff_growth" 1
record_cmd "$TMP/new.mtrace" "$PROGS/diff_growth" 5
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --html "$TMP/diff.html" "$TMP/base.mtrace" "$TMP/new.mtrace" 2>/dev/null
expect_eq "diff --html exit status" "$?" 0
expect_eq "diff --html: the page is created 0600" "$(stat -c %a "$TMP/diff.html")" 600
diff_page=$TMP/diff.html
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --html "$TMP/diff.html" "$TMP/base.mtrace" "$TMP/new.mtrace" 2>"$TMP/diff.err"
expect_one_error "diff --html over an existing file" "$?" "$TMP/diff.err"
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json --html "$TMP/other.html" "$TMP/base.mtrace" "$TMP/new.mtrace" 2>"$TMP/diff.err"
expect_one_error "diff --json --html" "$?" "$TMP/diff.err"
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --html "$TMP/grew.html" --fail-on-growth=1K "$TMP/base.mtrace" "$TMP/new.mtrace" 2>/dev/null
expect_eq "diff --html --fail-on-growth=1K: exit 3 (grew by 4016 bytes), the page written" "$? $(test -s "$TMP/grew.html" && echo written)" "3 written"

timeout -k 5 120 /usr/bin/python3 "$TOP/tests/e2e/html_viewer.py" "$TMP/threads.html" "$TMP/threads.json" \
	"$TMP/marks.html" "$TMP/marks.json" "$diff_page" "$ARTIFACTS" >"$TMP/tap" 2>"$TMP/py.err"
status=$?
cat "$TMP/tap"
FAILS=$((FAILS + $(grep -c '^not ok' "$TMP/tap")))
# its checks count in this script's plan
for _ in $(seq "$(grep -c '^ok\|^not ok' "$TMP/tap")"); do printf . >>"$CHECKS"; done
if grep -q '^# html_viewer.py: every check ran' "$TMP/tap"; then
	ok "html_viewer.py ran every check"
else
	not_ok "html_viewer.py ran every check (exit $status): $(tail -n 1 "$TMP/py.err")"
fi
for f in report-800 report-1920; do
	expect_eq "screenshot $f.png kept" "$(od -An -tx1 -N8 "$ARTIFACTS/$f.png" 2>/dev/null | tr -d ' \n')" 89504e470d0a1a0a
done
finish
