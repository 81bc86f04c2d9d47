#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# On a terminal, record shows a status line that updates in place (carriage
# returns; elapsed time, events, rate, live heap, bytes written, drops) and
# clears it at the end; off a terminal it prints none, so logs stay clean.
. "$(dirname "$0")/lib.sh"
plan 6

timeout 60 script -qefc "$MEMTRACE record -o $TMP/tty.mtrace -- $PROGS/demo" /dev/null >"$TMP/tty.out" 2>&1
expect_eq "record on a terminal: exit status" $? 0
status_lines=$(tr '\r' '\n' <"$TMP/tty.out" |
	grep -cE '^memtrace: [0-9]+\.[0-9] s, [0-9]+ events \([0-9]+/s\), live [0-9.]+ [KMG]?i?B, [0-9.]+ [KMG]?i?B written, [0-9]+ dropped')
if [ "$status_lines" -ge 1 ]; then
	ok "record on a terminal: $status_lines status updates"
else
	not_ok "record on a terminal: no status line in: $(tr '\r' '|' <"$TMP/tty.out" | head -c 400)"
fi
expect_eq "record on a terminal: updates in place (no newline after a status)" \
	"$(grep -cE 'dropped *$' "$TMP/tty.out")" 0

# The live heap it shows is the heap's: leak_rate keeps 100,000 bytes a second
timeout 60 script -qefc "$MEMTRACE record -o $TMP/leak.mtrace -- $PROGS/leak_rate 3" /dev/null >"$TMP/leak.out" 2>&1
last=$(tr '\r' '\n' <"$TMP/leak.out" | grep -E '^memtrace: [0-9.]+ s, ' | tail -1)
echo "# last status: $last"
read -r secs live unit < <(sed -E 's/^memtrace: ([0-9.]+) s, .* live ([0-9.]+) ([KMG]?i?B),.*/\1 \2 \3/' <<<"$last")
if awk -v s="$secs" -v l="$live" -v u="$unit" 'BEGIN { m = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : 1;
	e = s * 100000; d = l * m - e; if (d < 0) d = -d; exit !(s >= 1 && d <= 0.1 * e) }'; then
	ok "the status line's live heap is the leak's (within 10%): $live $unit at $secs s"
else
	not_ok "the status line's live heap: $live $unit at $secs s, want about 100000 B/s"
fi

record_cmd "$TMP/pipe.mtrace" "$PROGS/demo"
expect_eq "record off a terminal: exit status" $? 0
expect_eq "record off a terminal: no status line" "$(grep -c 'events (' "$TMP/err")" 0
finish
