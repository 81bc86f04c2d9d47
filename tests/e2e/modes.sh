#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Every way of attaching gives the same exact figures (uprobe sessions,
# multi-uprobe links, classic perf-event uprobes), and sampled mode's
# estimates land near the exact figures of the same deterministic workload.
. "$(dirname "$0")/lib.sh"
plan 97

for mode in session multi classic; do
	trace=$TMP/$mode.mtrace
	MEMTRACE_ATTACH=$mode record_cmd "$trace" "$PROGS/alloc_patterns"
	expect_eq "$mode: record exit status" $? 0
	report_json "$trace" "$TMP/$mode.json"
	expect_alloc_patterns "$TMP/$mode.json" 0 "$mode"
done
# Every attach mode gives the same stacks, frame for frame, with the same
# counts (each frame's function, line and address within its page, which
# address space randomization keeps).
stacks_of() {
	jq -r '.stack_frames as $f | .stacks[] | "\(.allocations) \(.allocated_bytes) \([.frames[] | $f[.] |
		"\(.function):\(.line):\(.address | ltrimstr("0x") | .[-3:])"] | join(" "))"' "$1" | sort
}
n=$(stacks_of "$TMP/session.json" | grep -c ' main:')
if [ "$n" -ge 10 ]; then ok "session: $n stacks reach main"; else not_ok "session: $n stacks reach main (10 or more expected)"; fi
for mode in multi classic; do
	if diff <(stacks_of "$TMP/session.json") <(stacks_of "$TMP/$mode.json") >"$TMP/stacks.diff"; then
		ok "$mode: the stacks and their counts of a session"
	else
		not_ok "$mode: stacks differ from a session's: $(head -c 300 "$TMP/stacks.diff")"
	fi
done
MEMTRACE_ATTACH=classic timeout 60 "$MEMTRACE" record -v -o "$TMP/v.mtrace" -- "$PROGS/alloc_patterns" \
	>/dev/null 2>"$TMP/v.err"
expect_eq "classic: -v names the attach mode" "$(grep -c 'attached with uprobes$' "$TMP/v.err")" 1

# make bench's row R (--empty-probes=record), the least an exact recorder
# does: a record with its time at each malloc's return and each free,
# nothing else. heap_workload makes 200000 of each, none nested. R is built of
# uprobe sessions: another attach mode is refused with one line, and no trace.
timeout 60 "$MEMTRACE" record --empty-probes=record -o "$TMP/least.mtrace" -- "$PROGS/heap_workload" >/dev/null 2>&1
expect_eq "R: record exit status" $? 0
report_json "$TMP/least.mtrace" "$TMP/least.json"
expect_eq "R: allocations" "$(jqr "$TMP/least.json" .totals.allocations)" 200000
expect_eq "R: frees" "$(jqr "$TMP/least.json" .totals.frees)" 200000
expect_eq "R: nothing leaked" "$(jqr "$TMP/least.json" .totals.leaked_allocations)" 0
MEMTRACE_ATTACH=multi timeout 60 "$MEMTRACE" record --empty-probes=record -o "$TMP/least_multi.mtrace" \
	-- "$PROGS/heap_workload" >/dev/null 2>"$TMP/least_multi.err"
expect_eq "R, multi-uprobe links: refused" $? 1
expect_eq "R, multi-uprobe links: one line says why" \
	"$(grep -c '^memtrace: --empty-probes=record needs uprobe sessions' "$TMP/least_multi.err") $(wc -l <"$TMP/least_multi.err")" "1 1"
expect_eq "R, multi-uprobe links: no trace" "$(ls "$TMP/least_multi.mtrace" 2>/dev/null | wc -l)" 0

