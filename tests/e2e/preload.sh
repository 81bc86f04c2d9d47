#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# record --preload -- CMD: the allocator calls caught in the process
# (inproc/preload/) instead of by uprobes, into the same trace.
#  1. The uprobe path's exact-count scripts run again with --preload on every
#     record -- CMD they make (RECORD_FLAGS), their tables unchanged: they
#     pass or fail here as checks of their own. unwind.sh, stripped.sh and
#     sqlite.sh: the interposer's walk by the unwind tables memtrace copies in
#     (code without frame pointers, stripped, Debian's sqlite3 against
#     heaptrack's call paths).
#  2. What only an interposer meets: allocations at the edges of a program's
#     life, in signal handlers and a cancelled thread, a fork, a user's own
#     interposer in LD_PRELOAD; each run both ways, the same figures.
#  3. Programs it cannot preload (static, setuid, its own malloc): one line,
#     then the uprobe path's exact figures.
source "$(dirname "$0")/lib.sh"
RELAYED="record_cmd cxx marks threads dlopen follow_exec unwind stripped sqlite"
# the plan: each relayed script's own (its plan line) and one check that it
# made them, then this script's 59
planned=59
for s in $RELAYED; do
	planned=$((planned + 1 + $(sed -n 's/^plan \([0-9][0-9]*\)$/\1/p' "$(dirname "$0")/$s.sh")))
done
plan "$planned"

# expect_same DESCRIPTION GOT WANT: multi-line values, one TAP line; the
# difference printed when they differ
expect_same() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1; the difference (-want +got):"
		diff <(echo "$3") <(echo "$2") | sed 's/^/#   /'
	fi
}

