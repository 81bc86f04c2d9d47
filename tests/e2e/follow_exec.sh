#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --follow-children into new programs, on every launch path (see launch.sh):
# an exec chain, a fork+exec chain two levels deep, and a shell script that
# runs a program; each program's trace has its exact figures.
. "$(dirname "$0")/lib.sh"
plan 38

cd "$TMP" || exit 1
cat >run.sh <<'SH'
#!/bin/sh
# a setuid-free script: the shell forks and execs its arguments
"$@"
SH
chmod +x run.sh

# trace_of COMM PATTERN: the one trace among PATTERN whose program is COMM
traces_of() {
	local f
	for f in $2; do
		[ "$("$MEMTRACE" report --json "$f" | jq -r .trace.comm)" = "$1" ] && echo "$f"
	done
}

follow() { # NAME CMD...: record --follow-children -o NAME.mtrace -- CMD
	local name=$1
	shift
	timeout -k 5 "$LIMIT" "$MEMTRACE" record ${RECORD_FLAGS:-} --follow-children -o "$name.mtrace" -- "$@" \
		>"$TMP/out" 2>"$TMP/err"
}

# held_at_entry WHAT N: on the entry path, one line per program launched
# (the command and each exec) says it was held at its entry point; none on
# the hook path.
held_at_entry() {
	local want=$2
	[ "$path" = hook ] && want=0
	expect_eq "$p: $1: 'held at its entry point' lines" "$(grep -c 'was held at its entry point' "$TMP/err")" "$want"
}

for path in hook entry; do
	if [ "$path" = entry ]; then export MEMTRACE_LAUNCH=entry; else unset MEMTRACE_LAUNCH; fi
	p="$path path"

	# exec chain: the shell replaces itself with the program
	follow "ex-$path" sh -c "exec $PROGS/alloc_patterns"
	expect_eq "$p: exec chain: exit status" $? 0
	held_at_entry ex 2
	t=$(traces_of alloc_patterns "ex-$path*.mtrace")
	expect_eq "$p: exec chain: one trace of the exec'd program" "$(echo "$t" | grep -c .)" 1
	report_json "$t" ex.json
	expect_alloc_patterns ex.json 0 "$p: exec chain"

	# fork+exec two levels deep: forker -> B execs forker -> its B execs alloc_patterns
	follow "fe-$path" "$PROGS/forker" "$PROGS/forker" "$PROGS/alloc_patterns"
	expect_eq "$p: fork+exec chain: exit status" $? 0
	held_at_entry fe 3
	parents=0 children=0
	for f in fe-$path*.mtrace; do
		report_json "$f" f.json
		[ "$(site f.json site_parent allocations)" = 10 ] && parents=$((parents + 1))
		[ "$(site f.json site_child allocations)" = 20 ] && children=$((children + 1))
	done
	expect_eq "$p: fork+exec chain: traces with forker's 10 parent allocations" "$parents" 2
	expect_eq "$p: fork+exec chain: traces with forker's 20 child allocations" "$children" 2
	t=$(traces_of alloc_patterns "fe-$path*.mtrace")
	expect_eq "$p: fork+exec chain: one trace of the last program" "$(echo "$t" | grep -c .)" 1
	report_json "$t" fe.json
	expect_alloc_patterns fe.json 0 "$p: fork+exec chain"

	# a shell script that runs a program as its child
	follow "sc-$path" ./run.sh "$PROGS/alloc_patterns"
	expect_eq "$p: script: exit status" $? 0
	held_at_entry script 2
	expect_eq "$p: script: the program's output" "$(cat "$TMP/out")" "alloc_patterns: done"
	t=$(traces_of alloc_patterns "sc-$path*.mtrace")
	expect_eq "$p: script: one trace of the program it ran" "$(echo "$t" | grep -c .)" 1
	report_json "$t" sc.json
	expect_alloc_patterns sc.json 0 "$p: script"
	expect_eq "$p: no 'failed' line" "$(grep -c 'failed' "$TMP/err")" 0
done
unset MEMTRACE_LAUNCH
finish
