#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --rss with glibc's own allocator probes (provider libc: memory_arena_new,
# memory_heap_more, memory_sbrk_less, memory_mallopt, ...), where the C
# library has them. Debian's glibc is built without them, so
# tests/progs/glibc_probes fires the same probes from its own code, built
# with sys/sdt.h as glibc builds them, in known numbers: every figure of
# report --json's rss.maps.glibc must be the program's exactly, with -- CMD,
# --rss=only and -p. A target without them says so (null, one text line).
. "$(dirname "$0")/lib.sh"
plan 41

P=$PROGS/glibc_probes

# The notes hold the argument forms glibc's do: registers, memory at an
# offset from a register (h->size), and 4-byte signed ints (mallopt's).
readelf -n "$P" >"$TMP/notes" 2>&1
expect_eq "glibc_probes' notes: provider libc, 12 probes" "$(grep -c 'Provider: libc' "$TMP/notes")" 12
if grep -q 'Arguments:.*8@[0-9]*(%r[a-z0-9]*)' "$TMP/notes"; then ok "a probe argument in memory (8@OFF(%REG))"; else not_ok "no memory operand in the notes: $(grep Arguments "$TMP/notes" | tr '\n' ' ')"; fi
if grep -q 'Arguments: -4@%e' "$TMP/notes"; then ok "4-byte signed register arguments (-4@%eXX)"; else not_ok "no -4@ argument in the notes"; fi

# expect_glibc LABEL JSON: the program's figures (its source's header)
expect_glibc() {
	expect_eq "$1: arenas made, their bytes, taken again" \
		"$(jqr "$2" '.rss.maps.glibc | "\(.arenas_new) \(.arena_new_bytes) \(.arenas_reused)"')" "3 6600 3"
	expect_eq "$1: non-main heaps made, grown, shrunk, freed (times and bytes)" \
		"$(jqr "$2" '.rss.maps.glibc | "\(.heaps_new) \(.heap_new_bytes) \(.heaps_grown) \(.heap_grown_bytes) \(.heaps_shrunk) \(.heap_shrunk_bytes) \(.heaps_freed) \(.heap_freed_bytes)"')" \
		"2 270336 3 196608 1 131072 1 200704"
	expect_eq "$1: the main heap grown and trimmed (times and bytes)" \
		"$(jqr "$2" '.rss.maps.glibc | "\(.sbrk_more) \(.sbrk_more_bytes) \(.sbrk_less) \(.sbrk_less_bytes)"')" "4 540672 1 65536"
	expect_eq "$1: mallopt(M_ARENA_MAX, 2), its int arguments sign-extended" \
		"$(jqr "$2" '.rss.maps.glibc | "\(.mallopt_calls) \(.mallopt[0].param) \(.mallopt[0].name) \(.mallopt[0].value)"')" "1 -8 M_ARENA_MAX 2"
	expect_eq "$1: retries" "$(jqr "$2" '.rss.maps.glibc.retries')" 2
	expect_eq "$1: arenas by site: new_arena_for_thread, 3" \
		"$(jqr "$2" '.rss.maps.glibc.arena_sites | map("\(.function) \(.arenas) \(.bytes)") | join(",")')" \
		"new_arena_for_thread 3 6600"
}

# --- -- CMD, with the allocator probes
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -o "$TMP/a.mtrace" -- "$P" >"$TMP/out" 2>"$TMP/err"
expect_status "-- CMD --rss: exit status" $? 0 "$TMP/err"
if grep -q "12 of glibc's allocator probes" "$TMP/err"; then ok "the attach line counts glibc's 12 probes"; else not_ok "attach line: $(grep attached "$TMP/err")"; fi
if grep -q "warning" "$TMP/err"; then not_ok "warnings: $(grep warning "$TMP/err")"; else ok "no probe skipped"; fi
report_json "$TMP/a.mtrace" "$TMP/a.json"
expect_eq "report --json exit status" $? 0
expect_glibc "-- CMD --rss" "$TMP/a.json"
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/a.mtrace" >"$TMP/a.txt" 2>&1
if grep -q "glibc's allocator (its own probes): 3 arenas made, 3 taken by another thread" "$TMP/a.txt"; then ok "text: arenas"; else not_ok "text: $(grep -A2 "glibc's" "$TMP/a.txt")"; fi
if grep -q "main heap grown 4 times by brk (528.0 KiB), trimmed 1 time (64.0 KiB given back)" "$TMP/a.txt"; then ok "text: the main heap"; else not_ok "text: no main heap line"; fi
if grep -q "mallopt(M_ARENA_MAX, 2)" "$TMP/a.txt"; then ok "text: mallopt"; else not_ok "text: no mallopt line"; fi
if grep -q "3 arenas  new_arena_for_thread  .*glibc_probes.c" "$TMP/a.txt"; then ok "text: arenas by site"; else not_ok "text: no arena site"; fi

