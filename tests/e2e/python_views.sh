#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Python frames are ordinary frames in every view (docs/python.md): a
# multiprocessing pool's children recorded with --follow-children, each
# named at its line with its own count; pprof read by Debian's go tool
# pprof; folded stacks; memtrace top's live sites; the agent's
# /debug/pprof/heap read by go tool pprof. Debian's python3.11, and the
# programs' own counts as the truth (tests/progs/py_children.py,
# py_alloc.py).
. "$(dirname "$0")/lib.sh"
plan 17

PY=/usr/bin/python3.11
P=$TOP/tests/progs/py_alloc.py
C=$TOP/tests/progs/py_children.py
port=16587
line() { grep -n "# LINE:$2\$" "$1" | cut -d: -f1; }
pprof() { (cd / && timeout -k 5 "$LIMIT" go tool pprof "$@" 2>"$TMP/pprof.err"); }

# --- --follow-children: three children forked by multiprocessing, child I
# making 10 + I buffers at its line, the parent 10 at its own
timeout -k 5 "$LIMIT" "$MEMTRACE" record --follow-children -o "$TMP/f.mtrace" -- "$PY" "$C" 3 10 >"$TMP/out" 2>"$TMP/err"
expect_status "record --follow-children -- py_children.py 3 10" $? 0 "$TMP/err"
got=""
for f in "$TMP"/f.[0-9]*.mtrace; do
	got="$got$("$MEMTRACE" report --json "$f" | jq -r --arg l "$(line "$C" child)" '[.sites[] | select(.line == ($l | tonumber)) | "\(.function),\(.allocations)"] | join(" ")') "
done
expect_eq "each child's buffers at child_work's line, named, its own count" \
	"$(tr ' ' '\n' <<<"$got" | grep . | sort | tr '\n' ' ')" \
	"child_work.<locals>.<listcomp>,10 child_work.<locals>.<listcomp>,11 child_work.<locals>.<listcomp>,12 "
"$MEMTRACE" report --json "$TMP/f.mtrace" >"$TMP/f.json"
expect_eq "the parent's buffers at main's line" \
	"$(jq -r --arg l "$(line "$C" parent)" '[.sites[] | select(.line == ($l | tonumber)) | "\(.function) \(.allocations)"] | join(",")' "$TMP/f.json")" \
	"main.<locals>.<listcomp> 10"

# diff of two runs: the parent's line, 10 buffers against 25
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/g1.mtrace" -- "$PY" "$C" 0 10 >/dev/null 2>"$TMP/err" &&
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/g2.mtrace" -- "$PY" "$C" 0 25 >/dev/null 2>"$TMP/err"
expect_status "two recordings of py_children.py, 10 and 25 buffers" $? 0 "$TMP/err"
expect_eq "diff --json: the parent's Python line first, 15 more allocations" \
	"$(timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json "$TMP/g1.mtrace" "$TMP/g2.mtrace" | jq -r '.sites[0] | "\(.function):\(.line) \(.allocations.delta)"')" \
	"main.<locals>.<listcomp>:$(line "$C" parent) 15"
