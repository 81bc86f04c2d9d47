#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What Python frames cost (issue 43), beside the host's uprobe hit:
#  - the walk's BPF time per allocation: a Python program allocating 200,000
#    blocks of 1000 bytes (each a malloc) from 12 Python frames deep,
#    recorded exactly with the walk and without it (MEMTRACE_NO_PYTHON), the
#    allocation entry program's run_time_ns / run_cnt (kernel.bpf_stats_enabled);
#  - a Python HTTP service: Debian's python3.11 -m http.server (the standard
#    library's ThreadingHTTPServer) on 127.0.0.1 serving a 4 KiB file under
#    Debian's wrk (1 thread, 8 connections, 10 s), requests/s untraced, under
#    `record -p --budget 1` and recorded exactly, from 2 s after memtrace
#    said it attached (the steady state the issue asks >= 0.95 x untraced
#    of), and under --budget 1 from the moment it attached (the recorder's
#    first second, unwind tables and names, inside the 10 s): median of 5
#    each, taken in turn.
#
# A benchmark, not a test: figures only, non-zero only when something could
# not run.
set -u -o pipefail

cd "$(dirname "$0")/.."
BUILD=$PWD/build
MEMTRACE=$BUILD/memtrace
PY=/usr/bin/python3.11
REPS=${PYTHON_BENCH_REPS:-5}
SECS=${PYTHON_BENCH_SECONDS:-10}
PORT=18743
MB=$BUILD/bench/malloc_bench

