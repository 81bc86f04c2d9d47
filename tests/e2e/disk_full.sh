#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The disk fills up while recording: one clear error, recording stops, the
# command still runs to its end, and the trace reads up to its last complete
# chunk.
. "$(dirname "$0")/lib.sh"
plan 5

mnt=$TMP/tiny
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=64k tmpfs "$mnt"; then
	not_ok "could not mount a 64 KiB tmpfs"
	fail_rest "no 64 KiB tmpfs"
	finish
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$TMP"' EXIT
timeout 60 "$MEMTRACE" record -o "$mnt/full.mtrace" -- "$PROGS/heap_workload" >"$TMP/out" 2>"$TMP/err"
expect_eq "disk full: non-zero exit" "$([ $? -ne 0 ] && echo yes)" yes
expect_eq "disk full: one clear error" \
	"$(grep -c '^memtrace: failed to write .*No space left on device' "$TMP/err")" 1
expect_eq "disk full: the command ran to its end" "$(cat "$TMP/out")" "heap_workload: done"
timeout 60 "$MEMTRACE" report "$mnt/full.mtrace" >"$TMP/report.txt" 2>&1
expect_eq "disk full: the trace still reads" $? 0
expect_eq "disk full: the report says it is partial" \
	"$(head -n1 "$TMP/report.txt" | grep -c '^WARNING: trace is partial')" 1
finish
