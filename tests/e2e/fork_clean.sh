#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace record -p PID without --follow-children on a process that forks:
# fork copies the probes' breakpoints (0xcc) into the child, where nothing
# records and every allocator call would trap for as long as the recording
# lasts. memtrace takes them out of the child (user/record/fork_clean.h);
# the parent keeps its own, and a process sharing the parent's memory
# (clone CLONE_VM) is left alone. fork_peek prints the first 64 bytes of
# malloc and free against the C library's file: "differs" bytes unlike the
# file, "int3" of them 0xcc. With --follow-children nothing changes.
#
# Its allocator is a private copy of libtinyalloc.so (a file of its own):
# the kernel also takes a breakpoint out of every process no tracer wants it
# in whenever any link on the same file and offset goes (uprobe_unregister),
# so another memtrace on the host detaching from the C library's malloc
# would clean the fork too, and a broken clean would pass.
source "$(dirname "$0")/lib.sh"
plan 25

cp "$PROGS/libtinyalloc.so" "$TMP/libforkpeek.so"

# record -v -p on fork_peek (MS: how long its fork waits for its bytes)
record_fork_peek() {
	local trace=$1 ms=$2 target rec
	shift 2
	: >"$TMP/target.err"
	: >"$TMP/err"
	LD_PRELOAD=$TMP/libforkpeek.so "$PROGS/fork_peek" "$ms" >"$TMP/out" 2>"$TMP/target.err" &
	target=$!
	wait_for_line "$TMP/target.err" "fork_peek: waiting for SIGUSR1" 10
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -v "$@" -o "$trace" -p "$target" 2>"$TMP/err" &
	rec=$!
	if wait_for_line "$TMP/err" "memtrace: attached" 10; then
		ok "memtrace -p $* attached"
	else
		not_ok "memtrace -p $* did not attach: $(head -c 300 "$TMP/err")"
	fi
	kill -USR1 "$target"
	wait "$target"
	TARGET_STATUS=$?
	wait "$rec"
	RECORD_STATUS=$?
}

line() { grep -c -x -F "$1" "$TMP/out"; }
# WHO FUNC: 1 if its bytes differ from the file's only by breakpoints
# (some, each 0xcc: the window may hold a neighbour's too), else 0
trapped() { grep -c -x -E "$1 $2 differs=([1-9][0-9]*) int3=\\1" "$TMP/out"; }
# WHO FUNC: its line without WHO
bytes() { sed -n "s/^$1 $2 //p" "$TMP/out"; }

record_fork_peek "$TMP/p.mtrace" 10000
expect_eq "malloc and free probed in the private allocator" \
	"$(grep -c -E '^memtrace: probe (malloc|free) +libforkpeek.so' "$TMP/err")" 2
expect_eq "target exit status (its fork and clone exited 0)" "$TARGET_STATUS" 0
expect_eq "memtrace exit status" "$RECORD_STATUS" 0
expect_eq "parent while traced: malloc's breakpoint" "$(trapped parent malloc)" 1
expect_eq "parent while traced: free's breakpoint" "$(trapped parent free)" 1
expect_eq "fork: malloc's bytes are the file's" "$(line 'fork malloc differs=0 int3=0')" 1
expect_eq "fork: free's bytes are the file's" "$(line 'fork free differs=0 int3=0')" 1
expect_eq "fork: its own allocations work" "$(line 'fork allocations ok')" 1
# forked by the fork before memtrace cleaned it: found as its child
expect_eq "grandchild: malloc's and free's bytes are the file's" \
	"$(line 'grandchild malloc differs=0 int3=0')$(line 'grandchild free differs=0 int3=0')" 11
expect_eq "parent after the fork was cleaned: malloc's breakpoints kept" "$(bytes parent-after malloc)" "$(bytes parent malloc)"
expect_eq "parent after the fork was cleaned: free's breakpoints kept" "$(bytes parent-after free)" "$(bytes parent free)"
# the grandchild is cleaned too when it forked before its parent was
# (nearly always: the drain reads the rings on a timer), else only looked at
expect_eq "-v: the fork and the grandchild counted, the fork as cleaned" \
	"$(grep -c -E "^memtrace: 2 forked processes not recorded, [12] with the probes' breakpoints taken out \([1-9][0-9]* in all\), in [0-9]+\.[0-9] ms$" "$TMP/err")" 1
report_json "$TMP/p.mtrace" "$TMP/p.json"
# the parent is recorded exactly, before and after its fork; the fork not at all
expect_site "$TMP/p.json" site_before allocations 10
expect_site "$TMP/p.json" site_after allocations 5
expect_site "$TMP/p.json" site_child allocations 0
expect_total "$TMP/p.json" allocations 15
expect_total "$TMP/p.json" frees 10

# --follow-children: the fork is recorded, its breakpoints stay (its own links)
cd "$TMP" || exit 1
record_fork_peek "$TMP/f.mtrace" 0 --follow-children
expect_eq "--follow-children: target exit status" "$TARGET_STATUS" 0
expect_eq "--follow-children: memtrace exit status" "$RECORD_STATUS" 0
expect_eq "--follow-children: the fork keeps its breakpoints" \
	"$(trapped fork malloc)$(trapped fork free)" 11
expect_eq "--follow-children: no fork counted as cleaned" "$(grep -c 'forked process' "$TMP/err")" 0
expect_eq "--follow-children: the grandchild followed, its breakpoints kept" \
	"$(trapped grandchild malloc)$(trapped grandchild free)" 11
report_json "$TMP/f.mtrace" "$TMP/f.json"
expect_site "$TMP/f.json" site_before allocations 10

finish
