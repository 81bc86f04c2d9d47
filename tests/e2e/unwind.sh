#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Whole stacks in code built without frame pointers: tests/progs/unwind_levels
# built three times (with frame pointers; -O2 -fomit-frame-pointer with its
# shared library alike; the same with its CFI only in .debug_frame). Every allocation's function sequence, site to main,
# is the same in both builds: several levels, a shared library reached
# through the PLT, C++ new, and an allocation in a signal handler, walked
# through the kernel's signal frame. The walk uses the modules' unwind tables
# (bpf/unwind.bpf.h); --unwind-rows 0 shows what frame pointers alone give.
. "$(dirname "$0")/lib.sh"
plan 31

# paths JSON: "allocations function<caller<...<main" per distinct path that
# reaches main, sorted (libstdc++'s own start-up allocation does not)
paths() {
	jq -r "$NESTED"' | [.sites[] | .stacks[] | {n: .allocations, f: [.frames[].function]} | select(.f | index("main"))
		| {n, p: (.f[0:(.f | index("main")) + 1] | join("<"))}] | group_by(.p)[]
		| "\(map(.n) | add) \(.[0].p)"' "$1" | sort
}

for build in fp nofp dbgframe; do
	prog=$PROGS/unwind_levels
	[ "$build" != fp ] && prog=$PROGS/$build/unwind_levels
	record_cmd "$TMP/$build.mtrace" "$prog"
	expect_eq "$build: exit status" $? 0
	report_json "$TMP/$build.mtrace" "$TMP/$build.json"
	paths "$TMP/$build.json" >"$TMP/$build.paths"
done
# the empty name is libc's __restore_rt, the signal frame: no symbol names it
expect_eq "with frame pointers: the paths" "$(cat "$TMP/fp.paths")" "$(printf '%s\n' \
	"2 in_handler<on_signal<<__pthread_kill_implementation<raise<raise_signal<main" \
	"3 make_widget<build_widgets<main" \
	"5 level3<level2<level1<main" \
	"7 unwindlib_inner<unwindlib_entry<main")"
expect_eq "without frame pointers: the same paths" "$(cat "$TMP/nofp.paths")" "$(cat "$TMP/fp.paths")"
expect_eq "without frame pointers, CFI only in .debug_frame: the same paths" \
	"$(cat "$TMP/dbgframe.paths")" "$(cat "$TMP/fp.paths")"
expect_eq "without frame pointers: every stack goes on past main to _start" \
	"$(jq "$NESTED"' | [.sites[].stacks[] | [.frames[].function] | select(index("main")) | index("_start") != null] | all' "$TMP/nofp.json")" true
expect_eq "without frame pointers: _start is the last frame (nothing read past it)" \
	"$(jq "$NESTED"' | [.sites[].stacks[] | [.frames[].function] | select(index("main")) | last] | unique' -c "$TMP/nofp.json")" '["_start"]'
expect_eq "with frame pointers: _start is the last frame" \
	"$(jq "$NESTED"' | [.sites[].stacks[] | [.frames[].function] | select(index("main")) | last] | unique' -c "$TMP/fp.json")" '["_start"]' 

# Followed, the build without frame pointers walks the same: its recorder
# is a fork of the supervisor, which does not inherit the unwind arrays
# (loader.c's map_unwind) and maps the rows it writes and its own slot's
# list of mappings.
(cd "$TMP" && timeout -k 5 "$LIMIT" "$MEMTRACE" record ${RECORD_FLAGS:-} --follow-children -o fl.mtrace -- \
	sh -c "$PROGS/nofp/unwind_levels; true" >/dev/null 2>"$TMP/err")
for f in "$TMP"/fl.*.mtrace; do
	report_json "$f" "$TMP/fl.json" && paths "$TMP/fl.json"
done >"$TMP/fl.paths"
expect_eq "without frame pointers, followed (sh runs it): the same paths" "$(cat "$TMP/fl.paths")" "$(cat "$TMP/fp.paths")"

# Code with no unwind table ends a walk, and the stack says so: libstdc++'s
# start-up allocation is made from _dl_init, called by the dynamic linker's
# entry code, which has no call frame information.
expect_eq "a walk into code without a table: the last frame says so" \
	"$(jq -r "$NESTED"' | [.sites[].stacks[] | [.frames[].function] | select(index("_dl_init")) | last] | unique | join(",")' "$TMP/nofp.json")" \
	"[truncated: no unwind table]"

# A walk cut by --stack-depth says so in its last frame.
timeout -k 5 "$LIMIT" "$MEMTRACE" record --stack-depth 2 -o "$TMP/d2.mtrace" -- "$PROGS/nofp/unwind_levels" \
	>/dev/null 2>"$TMP/err"
report_json "$TMP/d2.mtrace" "$TMP/d2.json"
expect_eq "--stack-depth 2: two frames and the cut" \
	"$(jq -c "$NESTED"' | [.sites[] | select(.function == "level3") | .stacks[].frames | map(.function)] | unique' "$TMP/d2.json")" \
	'[["level3","level2","[truncated: --stack-depth reached]"]]'

