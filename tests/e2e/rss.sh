#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --rss: the target's resident memory beside its live heap, on
# tests/progs/rss_known, whose memory has known parts (64 MiB of heap of
# which 16 MiB touched, 32 MiB mapped outside malloc and touched) and which
# prints its own RssAnon while it holds still: the samples must agree with
# it, and the live heap at each sample must be the program's exactly.
. "$(dirname "$0")/lib.sh"
plan 65

MiB=$((1 << 20))

# --- -- CMD: from the program's start to its exit
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -o "$TMP/a.mtrace" -- "$PROGS/rss_known" 1000 >"$TMP/out" 2>"$TMP/err"
expect_status "-- CMD: memtrace exit status" $? 0 "$TMP/err"
anon_kb=$(sed -n 's/^rss_known .*anon_kb=\([0-9]*\)$/\1/p' "$TMP/out")
[ -n "$anon_kb" ] && ok "rss_known printed its own RssAnon: $anon_kb kB" || not_ok "rss_known printed no RssAnon: $(cat "$TMP/out")"
report_json "$TMP/a.mtrace" "$TMP/a.json"
expect_eq "-- CMD: report --json exit status" $? 0
n=$(jqr "$TMP/a.json" '.rss.samples')
# about 11; at least 5 leaves room for a loaded host's late polls
if [ "${n:-0}" -ge 5 ] 2>/dev/null; then ok "samples every 100 ms over the 1 s hold: $n"; else not_ok "samples: got '$n', want at least 5"; fi
expect_eq "the series holds every sample" "$(jqr "$TMP/a.json" '.rss.series | length')" "$n"
expect_eq "the series is in time order" "$(jqr "$TMP/a.json" '[.rss.series[][0]] | . == sort')" true
expect_eq "heap_known (every allocation recorded)" "$(jqr "$TMP/a.json" '.rss.heap_known')" true
# The hold ends with the frees just before the exit: a sample may fall
# between them (it did once in CI), and then the last sample's heap is 0.
expect_eq "live heap at the last sample that held the block: the program's one 64 MiB block" \
	"$(jqr "$TMP/a.json" '[.rss.series[][4] | select(. > 0)] | last')" $((64 * MiB))
last_heap=$(jqr "$TMP/a.json" '.rss.last.heap_bytes')
if [ "$last_heap" = $((64 * MiB)) ] || [ "$last_heap" = 0 ]; then
	ok "live heap at the last sample: the block, or nothing after the program freed it ($last_heap)"
else
	not_ok "live heap at the last sample: got '$last_heap', want the 64 MiB block or 0"
fi
expect_eq "live heap at the first sample (before main)" "$(jqr "$TMP/a.json" '.rss.first.heap_bytes')" 0
expect_within_pct "anon at the peak against the program's own RssAnon" \
	"$(jqr "$TMP/a.json" '.rss.peak.anon_bytes')" $((anon_kb * 1024)) 5
expect_within_pct "anon grown from the first sample to the peak: 16 MiB touched + 32 MiB mapped" \
	"$(jqr "$TMP/a.json" '.rss.peak.anon_bytes - .rss.first.anon_bytes')" $((48 * MiB)) 5
expect_eq "resident_bytes = anon + file + shmem" \
	"$(jqr "$TMP/a.json" '.rss.last | .resident_bytes == .anon_bytes + .file_bytes + .shmem_bytes')" true
expect_eq "the peak is the series' largest sample" \
	"$(jqr "$TMP/a.json" '([.rss.series[] | .[1] + .[2] + .[3]] | max) == .rss.peak.resident_bytes')" true
