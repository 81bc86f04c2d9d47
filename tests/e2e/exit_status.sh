#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Exit statuses, the same for every command (docs/man/memtrace.1): 0
# success, 1 a failure at run time, 2 a usage error (nothing was done);
# record -- CMD exits with the command's status, 128 + N when signal N
# killed it.
. "$(dirname "$0")/lib.sh"
plan 35

cd "$TMP" || exit 1
# status CMD...: memtrace's exit status, its output thrown away
status() {
	timeout -k 5 "$LIMIT" "$MEMTRACE" "$@" >/dev/null 2>&1
	echo $?
}

printf 'not a trace\n' >junk.mtrace
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o t.mtrace -- "$PROGS/alloc_patterns" >/dev/null 2>&1
expect_eq "a trace to work on" "$?" 0

while read -r want args; do
	expect_eq "memtrace $args" "$(eval status "$args")" "$want"
done <<'CASES'
2
2 bogus
2 record --bogus
2 record -d x -p 1
2 record
2 record --stack-depth 999 -- true
2 report
2 report --bogus t.mtrace
2 report a.mtrace b.mtrace
2 report --json --html x.html t.mtrace
2 diff t.mtrace
2 diff --bogus t.mtrace t.mtrace
2 export t.mtrace
2 export --format bogus t.mtrace
1 report missing.mtrace
1 report junk.mtrace
1 diff missing.mtrace t.mtrace
1 export --format folded missing.mtrace
1 record -p 999999999
1 record -o t.mtrace -- true
1 record -- /nonexistent/program
0 --help
0 record --help
0 report --help
0 diff --help
0 export --help
0 report t.mtrace
0 diff t.mtrace t.mtrace
0 export --format folded -o - t.mtrace
0 record -o ok.mtrace -- true
1 record -o f1.mtrace -- false
7 record -o s7.mtrace -- sh -c 'exit 7'
143 record -o k15.mtrace -- sh -c 'kill -TERM $$'
137 record -o k9.mtrace -- sh -c 'kill -KILL $$'
CASES
finish