# --- --rss=only: no allocator probes, glibc's still
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss=only -o "$TMP/b.mtrace" -- "$P" >"$TMP/out" 2>"$TMP/err"
expect_status "--rss=only: exit status" $? 0 "$TMP/err"
report_json "$TMP/b.mtrace" "$TMP/b.json"
expect_glibc "--rss=only" "$TMP/b.json"

# --- -p: attached to the running program before it fires them
"$P" wait >"$TMP/p.out" 2>&1 &
pid=$!
expect_line "$TMP/p.out" "glibc_probes waiting" 10 "glibc_probes never waited"
timeout -k 5 "$LIMIT" "$MEMTRACE" record -p "$pid" --rss -o "$TMP/c.mtrace" >/dev/null 2>"$TMP/c.err" &
rec=$!
if wait_for_line "$TMP/c.err" "memtrace: attached" 30; then
	kill -USR1 "$pid"
	wait "$pid"
	expect_eq "-p: glibc_probes exit status" $? 0
	wait "$rec"
	expect_eq "-p: memtrace exit status (target exited)" $? 0
	report_json "$TMP/c.mtrace" "$TMP/c.json"
	expect_glibc "-p --rss" "$TMP/c.json"
else
	not_ok "-p: memtrace never attached: $(cat "$TMP/c.err")"
	not_made 7 "-p: memtrace never attached"
	kill "$pid" "$rec" 2>/dev/null
	wait
fi

# --- a C library without them (Debian's): null, and said in one line
timeout -k 5 "$LIMIT" "$MEMTRACE" record --rss -o "$TMP/d.mtrace" -- "$PROGS/alloc_patterns" >/dev/null 2>"$TMP/d.err"
expect_status "without the probes: exit status" $? 0 "$TMP/d.err"
report_json "$TMP/d.mtrace" "$TMP/d.json"
expect_eq "without the probes: rss.maps.glibc is null" "$(jqr "$TMP/d.json" '.rss.maps.glibc')" null
expect_eq "without the probes: the attach line names none" "$(grep -c "glibc's allocator probe" "$TMP/d.err")" 0
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/d.mtrace" >"$TMP/d.txt" 2>&1
expect_eq "without the probes: one text line says so" \
	"$(grep -c "glibc's allocator probes (arenas, heaps, trims): not in the target's C library" "$TMP/d.txt")" 1

# --- diff: glibc's figures side by side where both traces have them
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json "$TMP/a.mtrace" "$TMP/b.mtrace" >"$TMP/ab.json" 2>&1
expect_eq "diff --json: exit status" $? 0
expect_eq "diff --json: rss.glibc arenas_new and sbrk_more_bytes" \
	"$(jqr "$TMP/ab.json" '.rss.glibc | "\(.arenas_new.a) \(.arenas_new.b) \(.sbrk_more_bytes.b) \(.sbrk_less_bytes.delta)"')" "3 3 540672 0"
timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json "$TMP/a.mtrace" "$TMP/d.mtrace" >"$TMP/ad.json" 2>&1
expect_eq "diff --json against a trace without them: rss.glibc null" "$(jqr "$TMP/ad.json" '.rss.glibc')" null
timeout -k 5 "$LIMIT" "$MEMTRACE" diff "$TMP/a.mtrace" "$TMP/c.mtrace" >"$TMP/ac.txt" 2>&1
if grep -q "^  glibc arenas made *3 *3 *0" "$TMP/ac.txt"; then ok "diff text: glibc arenas made 3 and 3"; else not_ok "diff text: $(grep glibc "$TMP/ac.txt")"; fi

finish
