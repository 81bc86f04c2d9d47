#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# record -- CMD holds the command after its dynamic linker mapped every
# library and before any initializer runs, on every launch path:
#   hook  (default) a uprobe on the linker's debugger hook, link map consistent
#   entry (MEMTRACE_LAUNCH=entry) the fallback at the program's entry point,
#         after library initializers; it says so on stderr
# Nothing here may depend on x86 debug registers (some hosts never fire them).
source "$(dirname "$0")/lib.sh"
plan 38

jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
fallback_line="memtrace: the dynamic linker never reported its libraries loaded; '$PROGS/launch_ctor' was held at its entry point, after library initializers (their allocations are not in the trace)"

for path in hook entry; do
	if [ "$path" = entry ]; then export MEMTRACE_LAUNCH=entry; else unset MEMTRACE_LAUNCH; fi
	p="$path path"

	# A DT_NEEDED library that allocates in its constructor; main allocates first thing.
	record_cmd "$TMP/ctor-$path.mtrace" "$PROGS/launch_ctor"
	expect_eq "$p: launch_ctor exit status" $? 0
	report_json "$TMP/ctor-$path.mtrace" "$TMP/ctor.json"
	expect_site "$TMP/ctor.json" main allocated_bytes 444
	expect_site "$TMP/ctor.json" main leaked_allocations 1
	if [ "$path" = hook ]; then
		for n in 111 222 333; do expect_site "$TMP/ctor.json" "ctor_block_$n" allocated_bytes "$n"; done
		expect_total "$TMP/ctor.json" allocations 4
		expect_total "$TMP/ctor.json" allocated_bytes 1110
		expect_eq "$p: no fallback line" "$(grep -c 'entry point' "$TMP/err")" 0
	else
		# Held after the constructors ran: exactly what main made, and a line saying so.
		expect_total "$TMP/ctor.json" allocations 1
		expect_eq "$p: the fallback says what it missed" "$(grep -F -x -c "$fallback_line" "$TMP/err")" 1
	fi

	# An LD_PRELOAD'd allocator: its malloc and free are the ones probed.
	LD_PRELOAD=$jemalloc timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -o "$TMP/je-$path.mtrace" -- \
		"$PROGS/alloc_patterns" >"$TMP/out" 2>"$TMP/err"
	expect_status "$p: jemalloc preloaded: exit status" $? 0 "$TMP/err"
	for fn in malloc free; do
		expect_eq "$p: jemalloc preloaded: $fn probed in libjemalloc" \
			"$(grep -c "^memtrace: probe $fn  *libjemalloc.so.2+" "$TMP/err")" 1
	done
	report_json "$TMP/je-$path.mtrace" "$TMP/je.json"
	expect_alloc_patterns_sites "$TMP/je.json" "$p: jemalloc preloaded"
	# libjemalloc needs libstdc++, whose constructor allocates its 72704-byte
	# emergency pool before main: seen only when held before initializers.
	pool=$([ "$path" = hook ] && echo 1 || echo 0)
	expect_eq "$p: jemalloc preloaded: libstdc++'s pool allocated before main" \
		"$(jq '[.sites[] | select(.allocated_bytes == 72704 and (.module | test("libstdc")))] | length' "$TMP/je.json")" "$pool"
	expect_total "$TMP/je.json" allocations $((56 + pool))
	expect_total "$TMP/je.json" frees 48

	# A static executable: no dynamic linker, held at its exec.
	record_cmd "$TMP/static-$path.mtrace" "$PROGS/alloc_patterns_static"
	expect_eq "$p: static exit status" $? 0
	expect_eq "$p: static: no fallback line" "$(grep -c 'entry point' "$TMP/err")" 0
	report_json "$TMP/static-$path.mtrace" "$TMP/static.json"
	expect_alloc_patterns_sites "$TMP/static.json" "$p: static"
	# Static glibc's own start-up (before main) allocates too; how often is
	# glibc's business, not a figure of ours: only that every allocation
	# outside the program's sites is made in glibc's start-up (_dl_*).
	expect_eq "$p: static: allocations outside alloc_patterns' sites are glibc's start-up" \
		"$(jq '[.sites[] | select(.function | startswith("site_") | not) | .function | startswith("_dl_")] | all' "$TMP/static.json")" true
	expect_total "$TMP/static.json" frees 48
done
unset MEMTRACE_LAUNCH
finish
