#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# --budget (issue 24), measured in one run beside the host's uprobe hit cost:
#   1. Debian's redis-server under redis-benchmark -P 16 at full load: requests/s
#      with --budget 5 and --budget 1 against untraced, BUDGET_TP_REPS reps of
#      the three modes back to back, each rep's own ratios, their median and
#      quartiles (targets 0.95 x and 0.99 x);
#   2. accuracy: every site holding >= 0.5% of an exact recording's allocated
#      bytes (sites past redis' zmalloc family, --alloc-fn) of one
#      redis-benchmark command is in a --budget 5 recording of the same command
#      (three times over), its share within +-25% of the exact one; beside it,
#      with no target, the same requests in runs a tenth as long (connections
#      opened ten times as often);
#   3. a burst: tests/progs/proportions at 10 k allocations/s, then as fast as it
#      goes (about 1 M/s): its rounds after the switch, traced with --budget 5 and
#      untraced; the slowdown should stay within the budget + 2 points;
#   4. totals: the allocations a --budget 5 recording of proportions estimates,
#      over the count the program printed (no target: the issue asks for shares).
# A benchmark, not a test: figures and PASS/MISS, non-zero only when something
# could not run. Knobs: BUDGET_REPS (3), BUDGET_TP_REPS (11), BUDGET_REQUESTS
# (1000000 per test; the throughput reps run half of it), BUDGET_ACC_REQUESTS
# (300000 per test, the accuracy rows).
set -u -o pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
MEMTRACE=$BUILD/memtrace
REPS=${BUDGET_REPS:-3}
TP_REPS=${BUDGET_TP_REPS:-11}
N=${BUDGET_REQUESTS:-1000000}
PORT=16410

die() {
	echo "bench/budget: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches uprobes: run it as root"
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	die "needs redis-server and redis-benchmark: apt-get install redis-server redis-tools"
make -s all progs >/dev/null 2>&1 || die "failed to build memtrace (make all progs)"
mkdir -p "$BUILD/bench"
MB=$BUILD/bench/malloc_bench
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
WORK=$(mktemp -d "$BUILD/bench/budget.XXXXXX") || die "no work directory"
SERVER=""
cleanup() {
	[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

. bench/common.sh
host_hit
echo "budget bench: $(nproc) CPUs, kernel $(uname -r); this host: a uprobe hit $HIT us, F $(calc "($F - $B) / 1000" 2) us per malloc+free pair"

redis_start "$PORT" || die "redis-server did not start"

# requests/s over the four tests: all requests over the time they took, on
# an empty dataset (LPUSH grows its lists run after run)
rps() { redis_rps "$PORT" "$1"; }
# Start a recording of the server with ARGS; RECORDER gets its pid.
record_server() {
	local out=$1
	shift
	rm -f "$out" "$out.err"
	"$MEMTRACE" record -p "$SERVER" -o "$out" "$@" 2>"$out.err" &
	RECORDER=$!
	for _ in $(seq 200); do
		grep -q "memtrace: attached" "$out.err" 2>/dev/null && return 0
		sleep 0.1
	done
	die "memtrace never attached: $(cat "$out.err")"
}
stop_recording() {
	kill -INT "$RECORDER"
	wait "$RECORDER" || die "memtrace failed: $(cat "$1.err")"
}
traced_rps() { # N ARGS...
	local n=$1 r
	shift
	record_server "$WORK/t.mtrace" "$@"
	r=$(rps "$n")
	stop_recording "$WORK/t.mtrace"
	echo "$r"
}

# --- 1. throughput: untraced, --budget 5, --budget 1, alternated in a
# rotating order, so that no mode always runs first or after another
rps 100000 >/dev/null # warm the server
one_run() { # REP MODE
	case $2 in
	u) echo "$1 u $(rps $((N / 2)))" ;;
	b5) echo "$1 b5 $(traced_rps $((N / 2)) --budget 5)" ;;
	b1) echo "$1 b1 $(traced_rps $((N / 2)) --budget 1)" ;;
	esac
}
for rep in $(seq "$TP_REPS"); do
	case $((rep % 3)) in
	1) order="u b5 b1" ;;
	2) order="b5 b1 u" ;;
	0) order="b1 u b5" ;;
	esac
	for mode in $order; do one_run "$rep" "$mode"; done
done >"$WORK/tp"
U=$(awk '$2 == "u" { print $3 }' "$WORK/tp" | median)
U_LO=$(awk '$2 == "u" { print $3 }' "$WORK/tp" | sort -g | head -1)
U_HI=$(awk '$2 == "u" { print $3 }' "$WORK/tp" | sort -g | tail -1)
read -r R5 R5_Q1 R5_Q3 <<<"$(paired "$WORK/tp" b5)"
read -r R1 R1_Q1 R1_Q3 <<<"$(paired "$WORK/tp" b1)"

# --- 2. accuracy against an exact recording of the same workload
ALLOC_FN=(--alloc-fn 'zmalloc*' --alloc-fn 'ztrymalloc*' --alloc-fn 'zcalloc*' --alloc-fn 'zrealloc*'
	--alloc-fn 'ztryrealloc*' --alloc-fn 'zstrdup')
