#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --follow-children on a fork storm (issue 44): tests/progs/fork_storm forks
# 2000 short children as fast as it can under `record -p PID
# --follow-children`; child i allocates 3 blocks of 100 + i % 7 bytes at
# storm_block as its first act, frees the first and exits. Every child must
# get a trace of its own with exactly those 3 allocations, 1 free and its 2
# blocks leaked: none missed, none lost to probes attached late (a block
# allocated before they were live would be missing), none given another's
# figures. The sizes' histogram says each size class came as often as the
# program made it (child i's class is i % 7). How long the storm takes
# against untraced is make bench's (bench/attach.sh), not this test's.
. "$(dirname "$0")/lib.sh"
plan 15

N=${FORK_STORM_N:-2000}
cd "$TMP" || exit 1

"$PROGS/fork_storm" wait "$N" >"$TMP/out" &
target=$!
wait_exec "$target" "$PROGS/fork_storm"
timeout -k 5 300 "$MEMTRACE" record -p "$target" --follow-children -o storm.mtrace 2>"$TMP/err" &
rec=$!
if wait_for_line "$TMP/err" "memtrace: attached" 20; then ok "-p: attached to the parent"; else not_ok "-p: never attached"; fi
kill -USR1 "$target"
wait "$target"
expect_eq "fork_storm's exit status (every child exited 0)" $? 0
wait "$rec"
expect_status "memtrace's exit status" $? 0 "$TMP/err"
expect_eq "no 'not recording' or 'failed' line" "$(grep -c 'not recording\|failed' "$TMP/err")" 0

# each child's report, then one line per child: allocations frees
# leaked_allocations leaked_bytes storm_block's allocations
traces=0 bad=""
mkdir reports
for f in storm.*.mtrace; do
	traces=$((traces + 1))
	report_json "$f" "reports/$f.json" || bad="$bad $f"
done
jq -r '[.totals.allocations, .totals.frees, .totals.leaked_allocations, .totals.leaked_bytes,
	([.sites[] | select(.function == "storm_block") | .allocations] | add // 0)] | @tsv' reports/*.json >figures
expect_eq "a trace for every child" "$traces" "$N"
[ -z "$bad" ] && ok "every child's trace reads" || not_ok "unreadable traces:$bad"
expect_eq "children with exactly 3 allocations at storm_block, 1 free, 2 blocks leaked" \
	"$(awk -F'\t' '$1 == 3 && $2 == 1 && $3 == 2 && $5 == 3 && $4 >= 200 && $4 <= 212 && $4 % 2 == 0' figures | wc -l)" "$N"
# leaked bytes are 2 x (100 + i % 7): class r comes N / 7 times, one more for r < N % 7
want=$(awk -v n="$N" 'BEGIN { for (r = 0; r < 7; r++) printf "%d:%d ", 2 * (100 + r), int(n / 7) + (r < n % 7) }')
got=$(awk -F'\t' '{ c[$4]++ } END { for (r = 0; r < 7; r++) printf "%d:%d ", 2 * (100 + r), c[2 * (100 + r)] }' figures)
expect_eq "children per size class (leaked bytes:children)" "$got" "$want"
report_json storm.mtrace p.json
expect_eq "the parent's own trace: no allocation at storm_block" "$(site p.json storm_block allocations)" 0

# Out of slots: with 3 for processes (MEMTRACE_FOLLOW_SLOTS=4: the loader's
# own and 3), every new child finds them held by the parent and by
# recorders of children that ended, still writing; it waits for one rather
# than go unrecorded.
mkdir few && cd few || exit 1
MEMTRACE_FOLLOW_SLOTS=4 timeout -k 5 300 "$MEMTRACE" record --follow-children -o few.mtrace -- \
	"$PROGS/fork_storm" 60 >/dev/null 2>"$TMP/few.err"
expect_status "3 slots: exit status" $? 0 "$TMP/few.err"
expect_eq "3 slots: no 'not recording' line" "$(grep -c 'not recording' "$TMP/few.err")" 0
for f in few.*.mtrace; do
	report_json "$f" "$f.json"
done
expect_eq "3 slots: children with exactly 3 allocations, 1 free, 2 blocks leaked" \
	"$(jq -r 'select(.totals.allocations == 3 and .totals.frees == 1 and .totals.leaked_allocations == 2) | 1' few.*.json | wc -l)" 60
cd "$TMP" || exit 1

# Under --budget 5 no child is lost either: each has a trace of its own, a
# --budget one (its windows, if its life saw one; a child living less than
# the first window's random start has none) and its recorder's line, which
# names what following it cost.
mkdir budget && cd budget || exit 1
timeout -k 5 300 "$MEMTRACE" record --budget 5 --follow-children -o b.mtrace -- "$PROGS/fork_storm" 300 \
	>/dev/null 2>"$TMP/b.err"
expect_status "--budget 5: exit status" $? 0 "$TMP/b.err"
n=0
for f in b.*.mtrace; do
	report_json "$f" "$f.json" && [ "$(jqr "$f.json" '.trace.budget.windows != null')" = true ] && n=$((n + 1))
done
expect_eq "--budget 5: children with a --budget trace that reads" "$n" 300
expect_eq "--budget 5: recorders' lines naming following's cost (the parent's too)" \
	"$(grep -c '^memtrace: --budget 5%: .*following it [0-9.]*%)$' "$TMP/b.err")" 301
finish