# heap_workload: 200000 allocations, 40683789 bytes, peak 27117795 (exact,
# see tests/progs/heap_workload.c). A sample every 16 KiB on average keeps
# about one allocation in 80 (some 2,500 samples). A block of SIZE bytes is
# sampled with probability p = 1 - exp(-SIZE / 16384) and weighs 1/p
# (replay.c), so an estimate's variance is the sum over the blocks of
# x^2 (1 - p) / p, x the block's bytes (or 1 for the count): from the
# program's own sizes (its LCG, replayed here; the replica's sums must be
# the exact figures) the standard errors are 2.0% of the bytes, 2.9% of the
# count and 2.4% of the peak (the 100000 blocks live at its end). Each
# estimate must be within 3 of them (99.7% of runs; the sampler's stratified
# gaps make it tighter still).
sampled_se=$(python3 - <<'PY'
import math
T, state, build, churn = 16384, 12345, [], []
def lcg():
    global state
    state = (state * 1103515245 + 12345) & 0xffffffff
    return state >> 8
for i in range(100000):
    size = 16 + lcg() % 512
    build.append(size // 8 * 8 if i % 8 == 0 else size)  # calloc(size / 8, 8)
for i in range(100000):
    churn.append(8 + lcg() % 256)
def se(sizes, x):
    return math.sqrt(sum(x(s) ** 2 * math.exp(-s / T) / -math.expm1(-s / T) for s in sizes))
every = build + churn
print(len(every), sum(every), sum(build), round(se(every, lambda s: 1)), round(se(every, lambda s: s)), round(se(build, lambda s: s)))
PY
)
read -r rn rb rp se_n se_b se_p <<<"$sampled_se"
expect_eq "heap_workload's sizes replayed: its allocations, bytes and peak" "$rn $rb $rp" "200000 40683789 27117795"
echo "# sampled: standard errors $se_n allocations, $se_b bytes, $se_p bytes of the peak"
# within3 LABEL ESTIMATE TRUTH SE: |ESTIMATE - TRUTH| <= 3 SE
within3() {
	if [[ $2 =~ ^[0-9]+$ ]] && awk -v e="$2" -v t="$3" -v se="$4" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(d <= 3 * se) }'; then
		ok "$1: $2 within 3 standard errors ($4) of $3"
	else
		not_ok "$1: $2 not within 3 standard errors (3 x $4) of $3"
	fi
}
record_cmd "$TMP/sampled.mtrace" "$PROGS/heap_workload"
expect_eq "sampled: record exit status" $? 0
timeout 60 "$MEMTRACE" record --sample=16K -o "$TMP/s16.mtrace" -- "$PROGS/heap_workload" >/dev/null 2>&1
expect_eq "sampled --sample=16K: record exit status" $? 0
report_json "$TMP/s16.mtrace" "$TMP/s16.json"
within3 "sampled: allocated_bytes estimate" "$(jqr "$TMP/s16.json" .totals.allocated_bytes)" 40683789 "$se_b"
within3 "sampled: peak_bytes estimate" "$(jqr "$TMP/s16.json" .totals.peak_bytes)" 27117795 "$se_p"
within3 "sampled: allocations estimate" "$(jqr "$TMP/s16.json" .totals.allocations)" 200000 "$se_n"
expect_eq "sampled: nothing leaked" "$(jqr "$TMP/s16.json" .totals.leaked_bytes)" 0
expect_eq "sampled: report says the figures are estimates" \
	"$("$MEMTRACE" report "$TMP/s16.mtrace" | grep -c '^NOTE: sampled')" 1
exact_size=$(stat -c %s "$TMP/sampled.mtrace")
sampled_size=$(stat -c %s "$TMP/s16.mtrace")
if [ "$sampled_size" -lt $((exact_size / 10)) ]; then
	ok "sampled trace is under a tenth of the exact one ($sampled_size of $exact_size bytes)"
else
	not_ok "sampled trace is $sampled_size bytes, the exact one $exact_size"
fi
# Lanes (bpf/memtrace_abi.h): allocation and free records go through a
# per-CPU lane the recorder maps, and through the ring buffer when the lane is
# full. The same exact figures with lanes of the default size, with 4 KiB
# lanes that overflow all the time (records of one CPU split between the two,
# put back in time order), and with none.
for lane in default 4096 0; do
	if [ "$lane" = default ]; then
		timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/lane-$lane.mtrace" -- "$PROGS/heap_workload" \
			>/dev/null 2>"$TMP/lane.err"
	else
		MEMTRACE_LANE_BYTES=$lane timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/lane-$lane.mtrace" \
			-- "$PROGS/heap_workload" >/dev/null 2>"$TMP/lane.err"
	fi
	expect_eq "lanes $lane: record exit status" $? 0
	report_json "$TMP/lane-$lane.mtrace" "$TMP/lane-$lane.json"
	expect_eq "lanes $lane: allocations" "$(jqr "$TMP/lane-$lane.json" .totals.allocations)" 200000
	expect_eq "lanes $lane: allocated bytes" "$(jqr "$TMP/lane-$lane.json" .totals.allocated_bytes)" 40683789
	expect_eq "lanes $lane: peak bytes" "$(jqr "$TMP/lane-$lane.json" .totals.peak_bytes)" 27117795
	expect_eq "lanes $lane: frees" "$(jqr "$TMP/lane-$lane.json" .totals.frees)" 200000
	expect_eq "lanes $lane: nothing leaked" "$(jqr "$TMP/lane-$lane.json" .totals.leaked_bytes)" 0
	expect_eq "lanes $lane: nothing dropped" "$(jqr "$TMP/lane-$lane.json" .totals.dropped_events)" 0
	split=$(sed -n 's/^memtrace: \([0-9]*\) allocation and free records by the lanes, \([0-9]*\) by the ring buffers$/\1 \2/p' \
		"$TMP/lane.err")
	read -r by_lane by_ring <<<"${split:-x x}"
	expect_eq "lanes $lane: -v counts every record once" "$((by_lane + by_ring))" 400000
	case $lane in
	# a record goes by the ring when its CPU's lane is in use by a preempted probe: rare
	default)
		if [ "$by_lane" -ge 390000 ]; then ok "lanes: $by_lane of 400000 records by the lanes"; else
			not_ok "lanes: $by_lane of 400000 records by the lanes"; fi ;;
	4096)
		if [ "$by_lane" -gt 0 ] && [ "$by_ring" -gt 0 ]; then ok "lanes 4096: records by both ($by_lane, $by_ring)"; else
			not_ok "lanes 4096: records by both ($by_lane, $by_ring)"; fi ;;
	0) expect_eq "lanes $lane: every record by the ring buffers" "$by_ring" 400000 ;;
	esac
