#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# record hands the kernel's release of its links and maps (tens of ms of RCU
# grace periods) to a detached child and exits once the trace is complete:
# the user has the prompt back sooner (make bench's whole-command row), and
# nothing may be left behind for it. -- CMD and -p, each: the exit status,
# a complete trace with its exact counts, and within 5 s none of memtrace's
# BPF object held and no memtrace process left; the detached child
# keeps no terminal or pipe (a pipe's reader sees its end when record exits).
. "$(dirname "$0")/lib.sh"
plan 13

# memtrace under a name of its own, so that what this test's runs leave is
# told from any other memtrace's: the detached child keeps the name (comm).
cp "$MEMTRACE" "$TMP/mt-teardown"
MEMTRACE=$TMP/mt-teardown
# BPF programs, links and maps held by processes of that name (bpftool here
# may not say which process holds a program; their descriptors do)
count_ours() {
	local p n=0
	for p in $(pgrep -x mt-teardown); do
		n=$((n + $(ls -l "/proc/$p/fd" 2>/dev/null | grep -c -E 'bpf-prog|bpf_link|bpf-map')))
	done
	echo $n
}
# released: wait up to 5 s for no process of ours and none of their BPF
# objects; prints the ms it took
released() {
	local i
	for ((i = 0; i < 50; i++)); do
		[ "$(count_ours)" = 0 ] && [ -z "$(pgrep -x mt-teardown)" ] && { echo $((i * 100)); return 0; }
		sleep 0.1
	done
	return 1
}

cd "$TMP" || exit 1

# --- -- CMD: alloc_patterns' known figures
t0=$(date +%s%N)
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o cmd.mtrace -- "$PROGS/alloc_patterns" >out 2>err
st=$?
t1=$(date +%s%N)
echo "# record -- alloc_patterns: $(((t1 - t0) / 1000000)) ms start to exit"
expect_status "-- CMD: exit status" "$st" 0 err
report_json cmd.mtrace cmd.json
expect_status "-- CMD: the trace reads" "$?" 0 "$TMP/report.err"
expect_alloc_patterns cmd.json 0 "-- CMD"
if ms=$(released); then ok "-- CMD: programs released and no memtrace left, $ms ms after its exit"; else
	not_ok "-- CMD: 5 s after record exited: $(count_ours) BPF objects held by: $(pgrep -x mt-teardown | tr '\n' ' ')"; fi

# --- the detached child keeps no pipe: a reader of record's stdout and stderr
# sees their end when record exits, not when the release is done
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o pipe.mtrace -- /bin/true 2>&1 | cat >pipe.out &
reader=$!
for ((i = 0; i < 100; i++)); do kill -0 "$reader" 2>/dev/null || break; sleep 0.05; done
wait "$reader"
expect_eq "a pipe from record ends with record: its last line" "$(grep -c '^memtrace: wrote pipe.mtrace' pipe.out)" 1
released >/dev/null

# --- -p, stopped by SIGINT: the target runs on untouched
(exec "$PROGS/alloc_patterns" wait >ap.out 2>ap.err) &
target=$!
wait_for_line ap.err "alloc_patterns: waiting for SIGUSR1" 10
: >perr
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o pid.mtrace -p "$target" 2>perr &
rec=$!
if wait_for_line perr "memtrace: attached" 20; then ok "-p: attached"; else not_ok "-p: never attached: $(head -c 300 perr)"; fi
kill -USR1 "$target"
wait "$target"
expect_eq "-p: the target's exit status" "$?" 0
wait "$rec"
expect_status "-p: exit status" "$?" 0 perr
report_json pid.mtrace pid.json
expect_status "-p: the trace reads" "$?" 0 "$TMP/report.err"
expect_alloc_patterns pid.json 4 "-p"
if ms=$(released); then ok "-p: programs released and no memtrace left, $ms ms after its exit"; else
	not_ok "-p: 5 s after record exited: $(count_ours) BPF objects held by: $(pgrep -x mt-teardown | tr '\n' ' ')"; fi

finish
