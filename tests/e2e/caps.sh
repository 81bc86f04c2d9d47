#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Recording without root: user nobody (65534) holding only the capabilities
# it is given (as ambient capabilities, so they survive exec; the bounding
# set is cut down to the same ones, so nothing else can be gained).
#
# The minimal sets, as this test finds them:
#   -- CMD, and -p PID of a process of the same user: CAP_BPF + CAP_PERFMON
#   -p PID of another user's process: + CAP_SYS_PTRACE (to read its
#      /proc/PID/maps, /proc/PID/root and environment); files the target
#      maps must be readable by the recording user (else + CAP_DAC_READ_SEARCH)
# Traces are created 0600 and owned by the recording user; report, diff and
# export need no capability at all.
source "$(dirname "$0")/lib.sh"
plan 36

NOBODY=65534
work=$TMP/nobody
mkdir -p "$work"
chmod 755 "$TMP"
cp "$PROGS/alloc_patterns" "$work/"
chown -R "$NOBODY:$NOBODY" "$work"
targets=""
cleanup() {
	local p
	for p in $targets; do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# as_nobody CAPS CMD...: run CMD as nobody with exactly CAPS ("bpf,perfmon";
# "" for none).
as_nobody() {
	local caps=$1 set
	shift
	if [ -n "$caps" ]; then
		set=+${caps//,/,+}
		timeout -k 5 "$LIMIT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			--inh-caps=-all,"$set" --ambient-caps="$set" --bounding-set=-all,"$set" "$@"
	else
		timeout -k 5 "$LIMIT" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
			--inh-caps=-all --bounding-set=-all "$@"
	fi
}

# check_counts NAME TRACE UNMATCHED: the alloc_patterns figures, symbolized
check_counts() {
	local got
	report_json "$2" "$2.json" || { not_made 2 "$1: report failed: $(head -c 200 "$TMP/report.err")"; return; }
	got=$(jq -r '[.totals | .allocations, .frees, .allocated_bytes, .peak_bytes, .leaked_bytes,
		.unmatched_frees, .dropped_events] | map(tostring) | join(" ")' "$2.json")
	expect_eq "$1: totals (allocs frees bytes peak leaked_bytes unmatched dropped)" "$got" \
		"56 48 8400544 8393460 4852 $3 0"
	got=$(jq -r '[.sites[] | select(.function == "site_malloc_100" or .function == "site_leak_24") |
		"\(.function):\(.allocations)"] | sort | join(" ")' "$2.json")
	expect_eq "$1: symbolized sites" "$got" "site_leak_24:3 site_malloc_100:10"
}

# -- CMD mode with CAP_BPF + CAP_PERFMON only
trace=$work/cmd.mtrace
as_nobody bpf,perfmon "$MEMTRACE" record -o "$trace" -- "$work/alloc_patterns" >"$TMP/out" 2>"$TMP/err"
expect_eq "record -- CMD as nobody with CAP_BPF+CAP_PERFMON: exit status" "$?" 0
expect_eq "trace file mode and owner" "$(stat -c '%a %u' "$trace" 2>/dev/null)" "600 $NOBODY"
check_counts "-- CMD with CAP_BPF+CAP_PERFMON" "$trace" 0

# one capability short: refused before anything starts, one line
for caps in perfmon bpf ""; do
	rm -f "$work/short.mtrace"
	as_nobody "$caps" "$MEMTRACE" record -o "$work/short.mtrace" -- "$work/alloc_patterns" \
		>"$TMP/out" 2>"$TMP/err"
	expect_one_error "record with only '${caps:-no capabilities}'" $? "$TMP/err"
	if [ -e "$work/short.mtrace" ]; then not_ok "a trace was created anyway"; else ok "no trace created"; fi
	if [ -s "$TMP/out" ]; then not_ok "the command ran anyway"; else ok "the command did not run"; fi
done

# record_pid_as NAME CAPS TARGET_USER TRACE: alloc_patterns wait run as
# TARGET_USER (root or nobody), recorded with -p by nobody holding CAPS.
# Returns memtrace's exit status; its stderr is in $TMP/err.
record_pid_as() {
	local name=$1 caps=$2 user=$3 trace=$4 tp rp rc
	: >"$TMP/target.err"
	if [ "$user" = root ]; then
		timeout -k 5 "$LIMIT" "$work/alloc_patterns" wait >/dev/null 2>"$TMP/target.err" &
	else
		as_nobody "" "$work/alloc_patterns" wait >/dev/null 2>"$TMP/target.err" &
	fi
	wait_for_line "$TMP/target.err" "alloc_patterns: waiting" 10
	tp=$(pgrep -n -f "^$work/alloc_patterns wait")
	targets="$targets $tp"
	expect_eq "$name: target runs as" "$(stat -c %U "/proc/$tp")" "$user"
	: >"$TMP/err" # the case before's "attached" must not be seen (replaced_files.sh)
	as_nobody "$caps" "$MEMTRACE" record -o "$trace" -p "$tp" 2>"$TMP/err" &
	rp=$!
	wait_for_line "$TMP/err" "memtrace: attached" 10
	kill -USR1 "$tp" 2>/dev/null
	wait "$rp"
	rc=$?
	kill -USR1 "$tp" 2>/dev/null
	wait
	return $rc
}

record_pid_as "-p own process, CAP_BPF+CAP_PERFMON" bpf,perfmon nobody "$work/own.mtrace"
expect_eq "-p own process, CAP_BPF+CAP_PERFMON: exit status" "$?" 0
check_counts "-p own process, CAP_BPF+CAP_PERFMON" "$work/own.mtrace" 4

record_pid_as "-p root's process, CAP_BPF+CAP_PERFMON" bpf,perfmon root "$work/other.mtrace"
expect_one_error "-p root's process without CAP_SYS_PTRACE" $? "$TMP/err"
if grep -q 'CAP_SYS_PTRACE' "$TMP/err"; then
	ok "the error names CAP_SYS_PTRACE"
else
	not_ok "the error does not say CAP_SYS_PTRACE is missing: $(head -c 200 "$TMP/err")"
fi

record_pid_as "-p root's process, +CAP_SYS_PTRACE" bpf,perfmon,sys_ptrace root "$work/ptrace.mtrace"
expect_eq "-p root's process, CAP_BPF+CAP_PERFMON+CAP_SYS_PTRACE: exit status" "$?" 0
check_counts "-p root's process, +CAP_SYS_PTRACE" "$work/ptrace.mtrace" 4
expect_eq "its trace file mode and owner" "$(stat -c '%a %u' "$work/ptrace.mtrace" 2>/dev/null)" "600 $NOBODY"

# reading traces needs nothing: no capabilities at all
trace=$work/cmd.mtrace
as_nobody "" "$MEMTRACE" report "$trace" >"$TMP/out" 2>"$TMP/err"
expect_eq "report as nobody without capabilities" "$?" 0
as_nobody "" "$MEMTRACE" report --json "$trace" >"$TMP/out" 2>"$TMP/err"
expect_eq "report --json as nobody: exit status" "$?" 0
expect_eq "report --json as nobody: allocations" "$(jq -r .totals.allocations "$TMP/out")" 56
as_nobody "" "$MEMTRACE" diff "$trace" "$work/own.mtrace" >"$TMP/out" 2>"$TMP/err"
expect_eq "diff as nobody without capabilities" "$?" 0
for fmt in pprof folded; do
	as_nobody "" "$MEMTRACE" export --format "$fmt" -o "$work/out.$fmt" "$trace" 2>"$TMP/err"
	expect_eq "export --format $fmt as nobody without capabilities" "$?" 0
done
if [ -s "$work/out.folded" ] && grep -q site_malloc_100 "$work/out.folded"; then
	ok "folded export names site_malloc_100"
else
	not_ok "folded export is empty or lacks site_malloc_100"
fi
finish
