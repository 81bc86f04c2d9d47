#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make agent-soak (and make bench, AGENT_SOAK_SECONDS=120 there): memtrace
# agent --comm many_stacks under its default --budget 1, its target
# tests/progs/many_stacks walking its 131072 distinct stacks again and again
# for AGENT_SOAK_SECONDS (default 600), restarted halfway (a new process the
# agent finds and records; the old one's recording freed after
# AGENT_SOAK_KEEP seconds, default 60). Prints the agent's resident memory
# every 30 s and its growth after the first minute (target: under 5 MB),
# and its file descriptors and the host's BPF links with one target
# recorded, before and after the restart (target: the same). /metrics and
# /debug/pprof/heap are read at each sample.
set -u -o pipefail
cd "$(dirname "$0")/.."
BUILD=$PWD/build
SOAK=${AGENT_SOAK_SECONDS:-600}
KEEP=${AGENT_SOAK_KEEP:-60}
PORT=16571
[ "$(id -u)" = 0 ] || { echo "agent_soak: run it as root" >&2; exit 1; }
make -s all progs >/dev/null || exit 1
mkdir -p "$BUILD/bench"
work=$(mktemp -d "$BUILD/bench/agent_soak.XXXXXX")
agent="" target=""
cleanup() {
	[ -n "$target" ] && kill "$target" 2>/dev/null
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
links() { bpftool link list 2>/dev/null | grep -c '^[0-9]*:'; }
up() { curl -s "http://127.0.0.1:$PORT/metrics" | grep -c "^memtrace_target_up{pid=\"$1\",comm=\"many_stacks\"} 1$"; }
start_target() { # many_stacks for SEC seconds; waits until the agent records it
	"$BUILD/progs/many_stacks" 17 "$1" >/dev/null 2>&1 &
	target=$!
	for _ in $(seq 100); do [ "$(up "$target")" = 1 ] && return 0; sleep 0.1; done
	echo "agent_soak: the agent never recorded many_stacks $target" >&2
	exit 1
}

MEMTRACE_AGENT_KEEP_ENDED=$KEEP "$BUILD/memtrace" agent --comm many_stacks --listen "127.0.0.1:$PORT" \
	2>"$work/err" &
agent=$!
half=$((SOAK / 2))
start_target $((half + 5))
first=$target
sleep 5
fds0=$(ls "/proc/$agent/fd" | wc -l)
links0=$(links)
echo "agent soak: $SOAK s of many_stacks 17 (131072 distinct stacks, walked again and again), restarted at $half s;"
echo "  the agent's default --budget 1; with one target recorded: agent fds $fds0, host BPF links $links0"
t0=$(date +%s)
first_min="" restarted=""
for ((el = 0; el < SOAK; el = $(date +%s) - t0)); do
	if [ -z "$restarted" ] && [ "$el" -ge "$half" ]; then
		kill "$first" 2>/dev/null
		wait "$first" 2>/dev/null
		start_target $((SOAK - half + KEEP + 20))
		restarted=1
		echo "  $el s  restarted: pid $first -> $target"
	fi
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
	m=$(curl -s "http://127.0.0.1:$PORT/metrics")
	curl -s -o "$work/heap.pb.gz" "http://127.0.0.1:$PORT/debug/pprof/heap"
	printf '  %4d s  agent RSS %6d KiB  allocations seen %s\n' "$el" "$rss" \
		"$(awk '/^memtrace_allocations_total/ { s += $2 } END { print s + 0 }' <<<"$m")"
	[ -z "$first_min" ] && [ "$el" -ge 60 ] && first_min=$rss
	sleep 30
done
rss_end=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
sleep $((KEEP + 5)) # the first one's recording freed
fds1=$(ls "/proc/$agent/fd" | wc -l)
links1=$(links)
echo "  with one target recorded again, the first freed: agent fds $fds1, host BPF links $links1"
grow=$((rss_end - ${first_min:-$rss_end}))
printf '  %-62s %8s  %s\n' "agent RSS growth after the first minute, KiB (target < 5120)" "$grow" \
	"$([ "$grow" -lt 5120 ] && echo PASS || echo MISS)"
printf '  %-62s %8s  %s\n' "agent fds before / after a restart" "$fds0/$fds1" "$([ "$fds0" = "$fds1" ] && echo PASS || echo MISS)"
printf '  %-62s %8s  %s\n' "host BPF links before / after a restart" "$links0/$links1" \
	"$([ "$links0" = "$links1" ] && echo PASS || echo MISS)"
