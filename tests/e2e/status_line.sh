#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# On a terminal, record shows a status line that updates in place (carriage
# returns, events, rate, bytes written, drops) and clears it at the end; off a
# terminal it prints none, so logs stay clean.
. "$(dirname "$0")/lib.sh"

timeout 60 script -qefc "$MEMTRACE record -o $TMP/tty.mtrace -- $PROGS/demo" /dev/null >"$TMP/tty.out" 2>&1
expect_eq "record on a terminal: exit status" $? 0
status_lines=$(tr '\r' '\n' <"$TMP/tty.out" | grep -cE '^memtrace: [0-9]+ events \([0-9]+/s\), [0-9.]+ [KMG]?i?B written, [0-9]+ dropped')
if [ "$status_lines" -ge 1 ]; then
	ok "record on a terminal: $status_lines status updates"
else
	not_ok "record on a terminal: no status line in: $(tr '\r' '|' <"$TMP/tty.out" | head -c 400)"
fi
expect_eq "record on a terminal: updates in place (no newline after a status)" \
	"$(grep -cE 'dropped *$' "$TMP/tty.out")" 0

record_cmd "$TMP/pipe.mtrace" "$PROGS/demo"
expect_eq "record off a terminal: exit status" $? 0
expect_eq "record off a terminal: no status line" "$(grep -c 'events (' "$TMP/err")" 0
finish
