#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make agent-soak (and make bench, AGENT_SOAK_SECONDS=60 there): memtrace
# agent --comm many_stacks under its default --budget 1, while
# tests/progs/many_stacks (131072 distinct stacks a run) is started again
# and again for AGENT_SOAK_SECONDS (default 600), each run a new process the
# agent finds, records and, a minute after it ended, frees. Prints the
# agent's resident memory every 30 s and its growth after the first minute
# (target: under 5 MB), and its file descriptors and the host's BPF links
# before the first target and after the last one was freed (target: the
# same). /metrics and /debug/pprof/heap are read every 10 s meanwhile.
set -u -o pipefail
cd "$(dirname "$0")/.."
BUILD=$PWD/build
SOAK=${AGENT_SOAK_SECONDS:-600}
PORT=16571
[ "$(id -u)" = 0 ] || { echo "agent_soak: run it as root" >&2; exit 1; }
make -s all progs >/dev/null || exit 1
work=$(mktemp -d "$BUILD/bench/agent_soak.XXXXXX" 2>/dev/null || mktemp -d)
agent=""
cleanup() {
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	pkill -x many_stacks 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
links() { bpftool link list 2>/dev/null | grep -c '^[0-9]*:'; }

links0=$(links)
MEMTRACE_AGENT_KEEP_ENDED=${AGENT_SOAK_KEEP:-60} "$BUILD/memtrace" agent --comm many_stacks \
	--listen "127.0.0.1:$PORT" 2>"$work/err" &
agent=$!
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/metrics" && break; sleep 0.1; done
fds0=$(ls "/proc/$agent/fd" | wc -l)
echo "agent soak: $SOAK s of many_stacks 17 (131072 stacks a run) run after run, under the agent's --budget 1"
echo "  before any target: agent fds $fds0, host BPF links $links0"
t0=$(date +%s)
next=0
first_min=""
runs=0
while [ $(($(date +%s) - t0)) -lt "$SOAK" ]; do
	"$BUILD/progs/many_stacks" 17 >/dev/null 2>&1
	runs=$((runs + 1))
	el=$(($(date +%s) - t0))
	if [ "$el" -ge "$next" ]; then
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
		printf '  %4d s  agent RSS %6d KiB  runs %d\n' "$el" "$rss" "$runs"
		[ -z "$first_min" ] && [ "$el" -ge 60 ] && first_min=$rss
		curl -s "http://127.0.0.1:$PORT/metrics" >/dev/null
		curl -s -o /dev/null "http://127.0.0.1:$PORT/debug/pprof/heap"
		next=$((next + 30))
	fi
	sleep 0.5
done
rss_end=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
# the last run's recording freed, then the count again
sleep $((${AGENT_SOAK_KEEP:-60} + 3))
fds1=$(ls "/proc/$agent/fd" | wc -l)
links1=$(links)
echo "  after the last target was freed: agent fds $fds1, host BPF links $links1"
grow=$(( rss_end - ${first_min:-$rss_end} ))
printf '  %-62s %8s  %s\n' "agent RSS growth after the first minute, KiB (target < 5120)" "$grow" \
	"$([ "$grow" -lt 5120 ] && echo PASS || echo MISS)"
printf '  %-62s %8s  %s\n' "agent fds before / after" "$fds0/$fds1" "$([ "$fds0" = "$fds1" ] && echo PASS || echo MISS)"
printf '  %-62s %8s  %s\n' "host BPF links before / after" "$links0/$links1" "$([ "$links0" = "$links1" ] && echo PASS || echo MISS)"
echo "  ($runs runs of many_stacks)"
