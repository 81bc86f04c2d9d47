#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What memtrace makes a target wait, measured in one run (issue 22): the
# verifier's time for the one load, `-p` from start to "attached", `-- CMD`
# from start to the program's first instruction, `record -- /bin/true` end
# to end, how long a forked child waits for its first instruction under
# --follow-children (bench/fork_hold.c), and Debian's PostgreSQL under pgbench -C (a backend forked per
# transaction) with its postmaster traced by -p --follow-children, against
# the same pgbench untraced, and a fork storm (tests/progs/fork_storm) under
# -p --follow-children, exact and with --budget 5, against untraced. The host's uprobe hit cost is printed first:
# every figure here moves with it.
#
# A benchmark, not a test: figures and PASS/MISS, non-zero only when
# something could not run. Knobs: ATTACH_REPS (5), PGBENCH_SECONDS (5),
# ATTACH_SETUP_ONLY=1 (the verifier, -p, -- CMD and /bin/true rows alone:
# no forks, storm or PostgreSQL).
set -u -o pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
MEMTRACE=$BUILD/memtrace
REPS=${ATTACH_REPS:-5}
PG_SECONDS=${PGBENCH_SECONDS:-5}
PGBIN=/usr/lib/postgresql/15/bin

die() {
	echo "bench/attach: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches uprobes: run it as root"
make -s all progs >/dev/null 2>&1 || die "failed to build memtrace (make all progs)"
mkdir -p "$BUILD/bench"
FIRST=$BUILD/bench/first_insn
MB=$BUILD/bench/malloc_bench
${CC:-gcc} -O2 -o "$FIRST" bench/first_insn.c || die "failed to build $FIRST"
HOLD=$BUILD/bench/fork_hold
${CC:-gcc} -O2 -o "$HOLD" bench/fork_hold.c || die "failed to build $HOLD"
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
WORK=$(mktemp -d "$BUILD/bench/attach.XXXXXX") || die "no work directory"
PGPID=""
cleanup() {
	[ -n "$PGPID" ] && kill -INT "$PGPID" 2>/dev/null && sleep 1
	rm -rf "$WORK"
}
trap cleanup EXIT

. bench/common.sh
host_hit
echo "attach bench: $(nproc) CPUs, kernel $(uname -r); this host: a uprobe hit $HIT us (entry-only probes: $(calc "$E - $B" 0) ns per malloc+free pair), F $(calc "($F - $B) / 1000" 2) us per pair"

# --- verifier time of the one load (libbpf's BPF_LOG_STATS, summed over every program)
VERIFY=$(for _ in $(seq "$REPS"); do
	"$MEMTRACE" record -v -o "$WORK/v.mtrace" -- /bin/true 2>&1 >/dev/null |
		sed -n 's/^memtrace: BPF programs verified in \([0-9.]*\) ms.*/\1/p'
	rm -f "$WORK/v.mtrace"
done | median)

# --- -p: start of memtrace to "attached", on a running process
"$BUILD/progs/forever" &
FOREVER=$!
sleep 0.2
attach_p_ms() {
	local t0
	t0=$(now_us)
	timeout 30 "$MEMTRACE" record -o "$WORK/p.mtrace" -p "$FOREVER" -d 0.2 2>&1 >/dev/null |
		while IFS= read -r line; do
			case $line in "memtrace: attached"*) echo $(($(now_us) - t0)) ;; esac
		done
	rm -f "$WORK/p.mtrace"
}
ATTACH_P=$(for _ in $(seq "$REPS"); do attach_p_ms; done | median)
kill -TERM "$FOREVER"
wait "$FOREVER" 2>/dev/null

# --- -- CMD: start of memtrace to the program's first constructor
first_insn_us() {
	local t0 t1
	t0=$(now_us)
	t1=$("$MEMTRACE" record -o "$WORK/c.mtrace" -- "$FIRST" 2>/dev/null | sed -n 's/^first_insn //p')
	rm -f "$WORK/c.mtrace"
	echo $((t1 - t0))
}
FIRST_US=$(for _ in $(seq "$REPS"); do first_insn_us; done | median)

