#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The lines a user reads are true: report with no file prints its usage
# line; a process memtrace may not read is refused with the real reason;
# a recording ends with one line naming the file, its size, its events and
# the command to run next.
. "$(dirname "$0")/lib.sh"
plan 11

cd "$TMP" || exit 1

timeout -k 5 "$LIMIT" "$MEMTRACE" report >out 2>err
expect_eq "report with no file: exit status" "$?" 2
expect_eq "report with no file: what it says" "$(cat err)" \
	"usage: memtrace report [--json | --html OUT] [--top N] [--alloc-fn GLOB]... [--strict] [--symfs DIR] FILE"
timeout -k 5 "$LIMIT" "$MEMTRACE" diff one.mtrace >out 2>err
expect_eq "diff with one file: exit status" "$?" 2
expect_eq "diff with one file: what it says" "$(cat err)" \
	"usage: memtrace diff [--json | --html OUT] [--top N] [--fail-on-growth=SIZE] [--alloc-fn GLOB]... [--strict] [--symfs DIR] BASE NEW"

# The last line of a recording. The size as memtrace's format_bytes writes it.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o 'my trace.mtrace' -- "$PROGS/alloc_patterns" >/dev/null 2>err
expect_eq "record: exit status" "$?" 0
size=$(stat -c %s 'my trace.mtrace')
human=$(awk -v b="$size" 'BEGIN { split("B KiB MiB GiB", u, " "); i = 1; v = b;
	while (v >= 1024 && i < 4) { v /= 1024; i++ } if (i == 1) printf "%d B", b; else printf "%.1f %s", v, u[i] }')
# 93 events: alloc_patterns's 56 allocations and 48 frees, a realloc that
# moves a live block being one event for both (11 of them).
expect_eq "record: its last line" "$(tail -n 1 err)" \
	"memtrace: wrote my trace.mtrace ($human, 93 events); next: memtrace report 'my trace.mtrace'"

# Another user's process, without CAP_SYS_PTRACE: that is the reason.
setpriv --reuid=65534 --regid=65534 --clear-groups sleep 30 &
sleeper=$!
wait_exec "$sleeper" /usr/bin/sleep
capsh --drop=cap_sys_ptrace -- -c "timeout -k 5 $LIMIT $MEMTRACE record -o x.mtrace -p $sleeper -d 1" >/dev/null 2>err
status=$?
kill "$sleeper"
expect_eq "another user's process without CAP_SYS_PTRACE: exit status" "$status" 1
expect_eq "another user's process without CAP_SYS_PTRACE: the reason" "$(cat err)" \
	"memtrace: cannot read the files of PID $sleeper (/proc/$sleeper/root: Permission denied): memtrace lacks CAP_SYS_PTRACE, which tracing another user's process needs; run it as root (sudo) or give it cap_sys_ptrace"
expect_eq "another user's process: no trace left behind" "$(ls x.mtrace 2>/dev/null | wc -l)" 0

# -p 1 as root: where a security policy keeps even root out of PID 1 (a
# sandbox's init, as on our CI hosts), memtrace says so, not "needs root".
if [ -r /proc/1/root/. ] 2>/dev/null && ls /proc/1/root/ >/dev/null 2>&1; then
	skips 2 "-p 1: this host lets root read PID 1's files"
else
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o one.mtrace -p 1 -d 1 >/dev/null 2>err
	expect_eq "-p 1 as root: exit status" "$?" 1
	expect_eq "-p 1 as root: the reason" "$(cat err)" \
		"memtrace: cannot read the files of PID 1 (/proc/1/root: Permission denied) although memtrace has CAP_SYS_PTRACE: a security policy protects that process (a security module, or a sandbox's init); memtrace cannot trace it"
fi
finish
