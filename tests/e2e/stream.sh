#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# record -o - streams the trace to stdout (ssh host sudo memtrace -p PID -d
# 10 -o - > t.mtrace), and report, diff and export read - from stdin: the
# format is written front to back, and a trace read from stdin is spooled to
# an unlinked temporary file, so what they print is what they print for the
# file.
. "$(dirname "$0")/lib.sh"
plan 26

cd "$TMP" || exit 1

# record_stream SINK...: alloc_patterns in its "wait" mode, attached with -p
# and -o -, memtrace's stdout going to SINK (a command reading stdin), or
# straight into direct.mtrace without one.
record_stream() {
	local target pid rec
	rm -f target.err err # a line left by the call before must not count as this one's
	timeout -k 5 "$LIMIT" "$PROGS/alloc_patterns" wait >out 2>target.err &
	target=$!
	wait_for_line target.err "alloc_patterns: waiting for SIGUSR1" 10
	# timeout runs the program as its child: trace the program
	pid=$(pgrep -P "$target" | head -n1)
	wait_exec "$pid" "$PROGS/alloc_patterns"
	if [ $# -gt 0 ]; then
		(timeout -k 5 "$LIMIT" "$MEMTRACE" record -o - -p "$pid" 2>err | "$@") &
	else
		timeout -k 5 "$LIMIT" "$MEMTRACE" record -o - -p "$pid" 2>err >direct.mtrace &
	fi
	rec=$!
	# said by the caller: this function's stdout may be the trace's file
	if wait_for_line err "memtrace: attached" 10; then ATTACHED=yes; else ATTACHED="no: $(head -c 300 err)"; fi
	kill -USR1 "$pid"
	wait "$target"
	wait "$rec"
}

record_stream dd of=file.mtrace status=none
expect_eq "-o - > FILE: memtrace attached" "$ATTACHED" yes
report_json file.mtrace file.json
expect_eq "-o - > FILE: the report reads it" "$?" 0
expect_alloc_patterns file.json 4 "-o - > FILE"
expect_eq "-o - > FILE: it said where the trace went" "$(grep -c '^memtrace: attached to PID .*, writing to stdout$' err)" 1
size=$(stat -c %s file.mtrace)
human=$(awk -v b="$size" 'BEGIN { split("B KiB MiB GiB", u, " "); i = 1; v = b;
	while (v >= 1024 && i < 4) { v /= 1024; i++ } if (i == 1) printf "%d B", b; else printf "%.1f %s", v, u[i] }')
# 97 events: alloc_patterns's 93 and its 4 frees of blocks from before attach
expect_eq "-o -: its last line" "$(tail -n 1 err)" \
	"memtrace: wrote the trace to stdout ($human, 97 events); next: memtrace report FILE, with the file it went to"
expect_eq "-o -: no file named -" "$(ls -- - 2>/dev/null | wc -l)" 0

# Straight into a file.
record_stream
expect_eq "-o - > FILE, no pipe: memtrace attached" "$ATTACHED" yes
report_json direct.mtrace direct.json
expect_alloc_patterns direct.json 4 "-o - > FILE, no pipe"

# Through a pipe (no fsync there, no seek anywhere).
record_stream cat >piped.mtrace
expect_eq "-o - | cat > FILE: memtrace attached" "$ATTACHED" yes
report_json piped.mtrace piped.json || { echo "# memtrace said: $(tr '\n' '|' <err)"; echo "# report said: $(cat "$TMP/report.err")"; ls -la piped.mtrace | sed 's/^/# /'; }
expect_alloc_patterns piped.json 4 "-o - | cat > FILE"

# Reading - from stdin gives what the file gives.
# same_output DESCRIPTION A B: equal, and not empty (two failures that print
# nothing are not the same output).
same_output() {
	if [ -z "$2" ]; then not_ok "$1: no output"; else expect_eq "$1" "$(md5sum <<<"$2")" "$(md5sum <<<"$3")"; fi
}
same_output "report - < FILE is report FILE" "$("$MEMTRACE" report - <file.mtrace)" "$("$MEMTRACE" report file.mtrace)"
same_output "cat FILE | report --json - is report --json FILE" "$(cat file.mtrace | "$MEMTRACE" report --json -)" \
	"$(cat file.json)"
same_output "diff - FILE < FILE is diff FILE FILE" "$("$MEMTRACE" diff --json - file.mtrace <file.mtrace)" \
	"$("$MEMTRACE" diff --json file.mtrace file.mtrace)"
same_output "export --format folded - < FILE is export of FILE" "$("$MEMTRACE" export --format folded -o - - <file.mtrace)" \
	"$("$MEMTRACE" export --format folded -o - file.mtrace)"
"$MEMTRACE" report --html page.html - <file.mtrace 2>html.err
expect_eq "report --html (two passes over the trace) from stdin: exit status" "$?" 0
expect_eq "report --html from stdin: the page" "$(grep -c '</html>' page.html)" 1

# What cannot work is refused with a reason and exit status 2.
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o - -- "$PROGS/alloc_patterns" >out 2>err
expect_eq "-o - with -- CMD: exit status" "$?" 2
expect_eq "-o - with -- CMD: the reason" "$(cat err)" \
	"memtrace: -o - writes the trace to stdout, where the command's output goes too; give -o FILE, or record it with -p"
"$MEMTRACE" diff - - <file.mtrace >out 2>err
expect_eq "diff - -: exit status" "$?" 2
expect_eq "diff - -: the reason" "$(cat err)" "memtrace: failed to start diff: only one of BASE and NEW can be - (stdin)"
"$MEMTRACE" export --format pprof - <file.mtrace >out 2>err
expect_eq "export --format pprof - without -o: exit status" "$?" 2
"$MEMTRACE" report - </dev/null >out 2>err
expect_eq "report - with nothing on stdin: exit status" "$?" 1
expect_eq "report - with nothing on stdin: the reason" "$(cat err)" \
	"memtrace: failed to read -: not a memtrace trace file; pass a file written by memtrace record"
finish