# --- record -- /bin/true, end to end
true_us() {
	local t0
	t0=$(now_us)
	"$MEMTRACE" record -o "$WORK/t.mtrace" -- /bin/true 2>/dev/null
	echo $(($(now_us) - t0))
	rm -f "$WORK/t.mtrace"
}
TRUE_US=$(for _ in $(seq "$REPS"); do true_us; done | median)

if [ -n "${ATTACH_SETUP_ONLY:-}" ]; then
	echo
	echo "attach and launch (median of $REPS; host uprobe hit $HIT us; load $(cut -d' ' -f1-3 /proc/loadavg)):"
	echo "| what | target | measured | verdict |"
	echo "|---|---|---|---|"
	echo "| verifier time, the one load | <= 150 ms | $VERIFY ms | $(verdict "$VERIFY" 150) |"
	echo "| -p to attached (issue 44) | <= 50 ms | $(calc "$ATTACH_P / 1000") ms (uprobe hit $HIT us) | $(verdict "$ATTACH_P" 50000) |"
	echo "| -- CMD to its first instruction | <= 250 ms | $(calc "$FIRST_US / 1000") ms | $(verdict "$FIRST_US" 250000) |"
	echo "| record -- /bin/true end to end (issue 44) | <= 100 ms | $(calc "$TRUE_US / 1000") ms (uprobe hit $HIT us) | $(verdict "$TRUE_US" 100000) |"
	exit 0
fi

