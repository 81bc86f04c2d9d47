#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace report --html on fresh recordings of tests/progs/demo and
# tests/progs/marks, loaded in headless Chromium: the page is self-contained,
# its embedded data is the report's (the viewer's cells add up to its
# totals), its script runs without a console
# message and draws the memory chart, the flame graph (driven by the page's
# #selftest: tooltip, click-to-zoom, reset, the five metrics) and the
# tables; a screenshot has the size of a drawn page. A command line holding
# "</script>" stays text. When Chromium is missing and cannot be installed
# (tests/install-deps.sh installs it), one failure and the rest skipped. SCREENSHOT_DIR=DIR
# keeps the screenshot there, to look at.
source "$(dirname "$0")/lib.sh"
plan 71

find_chromium() { command -v chromium || command -v chromium-browser || command -v google-chrome; }
CHROMIUM=$(find_chromium)
if [ -z "$CHROMIUM" ] && [ "$(id -u)" = 0 ] && [ -n "${TOP:-}" ]; then
	"$TOP/tests/install-deps.sh" >/dev/null 2>&1
	CHROMIUM=$(find_chromium)
fi
if [ -z "$CHROMIUM" ]; then
	not_ok "chromium is not installed and could not be (run tests/install-deps.sh as root): the HTML report went unchecked"
	skip_rest "no chromium"
	finish
fi

# chromium URL [FLAGS...]: headless, offline, a fresh profile; stdout and
# stderr as the flags make them.
chromium() {
	local url=$1 profile
	shift
	profile=$(mktemp -d "$TMP/profile.XXXXXX")
	timeout -k 5 "$LIMIT" "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--disable-quic --no-first-run --disable-background-networking --disable-component-update \
		--disable-sync --user-data-dir="$profile" "$@" "$url"
}

# The JSON in the page's data element, as the page's script reads it.
page_data() { sed -n '/<script type="application\/json" id="memtrace-data">/,/<\/script>/p' "$1" | sed '1d;$d'; }

# --- demo: chart, flame graph, site and leak tables --------------------------
trace=$TMP/demo.mtrace
json=$TMP/demo.json
page=$TMP/demo.html
# the command line is shown on the page: it must stay text
record_cmd "$trace" "$PROGS/demo" '</script><b id="injected">x</b><!--'
expect_eq "demo: record exit status" "$?" 0
report_json "$trace" "$json"
expect_eq "demo: report --json exit status" "$?" 0

timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$page" "$trace" >"$TMP/out" 2>"$TMP/html.err"
expect_eq "report --html exit status" "$?" 0
expect_eq "report --html: says where it wrote" "$(cat "$TMP/html.err")" "memtrace: wrote $page"
expect_eq "report --html: nothing on stdout" "$(cat "$TMP/out")" ""
expect_eq "the page is created 0600, like the trace" "$(stat -c %a "$page")" 600
size=$(stat -c %s "$page")
cp "$page" "$TMP/before.html"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$page" "$trace" >/dev/null 2>"$TMP/html.err"
expect_one_error "report --html over an existing file" "$?" "$TMP/html.err"
expect_eq "the existing file is left as it was" "$(cmp -s "$page" "$TMP/before.html" && echo same)" same
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json --html "$TMP/other.html" "$trace" >/dev/null 2>"$TMP/html.err"
expect_one_error "report --json --html" "$?" "$TMP/html.err"

# self-contained: nothing fetched (the SVG namespace is a name, not a fetch)
expect_eq "no src= or href= in the page" "$(grep -Eci '(src|href)[[:space:]]*=' "$page")" 0
expect_eq "no URL but the SVG namespace" "$(grep -Eo 'https?://[^"'\'' )]*' "$page" | sort -u | grep -vcx 'http://www.w3.org/2000/svg')" 0
expect_eq "one data element" "$(grep -c '<script type="application/json" id="memtrace-data">' "$page")" 1
expect_eq "</script> only where a script ends (2 scripts)" "$(grep -o '</script' "$page" | wc -l)" 2
page_data "$page" >"$TMP/data.json"
expect_eq "the data is JSON" "$(jq -r type "$TMP/data.json" 2>&1)" object
for k in allocations allocated_bytes peak_bytes peak_time_ns leaked_bytes leaked_allocations; do
	expect_eq "data totals.$k = report's" "$(jqr "$TMP/data.json" ".totals.$k")" "$(jqr "$json" ".totals.$k")"
