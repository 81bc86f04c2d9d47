#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace record -p PID on a running alloc_patterns: it allocates 4 blocks,
# waits for SIGUSR1 (sent once memtrace says it attached), frees them (4
# unmatched frees: allocated before the trace) and runs the same pattern as
# record_cmd.sh; memtrace stops by itself when the process exits.
source "$(dirname "$0")/lib.sh"
plan 19

trace=$TMP/pid.mtrace
json=$TMP/pid.json

if record_pid_usr1 "$trace" "$PROGS/alloc_patterns" wait 5; then
	ok "memtrace -p printed 'memtrace: attached'"
else
	not_ok "memtrace -p did not print 'memtrace: attached' within 10 s: $(head -c 300 "$TMP/err")"
fi
expect_eq "target exit status" "$TARGET_STATUS" 5
expect_eq "memtrace -p exit status when the target exits" "$RECORD_STATUS" 0
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0

# the 4 blocks made before attach are not the trace's
expect_site "$json" site_before_attach allocations 0
expect_alloc_patterns "$json" 4

# -p with -d: stops at the deadline while the target keeps running
"$PROGS/alloc_patterns" wait >/dev/null 2>"$TMP/target2.err" &
target=$!
wait_for_line "$TMP/target2.err" "alloc_patterns: waiting" 10
start=$SECONDS
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/d.mtrace" -d 1 -p "$target" 2>"$TMP/d.err"
expect_eq "memtrace -p -d 1 exit status" "$?" 0
elapsed=$((SECONDS - start))
if [ "$elapsed" -le 10 ]; then ok "memtrace -d 1 stopped after ${elapsed}s"; else not_ok "memtrace -d 1 took ${elapsed}s"; fi
if kill -0 "$target" 2>/dev/null; then ok "target still running after memtrace -d"; else not_ok "target died with memtrace -d"; fi
kill -USR1 "$target" 2>/dev/null
wait "$target"
expect_eq "target exit status after detach" "$?" 0
report_json "$TMP/d.mtrace" "$TMP/d.json"
expect_eq "report of the -d trace exit status" "$?" 0
expect_total "$TMP/d.json" allocations 0

# -p ended by SIGINT: a readable trace
"$PROGS/alloc_patterns" wait >/dev/null 2>"$TMP/target3.err" &
target=$!
wait_for_line "$TMP/target3.err" "alloc_patterns: waiting" 10
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/int.mtrace" -p "$target" 2>"$TMP/int.err" &
rec=$!
wait_for_line "$TMP/int.err" "memtrace: attached" 10
kill -INT "$rec"
wait "$rec"
expect_eq "memtrace -p exit status after SIGINT" "$?" 0
kill -USR1 "$target" 2>/dev/null
wait "$target"
report_json "$TMP/int.mtrace" "$TMP/int.json"
expect_eq "report of the SIGINT trace exit status" "$?" 0
expect_total "$TMP/int.json" allocations 0

# The default name holds the target's comm, which the target sets to any
# bytes: made fit for a file name, it leads to no other directory (main
# before the fix: '/../../out' with a directory 'memtrace.' in the working
# directory wrote ../out.PID.mtrace, outside it).
mkdir -p "$TMP/cwd/sub/memtrace."
bash -c 'printf "/../../out" >/proc/$$/comm; while :; do sleep 0.05; done' &
target=$!
for _ in $(seq 50); do
	[ "$(cat "/proc/$target/comm" 2>/dev/null)" = "/../../out" ] && break
	sleep 0.1
done
(cd "$TMP/cwd/sub" && timeout -k 5 "$LIMIT" "$MEMTRACE" record -d 1 -p "$target" 2>"$TMP/name.err")
expect_eq "memtrace -p of a process named '/../../out' exit status" "$?" 0
kill "$target"
wait "$target" 2>/dev/null
expect_eq "its trace in the working directory, named safely" "$(cd "$TMP/cwd/sub" && ls memtrace.*.mtrace 2>/dev/null)" \
	"memtrace._.._.._out.$target.mtrace"
expect_eq "nothing written outside it" "$(find "$TMP/cwd" -name 'out.*' | wc -l)" 0
finish
