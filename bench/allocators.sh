#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make bench, per allocator (issue 14): what tracing every allocation costs
# on each allocator memtrace probes, against the floor for that allocator
# measured in the same run.
#
#   B  untraced      F  empty probes at memtrace's sites for it, entry+return
#   X  memtrace record (exact, stacks: the default)       ratio (X - B) / (F - B)
#   and for glibc, the floor as uprobe sessions and X without them, to show what sessions save.
#
# Rows: glibc malloc+free, C++ new+delete and new[]+delete[] (libstdc++ on
# glibc), and malloc+free under jemalloc, tcmalloc and mimalloc (LD_PRELOAD);
# then redis-server (Debian, jemalloc) under redis-benchmark -P 16 on
# 127.0.0.1 with a bounded request count: untraced, floor and memtrace -p.
# Run by bench/run.sh; alone: sudo bash bench/allocators.sh (after make).
#
# Knobs (environment):
#   BENCH_ALLOC_PAIRS     pairs per run              (default 50000)
#   BENCH_ALLOC_REPS      runs per row; the median   (default 5)
#   BENCH_REDIS_REQUESTS  requests per redis test    (default 50000)
#   BENCH_REDIS_REPS      redis repetitions (untraced, floor, memtrace; default 7)
set -u -o pipefail

cd "$(dirname "$0")/.."
BUILD=$PWD/build
MEMTRACE=$BUILD/memtrace
PAIRS=${BENCH_ALLOC_PAIRS:-50000}
REPS=${BENCH_ALLOC_REPS:-5}
REDIS_N=${BENCH_REDIS_REQUESTS:-50000}
REDIS_REPS=${BENCH_REDIS_REPS:-7}
LIBDIR=/usr/lib/x86_64-linux-gnu
RUN_TIMEOUT=120

die() {
	echo "bench: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "make bench attaches uprobes: run it as root (sudo make bench)"
[ -x "$MEMTRACE" ] || die "no $MEMTRACE: run make first"

# --- targets: one source, three builds ---------------------------------------------
mkdir -p "$BUILD/bench"
build() { # build OUT COMPILER [FLAGS]: malloc_bench.c, rebuilt when the source is newer
	local out=$BUILD/bench/$1 cc=$2
	shift 2
	if [ ! -x "$out" ] || [ bench/malloc_bench.c -nt "$out" ]; then
		$cc "$@" -O2 -g -fno-omit-frame-pointer -Wall -Wextra -pthread -o "$out" bench/malloc_bench.c ||
			die "failed to build $out"
	fi
}
build malloc_bench "${CC:-gcc}"
build new_bench "${CXX:-g++}" -x c++ -DBENCH_NEW=1
build newarr_bench "${CXX:-g++}" -x c++ -DBENCH_NEW=2

WORK=$(mktemp -d "$BUILD/bench/alloc.XXXXXX") || die "failed to create a work directory"
REDIS_PID=
cleanup() {
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# median, verdict, verdict_min, paired, now_us; calc again with this script's two decimals
MB=$BUILD/bench/malloc_bench
. bench/common.sh
minimum() { sort -g | head -1; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }

# --- per-pair rows -------------------------------------------------------------------
# name|target|LD_PRELOAD (empty: none)|label
ROWS=(
	"glibc|malloc_bench||glibc malloc+free"
	"new|new_bench||C++ new+delete (libstdc++)"
	"newarr|newarr_bench||C++ new[]+delete[] (libstdc++)"
	"jemalloc|malloc_bench|$LIBDIR/libjemalloc.so.2|jemalloc malloc+free"
	"tcmalloc|malloc_bench|$LIBDIR/libtcmalloc_minimal.so.4|tcmalloc malloc+free"
	"mimalloc|malloc_bench|$LIBDIR/libmimalloc.so.2|mimalloc malloc+free"
)

# pair_ns NAME MODE REP: one run; prints ns per pair. MODE is B, F, X, or M: X attached as a
# uprobe plus a uretprobe (multi-uprobe links) instead of a uprobe session.
pair_ns() {
	local name=$1 mode=$2 out=$WORK/$1.$2.$3 target preload label args=() attach=
	IFS='|' read -r _ target preload label <<<"$(printf '%s\n' "${ROWS[@]}" | grep "^$name|")"
	case $mode in
	F) args=(--empty-probes=entry+return) ;;
	X) args=(-v) ;;
	M) attach=multi ;;
	S) args=(--empty-probes=session) ;;
	esac
	if [ "$mode" = B ]; then
		env ${preload:+LD_PRELOAD=$preload} timeout -k 5 $RUN_TIMEOUT "$BUILD/bench/$target" 1 "$PAIRS" \
			>"$out.out" 2>"$out.err"
	else
		env ${preload:+LD_PRELOAD=$preload} ${attach:+MEMTRACE_ATTACH=$attach} \
			timeout -k 5 $RUN_TIMEOUT "$MEMTRACE" record -o "$out.mtrace" \
			"${args[@]}" -- "$BUILD/bench/$target" 1 "$PAIRS" >"$out.out" 2>"$out.err"
	fi || { tail -3 "$out.err" >&2; return 1; }
	rm -f "$out.mtrace"
	sed -n 's/^malloc_bench .*ns_per_pair=\([0-9.]*\).*/\1/p' "$out.out" | grep .
}

