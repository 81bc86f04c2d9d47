#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace agent's flight recorder: tests/progs/oom_grow grows 4 MiB a step in
# a memory cgroup (v1's; v2's where v1's is not mounted) limited to 64 MiB
# until the OOM killer ends it,
# under `memtrace agent -p PID --exact --oom-dir DIR`. Its program file is a
# copy removed once the agent attached, so the trace's names can only come
# from the files the recording held. Checked: the trace is in DIR within 5 s
# of the kill, named COMM.PID.<UTC time of the kill>.oom.mtrace, 0600;
# `memtrace report --json` reads it, says at its top that the OOM killer
# killed it, its top site is grow_step with the bytes the program counted
# before the kill (plus the step it was writing when killed, at most), and
# it leads with what grew in the last minute: grow_step first, grown by the
# bytes of the steps the program began in that window (plus the killed
# one's at most), the limit hit the cgroup's 64 MiB;
# /metrics has memtrace_oom_kills_total{comm="oom_grow"} 1; the agent's line
# names the file; / links it and /report?file=NAME serves its report (a
# name with a slash 400, a symlink 404). Beside it, one copy dies of SIGSEGV (.crash.mtrace,
# memtrace_crashes_total 1) and one exits 0 (no file). Bad --oom-dir values
# refuse to start; a missing one is made 0700. Then under --exact and under
# the default --budget 1, with --rss and files of 1 s in memory (and --budget
# 1 without --rss, found by --comm), 256 KiB a step (5 s to the limit): the trace is the last two files copied into one
# (their allocations and bytes together), its RSS series ending near the
# limit, what grew in its last window grow_step's steps begun in it (the
# program's own clock against the trace's), estimated under --budget, and
# the sampled first writes within 25% of it. And `memtrace record -p` of
# such a target: its report says so, and what grew.
. "$(dirname "$0")/lib.sh"
plan 84

port=16477
url=http://127.0.0.1:$port
oomdir=$TMP/state/oom
cd "$TMP" || exit 1

# A memory cgroup of 64 MiB: cgroup v1's memory controller where it is
# mounted (this host: beside a v2 hierarchy without it), else v2's
# (memory.max; not run here: no host of ours has it)
v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -d /sys/fs/cgroup/memory ]; then
	cgv=v1
	cg=/sys/fs/cgroup/memory/memtrace-oom.$$