timeout -k 5 "$LIMIT" "$MEMTRACE" report --html "$TMP/g.html" "$TMP/g2.mtrace" 2>"$TMP/err"
expect_eq "report --html: the page's data names the Python line" \
	"$(grep -o '"function": *"main.\\u003clocals>.\\u003clistcomp>", *"file": *"[^"]*py_children.py", *"line": *'"$(line "$C" parent)," "$TMP/g.html" | head -n1 | grep -c .)" 1

# --- exports of a -- CMD trace
timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$TMP/c.mtrace" -- "$PY" "$P" "$TMP/m.json" --no-wait --no-churn >"$TMP/out" 2>"$TMP/err"
expect_status "record -- py_alloc.py" $? 0 "$TMP/err"
timeout -k 5 "$LIMIT" "$MEMTRACE" export --format pprof -o "$TMP/c.pb.gz" "$TMP/c.mtrace" 2>"$TMP/err"
expect_status "export --format pprof" $? 0 "$TMP/err"
# the buffers' line holds 2 x 20 blocks of 100001 bytes, live at the end
expect_eq "go tool pprof: the buffers' Python function, its in-use bytes (cum)" \
	"$(pprof -top -cum -nodecount=500 -unit=B -sample_index=inuse_space "$TMP/c.pb.gz" | awk '$NF == "make_buffers.<locals>.<listcomp>" { print $4 }')" 4000040B
timeout -k 5 "$LIMIT" "$MEMTRACE" export --format folded -o "$TMP/c.folded" "$TMP/c.mtrace" 2>"$TMP/err"
expect_eq "folded: key_fn over run_sorted, its bytes (20 x 100001)" \
	"$(awk '/;run_sorted;/ && /;key_fn;/ && index($0, "run_sorted") < index($0, "key_fn") { n += $NF } END { print n + 0 }' "$TMP/c.folded")" \
	"$(jq '.n * (.big + 1)' "$TMP/m.json")"

# --- live: top and the agent on a process that keeps what it made
start_target() {
	: >"$TMP/t.err"
	"$PY" "$P" "$TMP/m2.json" --no-churn --stay 2>"$TMP/t.err" &
	target=$!
	wait_for_line "$TMP/t.err" "py_alloc: waiting for SIGUSR1" 10
}
start_target
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json -i 0.5 -d 4 -p "$target" >"$TMP/top.jsonl" 2>"$TMP/top.err" &
top=$!
wait_for_line "$TMP/top.err" "memtrace: attached" 10
kill -USR1 "$target"
wait "$top"
expect_status "top --batch --json -p" $? 0 "$TMP/top.err"
expect_eq "top: the buffers' line among the last sites, named, live bytes" \
	"$(tail -n1 "$TMP/top.jsonl" | jq -r --arg l "$(line "$P" buffers)" '.sites[] | select(.line == ($l | tonumber)) | "\(.function) \(.live_bytes // .leaked_bytes)"')" \
	"make_buffers.<locals>.<listcomp> 4000040"
kill "$target"; wait "$target" 2>/dev/null

start_target
timeout -k 5 120 "$MEMTRACE" agent -p "$target" --exact --listen "127.0.0.1:$port" -d 60 2>"$TMP/agent.err" &
agent=$!
trap 'kill -INT $agent 2>/dev/null; kill $target 2>/dev/null; rm -rf "$TMP"' EXIT
if wait_for_line "$TMP/agent.err" "memtrace: attached to PID $target" 20; then ok "the agent attached"; else not_ok "never attached: $(cat "$TMP/agent.err")"; fi
kill -USR1 "$target"
wait_for_line "$TMP/t.err" "py_alloc: done" 20
sleep 0.5 # the last events reach the agent within its poll
expect_eq "/debug/pprof/heap: 200" "$(curl -s -o "$TMP/heap.pb.gz" -w '%{http_code}' "http://127.0.0.1:$port/debug/pprof/heap")" 200
expect_eq "go tool pprof of the agent's heap: the buffers' Python function, in-use bytes (cum)" \
	"$(pprof -top -cum -nodecount=500 -unit=B -sample_index=inuse_space "$TMP/heap.pb.gz" | awk '$NF == "make_buffers.<locals>.<listcomp>" { print $4 }')" 4000040B
kill -INT "$agent"; wait "$agent" 2>/dev/null
kill "$target"; wait "$target" 2>/dev/null

# --- the agent's flight recorder: a Python process OOM-killed in a memory
# cgroup of 64 MiB (v1's where mounted, as agent_oom.sh); its trace names
# the Python line that grew, from the names the recorder's files carried
G=$TOP/tests/progs/py_grow.py
v2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
if [ -d /sys/fs/cgroup/memory ]; then
	cg=/sys/fs/cgroup/memory/memtrace-pyoom.$$
	mkdir "$cg" && echo $((64 << 20)) >"$cg/memory.limit_in_bytes"
	[ -e "$cg/memory.memsw.limit_in_bytes" ] && echo $((64 << 20)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
elif [ -n "$v2" ] && grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
	cg=$v2/memtrace-pyoom.$$
	mkdir "$cg" && echo $((64 << 20)) >"$cg/memory.max" && echo 0 >"$cg/memory.swap.max"
else
	cg=
fi
if [ -z "$cg" ] || [ ! -d "$cg" ]; then
	skip "no memory cgroup this host lets a test make: the OOM case"
	skip "no memory cgroup: the OOM trace's top site"
else
	: >"$TMP/g.err"
	(echo $BASHPID >"$cg/cgroup.procs" && exec "$PY" "$G" >"$TMP/g.out" 2>"$TMP/g.err") &
	target=$!
	wait_for_line "$TMP/g.err" "py_grow: waiting for SIGUSR1" 10
	timeout -k 5 120 "$MEMTRACE" agent -p "$target" --exact --oom-dir "$TMP/oom" --listen "127.0.0.1:$port" -d 60 2>"$TMP/agent.err" &
	agent=$!
	wait_for_line "$TMP/agent.err" "memtrace: attached to PID $target" 20
	kill -USR1 "$target"
	wait "$target" 2>/dev/null
	for i in $(seq 100); do ls "$TMP"/oom/*.oom.mtrace >/dev/null 2>&1 && break; sleep 0.1; done
	f=$(ls "$TMP"/oom/*.oom.mtrace 2>/dev/null | head -n1)
	if [ -n "$f" ]; then ok "an OOM trace: $(basename "$f")"; else not_ok "no OOM trace in $TMP/oom: $(tail -n 3 "$TMP/agent.err" | tr '\n' '|')"; fi
	steps=$(grep -c '^py_grow: [0-9]' "$TMP/g.out")
	got=$("$MEMTRACE" report --json "$f" 2>/dev/null | jq -r '.sites[0] | "\(.function):\(.line) \(.allocations)"')
	# each step printed before its malloc: the killed one's may not have been made
	if [ "$got" = "grow:$(line "$G" grow) $steps" ] || [ "$got" = "grow:$(line "$G" grow) $((steps - 1))" ]; then
		ok "its top site is the Python line that grew, with the steps made: $got ($steps printed)"
	else
		not_ok "its top site: got '$got', want grow:$(line "$G" grow) with $steps steps (or one fewer)"
	fi
	kill -INT "$agent"; wait "$agent" 2>/dev/null
	rmdir "$cg" 2>/dev/null
fi
finish