done
expect_eq "data: the series' max is the peak" "$(jq '[.series as $s | range(1; $s | length; 2) | $s[.]] | max' "$TMP/data.json")" \
	"$(jqr "$json" .totals.peak_bytes)"
n=$(jq '.series | length / 2' "$TMP/data.json")
if [ "$n" -ge 2 ] && [ "$n" -le 2000 ]; then ok "data: $n chart points (2..2000)"; else not_ok "data: $n chart points"; fi
# the viewer's cells (11 numbers each) add up to the report's totals
cells_sum() { jq ".view.cells as \$c | [range($1; \$c | length; 11) | \$c[.]] | add" "$TMP/data.json"; }
expect_eq "data: cells' allocations add up to the total" "$(cells_sum 5)" "$(jqr "$json" .totals.allocations)"
expect_eq "data: cells' allocated bytes add up to the total" "$(cells_sum 6)" "$(jqr "$json" .totals.allocated_bytes)"
expect_eq "data: cells' leaked bytes add up to the total" "$(cells_sum 8)" "$(jqr "$json" .totals.leaked_bytes)"
expect_eq "data: cells' bytes at the peak add up to the peak" "$(cells_sum 9)" "$(jqr "$json" .totals.peak_bytes)"
expect_eq "data: cells' temporary allocations add up to the total" "$(cells_sum 10)" \
	"$(jqr "$json" .totals.temporary_allocations)"
expect_eq "data: the command line, </script> and all" "$(jqr "$TMP/data.json" .trace.command)" \
	"$(jqr "$json" .trace.command)"

# Loaded in Chromium; #selftest makes the page drive its flame graph.
chromium "file://$page#selftest" --dump-dom --enable-logging=stderr --v=0 >"$TMP/dom.html" 2>"$TMP/chromium.err"
expect_eq "chromium --dump-dom exit status" "$?" 0
expect_eq "no console message (errors included)" "$(grep -c ':CONSOLE' "$TMP/chromium.err")" 0
grep ':CONSOLE' "$TMP/chromium.err" | head -n 5 | sed 's/^/# /'
expect_eq "the script finished (data-ready)" "$(grep -c '<html[^>]* data-ready="1"' "$TMP/dom.html")" 1
expect_eq "no script error (data-status)" "$(grep -o '<html[^>]* data-status="[^"]*"' "$TMP/dom.html" | grep -o 'data-status="[^"]*"')" 'data-status="ok"'
expect_eq "flame graph self-test: tooltip, zoom, reset, metrics" \
	"$(grep -o '<html[^>]* data-selftest="[^"]*"' "$TMP/dom.html" | grep -o 'data-selftest="[^"]*"')" 'data-selftest="ok"'
expect_eq "nothing injected by the command line" "$(grep -c '<b id="injected"' "$TMP/dom.html")" 0
expect_eq "the command line shows as text" "$(grep -c '&lt;/script&gt;&lt;b id="injected"&gt;' "$TMP/dom.html")" 1
expect_eq "memory chart drawn" "$(grep -c '<svg id="chart-svg"' "$TMP/dom.html")" 1
d=$(grep -o '<path class="chart-line" d="[^"]*"' "$TMP/dom.html" | tr -cd 'V' | wc -c)
if [ "$d" -ge 10 ]; then ok "chart line has $d steps"; else not_ok "chart line has $d steps"; fi
expect_eq "peak marked on the chart" "$(grep -c 'class="peak-marker"' "$TMP/dom.html")" 1
label=$(grep -o '<text class="peak-label"[^>]*>[^<]*' "$TMP/dom.html" | sed 's/.*>//')
if [[ $label =~ ^peak\ [0-9.]+\ (B|KiB|MiB)\ at\ [0-9.]+\ (ms|s)$ ]]; then ok "peak label: $label"; else not_ok "peak label: '$label'"; fi
nodes=$(grep -o 'class="fg-node[^"]*"' "$TMP/dom.html" | wc -l)
if [ "$nodes" -ge 6 ]; then ok "flame graph drawn: $nodes frames"; else not_ok "flame graph: $nodes frames"; fi
for f in all main serve_batch handle_request render_reply cache_insert parse_request; do
	expect_eq "flame graph has a frame $f" "$(grep -c "class=\"fg-node[^\"]*\"[^>]*>$f<" "$TMP/dom.html")" 1
done
expect_eq "site table lists render_reply first" \
	"$(grep -o 'id="sites"><table>.*' "$TMP/dom.html" | grep -o '<td class="fn">[^<]*' | head -n1 | sed 's/.*>//')" render_reply
