#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The --follow-children supervisor killed with SIGKILL: no recorder outlives
# it. Each learns of the death (parent-death signal), finishes its trace and
# detaches within 2 s; none is left running, no memtrace BPF program stays
# loaded, and the traced processes run on untouched.
. "$(dirname "$0")/lib.sh"
plan 13

# our BPF programs, by name, as bpftool lists them
ours='name (dl_hook_enter|entry_enter|alloc_enter|free_enter|delete_enter|alloc_exit|empty_enter|empty_exit|link_map_hit|mark_hit)'
count_ours() { bpftool prog show 2>/dev/null | grep -c -E "$ours"; }
# running PID: it exists and is not a zombie (an orphan's zombie waits for
# init, which in a container may reap late)
running() { local s; s=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
recorders_running() { ps -eo stat=,comm= | awk '$2 == "memtrace-rec" && $1 !~ /^Z/' | wc -l; }
# A record of the test before may still be releasing its programs: record
# leaves that to a detached child, after the user has the prompt back.
for ((i = 0; i < 50; i++)); do [ "$(count_ours)" = 0 ] && break; sleep 0.1; done
expect_eq "no memtrace BPF program loaded before the test" "$(count_ours)" 0

cd "$TMP" || exit 1
# forker: parent and child A allocate and A exits; B execs forever, which runs until SIGTERM
timeout -k 5 60 "$MEMTRACE" record --follow-children -o tree.mtrace -- \
	"$PROGS/forker" "$PROGS/forever" >"$TMP/out" 2>"$TMP/err" &
supervisor=$(pgrep -P $! -x memtrace) # timeout's child: the one to kill
for ((i = 0; i < 100; i++)); do
	[ "$(grep -c '^memtrace: attached' "$TMP/err")" -ge 4 ] && break
	sleep 0.1
done
expect_eq "four recorders attached (forker, A, B, B's exec of forever)" "$(grep -c '^memtrace: attached' "$TMP/err")" 4
recorders=$(pgrep -x memtrace-rec | sort | tr '\n' ' ')
if [ -n "$recorders" ]; then ok "recorders are named memtrace-rec: $recorders"; else not_ok "no process named memtrace-rec"; fi
expect_eq "no memtrace process named exe" "$(pgrep -x exe | wc -l)" 0
if [ "$(count_ours)" -gt 0 ]; then ok "our BPF programs are loaded while recording"; else not_ok "no BPF program of ours while recording"; fi
forever=$(pgrep -n -f "^$PROGS/forever")

kill -KILL "$supervisor"
wait 2>/dev/null
left=""
for ((i = 0; i < 20; i++)); do
	left=$(for p in $recorders; do running "$p" && echo "$p"; done)
	[ -z "$left" ] && break
	sleep 0.1
done
if [ -z "$left" ]; then ok "every recorder ended within $((i * 100)) ms of the supervisor's death"; else not_ok "recorders still running 2 s after: $left"; fi
expect_eq "no memtrace-rec process left" "$(recorders_running)" 0
# the links and maps go with the last holder, the detached teardown child
# (it releases them after the recorders end, a few hundred ms of the
# kernel's): gone within 5 s, not at once
for ((j = 0; j < 50; j++)); do [ "$(count_ours)" = 0 ] && break; sleep 0.1; done
expect_eq "no memtrace BPF program left within $((j * 100)) ms" "$(count_ours)" 0

if [ -n "$forever" ] && kill -0 "$forever" 2>/dev/null; then ok "the traced program runs on"; else not_ok "the traced program is gone"; fi
expect_eq "the traced program is no longer under ptrace" "$(awk '/^TracerPid/ { print $2 }' "/proc/$forever/status" 2>/dev/null)" 0
kill -TERM "$forever" 2>/dev/null
for ((i = 0; i < 50; i++)); do kill -0 "$forever" 2>/dev/null || break; sleep 0.1; done

t=$(ls tree.*.1.mtrace 2>/dev/null | head -n1)
report_json "$t" f.json
expect_eq "the trace of the exec'd program was finished (not partial)" "$(jqr f.json .trace.partial)" false
if [ "$(jqr f.json .totals.allocations)" -gt 0 ]; then ok "it holds forever's allocations"; else not_ok "it holds no allocation"; fi
report_json tree.mtrace root.json
expect_site root.json site_parent allocations 10
finish