expect_eq "smaps_rollup at the start, with its Rss line" "$(jqr "$TMP/a.json" '.rss.rollup_start.lines.Rss > 0')" true
expect_eq "no smaps_rollup at the end of a target that exited" "$(jqr "$TMP/a.json" '.rss.rollup_end')" null
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/a.mtrace" >"$TMP/a.txt" 2>&1
if grep -q "^Resident memory (--rss: $n samples, every 100 ms" "$TMP/a.txt"; then ok "text report: Resident memory section"; else not_ok "text report has no Resident memory section"; fi
if grep -q "^      of it not resident (never touched, swapped) *4[78]\.[0-9] MiB" "$TMP/a.txt"; then ok "text report: 48 MiB of heap never touched is said"; else not_ok "text report says nothing of the untouched heap"; fi
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/a.html" "$TMP/a.mtrace" 2>"$TMP/html.err"
expect_status "report --html exit status" $? 0 "$TMP/html.err"
sed -n '/<script type="application\/json" id="memtrace-data">/,/<\/script>/p' "$TMP/a.html" | sed '1d;$d' >"$TMP/a.data"
expect_eq "the HTML page carries every sample" "$(jq '.rss.series | length' "$TMP/a.data")" "$n"
# rendered by Debian's chromium: the script ran, both resident lines drawn, the note says the figures
if command -v chromium >/dev/null; then
	timeout -k 5 120 chromium --headless --no-sandbox --disable-gpu --window-size=1200,900 --virtual-time-budget=3000 \
		--dump-dom "file://$TMP/a.html" >"$TMP/dom.html" 2>/dev/null
	expect_eq "rendered page: the script ran" "$(grep -o 'data-status="[^"]*"' "$TMP/dom.html" | head -n1)" 'data-status="ok"'
	expect_eq "rendered page: resident and anonymous lines on the chart" \
		"$(grep -o 'class="rss-line"\|class="rss-anon-line"' "$TMP/dom.html" | sort | tr '\n' ' ')" 'class="rss-anon-line" class="rss-line" '
	want_heap="64.0 MiB"
	[ "$last_heap" = 0 ] && want_heap="0 B"
	# the last sample may catch the program as it ends, its anonymous memory going: any unit
	if grep -q "At the last sample: resident [0-9.]* [KMG]\{0,1\}i\{0,1\}B, anonymous [0-9.]* [KMG]\{0,1\}i\{0,1\}B, live heap $want_heap" "$TMP/dom.html"; then
		ok "rendered page: the chart's note gives the last sample"
	else
		not_ok "rendered page: no last sample in the chart's note"
	fi
else
	not_ok "chromium missing (tests/install-deps.sh installs it): the rendered page went unchecked"
	skips 2 "no chromium to render the page"
fi

# --- the calls that map memory, with their stacks
expect_eq "-- CMD: anonymous memory mapped outside malloc, still mapped at the end (unmapped before exit)" \
	"$(jqr "$TMP/a.json" '.rss.maps.outside_bytes')" 0
expect_eq "-- CMD: ... at most: the program's 32 MiB mmap" "$(jqr "$TMP/a.json" '.rss.maps.outside_peak_bytes')" $((32 * MiB))
if [ "$(jqr "$TMP/a.json" '.rss.maps.calls.munmap')" -ge 2 ] 2>/dev/null; then ok "-- CMD: munmap seen (the program's and free's of the 64 MiB block)"; else not_ok "-- CMD: munmap calls: $(jqr "$TMP/a.json" '.rss.maps.calls')"; fi
# stopped while it holds: its mappings are still there, the program's at its mmap line
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -d 0.6 -o "$TMP/m.mtrace" -- "$PROGS/rss_known" 3000 >/dev/null 2>"$TMP/m.err"
expect_status "-d 0.6 -- CMD: memtrace exit status" $? 0 "$TMP/m.err"
pkill -f "^$PROGS/rss_known 3000\$" 2>/dev/null # it runs on untraced: not needed any more
report_json "$TMP/m.mtrace" "$TMP/m.json"
mline=$(grep -n 'map = mmap' "$TOP/tests/progs/rss_known.c" | cut -d: -f1)
expect_eq "mapped outside malloc and still mapped: the program's 32 MiB" "$(jqr "$TMP/m.json" '.rss.maps.outside_bytes')" $((32 * MiB))
expect_eq "... by one site: main at the mmap line, one mapping" \
	"$(jq -c '[.rss.maps.sites[] | [.function, .line, .mappings, .bytes]]' "$TMP/m.json")" "[[\"main\",$mline,1,$((32 * MiB))]]"
a=$(jqr "$TMP/m.json" '.rss.maps.allocator_bytes')
if [ "${a:-0}" -ge $((64 * MiB)) ] && [ "$a" -le $((64 * MiB + 8192)) ]; then ok "the allocator's own mmap: the 64 MiB block and its header ($a)"; else not_ok "the allocator's mmap'd bytes: got '$a', want 64 MiB and a page"; fi
# Without stacks the allocator's mappings are told by the allocator call open
# when they were made: the probes keep the thread's state for every call under --rss.
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss --stack-depth 0 -d 0.6 -o "$TMP/m0.mtrace" -- "$PROGS/rss_known" 3000 \
	>/dev/null 2>"$TMP/m0.err"
expect_status "--stack-depth 0 -d 0.6 -- CMD: memtrace exit status" $? 0 "$TMP/m0.err"
pkill -f "^$PROGS/rss_known 3000\$" 2>/dev/null
report_json "$TMP/m0.mtrace" "$TMP/m0.json"
expect_eq "--stack-depth 0: mapped outside malloc and still mapped: the program's 32 MiB" \
	"$(jqr "$TMP/m0.json" '.rss.maps.outside_bytes')" $((32 * MiB))
a=$(jqr "$TMP/m0.json" '.rss.maps.allocator_bytes')
if [ "${a:-0}" -ge $((64 * MiB)) ] && [ "$a" -le $((64 * MiB + 8192)) ]; then ok "--stack-depth 0: the allocator's own mmap, by the open call ($a)"; else not_ok "--stack-depth 0: the allocator's mmap'd bytes: got '$a', want 64 MiB and a page"; fi
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/m.mtrace" >"$TMP/m.txt" 2>&1
if grep -q "^      32.0 MiB  1 mapping  main  .*rss_known.c:$mline" "$TMP/m.txt"; then ok "text report: the mapping's site"; else not_ok "text report: no mapping site line"; fi

# --- -p: joined while it holds, stopped after 1 s: both rollups
"$PROGS/rss_known" 4000 >"$TMP/out2" &
target=$!
expect_line "$TMP/out2" "rss_known " 10 "rss_known did not start"
anon_kb=$(sed -n 's/^rss_known .*anon_kb=\([0-9]*\)$/\1/p' "$TMP/out2")
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -p "$target" -d 1 -o "$TMP/b.mtrace" 2>"$TMP/err2"
expect_eq "-p: memtrace exit status" $? 0
wait "$target"
report_json "$TMP/b.mtrace" "$TMP/b.json"
n=$(jqr "$TMP/b.json" '.rss.samples')
if [ "${n:-0}" -ge 6 ] 2>/dev/null; then ok "-p -d 1: samples $n"; else not_ok "-p -d 1: samples: got '$n', want at least 6"; fi
expect_within_pct "-p: anon at the last sample against the program's own" "$(jqr "$TMP/b.json" '.rss.last.anon_bytes')" $((anon_kb * 1024)) 5
expect_within_pct "-p: smaps_rollup's Anonymous at the end against the program's own RssAnon" \
	"$(jqr "$TMP/b.json" '.rss.rollup_end.lines.Anonymous')" $((anon_kb * 1024)) 5
expect_eq "-p: the rollups in order" "$(jqr "$TMP/b.json" '.rss.rollup_start.time_ns < .rss.rollup_end.time_ns')" true

# --- top: the latest sample in each snapshot
"$PROGS/rss_known" 3000 >"$TMP/out3" &
target=$!
expect_line "$TMP/out3" "rss_known " 10 "rss_known did not start"
anon_kb=$(sed -n 's/^rss_known .*anon_kb=\([0-9]*\)$/\1/p' "$TMP/out3")
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json --rss -i 0.5 -d 1 -p "$target" >"$TMP/top.jsonl" 2>"$TMP/top.err"
expect_status "top --rss: exit status" $? 0 "$TMP/top.err"
wait "$target"
expect_within_pct "top --batch --json --rss: anon of the first snapshot against the program's own" \
	"$(head -n1 "$TMP/top.jsonl" | jq '.rss.anon_bytes')" $((anon_kb * 1024)) 5

# --- diff: resident memory compared when both traces have it
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json "$TMP/a.mtrace" "$TMP/b.mtrace" >"$TMP/d.json" 2>"$TMP/d.err"
expect_status "diff --json: exit status" $? 0 "$TMP/d.err"
expect_eq "diff --json: rss.last_anon_bytes, base and new" \
	"$(jq -c '.rss.last_anon_bytes | [.a, .b, .delta == .b - .a]' "$TMP/d.json")" \
	"$(jq -c '[.rss.last.anon_bytes]' "$TMP/a.json" | tr -d ']'),$(jq -c '.rss.last.anon_bytes' "$TMP/b.json"),true]"
timeout -k 5 "$LIMIT" "$MEMTRACE" diff "$TMP/a.mtrace" "$TMP/b.mtrace" >"$TMP/d.txt" 2>&1
if grep -q '^  resident at its peak ' "$TMP/d.txt"; then ok "diff: resident memory rows"; else not_ok "diff: no resident memory rows"; fi

# --- --rss=only: no allocator probes, resident memory and the calls that map memory alone
"$PROGS/rss_known" 3000 >"$TMP/out5" &
target=$!
expect_line "$TMP/out5" "rss_known " 10 "rss_known did not start"
anon_kb=$(sed -n 's/^rss_known .*anon_kb=\([0-9]*\)$/\1/p' "$TMP/out5")
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=only -p "$target" -d 0.6 -o "$TMP/o.mtrace" 2>"$TMP/o.err"
expect_status "--rss=only: exit status" $? 0 "$TMP/o.err"
kill "$target" 2>/dev/null
wait "$target" 2>/dev/null
if grep -q "^memtrace: attached to PID $target (rss_known): --rss=only, no allocator probes" "$TMP/o.err"; then ok "--rss=only: says no allocator probes"; else not_ok "--rss=only: attach line: $(head -n1 "$TMP/o.err")"; fi
report_json "$TMP/o.mtrace" "$TMP/o.json"
expect_eq "--rss=only: trace.no_heap, rss.heap_known, allocations" \
	"$(jq -c '[.trace.no_heap, .rss.heap_known, .totals.allocations]' "$TMP/o.json")" '[true,false,0]'
expect_within_pct "--rss=only: anon at the last sample against the program's own" "$(jqr "$TMP/o.json" '.rss.last.anon_bytes')" $((anon_kb * 1024)) 5
expect_eq "--rss=only: the calls that map memory are traced (none made while it held)" "$(jq -c '.rss.maps.calls' "$TMP/o.json")" \
	'{"mmap":0,"munmap":0,"brk":0,"mremap":0,"madvise":0}'
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=only -o "$TMP/o2.mtrace" -- "$PROGS/rss_known" 300 >/dev/null 2>"$TMP/o2.err"
report_json "$TMP/o2.mtrace" "$TMP/o2.json"
expect_eq "--rss=only -- CMD: the program's 32 MiB mmap, with no allocator probe" \
	"$(jq -c '[.totals.allocations, .rss.maps.outside_peak_bytes]' "$TMP/o2.json")" "[0,$((32 * MiB))]"
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=often -p "$$" -d 1 -o "$TMP/x.mtrace" 2>"$TMP/x.err"
expect_eq "--rss=often: refused with status 2" $? 2
if [ ! -e "$TMP/x.mtrace" ] && grep -q "^memtrace: invalid --rss=often; give --rss" "$TMP/x.err"; then ok "--rss=often: one line, no file"; else not_ok "--rss=often: $(cat "$TMP/x.err")"; fi
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=only --budget 5 -p "$$" -o "$TMP/x.mtrace" 2>"$TMP/x.err"
expect_eq "--rss=only with --budget: refused with status 2" $? 2

# --- how the calls that map memory are caught: kretprobes where the kernel
# has kprobes; else at the C library's wrappers (no host-wide syscall
# tracepoint), and for a program without a C library at every syscall's
# return. The same figures each way: the static program's own map calls, as
# strace counts them. A host runs one of the two ways: the other is a skip
# that says so, so a run that never saw the other way shows it.
if [ -e /sys/bus/event_source/devices/kprobe/type ] || [ -e /sys/kernel/tracing/kprobe_events ]; then
	dyn="by kretprobes on the syscalls" static="by kretprobes on the syscalls"
	skip "the C library's wrappers and the syscall-return path: this kernel has kprobes, so they do not run here"
else
	dyn="at the C library's wrappers" static="at every syscall's return"
	skip "the kretprobe path: this kernel has no kprobes (no /sys/bus/event_source/devices/kprobe), so the C library's wrappers and the syscall returns are what runs here"
fi
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v --rss -o "$TMP/w.mtrace" -- "$PROGS/rss_known" 0 >/dev/null 2>"$TMP/w.err"
expect_eq "-v: a dynamic program's calls caught $dyn" \
	"$(grep -c "^memtrace: --rss: the calls that map memory caught $dyn" "$TMP/w.err")" 1
report_json "$TMP/w.mtrace" "$TMP/w.json"
expect_eq "... its 32 MiB mmap outside malloc seen" "$(jqr "$TMP/w.json" '.rss.maps.outside_peak_bytes')" $((32 * MiB))
# the truth from a peer, as for the static program below: strace's count of
# the same program's calls, each by the code that made it (-k: the first
# frame under the call). By kretprobes every call; at the wrappers those the
# C library made (the dynamic linker's own, before any wrapper is reached,
# are not there: 10 of 16 here)
all=0
[ "$dyn" = "by kretprobes on the syscalls" ] && all=1
timeout -k 5 "$LIMIT" strace -f -qq -k -e trace=mmap,munmap,brk,mremap -o "$TMP/w.strace" "$PROGS/rss_known" 0 >/dev/null
want=$(awk -v all=$all '/^[0-9]+ +(mmap|munmap|brk|mremap)\(/ { call = $2; sub(/\(.*/, "", call); getline
	if (all || $0 !~ /ld-linux/) n[call]++ } END { printf "%d %d %d %d", n["mmap"], n["munmap"], n["brk"], n["mremap"] }' "$TMP/w.strace")
expect_eq "... its map calls, as strace counts those $([ $all = 1 ] && echo "it made" || echo "the C library made") (mmap munmap brk mremap)" \
	"$(jq -r '.rss.maps.calls | "\(.mmap) \(.munmap) \(.brk) \(.mremap)"' "$TMP/w.json")" "$want"
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v --rss -o "$TMP/s.mtrace" -- "$PROGS/alloc_patterns_static" >/dev/null 2>"$TMP/s.err"
expect_eq "-v: a static program's calls caught $static" \
	"$(grep -c "^memtrace: --rss: the calls that map memory caught $static" "$TMP/s.err")" 1
report_json "$TMP/s.mtrace" "$TMP/s.json"
# the truth from a peer: the same program's calls as strace sees them (all succeed)
timeout -k 5 "$LIMIT" strace -f -qq -e trace=mmap,munmap,brk,mremap -o "$TMP/s.strace" "$PROGS/alloc_patterns_static" >/dev/null
want=$(awk '/ mmap\(/ { m++ } / munmap\(/ { u++ } / brk\(/ { b++ } / mremap\(/ { r++ } END { printf "%d %d %d %d", m, u, b, r }' "$TMP/s.strace")
expect_eq "... its map calls, as strace counts them (mmap munmap brk mremap)" \
	"$(jq -r '.rss.maps.calls | "\(.mmap) \(.munmap) \(.brk) \(.mremap)"' "$TMP/s.json")" "$want"

# --- without --rss: nothing sampled
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/c.mtrace" -- "$PROGS/rss_known" 0 >/dev/null 2>&1
report_json "$TMP/c.mtrace" "$TMP/c.json"
expect_eq "without --rss: rss is null" "$(jqr "$TMP/c.json" '.rss')" null
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json "$TMP/a.mtrace" "$TMP/c.mtrace" >"$TMP/d2.json" 2>/dev/null
expect_eq "diff --json against a trace without --rss: rss is null" "$(jq -c '.rss' "$TMP/d2.json")" null
timeout -k 5 "$LIMIT" "$MEMTRACE" diff "$TMP/a.mtrace" "$TMP/c.mtrace" >"$TMP/d2.txt" 2>&1
if grep -q 'only the base trace was recorded with --rss' "$TMP/d2.txt"; then ok "diff: says only one side has --rss"; else not_ok "diff: silent about the missing --rss side"; fi
finish
