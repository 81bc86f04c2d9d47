#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A recorder killed with SIGKILL writes no symbols: report, diff, export and
# the HTML name its frames from the files found now, each by the build-id
# the trace recorded (the recorded path, then --symfs DIR, the debug
# directories, debuginfod), and never from a file whose build-id differs.
. "$(dirname "$0")/lib.sh"
plan 12

mkdir -p "$TMP/bin"
cp "$PROGS/forever" "$TMP/bin/forever"
cd "$TMP" || exit 1

# record_killed TRACE: bin/forever under -p, its recorder SIGKILLed
record_killed() {
	local target watcher recorder
	"$TMP/bin/forever" >/dev/null &
	target=$!
	wait_exec "$target" "$TMP/bin/forever"
	timeout 60 "$MEMTRACE" record -p "$target" -o "$1" 2>"$1.err" &
	watcher=$!
	wait_for_line "$1.err" "memtrace: attached" 10
	recorder=$(pgrep -P "$watcher" -x memtrace)
	sleep 1
	kill -KILL "$recorder"
	wait "$watcher" 2>/dev/null
	kill -TERM "$target"
	wait "$target"
}

record_killed k.mtrace
timeout 60 "$MEMTRACE" report --json k.mtrace >k.json 2>k.err
expect_eq "report of the killed recorder's trace: exit status" $? 0
expect_eq "the trace is partial (no symbol section was written)" "$(jqr k.json .trace.partial)" true
n=$(jqr k.json '[.sites[] | select(.function == "site_forever")] | map(.allocations) | add // 0')
if [ "$n" -gt 100 ]; then ok "site_forever named from bin/forever: $n allocations"; else not_ok "site_forever: $n allocations named"; fi
expect_eq "every frame of site_forever's stacks is named, to main" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "site_forever") | .stacks[] | [.frames[].function // "?"] | .[0:2] | join(" < ")] | unique | join(",")' k.json)" \
	"site_forever < main"
expect_eq "every frame of those stacks has a name, libc's and the loader's too" \
	"$(jq "$NESTED"' | [.sites[] | select(.function == "site_forever") | .stacks[].frames[] | select(.function == null)] | length' k.json)" 0
expect_eq "its file and line too" "$(jqr k.json '[.sites[] | select(.function == "site_forever")][0] | "\(.file | sub(".*/"; "")):\(.line > 0)"')" \
	"forever.c:true"
expect_eq "export folded names it" "$("$MEMTRACE" export --format folded -o - k.mtrace 2>/dev/null | grep -c 'main;site_forever ')" 1
expect_eq "diff names it" "$("$MEMTRACE" diff --json k.mtrace k.mtrace 2>/dev/null | jq '[.sites[] | select(.function == "site_forever")] | length')" 1
"$MEMTRACE" report --html k.html k.mtrace 2>/dev/null
expect_eq "the HTML page names it" "$(grep -c 'site_forever' k.html | awk '{ print ($1 > 0) }')" 1

# The module rebuilt after recording: another program at its path now.
mkdir -p "$TMP/symfs$TMP/bin"
mv "$TMP/bin/forever" "$TMP/symfs$TMP/bin/forever"
cp "$PROGS/alloc_patterns" "$TMP/bin/forever"
timeout 60 "$MEMTRACE" report --json k.mtrace >r.json 2>/dev/null
expect_eq "a rebuilt file is refused by build-id: no site is named from it" \
	"$(jqr r.json '[.sites[] | select(.module | test("forever$")) | .function // empty] | length')" 0
expect_eq "its frames stay module+offset" \
	"$(jqr r.json '[.sites[] | select(.module | test("forever$")) | .name | test("^forever\\+0x[0-9a-f]+$")] | length > 0 and all')" true
# --symfs DIR: the recording machine's files, copied here
timeout 60 "$MEMTRACE" report --json --symfs "$TMP/symfs" k.mtrace >s.json 2>/dev/null
expect_eq "--symfs DIR: named again from DIR" \
	"$(jqr s.json '[.sites[] | select(.function == "site_forever")] | length')" 1
finish