expect_eq "no zone section without zones" "$(grep -c '<section id="zones-sec" hidden' "$TMP/dom.html")" 1

chromium "file://$page" --screenshot="$TMP/demo.png" --window-size=1280,1600 >/dev/null 2>&1
expect_eq "chromium --screenshot exit status" "$?" 0
expect_eq "screenshot is a 1280x1600 PNG" "$(od -An -tx1 -N24 "$TMP/demo.png" 2>/dev/null | tr -d ' \n' | cut -c1-16,33-48)" \
	"89504e470d0a1a0a0000050000000640"
shot=$(stat -c %s "$TMP/demo.png" 2>/dev/null || echo 0)
# a blank page of that size is ~10 KB; the drawn report is 150 KB and more
if [ "$shot" -gt 60000 ]; then ok "screenshot has content: $shot bytes"; else not_ok "screenshot is $shot bytes, want > 60000"; fi
[ -n "${SCREENSHOT_DIR:-}" ] && cp "$TMP/demo.png" "$SCREENSHOT_DIR/"

# --- marks: zone, frame, pool and thread tables -------------------------------
trace=$TMP/marks.mtrace
page=$TMP/marks.html
record_cmd "$trace" "$PROGS/marks"
expect_eq "marks: record exit status" "$?" 0
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$page" "$trace" >/dev/null 2>"$TMP/html.err"
expect_eq "marks: report --html exit status" "$?" 0
chromium "file://$page#selftest" --dump-dom --enable-logging=stderr --v=0 >"$TMP/dom.html" 2>"$TMP/chromium.err"
expect_eq "marks: no console message" "$(grep -c ':CONSOLE' "$TMP/chromium.err")" 0
expect_eq "marks: data-status, data-selftest" \
	"$(grep -o '<html[^>]*>' "$TMP/dom.html" | grep -o 'data-[a-z]*="[^"]*"' | sort | tr '\n' ' ')" \
	"data-range=\"0 $(jq .view.nbuckets <(page_data "$page"))\" data-ready=\"1\" data-selftest=\"ok\" data-status=\"ok\" "
for s in zones frames pools threads; do
	expect_eq "marks: $s section shown" "$(grep -c "<section id=\"$s-sec\">" "$TMP/dom.html")" 1
done
zone_rows=$(grep -o 'id="zones"><table>.*' "$TMP/dom.html" | grep -o '<td class="fn">[^<]*' | sed 's/.*>//' | sort | tr '\n' ' ')
expect_eq "marks: zone table rows" "$zone_rows" "frame job physics render shutdown update "
expect_eq "marks: frames note" "$(grep -o '<p class="note" id="frames-note">[0-9]* frame marks' "$TMP/dom.html" | sed 's/.*>//')" \
	"5 frame marks"
expect_eq "marks: frame table has the 5 frames" \
	"$(grep -o 'id="frames"><table>.*' "$TMP/dom.html" | grep -o '<tr><td class="num">' | wc -l)" 5
expect_eq "marks: pool table" "$(grep -o 'id="pools"><table>.*' "$TMP/dom.html" | grep -o '<td class="fn">[^<]*' | sed 's/.*>//' | tr '\n' ' ')" \
	"frame_arena nodes "
expect_eq "marks: thread table" "$(grep -o 'id="threads"><table>.*' "$TMP/dom.html" | grep -o '<td class="fn">[^<]*' | sed 's/.*>//' | tr '\n' ' ')" \
	"main worker-0 worker-1 "

# --- a --budget trace: the page says its figures are estimates, and its
# chart that it is not the live heap ---
timeout -k 5 "$LIMIT" "$MEMTRACE" record --budget 5 -o "$TMP/budget.mtrace" -- "$PROGS/proportions" 2 0 -1 8000 \
	>/dev/null 2>"$TMP/err"
expect_status "budget: record --budget 5 exit status" $? 0 "$TMP/err"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/budget.html" "$TMP/budget.mtrace" 2>"$TMP/err"
expect_status "budget: report --html exit status" $? 0 "$TMP/err"
chromium "file://$TMP/budget.html" --dump-dom >"$TMP/bdom.html" 2>/dev/null
expect_eq "budget: the rendered page warns its figures are estimates" \
	"$(grep -c '<p class="warn">Recorded with --budget 5%: the probes lived in [0-9]* windows' "$TMP/bdom.html")" 1
expect_eq "budget: the chart's note says it is not the live heap" \
	"$(grep -c '<p class="note">Not the live heap (--budget does not see it)' "$TMP/bdom.html")" 1

finish