elif [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
	cgv=v2
	cg=$v2/memtrace-oom.$$
	grep -qw memory "$v2/cgroup.subtree_control" || echo +memory >"$v2/cgroup.subtree_control" 2>/dev/null
else
	cgv=
fi
if [ -z "$cgv" ] || ! mkdir "$cg" 2>/dev/null; then
	skip_rest "no memory cgroup (v1 or v2) this test can make to limit a process with"
	finish
fi
agent=
pids=
cleanup() {
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	for p in $pids; do kill -KILL "$p" 2>/dev/null; done
	for i in $(seq 50); do [ -s "$cg/cgroup.procs" ] || break; sleep 0.1; done
	rmdir "$cg" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
if [ $cgv = v1 ]; then
	echo $((64 << 20)) >"$cg/memory.limit_in_bytes"
	# no swap to escape to, where the host has it and the kernel the knob
	[ -e "$cg/memory.memsw.limit_in_bytes" ] && echo $((64 << 20)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
	[ -e "$cg/memory.swappiness" ] && echo 0 >"$cg/memory.swappiness" 2>/dev/null
else
	echo $((64 << 20)) >"$cg/memory.max"
	[ -e "$cg/memory.swap.max" ] && echo 0 >"$cg/memory.swap.max"
fi
# The OOM kills in the cgroup, as the kernel counts them
oom_kills() {
	if [ $cgv = v1 ]; then sed -n 's/^oom_kill //p' "$cg/memory.oom_control"; else sed -n 's/^oom_kill //p' "$cg/memory.events"; fi
}
# The program's own truth over a trace's last minute: the bytes of the steps
# OUT says began (before their malloc) at or after the window's start in
# JSON's clock (last_minute: start_mono_ns + from_ns)
leaked_in_window() { # OUT JSON STEP_BYTES
	awk -v from="$(jqr "$2" '.last_minute.start_mono_ns + .last_minute.from_ns')" -v step="$3" \
		'$1 == "step" && $4 >= from { b += step } END { print b + 0 }' "$1"
}
# grown_ok LABEL JSON TRUTH STEP: the last minute's first grown site is
# grow_step with the program's bytes, plus the step it was killed in at most
grown_ok() {
	local got
	got=$(jqr "$2" '[.last_minute.grown[0].function, .last_minute.grown[0].grown_bytes] | @tsv')
	if [ "$3" -gt 0 ] && [ "${got%%	*}" = grow_step ] && [ "${got#*	}" -ge "$3" ] && [ "${got#*	}" -le $(($3 + $4)) ]; then
		ok "$1: the last minute's top growth is grow_step's $(echo "${got#*	}"), the program's $3 plus the step it was killed in at most"
	else
		not_ok "$1: the last minute's top growth '$got', want grow_step with $3 to $(($3 + $4))"
	fi
}
# How the agent names it: v1 /memtrace-oom.PID, v2 its path under the v2 mount
cgname="$cgv ${cg#/sys/fs/cgroup/memory}"
[ $cgv = v2 ] && cgname="v2 ${cg#"$v2"}"

# --- --oom-dir refused unless safe; made 0700 when missing
mkdir -m 0777 "$TMP/open"
: >"$TMP/afile"
for bad in "$TMP/open" "$TMP/afile" "$TMP/open/sub"; do
	timeout -k 5 "$LIMIT" "$MEMTRACE" agent -p $$ --oom-dir "$bad" >/dev/null 2>"$TMP/u.err"
	expect_one_error "agent --oom-dir ${bad#"$TMP"/}" $? "$TMP/u.err"
done

# --- three copies of the program, each waiting for SIGUSR1
mkdir -m 0700 "$TMP/bin" "$TMP/state"
cp "$PROGS/oom_grow" "$TMP/bin/oom_grow"
sh -c "echo \$\$ >$cg/cgroup.procs && exec $TMP/bin/oom_grow 4096 1000" >"$TMP/oom.out" 2>&1 &
victim=$!
(exec "$TMP/bin/oom_grow" 1024 3 segv >"$TMP/segv.out" 2>&1) &
crasher=$!
(exec "$TMP/bin/oom_grow" 1024 3 >"$TMP/exit.out" 2>&1) &
exiter=$!
pids="$victim $crasher $exiter"
for f in oom segv exit; do expect_line "$TMP/$f.out" "oom_grow: waiting" 10 "oom_grow ($f) never started"; done
timeout -k 5 120 "$MEMTRACE" agent -p "$victim" -p "$crasher" -p "$exiter" --exact --oom-dir "$oomdir" \
	--listen "127.0.0.1:$port" -d 90 2>"$TMP/agent.err" &
agent=$!
attached=0
for p in $pids; do wait_for_line "$TMP/agent.err" "memtrace: attached to PID $p " 20 && attached=$((attached + 1)); done
expect_eq "the agent attached to the three" "$attached" 3 || sed 's/^/# /' "$TMP/agent.err"
expect_eq "--oom-dir made 0700" "$(stat -c %a "$oomdir" 2>/dev/null)" 700
rm "$TMP/bin/oom_grow" # the names must come from the files the recording holds

# --- the OOM kill
kill -USR1 "$exiter" "$crasher" "$victim"
for ((i = 0; i < 300; i++)); do kill -0 "$victim" 2>/dev/null || break; sleep 0.05; done
killed_ns=$(date +%s%N)
wait "$victim" 2>/dev/null
st=$?
expect_eq "oom_grow was killed (SIGKILL)" "$st" 137
expect_eq "by the OOM killer of its cgroup" "$(oom_kills)" 1
file=
for ((i = 0; i < 100; i++)); do
	file=$(cd "$oomdir" && ls -- *.oom.mtrace 2>/dev/null | head -1)
	[ -n "$file" ] && break
	sleep 0.1
done
took_ms=$((($(date +%s%N) - killed_ns) / 1000000))
wait_for_line "$TMP/agent.err" "memtrace: PID $victim (oom_grow) was killed" 5
if [ -n "$file" ] && [ "$took_ms" -le 5000 ]; then ok "the trace is in --oom-dir $took_ms ms after the kill"; else not_ok "no .oom.mtrace within 5 s of the kill ($took_ms ms): $(ls "$oomdir")"; fi
echo "# kill to file: $took_ms ms (the test's view); the agent's: $(sed -n 's/.*(written \(.*\) after)$/\1/p' "$TMP/agent.err" | head -1)"
if [[ $file =~ ^oom_grow\.$victim\.([0-9]{8}T[0-9]{6}Z)\.oom\.mtrace$ ]]; then
	ok "named COMM.PID.<UTC time>.oom.mtrace: $file"
	when=$(date -u -d "$(sed -E 's/(....)(..)(..)T(..)(..)(..)Z/\1-\2-\3 \4:\5:\6/' <<<"${BASH_REMATCH[1]}")" +%s)
	d=$((killed_ns / 1000000000 - when))
	if [ "$d" -ge 0 ] && [ "$d" -le 2 ]; then ok "its time is the kill's ($d s before the test saw it)"; else not_ok "its time is $d s from the kill"; fi
else
	not_ok "named '$file', want oom_grow.$victim.<UTC>.oom.mtrace"
	not_ok "its time (no name)"
fi
expect_eq "the file is 0600, ours" "$(stat -c '%a %u' "$oomdir/$file" 2>/dev/null)" "600 $(id -u)"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$oomdir/$file" >"$TMP/oom.json" 2>"$TMP/report.err"
expect_status "memtrace report --json of it" $? 0 "$TMP/report.err"
expect_eq "whole (not partial), the target exited" "$(jqr "$TMP/oom.json" '[.trace.partial, .trace.target_exited] | @tsv')" "false	true"
expect_eq "it says the OOM killer killed it, and the limit hit" "$(jqr "$TMP/oom.json" '.trace.stop_reason' |
	grep -c "^killed by the OOM killer at .*, its memory cgroup ($cgname) limited to 64.0 MiB$")" 1 ||
	jqr "$TMP/oom.json" '.trace.stop_reason' | sed 's/^/# /'
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$oomdir/$file" >"$TMP/oom.txt" 2>&1
expect_eq "... at the top of the text report" "$(head -6 "$TMP/oom.txt" | grep -c 'killed by the OOM killer')" 1
expect_eq "the text report leads with what grew" "$(head -1 "$TMP/oom.txt" | grep -c '^OOM-killed: what grew in its last minute (')" 1 ||
	head -3 "$TMP/oom.txt" | sed 's/^/# /'
expect_eq "... its first site grow_step, the limit the cgroup's" \
	"$(grep -c '^    1\.  *+[0-9.]* MiB  *+[0-9]* blocks  *grow_step  ' "$TMP/oom.txt")/$(grep -c "^  limit hit: *64.0 MiB (67108864 bytes), memory cgroup $cgname$" "$TMP/oom.txt")" 1/1 ||
	head -12 "$TMP/oom.txt" | sed 's/^/# /'
expect_eq "last_minute: an OOM kill, the limit its cgroup's 64 MiB, exact" \
	"$(jqr "$TMP/oom.json" '[.last_minute.ended_by, .last_minute.memory_limit_bytes, .last_minute.memory_limit_of, .last_minute.estimated] | @tsv')" \
	"oom_kill	67108864	$cgname	false"
expect_eq "its top site: grow_step" "$(jqr "$TMP/oom.json" '.sites[0].function')" grow_step
counted=$(awk '$1 == "step" { b = $3 } END { print b + 0 }' "$TMP/oom.out")
got=$(site "$TMP/oom.json" grow_step allocated_bytes)
echo "# oom_grow counted $counted bytes in whole steps; the trace has $got at grow_step"
if [ "$counted" -gt 0 ] && [ "$got" -ge "$counted" ] && [ "$got" -le $((counted + (4 << 20))) ]; then
	ok "grow_step's bytes: $got, the program's $counted plus the step it was killed in at most"
else
	not_ok "grow_step's bytes: $got, want $counted to $((counted + (4 << 20)))"
fi
grown_ok "--exact" "$TMP/oom.json" "$(leaked_in_window "$TMP/oom.out" "$TMP/oom.json" $((4 << 20)))" $((4 << 20))
expect_eq "... in whole blocks, each a step" "$(jqr "$TMP/oom.json" '.last_minute.grown[0] | .grown_bytes == .grown_allocations * 4194304')" true
expect_eq "named from the held file (its path is gone): grow_step's line" \
	"$(jqr "$TMP/oom.json" '.sites[0] | "\(.file | split("/") | last):\(.line > 0)"')" "oom_grow.c:true"
curl -s "$url/metrics" >"$TMP/metrics"
expect_eq "/metrics: memtrace_oom_kills_total{comm=\"oom_grow\"}" \
	"$(sed -n 's/^memtrace_oom_kills_total{comm="oom_grow"} //p' "$TMP/metrics")" 1
expect_eq "the agent's line says where the file is" \
	"$(grep -c "^memtrace: PID $victim (oom_grow) was killed by the OOM killer at .*; its last minute is in $oomdir/$file " "$TMP/agent.err")" 1

# --- /report serves it, the index lists it
http() { curl -s -o "$2" -w '%{http_code}' "$url$1"; }
expect_eq "/ links its report" "$(http / index.html)/$(grep -c "href=\"/report?file=$file\"" index.html)" 200/1
expect_eq "/report?file=NAME: 200, the report of that trace" "$(http "/report?file=$file" oom.html)/$(grep -c grow_step oom.html | sed 's/^[1-9][0-9]*$/yes/')/$(grep -c '"stop_reason": "killed by the OOM killer at ' oom.html)" 200/yes/1
expect_eq "/report?file=../NAME: 400" "$(http "/report?file=..%2F$file" /dev/null)" 400
expect_eq "/report?file= a file not there: 404" "$(http "/report?file=x.1.20000101T000000Z.oom.mtrace" /dev/null)" 404
ln -s "$oomdir/$file" "$oomdir/link.1.20000101T000000Z.oom.mtrace"
expect_eq "/report?file= a symlink: 404, never followed" "$(http "/report?file=link.1.20000101T000000Z.oom.mtrace" /dev/null)" 404
rm "$oomdir/link.1.20000101T000000Z.oom.mtrace"

# --- the crash and the normal exit
wait "$crasher" 2>/dev/null
expect_eq "the second copy died of SIGSEGV" "$?" 139
wait "$exiter" 2>/dev/null
expect_eq "the third exited 0" "$?" 0
crash=
for ((i = 0; i < 100; i++)); do
	crash=$(cd "$oomdir" && ls -- *.crash.mtrace 2>/dev/null | head -1)
	[ -n "$crash" ] && break
	sleep 0.1
done
if [[ $crash =~ ^oom_grow\.$crasher\.[0-9]{8}T[0-9]{6}Z\.crash\.mtrace$ ]]; then ok "the SIGSEGV: $crash"; else not_ok "the SIGSEGV's trace: '$crash'"; fi
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$oomdir/$crash" >"$TMP/crash.json" 2>/dev/null
expect_eq "... says so, its 3 MiB at grow_step" \
	"$(jqr "$TMP/crash.json" '.trace.stop_reason | startswith("killed by SIGSEGV at ")')/$(site "$TMP/crash.json" grow_step allocated_bytes)" \
	"true/$((3 << 20))"
expect_eq "... its last minute: a crash, grow_step's 3 MiB grown, no limit" \
	"$(jqr "$TMP/crash.json" '[.last_minute.ended_by, .last_minute.grown[0].function, .last_minute.grown[0].grown_bytes, .last_minute.memory_limit_bytes] | @tsv')" \
	"crash	grow_step	$((3 << 20))	0"
sleep 1 # the exit's recording ends within its poll
expect_eq "a target that exits leaves no file: $(ls "$oomdir" | tr '\n' ' ')" "$(ls "$oomdir" | grep -c "\.$exiter\.")" 0
curl -s "$url/metrics" >"$TMP/metrics"
expect_eq "/metrics: memtrace_crashes_total{comm=\"oom_grow\"}" \
	"$(sed -n 's/^memtrace_crashes_total{comm="oom_grow"} //p' "$TMP/metrics")" 1
expect_eq "... and still one OOM kill" "$(sed -n 's/^memtrace_oom_kills_total{comm="oom_grow"} //p' "$TMP/metrics")" 1
if command -v promtool >/dev/null; then
	expect_eq "promtool check metrics parses them" "$(promtool check metrics <"$TMP/metrics" 2>&1 | grep -ci 'error\|invalid')" 0
else
	skip "no promtool"
fi
kill -INT "$agent"
wait "$agent"
expect_eq "the agent stops cleanly" "$?" 0
agent=

# --- with --rss, files of 1 s in memory, under --exact and under the default
# --budget 1: the trace is the last two files copied into one (their
# allocations and bytes together, each once: under --exact both files hold
# some, the older one copied too), its RSS series up to the kill; under
# --budget the large blocks are exact
run_rss() { # MODE N [RSS]: the Nth OOM kill of the cgroup, under MODE (--exact or "--budget 1"), with RSS (--rss or none)
	local mode=$1 n=$2 rss=${3-} v a file2 mem sum='0 0' nfiles=0 withallocs=0 anon who written step
	local what="$mode${rss:+ $rss}"
	(exec sh -c "echo \$\$ >$cg/cgroup.procs && exec $PROGS/oom_grow 256 1000" >"$TMP/oom$n.out" 2>&1) &
	v=$!
	pids="$pids $v"
	rss_victims="$rss_victims $v"
	wait_for_line "$TMP/oom$n.out" "oom_grow: waiting" 10
	# --exact and --budget without --rss find it by --comm (a matched target), --budget --rss by -p
	if [ "$mode" = --exact ] || [ -z "$rss" ]; then who=(--comm oom_grow); else who=(-p "$v"); fi
	MEMTRACE_AGENT_OOM_KEEP=2 timeout -k 5 120 "$MEMTRACE" agent "${who[@]}" $mode $rss --rotate 1 --oom-dir "$oomdir" \
		--listen "127.0.0.1:$((port + n))" -d 90 2>"$TMP/agent$n.err" &
	agent=$!
	expect_line "$TMP/agent$n.err" "memtrace: attached to PID $v " 20 "$mode: never attached"
	sleep 1.5 # a file rotated before the growth
	kill -USR1 "$v"
	for ((i = 0; i < 300; i++)); do kill -0 "$v" 2>/dev/null || break; sleep 0.05; done
	wait "$v" 2>/dev/null
	expect_eq "$what: oom_grow OOM-killed (the cgroup's kill $n)" "$?/$(oom_kills)" "137/$n"
	wait_for_line "$TMP/agent$n.err" "memtrace: PID $v (oom_grow) was killed by the OOM killer" 10
	file2=$(cd "$oomdir" && ls -- "oom_grow.$v".*.oom.mtrace 2>/dev/null | head -1)
	mem=$(sed -n "s|^memtrace: attached to PID $v .*, writing \(/dev/shm/memtrace-agent\.[^/]*\)/.*|\1|p" "$TMP/agent$n.err")
	for f in "$mem/oom_grow.$v".*.mtrace; do
		[ -f "$f" ] || continue
		nfiles=$((nfiles + 1))
		[ "$("$MEMTRACE" report --json "$f" | jq .totals.allocations)" -gt 0 ] && withallocs=$((withallocs + 1))
		sum=$("$MEMTRACE" report --json "$f" | jq -r --arg s "$sum" '($s | split(" ") | map(tonumber)) as $p | "\($p[0] + .totals.allocations) \($p[1] + .totals.allocated_bytes)"')
	done
	timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$oomdir/$file2" >"$TMP/oom$n.json" 2>"$TMP/report$n.err"
	expect_status "$what: report --json of $file2" $? 0 "$TMP/report$n.err"
	echo "# $mode: the last $nfiles files in memory ($withallocs with allocations): allocations and bytes $sum; the program counted $(awk '$1 == "step" { b = $3 } END { print b + 0 }' "$TMP/oom$n.out")"
	if [ "$mode" = --exact ]; then
		expect_eq "$what: its allocations and bytes, the last two files' together (files/with allocations/sum)" \
			"$nfiles/$withallocs/$(jqr "$TMP/oom$n.json" '"\(.totals.allocations) \(.totals.allocated_bytes)"')" "2/2/$sum"
	else
		expect_eq "$what: its allocations and bytes, the last two files' together (files/sum)" \
			"$nfiles/$(jqr "$TMP/oom$n.json" '"\(.totals.allocations) \(.totals.allocated_bytes)"')" "2/$sum"
		expect_eq "$what: the large blocks exact, all at grow_step" \
			"$(jqr "$TMP/oom$n.json" '.trace.budget.large_allocated_bytes == .totals.allocated_bytes')" true
	fi
	expect_eq "$what: its top site" "$(jqr "$TMP/oom$n.json" '.sites[0].function')" grow_step
	# a step's block: 256 KiB, or under --budget the large block's usable
	# size, glibc's mapping of it and its header in whole pages (266240)
	# less the 16-byte chunk header
	step=$((256 << 10))
	[ "$mode" = --exact ] || step=266224
	grown_ok "$what" "$TMP/oom$n.json" "$(leaked_in_window "$TMP/oom$n.out" "$TMP/oom$n.json" $step)" $step
	expect_eq "$what: the limit hit, $( [ "$mode" = --exact ] && echo exact || echo estimated)" \
		"$(jqr "$TMP/oom$n.json" '[.last_minute.memory_limit_bytes, .last_minute.memory_limit_of, .last_minute.estimated] | @tsv')" \
		"67108864	$cgname	$( [ "$mode" = --exact ] && echo false || echo true)"
	if [ -z "$rss" ]; then
		expect_eq "$mode without --rss: no first writes, no RSS series" \
			"$(jqr "$TMP/oom$n.json" '"\(.rss) \(.last_minute.first_written | length) \(.last_minute.rss_series | length)"')" "null 0 0"
	else
		written=$(jqr "$TMP/oom$n.json" '[.last_minute.first_written[] | select(.function == "grow_step") | .bytes] | add // 0')
		expect_within_pct "$mode --rss: first written in the last minute at grow_step (sampled write faults) against its growth" \
			"$written" "$(jqr "$TMP/oom$n.json" '.last_minute.grown[0].grown_bytes')" 25
		expect_eq "$mode --rss: the last minute's RSS series ends where the trace's does" \
			"$(jqr "$TMP/oom$n.json" '"\(.last_minute.rss_series | length > 5) \(.last_minute.rss_series[-1][1] == .rss.last.anon_bytes)"')" "true true"
		anon=$(jqr "$TMP/oom$n.json" '.rss.last.anon_bytes // 0')
		if [ "$anon" -ge $((40 << 20)) ] && [ "$anon" -le $((64 << 20)) ]; then ok "$mode --rss: its RSS series ends near the 64 MiB limit: anon $anon"; else not_ok "$mode --rss: its RSS series' last anon: $anon, want 40 to 64 MiB"; fi
	fi
	kill -INT "$agent"
	wait "$agent"
	agent=
}
rss_victims=
# what an agent killed while writing left: swept at start once a minute old
old_part=$oomdir/.oom_grow.1.20000101T000000Z.oom.mtrace.part
young_part=$oomdir/.oom_grow.2.20000101T000000Z.oom.mtrace.part
: >"$old_part"
: >"$young_part"
touch -d '-2 min' "$old_part"
run_rss --exact 2 --rss
expect_eq "a .part file a minute old swept at start, a younger one (another agent's?) left" \
	"$([ -e "$old_part" ] && echo old) $([ -e "$young_part" ] && echo young)" " young"
rm -f "$young_part"
run_rss "--budget 1" 3 --rss
run_rss "--budget 1" 4
# kept per program (MEMTRACE_AGENT_OOM_KEEP=2 here, 16 by default): the
# first OOM kills' and the crash's files went, the newest two stay
expect_eq "--oom-dir pruned to the newest 2 of oom_grow" "$(cd "$oomdir" && ls | sed -E 's/^oom_grow\.([0-9]+)\..*\.(oom|crash)\.mtrace$/\1.\2/' | sort | tr '\n' ' ')" \
	"$(for p in $(tr ' ' '\n' <<<"$rss_victims" | grep . | tail -2); do echo "$p.oom"; done | sort | tr '\n' ' ')"

# --- memtrace record -p: the trace's report says so at its top
(exec sh -c "echo \$\$ >$cg/cgroup.procs && exec $PROGS/oom_grow 4096 1000" >"$TMP/oom4.out" 2>&1) &
v=$!
pids="$pids $v"
wait_for_line "$TMP/oom4.out" "oom_grow: waiting" 10
timeout -k 5 120 "$MEMTRACE" record -p "$v" -o "$TMP/rec.mtrace" 2>"$TMP/rec.err" &
rec=$!
expect_line "$TMP/rec.err" "memtrace: attached to PID $v " 20 "record never attached"
kill -USR1 "$v"
wait "$rec"
expect_status "record -p of a target OOM-killed: exit status" $? 0 "$TMP/rec.err"
expect_eq "... it says so on stderr" "$(grep -c "^memtrace: PID $v (oom_grow) was killed by the OOM killer at .*, its memory cgroup ($cgname) limited to 64.0 MiB$" "$TMP/rec.err")" 1
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/rec.mtrace" >"$TMP/rec.txt" 2>&1
expect_eq "... and its report at the top" "$(head -6 "$TMP/rec.txt" | grep -c '^  killed by the OOM killer at .* limited to 64.0 MiB$')" 1 || head -8 "$TMP/rec.txt" | sed 's/^/# /'
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$TMP/rec.mtrace" >"$TMP/rec.json" 2>/dev/null
grown_ok "record -p" "$TMP/rec.json" "$(leaked_in_window "$TMP/oom4.out" "$TMP/rec.json" $((4 << 20)))" $((4 << 20))
expect_eq "record -p: the limit hit" "$(jqr "$TMP/rec.json" '[.last_minute.memory_limit_bytes, .last_minute.memory_limit_of] | @tsv')" "67108864	$cgname"
finish
