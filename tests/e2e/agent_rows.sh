#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace agent's unwind rows, one array for all its targets (shared by
# build-id), made room in for the files of new targets once no target maps
# the old ones: Debian's redis-server fills them exactly (the agent given
# as many rows as a recording of it takes, MEMTRACE_AGENT_UNWIND_ROWS), ends,
# and then tests/progs/leak_rate, matched by --comm as redis-server was,
# gets the rows of its own program (the C library's it finds as redis left
# them). Checked: both attached, redis' recording ended before leak_rate
# came, no "no room for the unwind table" line, and leak_rate's stacks walk
# from leak_step to main.
. "$(dirname "$0")/lib.sh"

plan 6
port=16541
rport=16542
command -v redis-server >/dev/null || {
	skips 6 "no redis-server (apt-get install redis-server)"
	finish
}
agent= redis= leak=
cleanup() {
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	for p in $redis $leak; do kill "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$TMP/redis.log" 2>&1 &
redis=$!
for _ in $(seq 50); do [ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
# the rows a recording of it takes: the agent gets that many, no more
rows=$(timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -d 1 -p "$redis" -o "$TMP/probe.mtrace" 2>&1 |
	sed -n 's/^memtrace: unwind tables for [0-9]* modules, \([0-9]*\) rows$/\1/p')
echo "# redis-server's unwind tables: ${rows:-?} rows"
mkdir -m 0700 "$TMP/out"
MEMTRACE_AGENT_UNWIND_ROWS=${rows:-1} timeout -k 5 120 "$MEMTRACE" agent --comm redis-server --comm leak_rate \
	--exact -o "$TMP/out" --listen "127.0.0.1:$port" -d 60 2>"$TMP/agent.err" &
agent=$!
expect_line "$TMP/agent.err" "memtrace: attached to PID $redis " 20 "redis-server never attached"
kill "$redis"
wait "$redis" 2>/dev/null
redis=
expect_line "$TMP/agent.err" "memtrace: wrote .*/redis-server\." 20 "redis-server's recording never ended"
"$PROGS/leak_rate" 5 &
leak=$!
expect_line "$TMP/agent.err" "memtrace: attached to PID $leak " 20 "leak_rate never attached"
sleep 1
# (redis' own recording may find one more module than record's did, and
# say it has no room for it: only leak_rate's line is this check's)
grep 'no room for the unwind table' "$TMP/agent.err" | sed 's/^/# /'
expect_eq "no 'no room for the unwind table of .../leak_rate' line: redis' rows made room for its" \
	"$(grep -c "no room for the unwind table of $PROGS/leak_rate " "$TMP/agent.err")" 0
kill -INT "$agent"
wait "$agent"
expect_status "the agent stops cleanly" $? 0 "$TMP/agent.err"
agent=
wait "$leak" 2>/dev/null
leak=
# leak_rate's trace (-o DIR): each leak_step stack walks through main
f=$(ls "$TMP"/out/leak_rate.*.mtrace 2>/dev/null | head -1)
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$f" >"$TMP/leak.json" 2>/dev/null
expect_eq "leak_rate's leak_step stacks reach main (stacks/with main)" \
	"$(jq -r "$NESTED"' | [.sites[] | select(.function == "leak_step") | .stacks[]] | "\(length > 0)/\(map(select(any(.frames[]; .function == "main"))) | length == length)"' "$TMP/leak.json")" "true/true"
finish