# relay SCRIPT: run tests/e2e/SCRIPT.sh with --preload, its checks as ours.
relay() {
	local name=$1 line made=0 plan=""
	RECORD_FLAGS=--preload bash "$(dirname "$0")/$name.sh" >"$TMP/relay.out" 2>"$TMP/relay.err"
	# its lines: "ok N - what", "not ok N - what", "ok N # SKIP why", "1..N"
	while IFS= read -r line; do
		if [[ $line =~ ^ok\ [0-9]+\ \#\ SKIP\ ?(.*)$ ]]; then
			skip "--preload: $name: ${BASH_REMATCH[1]}"
			made=$((made + 1))
		elif [[ $line =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
			ok "--preload: $name: ${BASH_REMATCH[1]}"
			made=$((made + 1))
		elif [[ $line =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
			not_ok "--preload: $name: ${BASH_REMATCH[1]}"
			made=$((made + 1))
		elif [[ $line =~ ^1\.\.([0-9]+)$ ]]; then
			plan=${BASH_REMATCH[1]}
		fi
	done <"$TMP/relay.out"
	expect_eq "--preload: $name.sh made every check it planned" "$made" "${plan:-no plan}" ||
		sed 's/^/# /' "$TMP/relay.err" | tail -n 5
}

for s in $RELAYED; do
	relay "$s"
done

# The records' clock: the TSC where the kernel keeps time by it (memtrace
# turns it into CLOCK_MONOTONIC ns; the scripts above ran so, their zones
# and frames among the kernel's marks), else CLOCK_MONOTONIC itself.
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
want=CLOCK_MONOTONIC
[ "$clocksource" = tsc ] && want=TSC
RECORD_FLAGS="--preload -v" record_cmd "$TMP/clock.mtrace" "$PROGS/alloc_patterns"
expect_eq "the records' clock with the kernel's $clocksource" \
	"$(sed -n 's/^memtrace: --preload: .*(\(.*\) clock), 0 waits for a full ring, 0 lost$/\1/p' "$TMP/err")" "$want"
MEMTRACE_PRELOAD_CLOCK=monotonic RECORD_FLAGS="--preload -v" record_cmd "$TMP/mono.mtrace" "$PROGS/alloc_patterns"
expect_eq "MEMTRACE_PRELOAD_CLOCK=monotonic: the records' clock" \
	"$(sed -n 's/^memtrace: --preload: .*(\(.*\) clock).*/\1/p' "$TMP/err")" CLOCK_MONOTONIC
report_json "$TMP/mono.mtrace" "$TMP/mono.json"
expect_alloc_patterns "$TMP/mono.json" 0 "CLOCK_MONOTONIC"
report_json "$TMP/clock.mtrace" "$TMP/clock.json"
expect_eq "both clocks: the same peak (its time between the same two events)" \
	"$(jq .totals.peak_bytes "$TMP/mono.json")" "$(jq .totals.peak_bytes "$TMP/clock.json")"
# the kernel's marks among the records: each zone's and frame's allocations alike
marks_of() { jq -c '[.zones[] | del(.time_ns)], [.frames.frames[] | del(.duration_ns, .end_ns)]' "$1"; }
RECORD_FLAGS=--preload record_cmd "$TMP/marks.mtrace" "$PROGS/marks"
report_json "$TMP/marks.mtrace" "$TMP/marks.json"
RECORD_FLAGS=--preload MEMTRACE_PRELOAD_CLOCK=monotonic record_cmd "$TMP/mono_marks.mtrace" "$PROGS/marks"
report_json "$TMP/mono_marks.mtrace" "$TMP/mono_marks.json"
expect_same "both clocks: marks' zones and frames alike" "$(marks_of "$TMP/marks.json")" "$(marks_of "$TMP/mono_marks.json")"

# record_both NAME CMD...: NAME.probes.json and NAME.preload.json, the
# reports of a record -- CMD each way; the --preload run's stderr in NAME.err
record_both() {
	local name=$1
	shift
	record_cmd "$TMP/$name.probes.mtrace" "$@"
	expect_eq "$name: record (uprobes) exit status" $? 0
	report_json "$TMP/$name.probes.mtrace" "$TMP/$name.probes.json"
	RECORD_FLAGS=--preload record_cmd "$TMP/$name.preload.mtrace" "$@"
	expect_eq "$name: record --preload exit status" $? 0
	cp "$TMP/err" "$TMP/$name.err"
	report_json "$TMP/$name.preload.mtrace" "$TMP/$name.preload.json"
	expect_eq "$name: the trace says it was captured in the process" \
		"$(jq -r .trace.capture "$TMP/$name.preload.json")" preload
}

# sites JSON: every site's function, allocations, bytes, leaked bytes and
# temporaries, one line each, sorted
sites() {
	jq -r '.sites[] | "\(.function) \(.allocations) \(.allocated_bytes) \(.leaked_bytes) \(.temporary_allocations)"' "$1" |
		sort
}
# totals JSON: the totals but the frees glibc makes inside its own code
# (tcache_thread_shutdown's __libc_free), which no interposer sees
totals() {
	jq -c '.totals | del(.peak_time_ns, .unmatched_frees, .internal_frees)' "$1"
}

# 2. operator delete passes the block to libstdc++'s, whose free comes back
# to the interposer under its guard: one free, not a second one that the
# replay would call internal (cxx.sh above does not look at those)
RECORD_FLAGS=--preload record_cmd "$TMP/cxx.mtrace" "$PROGS/cxx_new_delete"
report_json "$TMP/cxx.mtrace" "$TMP/cxx.json"
expect_eq "cxx_new_delete: frees, internal frees" "$(jq -r '.totals | "\(.frees) \(.internal_frees)"' "$TMP/cxx.json")" "15 0"

# early and late: a constructor, a thread's key destructor, atexit, a destructor
record_both early_late "$PROGS/early_late"
want='site_before_main 3 300 100 2
site_in_atexit 2 400 400 0
site_in_destructor 5 250 250 0
site_in_main 2 200 0 2
site_thread_exit 4 1600 0 4'
expect_same "early_late: its sites under --preload (as in its source)" \
	"$(sites "$TMP/early_late.preload.json" | grep '^site_')" "$want"
expect_same "early_late: every site the same both ways" \
	"$(sites "$TMP/early_late.preload.json")" "$(sites "$TMP/early_late.probes.json")"
expect_eq "early_late: totals the same both ways" \
	"$(totals "$TMP/early_late.preload.json")" "$(totals "$TMP/early_late.probes.json")"

# signal handlers (one on a sigaltstack) and a cancelled thread's cleanup
record_both signal_cancel "$PROGS/signal_cancel"
want='site_cancelled 1 1000 0 0
site_in_cleanup 3 384 0 3
site_in_handler 50 3200 0 50
site_on_altstack 20 640 0 20'
expect_same "signal_cancel: its sites under --preload (as in its source)" \
	"$(sites "$TMP/signal_cancel.preload.json" | grep '^site_')" "$want"
expect_same "signal_cancel: every site the same both ways (the dlopen of libgcc_s that pthread_cancel makes too)" \
	"$(sites "$TMP/signal_cancel.preload.json")" "$(sites "$TMP/signal_cancel.probes.json")"
expect_eq "signal_cancel: totals the same both ways" \
	"$(totals "$TMP/signal_cancel.preload.json")" "$(totals "$TMP/signal_cancel.probes.json")"
expect_eq "signal_cancel: a handler's stack starts at its site" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "site_in_handler") | .stacks[0].frames[1].function] | first' \
		"$TMP/signal_cancel.preload.json")" on_usr1

# a fork: without --follow-children the child is not recorded, either way
# (its parent's rings are not its own: the interposer writes nothing there)
record_both forker "$PROGS/forker" "$PROGS/alloc_patterns"
expect_same "forker: the parent's site alone, both ways" \
	"$(sites "$TMP/forker.preload.json")" "$(sites "$TMP/forker.probes.json")"
expect_eq "forker: the parent's 10 allocations" "$(jq .totals.allocations "$TMP/forker.preload.json")" 10

# --follow-children: a trace per process and per program exec'd, each with
# its own memory (follow_exec.sh above: exec chains and a script)
tree() { # DIR [FLAGS]: forker's tree recorded into DIR; a line per trace
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && timeout -k 5 "$LIMIT" "$MEMTRACE" record "$@" --follow-children -o tree.mtrace -- \
		"$PROGS/forker" "$PROGS/alloc_patterns" >out 2>err)
	for f in "$dir"/tree*.mtrace; do
		"$MEMTRACE" report --json "$f" | jq -r '"\(.trace.comm) \(.trace.capture) \(.totals.allocations) \(.totals.frees) \(.totals.leaked_bytes) " +
			([.sites[] | select(.function // "" | startswith("site_")) | "\(.function)=\(.allocations)"] | sort | join(","))'
	done | sort
}
tree "$TMP/tree.probes" >"$TMP/tree.probes.txt"
tree "$TMP/tree.preload" --preload >"$TMP/tree.preload.txt"
expect_eq "--follow-children --preload: a trace for each of forker's processes and programs, each captured in it" \
	"$(awk '{ print $2 }' "$TMP/tree.preload.txt" | sort | uniq -c | awk '{ print $1, $2 }')" "4 preload"
expect_same "--follow-children: every trace's figures and sites alike both ways" \
	"$(sed 's/ preload / /' "$TMP/tree.preload.txt")" "$(sed 's/ probes / /' "$TMP/tree.probes.txt")"
expect_eq "--follow-children --preload: the exec'd program's trace" \
	"$(grep -c '^alloc_patterns preload 56 48 4852 site_aligned_alloc=2,' "$TMP/tree.preload.txt")" 1
(cd "$TMP" && timeout -k 5 "$LIMIT" "$MEMTRACE" record --preload --follow-children -o th.mtrace -- "$PROGS/threads" >/dev/null 2>err)
report_json "$TMP/th.mtrace" "$TMP/th.json"
expect_eq "--follow-children --preload: threads in their process's one trace" \
	"$(ls "$TMP"/th*.mtrace | wc -l) $(site "$TMP/th.json" site_thread_work allocations) $(site "$TMP/th.json" site_thread_leak leaked_bytes)" \
	"1 4000 4000"

# The allocator the program resolves, preloaded by the user (Debian's
# jemalloc, tcmalloc, mimalloc): memtrace's interposer comes first and passes
# each call to it. The same figures both ways, site by site and in total,
# except what tcmalloc's own initializer allocates inside the library (two
# calls bound there, which the probes on its malloc see and no interposer
# can): its program's sites still exact.
LIBDIR=/usr/lib/x86_64-linux-gnu
both_ways() { # LIB PROG: figures of PROG under LD_PRELOAD=LIB, uprobes then --preload, one line each
	local mode
	for mode in "" --preload; do
		rm -f "$TMP/lib.mtrace"
		LD_PRELOAD=$LIBDIR/$1 RECORD_FLAGS=$mode record_cmd "$TMP/lib.mtrace" "$PROGS/$2"
		"$MEMTRACE" report --json "$TMP/lib.mtrace" |
			jq -c '[.totals | del(.peak_time_ns, .unmatched_frees, .internal_frees)], [.sites[] | select(.function // "" | startswith("site_")) | [.function, .allocations, .allocated_bytes, .leaked_bytes]]'
	done
}
for lib in libjemalloc.so.2 libmimalloc.so.2 libtcmalloc_minimal.so.4; do
	for prog in alloc_patterns cxx_new_delete; do
		if [ ! -e "$LIBDIR/$lib" ]; then
			skip "$lib, $prog: $lib is not installed"
			continue
		fi
		both_ways "$lib" "$prog" >"$TMP/both.txt"
		if [ "$lib" = libtcmalloc_minimal.so.4 ]; then
			expect_same "$lib, $prog: its program's sites the same both ways" \
				"$(sed -n 2p "$TMP/both.txt")" "$(sed -n 4p "$TMP/both.txt")"
		else
			expect_same "$lib, $prog: figures and sites the same both ways" \
				"$(sed -n 1,2p "$TMP/both.txt")" "$(sed -n 3,4p "$TMP/both.txt")"
		fi
	done
done

# a user's own interposer in LD_PRELOAD: kept (after ours), and each call
# counted once at its site
LD_PRELOAD=$PROGS/libcountalloc.so RECORD_FLAGS=--preload record_cmd "$TMP/count.mtrace" "$PROGS/alloc_patterns"
expect_eq "with the user's LD_PRELOAD: record --preload exit status" $? 0
report_json "$TMP/count.mtrace" "$TMP/count.json"
expect_alloc_patterns "$TMP/count.json" 0 "with the user's interposer in LD_PRELOAD"
# alloc_patterns makes 28 malloc calls (and 40 frees); the user's interposer,
# behind ours, sees those and whatever ours passes on of its own (its
# thread's stack bounds), so at least that many
n=$(sed -n 's/^countalloc: \([0-9]*\) mallocs, \([0-9]*\) frees$/\1 \2/p' "$TMP/err" | tail -n 1)
if [ -n "$n" ] && [ "${n% *}" -ge 28 ] && [ "${n#* }" -ge 40 ]; then
	ok "the user's interposer still ran, behind ours: $n mallocs and frees"
else
	not_ok "the user's interposer did not see the program's 28 mallocs and 40 frees: '$n'"
	sed 's/^/# /' "$TMP/err"
fi

# 3. programs the dynamic linker will not preload into: one line, then uprobes
fallback() { # LABEL WHY CMD...: record --preload -- CMD falls back, saying WHY; its report in fb.json
	local label=$1 why=$2
	shift 2
	rm -f "$TMP/fb.mtrace"
	RECORD_FLAGS=--preload record_cmd "$TMP/fb.mtrace" "$@"
	expect_eq "$label: record --preload exit status" $? 0
	expect_eq "$label: one line says why, and that uprobes record it" \
		"$(grep -c "^memtrace: --preload: '.*' cannot be preloaded ($why); recording it with uprobes instead\$" "$TMP/err")" 1 ||
		sed 's/^/# /' "$TMP/err"
	report_json "$TMP/fb.mtrace" "$TMP/fb.json"
	expect_eq "$label: recorded by the probes" "$(jq -r .trace.capture "$TMP/fb.json")" probes
}
fallback "static" "it is statically linked: no dynamic linker loads a preloaded library" "$PROGS/alloc_patterns_static"
expect_alloc_patterns_sites "$TMP/fb.json" "static, by uprobes" # the static C library allocates at its start
cp "$PROGS/alloc_patterns" "$TMP/suid"
chown nobody "$TMP/suid"
chmod 4755 "$TMP/suid"
chmod 755 "$TMP"
fallback "setuid nobody" "it is set-user-ID or set-group-ID, and the dynamic linker drops LD_PRELOAD for such a program" "$TMP/suid"
expect_alloc_patterns "$TMP/fb.json" 0 "setuid, by uprobes"
fallback "its own malloc" "it defines malloc itself, which comes before any preloaded library's" "$PROGS/own_malloc"
expect_site "$TMP/fb.json" site_own allocations 10

# what --preload does not combine with: one line each, nothing run
bad() { # DESCRIPTION ARGS...
	local d=$1
	shift
	timeout -k 5 "$LIMIT" "$MEMTRACE" record --preload "$@" >"$TMP/out" 2>"$TMP/err"
	expect_one_error "$d" $? "$TMP/err"
}
bad "--preload -p" -o "$TMP/bad.mtrace" -p $$
bad "--preload --sample" --sample 4K -o "$TMP/bad.mtrace" -- "$PROGS/alloc_patterns"
bad "--preload --budget" --budget 5 -o "$TMP/bad.mtrace" -- "$PROGS/alloc_patterns"
expect_eq "no trace left by the refusals" "$(ls "$TMP"/bad.mtrace* 2>/dev/null | wc -l)" 0
finish
