#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The privilege boundary. A copy of memtrace given CAP_BPF and CAP_PERFMON
# with setcap, run by user nobody, may record nobody's processes, and stops
# recording one the moment it takes credentials nobody may not trace (here:
# the exec of the setuid-root passwd). The rule is enforced in BPF, so not
# one event of the root process reaches the trace. Root keeps recording.
source "$(dirname "$0")/lib.sh"
plan 22

NOBODY=65534
chmod 755 "$TMP"
mkdir -p "$TMP/bin" "$TMP/out"
cp "$MEMTRACE" "$TMP/bin/memtrace"
setcap cap_bpf,cap_perfmon+ep "$TMP/bin/memtrace"
chown "$NOBODY" "$TMP/out"
passwd=/usr/bin/passwd
[ -u "$passwd" ] && ok "$passwd is setuid" || not_ok "$passwd is not setuid: the test proves nothing"

as_nobody() { timeout -k 5 "$LIMIT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"; }

# run_exec_case NAME MEMTRACE_RUNNER...: nobody's execer, recorded with -p by
# the given runner, execs passwd after 7 allocations.
run_exec_case() {
	local name=$1 target rec
	shift
	as_nobody "$PROGS/execer" "$passwd" -S nobody >"$TMP/$name.target.out" 2>"$TMP/$name.target.err" &
	target=$!
	wait_for_line "$TMP/$name.target.err" "execer: waiting for SIGUSR1" 10
	pid=$(pgrep -n -u $NOBODY -x execer)
	"$@" record -p "$pid" -o "$TMP/out/$name.mtrace" 2>"$TMP/$name.err" &
	rec=$!
	if wait_for_line "$TMP/$name.err" "memtrace: attached" 10; then ok "$name: attached"; else not_ok "$name: never attached"; fi
	kill -USR1 "$pid"
	wait "$target"
	expect_eq "$name: passwd ran as root and succeeded" $? 0
	wait "$rec"
	expect_eq "$name: memtrace exit status" $? 0
	report_json "$TMP/out/$name.mtrace" "$TMP/$name.json"
}

run_exec_case setcap as_nobody "$TMP/bin/memtrace"
expect_eq "setcap: the recorder says why it stopped" "$(grep -c "^memtrace: stopped recording PID $pid: it changed credentials (setuid exec of passwd)$" "$TMP/setcap.err")" 1
expect_eq "setcap: exactly the 7 allocations made before the exec" "$(jqr "$TMP/setcap.json" .totals.allocations)" 7
expect_site "$TMP/setcap.json" site_before_exec allocated_bytes 861
expect_eq "setcap: no free of the root process either" "$(jqr "$TMP/setcap.json" .totals.frees)" 0
expect_eq "setcap: the trace says why" "$(jqr "$TMP/setcap.json" .trace.stop_reason)" \
	"stopped recording PID $pid: it changed credentials (setuid exec of passwd)"
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/out/setcap.mtrace" >"$TMP/setcap.txt" 2>&1
expect_eq "setcap: the text report says why" \
	"$(grep -c "^  stopped recording PID $pid: it changed credentials (setuid exec of passwd)$" "$TMP/setcap.txt")" 1

# Root (CAP_SYS_PTRACE) keeps recording across the exec: passwd's own allocations are there.
run_exec_case root timeout -k 5 "$LIMIT" "$MEMTRACE"
expect_site "$TMP/root.json" site_before_exec allocations 7
n=$(jqr "$TMP/root.json" .totals.allocations)
if [ "$n" -gt 7 ]; then ok "root: passwd's allocations recorded too ($n in all)"; else not_ok "root: only $n allocations"; fi
expect_eq "root: no stop reason" "$(jqr "$TMP/root.json" .trace.stop_reason)" null
expect_eq "root: no 'stopped recording' line" "$(grep -c 'stopped recording' "$TMP/root.err")" 0

# --follow-children by nobody: the kernel itself runs a setuid program
# exec'd under an unprivileged tracer without the privilege, so passwd stays
# nobody's (and refuses to show another user's status), and is recorded.
(cd "$TMP/out" && as_nobody "$TMP/bin/memtrace" record --follow-children -o fc.mtrace -- \
	"$passwd" -S root >"$TMP/fc.out" 2>"$TMP/fc.err")
rc=$?
# what passwd says to nobody untraced: refused, the same status
(cd "$TMP/out" && as_nobody "$passwd" -S root >/dev/null 2>&1)
want=$?
if [ "$want" != 0 ]; then ok "passwd -S root is refused to nobody (exit $want)"; else not_ok "passwd -S root succeeds as nobody: the test proves nothing"; fi
expect_eq "follow: passwd under nobody's tracer got no privilege: its own refusal's status" "$rc" "$want"
report_json "$TMP/out/fc.mtrace" "$TMP/fc.json"
expect_eq "follow: the trace is passwd's" "$(jqr "$TMP/fc.json" .trace.comm)" passwd
n=$(jqr "$TMP/fc.json" .totals.allocations)
if [ "${n:-0}" -gt 0 ]; then ok "follow: passwd's $n allocations recorded"; else not_ok "follow: no allocation of passwd in the trace"; fi
expect_eq "follow: no 'stopped recording' line" "$(grep -c 'stopped recording' "$TMP/fc.err")" 0
finish