echo
echo "per allocator: 1 thread x $PAIRS pairs (sizes 16..512), median of $REPS runs, rows interleaved"
for rep in $(seq 1 "$REPS"); do
	for row in "${ROWS[@]}"; do
		name=${row%%|*}
		modes="B F X"
		[ "$name" = glibc ] && modes="B F X M S" # sessions against uprobe + uretprobe, once
		for mode in $modes; do
			ns=$(pair_ns "$name" "$mode" "$rep") || die "the $name $mode run failed"
			echo "$ns" >>"$WORK/$name.$mode.ns"
		done
	done
done

# X/F is of medians. Beside it, the same ratio of each mode's fastest run: on a shared host other
# tenants only ever add time, and a burst that lands on 3 of 5 runs of one mode moves its median.
declare -A NS RATIO
fmt='%-34s %10s %10s %10s %8s %12s %s\n'
printf "$fmt" "allocator" "B ns" "F ns" "X ns" "X/F" "fastest X/F" "probes single-stepped (X run)"
for row in "${ROWS[@]}"; do
	IFS='|' read -r name _ _ label <<<"$row"
	for mode in B F X; do NS[$name.$mode]=$(median <"$WORK/$name.$mode.ns"); done
	RATIO[$name]=$(calc "(${NS[$name.X]} - ${NS[$name.B]}) / (${NS[$name.F]} - ${NS[$name.B]})")
	for mode in B F X; do NS[$name.$mode.min]=$(minimum <"$WORK/$name.$mode.ns"); done
	fastest=$(calc "(${NS[$name.X.min]} - ${NS[$name.B.min]}) / (${NS[$name.F.min]} - ${NS[$name.B.min]})")
	stepped=$(grep '^memtrace: probe .*single-stepped' "$WORK/$name.X.1.err" | awk '{ print $3 }' | paste -sd, -)
	printf "$fmt" "$label" "$(calc "${NS[$name.B]}" 1)" "$(calc "${NS[$name.F]}" 1)" "$(calc "${NS[$name.X]}" 1)" \
		"${RATIO[$name]}" "$fastest" "${stepped:-none}"
done

NS[glibc.M]=$(median <"$WORK/glibc.M.ns") NS[glibc.S]=$(median <"$WORK/glibc.S.ns")
echo "glibc malloc+free, uprobe sessions against a uprobe plus a uretprobe:"
echo "  empty probes as sessions $(calc "${NS[glibc.S]}" 1) ns (F, uprobe + uretprobe: $(calc "${NS[glibc.F]}" 1) ns);" \
	"memtrace attached without sessions (MEMTRACE_ATTACH=multi) $(calc "${NS[glibc.M]}" 1) ns (X, sessions:" \
	"$(calc "${NS[glibc.X]}" 1) ns)"

