#!/usr/bin/env bash
# report --json writes each stack once in "stacks" and each frame once in
# "stack_frames" (a site lists its stacks by index, a stack its frames):
# tests/progs/many_stacks makes 131072 allocations with 131072 different
# stacks of the same few frames; the JSON must be at least 10 times smaller
# than the frames alone would be written in place, every index must point at
# a real entry, and --top N must cut the JSON as it cuts the text.
source "$(dirname "$0")/lib.sh"
plan 12

record_cmd "$TMP/ms.mtrace" "$PROGS/many_stacks"
expect_eq "record many_stacks: exit status" "$?" 0
report_json "$TMP/ms.mtrace" "$TMP/ms.json"
expect_eq "report --json: exit status" "$?" 0
expect_eq "stacks: one per distinct stack" "$(jq '.stacks | length' "$TMP/ms.json")" 131072
expect_eq "the sites list every stack once" "$(jq '[.sites[].stacks[]] | sort == [range(0; 131072)]' "$TMP/ms.json")" true
expect_eq "every frame index points into stack_frames" \
	"$(jq '(.stack_frames | length) as $n | [.stacks[].frames[] | select(. < 0 or . >= $n)] | length' "$TMP/ms.json")" 0
expect_eq "stack_frames: each frame once (no two alike)" \
	"$(jq '.stack_frames | length == (unique | length)' "$TMP/ms.json")" true
expect_eq "a stack, put back in place, reads walk < left|right ... < main" \
	"$(jq -r '.stack_frames as $f | .stacks[.sites[0].stacks[0]].frames | map($f[.].function) | [first, (.[1] | test("^(left|right)$")), (index("main") != null)] | map(tostring) | join(" ")' "$TMP/ms.json")" \
	"walk true true"
expect_eq "the stacks' allocations add up to the site's" \
	"$(jq '(.sites[0].allocations) == ([.sites[0].stacks[] as $i | .stacks[$i].allocations] | add)' "$TMP/ms.json")" true
interned=$(stat -c %s "$TMP/ms.json")
# the bytes the stacks' frames alone take written in place, compact (without
# building that document: it would be most of a gigabyte)
nested=$(jq '[.stack_frames[] | tojson | length + 1] as $len | [.stacks[].frames[] | $len[.]] | add' "$TMP/ms.json")
if [ $((interned * 10)) -le "$nested" ]; then
	ok "interned JSON $interned bytes, at least 10x smaller than its frames in place ($nested bytes, compact)"
else
	not_ok "interned JSON $interned bytes is not 10x smaller than its frames in place ($nested bytes)"
fi
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json --top 1 "$TMP/ms.mtrace" >"$TMP/top1.json"
expect_eq "--top 1: one site in the JSON" "$(jq '.sites | length' "$TMP/top1.json")" 1
expect_eq "--top 1: only its stacks" "$(jq '(.stacks | length) == ([.sites[0].stacks[]] | length)' "$TMP/top1.json")" true
expect_eq "--top 1: totals are still the trace's" "$(jq .totals.allocations "$TMP/top1.json")" 131072
finish