shares() { # TRACE: "site share" lines, share of allocated bytes
	"$MEMTRACE" report --json "${ALLOC_FN[@]}" "$1" |
		jq -r '.totals.allocated_bytes as $t | .sites[] |
			"\(.function // .name)|\(.file // "")|\(.line)|\(.module // "") \(.allocated_bytes / $t)"'
}
# accuracy NAME PER TIMES: an exact recording of one redis-benchmark command
# (PER requests per test), a --budget 5 one of TIMES such commands back to
# back (the same mix of connections and requests, long enough for windows);
# prints "sites bad worst site windows-and-coverage" for the sites holding
# >= 0.5% of the exact bytes
accuracy() {
	local name=$1 per=$2 times=$3
	record_server "$WORK/$name.exact.mtrace"
	rps "$per" >/dev/null
	stop_recording "$WORK/$name.exact.mtrace"
	record_server "$WORK/$name.b5.mtrace" --budget 5
	for _ in $(seq "$times"); do rps "$per" >/dev/null; done
	stop_recording "$WORK/$name.b5.mtrace"
	shares "$WORK/$name.exact.mtrace" >"$WORK/$name.exact.shares"
	shares "$WORK/$name.b5.mtrace" >"$WORK/$name.b5.shares"
	awk 'NR == FNR { b[$1] = $2; next }
		$2 >= 0.005 { n++; e = ($1 in b) ? (b[$1] / $2 - 1) : -1; if (e < 0) e = -e
			if (e > worst) { worst = e; site = $1 } if (e > 0.25) bad++ }
		END { printf "%d %d %.3f %s ", n, bad, worst, site }' "$WORK/$name.b5.shares" "$WORK/$name.exact.shares"
	"$MEMTRACE" report --json "$WORK/$name.b5.mtrace" |
		jq -r '"\(.trace.budget.windows) windows, allocations traced \(100 * .trace.budget.live_ns / .trace.duration_ns * 100 | round / 100)% of the time"'
	rm -f "$WORK/$name".*.mtrace
}
accuracy_row() { # LABEL NAME PER TIMES TARGET(yes|no)
	local n bad worst site windows
	read -r n bad worst site windows <<<"$(accuracy "$2" "$3" "$4")"
	printf "  %-62s %10s  %s\n" "$1 ($windows)" "$((n - bad))/$n" \
		"$(if [ "$5" = no ]; then echo "(no target; worst $worst: $site)"
		elif [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then echo PASS
		else echo "MISS (worst $worst: $site)"; fi)"
}
# The issue's workload: one redis-benchmark command, ACC_N requests per test;
# the --budget recording takes three. Beside it, the same requests in runs
# of a tenth as many: every test's 50 connections open ten times as often,
# and the sites that allocate only then (createClient) rise over 0.5% of the
# bytes, in bursts of a few ms that windows live ~1% of the time catch by luck.
ACC_N=${BUDGET_ACC_REQUESTS:-300000}
ACC_ROW=$(accuracy_row "sites >= 0.5% of exact bytes, share within 25%" long "$ACC_N" 3 yes)
CHURN_ROW=$(accuracy_row "the same in runs of $((ACC_N / 10)) requests a test" churn $((ACC_N / 10)) 30 no)

# --- 3. a burst: 10 k allocations/s for 4 s, then as fast as the program goes
PROP=$BUILD/progs/proportions
burst_rounds() { sed -n 's/^burst rounds //p'; }
for _ in $(seq "$REPS"); do
	echo "u $("$PROP" 8 1000 4 8000 | burst_rounds)"
	echo "b $("$MEMTRACE" record -o "$WORK/burst.mtrace" --budget 5 -- "$PROP" 8 1000 4 8000 2>/dev/null | burst_rounds)"
	rm -f "$WORK/burst.mtrace"
done >"$WORK/burst"
BU=$(awk '$1 == "u" { print $2 }' "$WORK/burst" | median)
BB=$(awk '$1 == "b" { print $2 }' "$WORK/burst" | median)
SLOW=$(calc "(1 - $BB / $BU) * 100" 1)

# --- 4. totals: the estimated allocations of proportions (about 1 M a second) against its count
for _ in $(seq "$REPS"); do
	rounds=$("$MEMTRACE" record -o "$WORK/tot.mtrace" --budget 5 -- "$PROP" 8 0 -1 8000 2>/dev/null | sed -n 's/^rounds //p')
	est=$("$MEMTRACE" report --json "$WORK/tot.mtrace" | jq '.totals.allocations / 10')
	rm -f "$WORK/tot.mtrace"
	calc "$est / $rounds" 3
	echo
done >"$WORK/tot"
TOT=$(median <"$WORK/tot")

echo "--budget (throughput: median of $TP_REPS reps' own ratios, quartiles beside; the rest: median of $REPS; host uprobe hit $HIT us):"
printf "  %-62s %10s  %s\n" "redis-benchmark -P 16 untraced, requests/s (runs $U_LO to $U_HI)" "$U" ""
printf "  %-62s %10s  %s\n" "--budget 5: requests/s x untraced, quartiles $R5_Q1-$R5_Q3 (>= 0.95)" "$R5" "$(verdict_min "$R5" 0.95)"
printf "  %-62s %10s  %s\n" "--budget 1: requests/s x untraced, quartiles $R1_Q1-$R1_Q3 (>= 0.99)" "$R1" "$(verdict_min "$R1" 0.99)"
echo "$ACC_ROW"
echo "$CHURN_ROW"
printf "  %-62s %10s  %s\n" "burst 10 k -> ~1 M allocs/s, --budget 5 slowdown % (<= 7)" "$SLOW" "$(verdict "$SLOW" 7)"
printf "  %-62s %10s  %s\n" "estimated / true allocations, proportions at ~1 M/s, --budget 5" "$TOT" "(no target)"
echo "  (burst rounds untraced $BU, traced $BB)"
