#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A target that exits while memtrace attaches: whichever way the race goes,
# memtrace either records until the exit and leaves a readable trace, or says
# in one line that the process is gone and leaves nothing; never a crash or a
# hang.
. "$(dirname "$0")/lib.sh"
plan 7

for delay in 0 0.01 0.05 0.1 0.3 1 2; do
	sleep "$delay" &
	pid=$!
	out=$TMP/exit-$delay.mtrace
	timeout 30 "$MEMTRACE" record -p "$pid" -o "$out" >/dev/null 2>"$TMP/err"
	rc=$?
	wait "$pid" 2>/dev/null
	if [ "$rc" = 0 ]; then
		if timeout 30 "$MEMTRACE" report "$out" >/dev/null 2>&1; then
			ok "target gone after ${delay}s: recorded until it exited, trace readable"
		else
			not_ok "target gone after ${delay}s: exit 0 but the trace does not read"
		fi
	elif [ "$rc" -lt 124 ] && [ "$(wc -l <"$TMP/err")" = 1 ] && grep -q '^memtrace: ' "$TMP/err" && [ ! -e "$out" ]; then
		ok "target gone after ${delay}s: refused in one line, nothing written: $(cat "$TMP/err")"
	else
		not_ok "target gone after ${delay}s: status $rc, stderr: $(tr '\n' '|' <"$TMP/err")"
	fi
done
finish