done
# --sample=1 samples every block with probability ~1 (weight 1 for any block
# of 8 bytes or more): the sampled path, with its nesting rules for operator
# new/delete and realloc, must then give the exact figures: an exact
# recording's, which are the program's own (tests/golden's anchors), so two
# recordings that failed alike cannot compare equal.
declare -A truth=(
	[alloc_patterns]="56 48 8400544 8393460 4852"
	[cxx_new_delete]="19 15 74964 74964 72752"
)
for prog in cxx_new_delete alloc_patterns; do
	timeout 60 "$MEMTRACE" record --sample=1 -o "$TMP/one-$prog.mtrace" -- "$PROGS/$prog" >/dev/null 2>"$TMP/one.err"
	expect_status "$prog --sample=1: record exit status" $? 0 "$TMP/one.err"
	record_cmd "$TMP/exact-$prog.mtrace" "$PROGS/$prog"
	expect_status "$prog exact: record exit status" $? 0 "$TMP/err"
	report_json "$TMP/one-$prog.mtrace" "$TMP/one-$prog.json"
	report_json "$TMP/exact-$prog.mtrace" "$TMP/exact-$prog.json"
	expect_eq "$prog exact: totals (allocations frees bytes peak leaked_bytes), the program's own" \
		"$(jq -r '.totals | "\(.allocations) \(.frees) \(.allocated_bytes) \(.peak_bytes) \(.leaked_bytes)"' "$TMP/exact-$prog.json")" \
		"${truth[$prog]}"
	for f in allocations frees allocated_bytes peak_bytes leaked_bytes; do
		expect_eq "$prog --sample=1: totals.$f as exact" "$(jqr "$TMP/one-$prog.json" .totals.$f)" \
			"$(jqr "$TMP/exact-$prog.json" .totals.$f)"
	done
done
# --stack-depth 0: an outermost malloc, calloc or memalign that cannot call
# another probed function carries its size to its return in the session's
# cookie, with no thread state (bpf/memtrace.bpf.c); calls nested in realloc,
# calloc or operator new must still count once. The same totals in every mode
# as with stacks, on alloc_patterns (every allocation function), cxx_new_delete
# (new calling malloc) and threads (4 threads at once; its peak depends on
# how the threads interleave, so not compared).
totals='"\(.allocations) \(.frees) \(.allocated_bytes) \(.leaked_allocations) \(.leaked_bytes) \(.temporary_allocations) \(.unmatched_frees) \(.dropped_events)"'
record_cmd "$TMP/exact-threads.mtrace" "$PROGS/threads"
report_json "$TMP/exact-threads.mtrace" "$TMP/exact-threads.json"
for mode in session multi classic; do
	for prog in alloc_patterns cxx_new_delete threads; do
		MEMTRACE_ATTACH=$mode timeout -k 5 "$LIMIT" "$MEMTRACE" record --stack-depth 0 -o "$TMP/d0-$mode-$prog.mtrace" \
			-- "$PROGS/$prog" >/dev/null 2>&1
		expect_eq "$mode --stack-depth 0 $prog: record exit status" $? 0
		report_json "$TMP/d0-$mode-$prog.mtrace" "$TMP/d0-$mode-$prog.json"
		expect_eq "$mode --stack-depth 0 $prog: totals as with stacks" \
			"$(jq -r ".totals | $totals" "$TMP/d0-$mode-$prog.json")" \
			"$(jq -r ".totals | $totals" "$TMP/exact-$prog.json")"
		[ "$prog" = threads ] ||
			expect_eq "$mode --stack-depth 0 $prog: peak as with stacks" "$(jqr "$TMP/d0-$mode-$prog.json" .totals.peak_bytes)" \
				"$(jqr "$TMP/exact-$prog.json" .totals.peak_bytes)"
	done
done
# The verifier's work is paid by every attach, before the target runs: a
# bounded loop whose states do not merge multiplies it (a template check
# that kept one more value per word took it from 29 k to 275 k instructions,
# 20 to 230 ms; the templates' loops of WALK_WORDS steps and the frame-pointer
# walk inlined in its caller were 24 k of 40 k). An instruction count, not a
# time: 14 k is 1.5 times this object's count on kernel 6.18 (9.3 k).
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/verify.mtrace" -- true >/dev/null 2>"$TMP/verify.err"
insns=$(sed -n 's/^memtrace: BPF programs verified in [0-9.]* ms (\([0-9]*\) instructions processed)$/\1/p' "$TMP/verify.err")
if [ -n "$insns" ] && [ "$insns" -le 14000 ]; then
	ok "the verifier processed $insns instructions for the whole load (at most 14000)"
else
	not_ok "the verifier processed '${insns:-?}' instructions for the whole load (at most 14000): $(tail -1 "$TMP/verify.err")"
fi
finish
