#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What --rss costs (issue 25): Debian's redis-server under redis-benchmark
# -P 16 at full load, untraced and with `memtrace record -p --rss=only`
# (resident memory every 100 ms and the calls that map memory, no allocator
# probes): BENCH_RSS_REPS (9) reps of one run each, the order alternated, of
# BENCH_RSS_REQUESTS (500000) requests per test; each rep's own ratio, and
# their median and quartiles (common.sh's paired).
# Where the kernel has no kprobes, the calls that map memory are caught at
# the target's C library (uprobes on its mmap, munmap, ...), not at the
# sys_exit tracepoint, which would slow every syscall on the host. A benchmark, not a test: figures and
# PASS/MISS, non-zero only when something could not run.
set -u -o pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
MEMTRACE=$BUILD/memtrace
REPS=${BENCH_RSS_REPS:-9}
N=${BENCH_RSS_REQUESTS:-500000}
PORT=16411

die() {
	echo "bench/rss: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches BPF programs: run it as root"
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	die "needs redis-server and redis-benchmark: apt-get install redis-server redis-tools"
make -s all >/dev/null 2>&1 || die "failed to build memtrace"
mkdir -p "$BUILD/bench"
MB=$BUILD/bench/malloc_bench # host_hit times the uprobe hit with it
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
WORK=$(mktemp -d "$BUILD/bench/rss.XXXXXX") || die "no work directory"
SERVER=""
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
. bench/common.sh
host_hit
echo "rss bench: $(nproc) CPUs, kernel $(uname -r); this host: a uprobe hit $HIT us"

redis_start "$PORT" || die "redis-server did not start"

rps() { redis_rps "$PORT" "$N"; }
traced_rps() {
	local rec r
	rm -f "$WORK/t.mtrace" "$WORK/t.err"
	"$MEMTRACE" record -p "$SERVER" --rss=only -o "$WORK/t.mtrace" 2>"$WORK/t.err" &
	rec=$!
	for _ in $(seq 200); do
		grep -q "memtrace: attached" "$WORK/t.err" 2>/dev/null && break
		sleep 0.05
	done
	r=$(rps)
	kill -INT "$rec"
	wait "$rec" || die "memtrace failed: $(cat "$WORK/t.err")"
	"$MEMTRACE" report --json "$WORK/t.mtrace" | jq '.rss.samples' >"$WORK/samples"
	echo "$r"
}

rps >/dev/null # warm the server
for rep in $(seq "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then
		echo "$rep u $(rps)"
		echo "$rep t $(traced_rps)"
	else
		echo "$rep t $(traced_rps)"
		echo "$rep u $(rps)"
	fi
done >"$WORK/tp"
read -r R Q1 Q3 <<<"$(paired "$WORK/tp" t)"
echo
echo "--rss=only on redis-server, redis-benchmark -P 16 (each rep's own ratio, $REPS reps, order alternated; host uprobe hit $HIT us):"
echo "  untraced $(awk '$2 == "u" { printf "%s ", $3 }' "$WORK/tp")"
echo "  --rss=only $(awk '$2 == "t" { printf "%s ", $3 }' "$WORK/tp")(the last recording: $(cat "$WORK/samples") samples)"
echo
echo "| what | target | measured | verdict |"
echo "|---|---|---|---|"
echo "| redis -P 16 requests/s, --rss=only / untraced, median of the reps' ratios (quartiles $Q1-$Q3) | >= 0.98 | $R | $(verdict_min "$R" 0.98) |"
exit 0