# --- redis-server under redis-benchmark -P 16 ------------------------------------------
REDIS_RATE= REDIS_FLOOR= REDIS_X=
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	port=16390
	(cd "$WORK" && exec redis-server --port $port --bind 127.0.0.1 --save '' --appendonly no \
		--daemonize no --dir "$WORK" >"$WORK/redis.log" 2>&1) &
	REDIS_PID=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(redis-cli -h 127.0.0.1 -p $port ping 2>/dev/null)" = PONG ] && break
		sleep 0.1
	done
	[ "$(redis-cli -h 127.0.0.1 -p $port ping 2>/dev/null)" = PONG ] || die "redis-server did not start"
	# server_cpu: ns the server's threads have run, the uprobe traps they take included
	server_cpu() { cat /proc/"$REDIS_PID"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }
	# rate: requests per second over all four tests (total requests / total time), and the
	# server's CPU per request in ns: what the client's scheduling on this 2-CPU host does not move.
	rate() {
		local c0 c1 r
		c0=$(server_cpu)
		r=$(timeout $RUN_TIMEOUT redis-benchmark -h 127.0.0.1 -p $port -P 16 -n "$REDIS_N" \
			-t set,get,lpush,lpop --csv 2>/dev/null |
			awk -F'"' -v n="$REDIS_N" '$4 + 0 > 0 { t += n / $4; k++ } END { if (k) printf "%.0f\n", k * n / t }')
		c1=$(server_cpu)
		echo "$r $(((c1 - c0) / (4 * REDIS_N)))"
	}
	# traced_rate ARGS: the rate with memtrace record -p attached, or 1 with what went wrong on
	# stderr (it runs in a command substitution, where die would leave only that subshell).
	traced_rate() {
		local r rec err=$WORK/redis.rec.err t0 pid
		rm -f "$WORK/redis.mtrace"
		t0=$(now_us)
		timeout -k 5 $RUN_TIMEOUT "$MEMTRACE" record -p $REDIS_PID -o "$WORK/redis.mtrace" "$@" 2>"$err" &
		rec=$!
		for ((i = 0; i < 600; i++)); do grep -q '^memtrace: attached' "$err" && break; sleep 0.1; done
		if ! grep -q '^memtrace: attached' "$err"; then
			# where the recorder waits: its threads' kernel stacks
			pid=$(pgrep -P $rec -x memtrace)
			echo "bench: memtrace -p redis-server not attached after 60 s: $(tail -1 "$err")" >&2
			for t in /proc/${pid:-0}/task/*; do
				echo "  thread $(cat "$t/comm" 2>/dev/null): $(tr '\n' ' ' <"$t/stack" 2>/dev/null)" >&2
			done
			kill -KILL $rec ${pid:-} 2>/dev/null
			wait $rec
			return 1
		fi
		echo $(($(now_us) - t0)) >>"$WORK/redis.attach_us"
		r=$(rate)
		kill -INT $rec
		wait $rec || { echo "bench: memtrace -p redis-server failed: $(tail -1 "$err")" >&2; return 1; }
		rm -f "$WORK/redis.mtrace"
		echo "$r"
	}
	# lines "REP MODE REQUESTS/S CPU-NS-PER-REQUEST": the three modes of a repetition back to back
	for rep in $(seq 1 "$REDIS_REPS"); do
		echo "$rep u $(rate)" >>"$WORK/redis.runs"
		r=$(traced_rate --empty-probes=entry+return) || die "the redis-server floor run failed"
		echo "$rep f $r" >>"$WORK/redis.runs"
		r=$(traced_rate) || die "the redis-server memtrace run failed"
		echo "$rep x $r" >>"$WORK/redis.runs"
		# R, the least an exact recorder does (bench/run.sh), where the kernel has uprobe sessions
		if [ -z "${REDIS_NO_R:-}" ]; then
			if r=$(traced_rate --empty-probes=record 2>/dev/null); then
				echo "$rep r $r" >>"$WORK/redis.runs"
			else
				REDIS_NO_R=1
			fi
		fi
	done
	col() { awk -v m="$1" -v c="$2" '$2 == m { print $c }' "$WORK/redis.runs" | median; }
	REDIS_RATE=$(col u 3) REDIS_FLOOR=$(col f 3) REDIS_X=$(col x 3)
	# paired: each repetition's memtrace run against its floor run, the median of those ratios;
	# by CPU, the floor's CPU per request over memtrace's (what throughput the server alone allows)
	read -r REDIS_PAIRED REDIS_PQ1 REDIS_PQ3 <<<"$(awk '{ print $1, $2, $3 }' "$WORK/redis.runs" | paired /dev/stdin x f)"
	read -r REDIS_CPU REDIS_CQ1 REDIS_CQ3 <<<"$(awk '{ print $1, $2, $4 }' "$WORK/redis.runs" | paired /dev/stdin f x)"
	echo
	echo "redis-server (Debian, jemalloc), redis-benchmark -P 16 -n $REDIS_N -t set,get,lpush,lpop, 127.0.0.1, median of $REDIS_REPS:"
	echo "  untraced $REDIS_RATE requests/s   floor $REDIS_FLOOR requests/s   memtrace -p $REDIS_X requests/s" \
		"($(calc "$REDIS_X / $REDIS_FLOOR") x the floor; each repetition against its own floor run: $REDIS_PAIRED," \
		"quartiles $REDIS_PQ1..$REDIS_PQ3)"
	echo "  the server's CPU per request: untraced $(col u 4) ns   floor $(col f 4) ns   memtrace -p $(col x 4) ns" \
		"(floor / memtrace, each repetition's: $REDIS_CPU, quartiles $REDIS_CQ1..$REDIS_CQ3)"
	if grep -q '^[0-9]* r ' "$WORK/redis.runs"; then
		read -r REDIS_R REDIS_RQ1 REDIS_RQ3 <<<"$(awk '{ print $1, $2, $3 }' "$WORK/redis.runs" | paired /dev/stdin r f)"
		echo "  R, the least an exact recorder does (a record with its time at each return and free): $(col r 3) requests/s," \
			"each repetition against its own floor run: $REDIS_R, quartiles $REDIS_RQ1..$REDIS_RQ3; server CPU $(col r 4) ns a request"
	fi
	echo "  memtrace -p, start to attached: median $(calc "$(median <"$WORK/redis.attach_us") / 1000" 0) ms," \
		"slowest $(calc "$(sort -g "$WORK/redis.attach_us" | tail -1) / 1000" 0) ms of $((2 * REDIS_REPS))"
fi

echo
echo "| what (issue 14) | target | measured | verdict |"
echo "|---|---|---|---|"
na=$(calc "${NS[newarr.X]} / ${NS[glibc.X]}")
na_fast=$(calc "${NS[newarr.X.min]} / ${NS[glibc.X.min]}")
gl_fast=$(calc "(${NS[glibc.X.min]} - ${NS[glibc.B.min]}) / (${NS[glibc.F.min]} - ${NS[glibc.B.min]})")
echo "| new[]+delete[] traced / malloc+free traced | <= 1.15 | $na ($(calc "${NS[newarr.X]}" 0) / $(calc "${NS[glibc.X]}" 0) ns; fastest runs: $na_fast) | $(verdict "$na" 1.15) |"
echo "| glibc malloc+free traced | <= 1.2 x F | ${RATIO[glibc]} x F (fastest runs: $gl_fast) | $(verdict "${RATIO[glibc]}" 1.2) |"
if [ -n "$REDIS_X" ]; then
	echo "| redis-benchmark -P 16, memtrace -p | >= 0.9 x floor | $(calc "$REDIS_PAIRED") x floor, each repetition's (of medians" \
		"$(calc "$REDIS_X / $REDIS_FLOOR"); by the server's CPU per request $(calc "$REDIS_CPU")) | $(verdict_min "$REDIS_PAIRED" 0.9) |"
	if [ -n "${REDIS_R:-}" ]; then
		case $(verdict_min "$REDIS_R" 0.9) in
		PASS) v="at least 0.9 in this run: the clock and the records leave room for the target" ;;
		*) v="under 0.9 in this run: the clock and the records alone cost more than the target" ;;
		esac
		echo "| redis-benchmark -P 16, R: the least an exact recorder does (reference) | reference | $(calc "$REDIS_R") x floor, each repetition's | $v |"
	fi
fi
exit 0
