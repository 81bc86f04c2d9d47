#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# What a process forked by a target recorded with plain `record -p` (no
# --follow-children) pays for its allocator calls: bench/fork_child.c's
# child, 1,000,000 malloc+free pairs timed from its first instruction,
# untraced, under -p with the inherited breakpoints left in it (before:
# MEMTRACE_NO_FORK_CLEAN=1) and under -p now (user/record/fork_clean.h
# takes them out). Each row the median of FORK_CLEAN_REPS (5) runs, taken
# in turn, with the host's uprobe hit and load beside it. The program runs
# on a private copy of the C library (the same file, an inode of its own):
# the kernel takes a breakpoint out of every process no tracer wants it in
# whenever any link on the same file and offset goes, so another memtrace
# on the host detaching from the C library (--budget's windows) would clean
# the child of the before row too.
#
# A benchmark, not a test: figures only, non-zero when something could not run.
set -u -o pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
MEMTRACE=$BUILD/memtrace
REPS=${FORK_CLEAN_REPS:-5}

die() {
	echo "bench/fork_clean: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches uprobes: run it as root"
make -s all >/dev/null 2>&1 || die "failed to build memtrace (make all)"
mkdir -p "$BUILD/bench"
FC=$BUILD/bench/fork_child
MB=$BUILD/bench/malloc_bench
${CC:-gcc} -O2 -o "$FC" bench/fork_child.c || die "failed to build $FC"
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
WORK=$(mktemp -d "$BUILD/bench/fork_clean.XXXXXX") || die "no work directory"
trap 'rm -rf "$WORK"' EXIT
LIBC=$(ldd "$FC" | sed -n 's/^[[:space:]]*libc\.so\.6 => \([^ ]*\) .*/\1/p')
[ -f "$LIBC" ] || die "no C library found for $FC"
mkdir -p "$WORK/lib" && cp "$LIBC" "$WORK/lib/libc.so.6" || die "failed to copy $LIBC"

. bench/common.sh
host_hit
echo "fork_clean bench: $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); a uprobe hit $HIT us"

# one_run MODE: "ns_per_pair clean_ms" of one child; MODE u (untraced), b (-p, left), a (-p, cleaned)
one_run() {
	local target rec line
	: >"$WORK/t.err"
	: >"$WORK/r.err"
	LD_LIBRARY_PATH=$WORK/lib "$FC" >"$WORK/out" 2>"$WORK/t.err" &
	target=$!
	for _ in $(seq 100); do grep -q waiting "$WORK/t.err" && break; sleep 0.1; done
	if [ "$1" != u ]; then
		if [ "$1" = b ]; then
			MEMTRACE_NO_FORK_CLEAN=1 "$MEMTRACE" record -o "$WORK/f.mtrace" -p "$target" 2>"$WORK/r.err" &
		else
			"$MEMTRACE" record -o "$WORK/f.mtrace" -p "$target" 2>"$WORK/r.err" &
		fi
		rec=$!
		for _ in $(seq 300); do grep -q "memtrace: attached" "$WORK/r.err" && break; sleep 0.1; done
	fi
	kill -USR1 "$target"
	wait "$target" || die "fork_child failed ($1)"
	[ "$1" = u ] || wait "$rec" || die "memtrace record -p failed ($1): $(head -c 300 "$WORK/r.err")"
	rm -f "$WORK/f.mtrace"
	line=$(grep '^fork_child ' "$WORK/out") || die "no figures from fork_child ($1)"
	echo "$(field ns_per_pair "$line") $(field clean_ms "$line")"
}

: >"$WORK/runs"
for r in $(seq "$REPS"); do
	for m in u b a; do
		echo "$r $m $(one_run $m)" >>"$WORK/runs"
	done
done
col() { awk -v m="$1" -v c="$2" '$2 == m { print $c }' "$WORK/runs" | median; }
# ms to the restored byte, median; "never" when most runs saw none
ms() { awk -v v="$(col "$1" 4)" 'BEGIN { if (v < 0) print "never"; else printf "%.1f", v }'; }
echo "| a child of a -p target: 1M malloc+free pairs from its first instruction | ns per pair (median of $REPS) | ms from the fork to malloc's byte restored |"
echo "|---|---|---|"
echo "| untraced | $(calc "$(col u 3)" 1) | |"
echo "| -p, breakpoints left in the child (before: MEMTRACE_NO_FORK_CLEAN=1) | $(calc "$(col b 3)" 1) | $(ms b) |"
echo "| -p, breakpoints taken out of the child (user/record/fork_clean.c) | $(calc "$(col a 3)" 1) | $(ms a) |"
echo "(uprobe hit $HIT us, load after: $(cut -d' ' -f1-3 /proc/loadavg))"
