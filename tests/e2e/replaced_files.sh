#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Targets whose files changed on disk after they were mapped, as a package
# upgrade leaves a running service: the mapping reads "... (deleted)" in
# /proc/PID/maps and the path names another file or none. memtrace -p must
# probe, unwind and symbolize the mapped file itself (/proc/PID/map_files):
#  1. libc copied to a directory, alloc_patterns started with that copy
#     (LD_LIBRARY_PATH), the copy deleted, then -p: the probes sit in the
#     deleted libc, so every figure of the program's table is exact only if
#     they do, and libc's own frames (__libc_start_main) are named;
#  2. the executable replaced by a different build (another program renamed
#     over it) while it runs: its sites must be named from the old file, and
#     never from the new one, whose build-id differs.
source "$(dirname "$0")/lib.sh"
plan 15

libc=$(ldd "$PROGS/alloc_patterns" | awk '/libc\.so/ { print $3 }')
target_pid=""
cleanup() {
	[ -n "$target_pid" ] && kill -KILL "$target_pid" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# attach_and_run NAME TRACE PID JOB: record -p PID until it exits; release it
# with SIGUSR1 once memtrace says it attached. Each run has its own stderr
# file, empty before memtrace starts: the background job's 2> truncates it
# only when that child runs, and a file shared with the case before still
# held its "attached" line for the first look (the target was released
# before memtrace attached, ran to its end, and record -p exited 1 with no
# trace, about 1 run in 200).
attach_and_run() {
	local name=$1 trace=$2 pid=$3 job=$4 err=$2.err rec
	: >"$err"
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$trace" -p "$pid" 2>"$err" &
	rec=$!
	if wait_for_line "$err" "memtrace: attached" 10; then
		ok "$name: attached"
	else
		not_ok "$name: memtrace did not attach: $(head -c 300 "$err" | tr '\n' '|')"
	fi
	kill -USR1 "$pid" 2>/dev/null
	wait "$job"
	expect_status "$name: target exit status" "$?" 0 "$TMP/target.err"
	wait "$rec"
	expect_status "$name: memtrace exit status" "$?" 0 "$err" || sed 's/^/#   /' "$err"
	target_pid=""
}

# start_waiting JOBVAR PIDVAR CMD...: start CMD (alloc_patterns wait) and wait
# until it blocks for SIGUSR1.
start_waiting() {
	: >"$TMP/target.err"
	timeout -k 5 "$LIMIT" "$@" >"$TMP/out" 2>"$TMP/target.err" &
	JOB=$!
	wait_for_line "$TMP/target.err" "alloc_patterns: waiting for SIGUSR1" 10
	target_pid=$(pgrep -P "$JOB" | head -n1)
}

echo "# 1. a deleted libc"
mkdir -p "$TMP/lib"
cp "$libc" "$TMP/lib/$(basename "$libc")"
start_waiting env LD_LIBRARY_PATH="$TMP/lib" "$PROGS/alloc_patterns" wait
rm -f "$TMP/lib/$(basename "$libc")"
if grep -q "$TMP/lib/libc.* (deleted)" "/proc/$target_pid/maps"; then
	ok "deleted libc: the target maps a libc that is deleted"
else
	not_ok "deleted libc: /proc/$target_pid/maps shows no deleted libc from $TMP/lib"
fi
attach_and_run "deleted libc" "$TMP/dl.mtrace" "$target_pid" "$JOB"
report_json "$TMP/dl.mtrace" "$TMP/dl.json"
expect_alloc_patterns "$TMP/dl.json" 4 "deleted libc"
expect_eq "deleted libc: site_malloc_100's stack names __libc_start_main from the deleted file" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "site_malloc_100") | .stacks[].frames[].function
		| select(startswith("__libc_start_main"))] | length > 0' "$TMP/dl.json")" true

echo "# 2. an executable replaced by another build"
mkdir -p "$TMP/bin"
cp "$PROGS/alloc_patterns" "$TMP/bin/app"
start_waiting "$TMP/bin/app" wait
# what an upgrade does: a new file renamed over the old path
cp "$PROGS/forever" "$TMP/bin/app.new" && mv -f "$TMP/bin/app.new" "$TMP/bin/app"
old_id=$(readelf -n "$PROGS/alloc_patterns" | awk '/Build ID/ { print $3 }')
new_id=$(readelf -n "$TMP/bin/app" | awk '/Build ID/ { print $3 }')
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then
	ok "replaced executable: the file at its path now has another build-id"
else
	not_ok "replaced executable: build-ids '$old_id' and '$new_id' should differ"
fi
attach_and_run "replaced executable" "$TMP/rx.mtrace" "$target_pid" "$JOB"
report_json "$TMP/rx.mtrace" "$TMP/rx.json"
expect_alloc_patterns "$TMP/rx.json" 4 "replaced executable"
expect_eq "replaced executable: site_malloc_100's file is the old build's source" \
	"$(jq -r '[.sites[] | select(.function == "site_malloc_100") | .file | endswith("alloc_patterns.c")] | all' "$TMP/rx.json")" true
expect_eq "replaced executable: no frame named from the new file (site_forever)" \
	"$(jq -r "$NESTED"' | [.sites[].stacks[].frames[].function | select(. == "site_forever")] | length' "$TMP/rx.json")" 0
finish