# --- a forked child's wait before its first instruction, untraced and under --follow-children
hold_us() { # [memtrace record ARGS...]: "median_wait mean_cycle" of fork_hold
	if [ $# -gt 0 ]; then
		"$MEMTRACE" "$@" -o "$WORK/h.mtrace" -- "$HOLD" 2>/dev/null
	else
		"$HOLD"
	fi | sed -n 's/^fork_hold \([0-9]*\) [0-9]* \([0-9]*\)$/\1 \2/p'
	rm -f "$WORK"/h*.mtrace
}
for _ in $(seq "$REPS"); do hold_us; done >"$WORK/hold.u"
for _ in $(seq "$REPS"); do hold_us record --follow-children; done >"$WORK/hold.t"
HOLD_U=$(awk '{ print $1 }' "$WORK/hold.u" | median) HOLD_T=$(awk '{ print $1 }' "$WORK/hold.t" | median)
CYCLE_U=$(awk '{ print $2 }' "$WORK/hold.u" | median) CYCLE_T=$(awk '{ print $2 }' "$WORK/hold.t" | median)

# --- a fork storm (issue 44): tests/progs/fork_storm's 2000 short children, the parent's
# own time from the first fork to the last reaped, untraced and under -p --follow-children
# (exact, and with --budget 5: every child is still followed, a recorder each)
STORM=$BUILD/progs/fork_storm
STORM_N=${STORM_N:-2000}
storm_us() { # [memtrace record ARGS...]: the storm's microseconds
	local t rec
	if [ $# = 0 ]; then
		"$STORM" "$STORM_N" | sed -n 's/^fork_storm [0-9]* children in \([0-9]*\) us$/\1/p'
		return
	fi
	"$STORM" wait "$STORM_N" >"$WORK/storm.out" &
	t=$!
	for _ in $(seq 100); do [ "$(readlink "/proc/$t/exe")" = "$(readlink -f "$STORM")" ] && break; sleep 0.05; done
	(cd "$WORK" && exec timeout 600 "$MEMTRACE" record -p "$t" "$@" -o "$WORK/st.mtrace" 2>"$WORK/st.err") &
	rec=$!
	for _ in $(seq 400); do grep -q '^memtrace: attached' "$WORK/st.err" 2>/dev/null && break; sleep 0.05; done
	kill -USR1 "$t"
	wait "$t"
	wait "$rec"
	rm -f "$WORK"/st*.mtrace
	sed -n 's/^fork_storm [0-9]* children in \([0-9]*\) us$/\1/p' "$WORK/storm.out"
}
STORM_U=$(for _ in $(seq "$REPS"); do storm_us; done | median)
STORM_T=$(for _ in $(seq "$REPS"); do storm_us --follow-children; done | median)
STORM_B=$(for _ in $(seq "$REPS"); do storm_us --follow-children --budget 5; done | median)

# --- PostgreSQL: pgbench -C, untraced and with the postmaster under -p --follow-children
PG_ROW="not run: Debian's postgresql-15 is not installed"
if [ -x "$PGBIN/postgres" ] && id postgres >/dev/null 2>&1; then
	PGDIR=$WORK/pg
	mkdir -p "$PGDIR" && chmod 755 "$WORK" && chown postgres: "$PGDIR"
	runuser -u postgres -- "$PGBIN/initdb" -D "$PGDIR/db" -A trust >/dev/null 2>&1 || die "initdb failed"
	runuser -u postgres -- "$PGBIN/postgres" -D "$PGDIR/db" -p 15434 -k "$PGDIR" \
		-c listen_addresses=127.0.0.1 >"$WORK/pg.log" 2>&1 &
	for _ in $(seq 100); do "$PGBIN/pg_isready" -q -h 127.0.0.1 -p 15434 && break; sleep 0.1; done
	PGPID=$(head -n1 "$PGDIR/db/postmaster.pid")
	"$PGBIN/pgbench" -h 127.0.0.1 -p 15434 -U postgres -i -s 1 postgres >/dev/null 2>&1 || die "pgbench -i failed"
	tps() {
		"$PGBIN/pgbench" -h 127.0.0.1 -p 15434 -U postgres -C -S -c 2 -T "$PG_SECONDS" postgres 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
	}
	traced_tps() { # [ARGS...] for memtrace record
		local rec t
		(cd "$WORK" && exec "$MEMTRACE" record -p "$PGPID" --follow-children "$@" -o "$WORK/pg.mtrace" 2>"$WORK/pgrec.err") &
		rec=$!
		for _ in $(seq 200); do grep -q '^memtrace: attached' "$WORK/pgrec.err" 2>/dev/null && break; sleep 0.05; done
		t=$(tps)
		kill -INT "$rec"
		wait "$rec"
		rm -f "$WORK"/pg*.mtrace
		echo "${t:-0}"
	}
	U=() T=() TB=() TE=()
	for _ in 1 2 3; do # interleaved, so a slow minute hits all alike
		U+=("$(tps)")
		T+=("$(traced_tps)")
		TB+=("$(traced_tps --budget 5)")
		TE+=("$(traced_tps --empty-probes entry+return)")
	done
	PG_U=$(printf '%s\n' "${U[@]}" | median)
	PG_T=$(printf '%s\n' "${T[@]}" | median)
	PG_TB=$(printf '%s\n' "${TB[@]}" | median)
	PG_TE=$(printf '%s\n' "${TE[@]}" | median)
	PG_ERATIO=$(calc "$PG_TE / $PG_U" 2)
	PG_FLOOR=$(calc "$PG_T / $PG_TE" 2)
	PG_RATIO=$(calc "$PG_T / $PG_U" 2)
	PG_BRATIO=$(calc "$PG_TB / $PG_U" 2)
	PG_ROW="untraced $(calc "$PG_U" 1) tps, postmaster under -p --follow-children $(calc "$PG_T" 1) tps: $PG_RATIO x; with --budget 5 $(calc "$PG_TB" 1) tps: $PG_BRATIO x; the floor, empty entry+return probes followed alike, $(calc "$PG_TE" 1) tps: $PG_ERATIO x (traced / floor $PG_FLOOR x)"
fi

echo
echo "attach and launch (median of $REPS; host uprobe hit $HIT us; load $(cut -d' ' -f1-3 /proc/loadavg)):"
echo "  BPF verification, all programs of the one load:  $VERIFY ms"
echo "  -p PID, start of memtrace to 'attached':          $(calc "$ATTACH_P / 1000") ms"
echo "  -- CMD, start of memtrace to its first constructor: $(calc "$FIRST_US / 1000") ms"
echo "  record -- /bin/true, end to end:                  $(calc "$TRUE_US / 1000") ms"
echo "  a forked child's wait for its first instruction:  untraced $(calc "$HOLD_U / 1000") ms, under --follow-children $(calc "$HOLD_T / 1000") ms (bench/fork_hold.c, median of 40 forks)"
echo "  a fork, the child's exit and the parent's wait:    untraced $(calc "$CYCLE_U / 1000") ms, under --follow-children $(calc "$CYCLE_T / 1000") ms (the same, mean of 40)"
echo "  a fork storm, $STORM_N children (tests/progs/fork_storm):  untraced $(calc "$STORM_U / 1000") ms, under -p --follow-children $(calc "$STORM_T / 1000") ms, with --budget 5 $(calc "$STORM_B / 1000") ms"
echo "  PostgreSQL 15, pgbench -C -S -c 2, ${PG_SECONDS} s (median of 3): $PG_ROW"
echo
echo "| what | target | measured | verdict |"
echo "|---|---|---|---|"
echo "| verifier time, the one load | <= 150 ms | $VERIFY ms | $(verdict "$VERIFY" 150) |"
echo "| -p to attached (issue 44) | <= 50 ms | $(calc "$ATTACH_P / 1000") ms (uprobe hit $HIT us) | $(verdict "$ATTACH_P" 50000) |"
echo "| -- CMD to its first instruction | <= 250 ms | $(calc "$FIRST_US / 1000") ms | $(verdict "$FIRST_US" 250000) |"
echo "| record -- /bin/true end to end (issue 44) | <= 100 ms | $(calc "$TRUE_US / 1000") ms (uprobe hit $HIT us) | $(verdict "$TRUE_US" 100000) |"
echo "| fork_hold: a forked child's wait for its first instruction, --follow-children (issue 44) | <= 2 x untraced ($(calc "2 * $HOLD_U / 1000") ms) | $(calc "$HOLD_T / 1000") ms ($(calc "$HOLD_T / $HOLD_U") x) | $(verdict "$HOLD_T" "$(calc "2 * $HOLD_U" 0)") |"
echo "| a fork-to-reap cycle, --follow-children less untraced | (what a fork per connection waits) | $(calc "($CYCLE_T - $CYCLE_U) / 1000") ms | |"
echo "| a fork storm of $STORM_N children, -p --follow-children / untraced time | | $(calc "$STORM_T / $STORM_U") x ($(calc "$STORM_T / 1000") ms, untraced $(calc "$STORM_U / 1000") ms) | |"
echo "| the same storm, -p --follow-children --budget 5 / untraced time (issue 44) | | $(calc "$STORM_B / $STORM_U") x ($(calc "$STORM_B / 1000") ms) | |"
if [ -n "${PG_RATIO:-}" ]; then
	echo "| pgbench -C, traced / untraced tps | >= 0.3 | $PG_RATIO | $(verdict_min "$PG_RATIO" 0.3) |"
	echo "| pgbench -C, empty probes (the floor) / untraced tps | | $PG_ERATIO | |"
	echo "| pgbench -C, traced / floor tps | | $PG_FLOOR | |"
	echo "| pgbench -C, -p --follow-children --budget 5 / untraced tps (issue 44) | >= 0.9 | $PG_BRATIO | $(verdict_min "$PG_BRATIO" 0.9) |"
fi
exit 0