die() {
	echo "bench/python: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches uprobes: run it as root"
[ -x "$PY" ] || die "needs Debian's python3.11 (apt-get install python3.11)"
command -v bpftool >/dev/null || die "needs bpftool (apt-get install bpftool)"
command -v wrk >/dev/null || apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1 ||
	die "needs Debian's wrk (apt-get install wrk)"
mkdir -p "$BUILD/bench" || die "cannot make $BUILD/bench"
WORK=$(mktemp -d "$BUILD/bench/python.XXXXXX") || die "no work directory"
SERVER=
was=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled="$was"; [ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
. bench/common.sh
host_hit

# --- the walk's own time
cat >"$WORK/deep.py" <<'PYEOF'
import sys
def deep(d, n):
    if d:
        return deep(d - 1, n)
    keep = None
    for _ in range(n):
        keep = bytearray(1000)
    return keep
deep(int(sys.argv[1]), int(sys.argv[2]))
PYEOF
# "NS_PER_RUN RUNS" of alloc_enter while one recording of deep.py runs
walk_ns() {
	local rec last="" s old
	sysctl -qw kernel.bpf_stats_enabled=1 || die "cannot turn on kernel.bpf_stats_enabled"
	# programs other recordings on the host loaded before this one are not its
	old=$(bpftool prog show --json 2>/dev/null | jq -c '[.[] | select(.name == "alloc_enter") | .id]')
	"$MEMTRACE" record -o "$WORK/d.mtrace" -- "$PY" "$WORK/deep.py" 10 200000 >/dev/null 2>&1 &
	rec=$!
	while kill -0 "$rec" 2>/dev/null; do
		s=$(bpftool prog show --json 2>/dev/null | jq -r --argjson old "$old" \
			'[.[] | select(.name == "alloc_enter" and (.id as $i | $old | index($i) | not))] | max_by(.run_cnt // 0) | select(.) | "\(.run_time_ns // 0) \(.run_cnt // 0)"')
		[ -n "$s" ] && last=$s
		sleep 0.05
	done
	wait "$rec"
	rm -f "$WORK/d.mtrace"
	sysctl -qw kernel.bpf_stats_enabled="$was"
	awk '{ if ($2 > 0) printf "%.0f %d\n", $1 / $2, $2 }' <<<"$last"
}
with=() without=()
for _ in $(seq "$REPS"); do
	with+=("$(walk_ns | cut -d' ' -f1)")
	without+=("$(MEMTRACE_NO_PYTHON=1 walk_ns | cut -d' ' -f1)")
done
W=$(printf '%s\n' "${with[@]}" | median)
N=$(printf '%s\n' "${without[@]}" | median)
echo "Python frames (CPython 3.11, 12 frames deep, 200,000 mallocs; median of $REPS; this host's uprobe hit: $HIT us):"
printf '  %-52s %8s ns\n' "allocation entry program, with the Python walk" "$W"
printf '  %-52s %8s ns\n' "allocation entry program, without it" "$N"
printf '  %-52s %8s ns  (%s ns a Python frame)\n' "the walk, per allocation" "$(calc "$W - $N" 0)" "$(calc "($W - $N) / 12" 0)"

# --- a Python HTTP service under load
head -c 4096 /dev/urandom | base64 | head -c 4096 >"$WORK/f.txt"
"$PY" -m http.server "$PORT" --bind 127.0.0.1 --directory "$WORK" >/dev/null 2>&1 &
SERVER=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/f.txt" && break; sleep 0.1; done
rps() { wrk -t1 -c8 -d"${SECS}s" "http://127.0.0.1:$PORT/f.txt" 2>/dev/null | awk '/^Requests\/sec:/ { printf "%.0f\n", $2 }'; }
traced() { # SETTLE ARGS...: requests/s with memtrace recording the server with ARGS, from SETTLE s after it attached
	local rec r settle=$1
	shift
	"$MEMTRACE" record -o "$WORK/s.mtrace" "$@" -p "$SERVER" 2>"$WORK/rec.err" &
	rec=$!
	for _ in $(seq 100); do grep -q "memtrace: attached" "$WORK/rec.err" && break; sleep 0.1; done
	sleep "$settle"
	r=$(rps)
	kill -INT "$rec" 2>/dev/null
	wait "$rec" 2>/dev/null
	rm -f "$WORK/s.mtrace"
	echo "$r"
}
# --- the same cost side by side: two identical servers under the same load
# at once (wrk -c4 each), one recorded, roles swapped each run; what the
# recording costs is the traced server's CPU a request over the untraced
# one's (/proc/PID/stat), with the host's other load on both alike. The
# requests/s rows below are what the issue asks; this one holds on a host
# that others load, where those swing by more than the 5% they judge.
"$PY" -m http.server "$((PORT + 1))" --bind 127.0.0.1 --directory "$WORK" >/dev/null 2>&1 &
TWIN=$!
trap 'sysctl -qw kernel.bpf_stats_enabled="$was"; kill $SERVER $TWIN 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$((PORT + 1))/f.txt" && break; sleep 0.1; done
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
reqs() { wrk -t1 -c4 -d"${SECS}s" "http://127.0.0.1:$1/f.txt" 2>/dev/null | awk '/ requests in / { print $1 }'; }
side() { # TRACED_PID TRACED_PORT OTHER_PID OTHER_PORT ARGS...: traced CPU a request over the other's
	local tp=$1 tport=$2 op=$3 oport=$4 rec l t0 o0 t1 o1 rt ro
	shift 4
	"$MEMTRACE" record -o "$WORK/side.mtrace" "$@" -p "$tp" 2>"$WORK/side.err" &
	rec=$!
	for _ in $(seq 100); do grep -q "memtrace: attached" "$WORK/side.err" && break; sleep 0.1; done
	sleep 2
	t0=$(cpu_ticks "$tp") o0=$(cpu_ticks "$op")
	reqs "$tport" >"$WORK/side.rt" &
	l=$!
	ro=$(reqs "$oport")
	wait "$l"
	rt=$(cat "$WORK/side.rt")
	t1=$(cpu_ticks "$tp") o1=$(cpu_ticks "$op")
	kill -INT "$rec" 2>/dev/null
	wait "$rec" 2>/dev/null
	rm -f "$WORK/side.mtrace"
	calc "($t1 - $t0) * $ro / (($o1 - $o0) * $rt)" 4
}
sb=() sl=()
for i in $(seq "$REPS"); do
	if [ $((i % 2)) = 1 ]; then
		sb+=("$(side "$SERVER" "$PORT" "$TWIN" "$((PORT + 1))" --budget 1)")
		sl+=("$(side "$TWIN" "$((PORT + 1))" "$SERVER" "$PORT" --budget 1 --large 0)")
	else
		sb+=("$(side "$TWIN" "$((PORT + 1))" "$SERVER" "$PORT" --budget 1)")
		sl+=("$(side "$SERVER" "$PORT" "$TWIN" "$((PORT + 1))" --budget 1 --large 0)")
	fi
done
kill "$TWIN" 2>/dev/null
SB=$(printf '%s\n' "${sb[@]}" | median)
SL=$(printf '%s\n' "${sl[@]}" | median)
echo "the same, side by side: the recorded server's CPU a request over its untraced twin's, both under load at once (median of $REPS; uprobe hit $HIT us):"
printf '  %-52s %8s x  (%s)\n' "record -p --budget 1" "$SB" "${sb[*]}"
printf '  %-52s %8s x  (%s)\n' "record -p --budget 1 --large 0 (no large blocks)" "$SL" "${sl[*]}"

un=() bud=() bud0=() ex=()
rps >/dev/null # warm
for _ in $(seq "$REPS"); do
	un+=("$(rps)")
	bud0+=("$(traced 0 --budget 1)")
	bud+=("$(traced 2 --budget 1)")
	ex+=("$(traced 2)")
done
U=$(printf '%s\n' "${un[@]}" | median)
B0=$(printf '%s\n' "${bud0[@]}" | median)
B1=$(printf '%s\n' "${bud[@]}" | median)
X=$(printf '%s\n' "${ex[@]}" | median)
echo "python3.11 -m http.server on 127.0.0.1, wrk -t1 -c8 ${SECS}s, 4 KiB file (median of $REPS; uprobe hit $HIT us):"
printf '  %-52s %8s req/s\n' "untraced" "$U"
printf '  %-52s %8s req/s  %s x  %s\n' "record -p --budget 1, from 2 s after it attached" "$B1" "$(calc "$B1 / $U" 2)" "$(verdict_min "$(calc "$B1 / $U" 3)" 0.95)"
printf '  %-52s %8s req/s  %s x\n' "record -p --budget 1, from the moment it attached" "$B0" "$(calc "$B0 / $U" 2)"
printf '  %-52s %8s req/s  %s x\n' "record -p (exact, Python frames), after 2 s" "$X" "$(calc "$X / $U" 2)"
exit 0