# Frames the walk does not find in its 2 KiB copy of the stack's top
# (tests/progs/deep_frames.c): callers past 4 KiB of 512-byte frames, and a
# makecontext stack whose top is too close to a guard page for any copy.
# The empty name is glibc's __start_context, which no symbol names; the
# value above it is in no mapping with a table.
for build in fp nofp; do
	prog=$PROGS/deep_frames
	[ "$build" = nofp ] && prog=$PROGS/nofp/deep_frames
	record_cmd "$TMP/deep_$build.mtrace" "$prog"
	expect_eq "$build: deep_frames exit status" $? 0
	report_json "$TMP/deep_$build.mtrace" "$TMP/deep_$build.json"
	expect_eq "$build: the stacks past the window, and one that has no window" \
		"$(jq -r "$NESTED"' | [.sites[].stacks[] | {n: .allocations, p: ([.frames[].function] | join("<"))}]
			| group_by(.p)[] | "\(map(.n) | add) \(.[0].p)"' "$TMP/deep_$build.json" | sort)" \
		"$(printf '%s\n' "3 ctx_leaf<ctx_func<<[truncated: no unwind table]" \
			"4 deep_leaf$(printf '<deep_frame%.0s' 1 2 3 4 5 6 7 8)<main<__libc_start_call_main<__libc_start_main@@GLIBC_2.34<_start")"
done

# The same program without tables: frame pointers alone stop in the first
# frame that has none (what memtrace did before unwind tables).
timeout -k 5 "$LIMIT" "$MEMTRACE" record --unwind-rows 0 -o "$TMP/fponly.mtrace" -- "$PROGS/nofp/unwind_levels" \
	>/dev/null 2>"$TMP/err"
expect_eq "frame pointers alone: record exit status" "$?" 0
report_json "$TMP/fponly.mtrace" "$TMP/fponly.json"
# three paths, each with its allocations: an empty report would reach main on none
expect_eq "frame pointers alone: stacks recorded for the three paths" \
	"$(jq "$NESTED"' | [.sites[].stacks[]] | length >= 3' "$TMP/fponly.json")" true
reached=$(jq "$NESTED"' | [.sites[].stacks[] | [.frames[].function] | index("main") != null] | map(select(.)) | length' "$TMP/fponly.json")
if [ "$reached" -lt 3 ]; then ok "frame pointers alone: only $reached of 3 paths reach main"; else not_ok "frame pointers alone reached main on every path: the test proves nothing"; fi
# ... and with frame pointers in the program, they alone give its own paths
# whole (bpf/memtrace.bpf.c's walk_frames; the signal path left out: the C
# library's frames between have none).
timeout -k 5 "$LIMIT" "$MEMTRACE" record --unwind-rows 0 -o "$TMP/fponly-fp.mtrace" -- "$PROGS/unwind_levels" \
	>/dev/null 2>"$TMP/err"
expect_eq "frame pointers alone, built with them: record exit status" "$?" 0
report_json "$TMP/fponly-fp.mtrace" "$TMP/fponly-fp.json"
expect_eq "frame pointers alone, built with them: the paths" "$(paths "$TMP/fponly-fp.json" | grep -v in_handler)" \
	"$(grep -v in_handler "$TMP/fp.paths")"
# Stack templates (bpf/memtrace.bpf.c): a walk that starts where the last one
# did is skipped when the stack words that walk read are unchanged.
# tests/progs/same_depth reaches malloc through via_a or via_b at the same
# stack and frame pointer, in rounds of a, b, b: only the return address into
# via_a or via_b differs, so a template must be refused at every change of
# path and used for the second b. Both builds; the counts are exact.
for build in fp nofp; do
	prog=$PROGS/same_depth
	[ "$build" = nofp ] && prog=$PROGS/nofp/same_depth
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/sd-$build.mtrace" -- "$prog" >/dev/null 2>"$TMP/sd.err"
	expect_eq "same_depth $build: exit status" $? 0
	report_json "$TMP/sd-$build.mtrace" "$TMP/sd-$build.json"
	for via in via_a:3000:48000 via_b:6000:288000; do
		IFS=: read -r fn n bytes <<<"$via"
		expect_eq "same_depth $build: allocations and bytes through $fn" \
			"$(jq -r '. as $r | [.stacks[] | select([.frames[] | $r.stack_frames[.].function | sub("\\.constprop.*"; "")] | index("'"$fn"'"))
				| "\(.allocations) \(.allocated_bytes)"] | join(",")' "$TMP/sd-$build.json")" "$n $bytes"
	done
	counts=$(sed -n 's/^memtrace: \([0-9]*\) stacks from templates, \([0-9]*\) walked by unwind tables$/\1 \2/p' "$TMP/sd.err")
	read -r from_template walked <<<"${counts:-x x}"
	expect_eq "same_depth $build: every stack from a template or a walk" "$((from_template + walked))" 9001
	# the second b of each round, unless the thread moved to another CPU (templates are per CPU)
	if [ "$from_template" -gt 0 ] && [ "$from_template" -le 3000 ]; then
		ok "same_depth $build: $from_template of at most 3000 stacks from templates"
	else
		not_ok "same_depth $build: $from_template stacks from templates, expected 1 to 3000"
	fi
done
finish
