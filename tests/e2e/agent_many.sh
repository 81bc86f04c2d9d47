#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace agent holding 64 targets (its most) at once, under systemd's
# default soft limit of 1024 descriptors: 64 copies of tests/progs/
# alloc_patterns, each waiting for SIGUSR1, given as -p to one agent
# --exact. Checked: all 64 attached, each ran its known pattern (56
# allocations, 8400544 bytes, 8 blocks and 4852 bytes left) and /metrics
# has every one's series with exactly those figures, no event dropped;
# /metrics answers (its connection's descriptor past select's 1024); and
# still so 60 s after the start. The BPF map descriptors it holds are fewer
# than its targets (rings are mapped, not held); it holds no epoll set, no
# trace file and no pidfd a target, and one root directory for all (theirs
# is the host's). The C library's debug info
# is loaded once for all of them, and names the frames of each.
. "$(dirname "$0")/lib.sh"
plan 16

N=64
port=16531
url=http://127.0.0.1:$port
agent=
targets=()
cleanup() {
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	for p in "${targets[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
t0=$(date +%s)
args=()
for i in $(seq $N); do
	(exec "$PROGS/alloc_patterns" wait >"$TMP/ap.$i.out" 2>/dev/null) &
	targets+=($!)
	args+=(-p $!)
done
: >"$TMP/agent.err" # there before the loop below reads it (the subshell may open it later)
(ulimit -Sn 1024 && exec timeout -k 5 300 "$MEMTRACE" agent "${args[@]}" --exact --listen "127.0.0.1:$port" -d 240) \
	2>"$TMP/agent.err" &
agent=$!
attached=0
for _ in $(seq 1800); do
	attached=$(grep -c '^memtrace: attached to PID ' "$TMP/agent.err")
	[ $((attached + $(grep -c '^memtrace: failed' "$TMP/agent.err"))) -ge $N ] && break
	kill -0 "$agent" 2>/dev/null || break
	sleep 0.1
done
expect_eq "the agent attached to all $N (soft limit of 1024 descriptors)" "$attached" $N ||
	grep -m3 '^memtrace: failed' "$TMP/agent.err" | sed 's/^/# /'
me=$(pgrep -P "$agent" -x memtrace) # timeout's child
echo "# attached $N in $(($(date +%s) - t0)) s; the agent holds $(ls "/proc/$me/fd" 2>/dev/null | wc -l) descriptors," \
	"$(awk '/^VmRSS/ { print $2 " kB" }' "/proc/$me/status" 2>/dev/null) resident"
# a target's rings and lanes (one of each a CPU) are mapped, not held by a
# descriptor: the BPF maps held are the one object's, whatever N and the
# CPUs (27 here; 283 when each target held its 4 on 2 CPUs)
fd_kinds=$(ls -l "/proc/$me/fd" 2>/dev/null | awk '{ print $NF }')
expect_eq "BPF map descriptors under $N, not 2 a CPU a target (held: $(grep -c '^anon_inode:bpf-map$' <<<"$fd_kinds"))" \
	"$(grep -c '^anon_inode:bpf-map$' <<<"$fd_kinds" | awk -v n=$N '{ print ($1 < n) ? "yes" : "no" }')" yes
# descriptors a target held that it needs none of: an epoll set for its
# rings (no probe wakes them: the drain's timer is their clock; 64 here
# when each had one) and its root for the live names (one for all whose
# root is the same directory of the same mount; 64 when each held its own)
expect_eq "no epoll set held for the rings ($N when each target had one)" \
	"$(grep -c '^anon_inode:\[eventpoll\]$' <<<"$fd_kinds")" 0
expect_eq "one root directory held for the $N targets (each the host's)" "$(grep -c '^/$' <<<"$fd_kinds")" 1
# nor its trace in memory (reopened to append a chunk; 64 when each was
# held) nor, once attached, its pidfd (the agent's exit watch tells its
# end; 64 when each recording held one)
expect_eq "no trace file held open ($N when each target's was)" \
	"$(grep -c '^/dev/shm/memtrace-agent\.' <<<"$fd_kinds")" 0
expect_eq "no pidfd held once attached ($N when each target's recording held one)" \
	"$(grep -c '^anon_inode:\[pidfd\]$' <<<"$fd_kinds")" 0
# the unwind rows (16 MiB) are written through their pages alone, not kept
# mapped: no BPF map of 16 MiB or more in the agent's memory
big=0
while read -r range _ _ _ _ name; do
	[ "$name" = anon_inode:bpf-map ] && [ $((16#${range#*-} - 16#${range%-*})) -ge $((16 << 20)) ] && big=$((big + 1))
done <"/proc/$me/maps"
expect_eq "no BPF map of 16 MiB or more mapped into the agent" "$big" 0
kill -USR1 "${targets[@]}"
done_n=0
for p in "${targets[@]}"; do wait "$p" && done_n=$((done_n + 1)); done
expect_eq "every copy ran its pattern" "$done_n/$(cat "$TMP"/ap.*.out | grep -c '^alloc_patterns: done$')" "$N/$N"

# every target's series, with the pattern's figures: "allocations bytes
# live_bytes blocks dropped"; the last events reach the agent within its
# polls (64 recordings on this host's CPUs: up to 30 s is given)
check_metrics() { # WHEN
	local m exact=0 present=0 p row
	for _ in $(seq 30); do
		exact=0 present=0
		m=$(curl -s --max-time 10 "$url/metrics")
		count_exact
		[ "$exact" = $N ] && break
		sleep 1
	done
	expect_eq "$1: /metrics has every target's series" "$present" $N
	expect_eq "$1: each exact (56 allocations, 8400544 bytes, 4852 live in 8 blocks, none dropped)" "$exact" $N
}
count_exact() {
	for p in "${targets[@]}"; do
		row=$(awk -v p="pid=\"$p\"," '
			index($1, p) {
				split($1, n, "{")
				v[n[1]] = $2
			}
			END { print v["memtrace_allocations_total"], v["memtrace_allocated_bytes_total"], v["memtrace_live_heap_bytes"],
				v["memtrace_live_heap_blocks"], v["memtrace_dropped_events_total"] }' <<<"$m")
		[ -n "${row// /}" ] && present=$((present + 1))
		[ "$row" = "56 8400544 4852 8 0" ] && exact=$((exact + 1))
	done
}
check_metrics "after the pattern"
# the targets' live names share the files they all map: the C library's
# debug info (Debian's libc6-dbg) is loaded once, not once a target (10 MB
# of the agent's memory each), and names every target's frames: the first
# target's, the middle one's and the last one's profiles name the program's
# site and the C library's __libc_start_call_main (a local symbol, in its
# debug file alone)
libc_debug=$(ldd "$PROGS/alloc_patterns" | awk '/libc.so/ { print $3 }' | xargs readelf -n 2>/dev/null |
	awk '/Build ID/ { print $3 }')
libc_debug=/usr/lib/debug/.build-id/${libc_debug:0:2}/${libc_debug:2}.debug
if [ -f "$libc_debug" ]; then
	expect_eq "the C library's debug file mapped once for the $N targets" "$(grep -c " $libc_debug\$" "/proc/$me/maps")" 1
else
	skip "the C library's debug file mapped once for the $N targets: no $libc_debug here"
fi
named=0
for p in "${targets[0]}" "${targets[$((N / 2))]}" "${targets[$((N - 1))]}"; do
	curl -s -o "$TMP/heap.pb.gz" "$url/debug/pprof/heap?pid=$p"
	traces=$(cd / && timeout -k 5 "$LIMIT" go tool pprof -traces "$TMP/heap.pb.gz" 2>&1)
	grep -q ' site_peak_block$' <<<"$traces" && { [ ! -f "$libc_debug" ] || grep -q ' __libc_start_call_main$' <<<"$traces"; } &&
		named=$((named + 1))
done
expect_eq "the first, middle and last targets' profiles name site_peak_block and __libc_start_call_main" "$named" 3
left=$((t0 + 60 - $(date +%s)))
[ "$left" -gt 0 ] && sleep "$left"
check_metrics "60 s after the start"
expect_eq "the agent still runs" "$(kill -0 "$agent" 2>/dev/null && echo yes)" yes
kill -INT "$agent"
wait "$agent"
expect_status "the agent stops cleanly" $? 0 "$TMP/agent.err"
agent=
finish
