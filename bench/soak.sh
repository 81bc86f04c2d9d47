#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make soak: a long recording of a busy multi-threaded target. Prints the
# recorder's resident memory over time (it must stay flat: the drain, the
# writer and the interning tables are bounded), the events and drops, and
# the trace's size. SOAK_SECONDS (default 600) sets the length.
set -u -o pipefail
cd "$(dirname "$0")/.."
BUILD=$PWD/build
SECONDS_SOAK=${SOAK_SECONDS:-600}
[ "$(id -u)" = 0 ] || { echo "soak: run it as root (sudo make soak)" >&2; exit 1; }
make -s all >/dev/null || exit 1
mkdir -p "$BUILD/bench"
${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$BUILD/bench/malloc_bench" bench/malloc_bench.c || exit 1
work=$(mktemp -d "$BUILD/bench/soak.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$BUILD/memtrace" record -o "$work/soak.mtrace" -- "$BUILD/bench/malloc_bench" 2 "${SECONDS_SOAK}s" \
	>"$work/out" 2>"$work/err" &
rec=$!
sleep 1
echo "soak: $SECONDS_SOAK s, 2 allocating threads, recorder RSS (KiB) every 30 s:"
elapsed=0
while kill -0 "$rec" 2>/dev/null; do
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$rec/status" 2>/dev/null)
	[ -n "$rss" ] && printf '  %4d s  %s\n' "$elapsed" "$rss"
	sleep 30
	elapsed=$((elapsed + 30))
done
wait "$rec"
status=$?
events=$(sed -n 's/^memtrace: wrote \([0-9]*\) events.*/\1/p' "$work/err")
"$BUILD/memtrace" report --json "$work/soak.mtrace" >"$work/r.json"
drops=$(sed -n 's/.*"dropped_events": \([0-9]*\).*/\1/p' "$work/r.json" | head -1)
echo "soak: exit status $status, $events events written, $drops dropped, trace $(stat -c %s "$work/soak.mtrace") bytes"
