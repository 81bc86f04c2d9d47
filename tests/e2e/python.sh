#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Python frames in allocation stacks, from outside: Debian's python3.11
# running tests/progs/py_alloc.py, recorded with -p (attached while it
# waits) and with -- CMD. The truth is Python's own: the same program under
# -X tracemalloc says, line by line, which large blocks (past pymalloc's 512
# bytes: one malloc each) are live when it leaves with os._exit; memtrace
# must give each line those counts and bytes exactly, through the innermost
# Python frame of their stacks, with the names, order and bounds the
# program's structure fixes (docs/python.md).
. "$(dirname "$0")/lib.sh"
plan 138

PY=/usr/bin/python3.11
P=$TOP/tests/progs/py_alloc.py
SRC=$(basename "$P")

# 3.11 makes a list comprehension a function of its own; 3.12 inlines it
BUF_FN="make_buffers.<locals>.<listcomp>"
BUF_STACK="make_buffers.<locals>.<listcomp> < make_buffers"

# line NAME: the line of P marked "# LINE:NAME"
line() { grep -n "# LINE:$1\$" "$P" | cut -d: -f1; }

# by_line JSON: "FILE:LINE FUNCTION allocations bytes leaked_allocations
# leaked_bytes" for each innermost Python frame of the trace's stacks
by_line() {
	jq -r '.stack_frames as $f
		| [.stacks[] | {s: ., p: ([.frames[] | $f[.] | select(.language == "python")] | first)}]
		| map(select(.p)) | group_by([.p.file, .p.line, .p.function])
		| map("\(.[0].p.file // "?" | split("/") | last):\(.[0].p.line) \(.[0].p.function) \(map(.s.allocations) | add) \(map(.s.allocated_bytes) | add) \(map(.s.leaked_allocations) | add) \(map(.s.leaked_bytes) | add)")
		| .[]' "$1"
}

# py_stacks JSON: each stack's Python frames, innermost first, "function" joined by " < "
py_stacks() {
	jq -r '.stack_frames as $f | .stacks[] | "\(.allocations) " + ([.frames[] | $f[.] | select(.language == "python" or (.function // "" | startswith("[truncated")))
		| .function] | join(" < "))' "$1"
}

# --- the truth: the program under tracemalloc
timeout -k 5 "$LIMIT" "$PY" -X tracemalloc=1 "$P" "$TMP/truth.json" --no-wait 2>"$TMP/truth.err"
expect_status "python3.11 -X tracemalloc $SRC" $? 0 "$TMP/truth.err"
N=$(jqr "$TMP/truth.json" .n)
BIG=$(jqr "$TMP/truth.json" .big)
THREADS=$(jqr "$TMP/truth.json" .threads)
# truth LINE: "allocations bytes" of the large blocks tracemalloc holds live at LINE
TRUTH=$TMP/truth.json
truth() { jqr "$TRUTH" ".tracemalloc[\"$SRC:$1\"] | \"\(.big_count) \(.big_bytes)\""; }
expect_eq "tracemalloc: the buffers line holds 2 x N large blocks" "$(truth "$(line buffers)" | cut -d' ' -f1)" $((2 * N))

# expect_lines LABEL JSON: every marked line's figures as tracemalloc's
expect_lines() {
	local label=$1 json=$2 name ln got want
	by_line "$json" >"$TMP/lines"
	for name in buffers strings gen deep except thread json; do
		ln=$(line $name)
		want=$(truth "$ln")
		got=$(awk -v k="$SRC:$ln" '$1 == k { a += $3; b += $4 } END { print a + 0, b + 0 }' "$TMP/lines")
		expect_eq "$label: $name (line $ln): allocations and bytes as tracemalloc" "$got" "$want"
		got=$(awk -v k="$SRC:$ln" '$1 == k { a += $5; b += $6 } END { print a + 0, b + 0 }' "$TMP/lines")
		expect_eq "$label: $name (line $ln): live at the end as tracemalloc" "$got" "$want"
	done
	# sorted() calls key_fn back from C; its block is freed at once
	ln=$(line key)
	expect_eq "$label: key_fn (line $ln), called from C: allocations, bytes, live" \
		"$(awk -v k="$SRC:$ln" '$1 == k { a += $3; b += $4; l += $5 } END { print a + 0, b + 0, l + 0 }' "$TMP/lines")" \
		"$N $((N * (BIG + 1))) 0"
	expect_eq "$label: the buffers line's function" \
		"$(awk -v k="$SRC:$(line buffers)" '$1 == k { print $2 }' "$TMP/lines" | sort -u)" "$BUF_FN"
}

# expect_stacks LABEL JSON: the Python frames of each kind of stack, in order
expect_stacks() {
	local label=$1 json=$2 deep
	py_stacks "$json" >"$TMP/stacks"
	expect_eq "$label: Handler.handle's stack" \
		"$(grep -c "^[0-9]* $BUF_STACK < Handler.handle < main < <module>\$" "$TMP/stacks")" 1
	expect_eq "$label: a generator's frame under list(): its allocations" \
		"$(awk '/^[0-9]* gen < main < <module>$/ { n += $1 } END { print n + 0 }' "$TMP/stacks")" "$N"
	expect_eq "$label: key_fn called back from sorted() (C) in run_sorted: its allocations" \
		"$(awk '/^[0-9]* key_fn < run_sorted < main < <module>$/ { n += $1 } END { print n + 0 }' "$TMP/stacks")" "$N"
	# each C call of the evaluation loop gets its own Python frames: sorted()'s
	# native frames stay between key_fn and run_sorted
	expect_eq "$label: native frames (sorted in C) between key_fn and run_sorted" \
		"$(jq -r '.stack_frames as $f | .stacks[] | [.frames[] | $f[.]] | (map(.function) | index("key_fn")) as $k
			| (map(.function) | index("run_sorted")) as $r | select($k and $r)
			| [.[$k + 1:$r][] | select(.language == "native")] | length > 0' "$json" | sort -u)" "true"
	# a C extension module (_json's encoder) calling back into Python
	expect_eq "$label: json_default called back from _json's C encoder, its frames between" \
		"$(jq -r '.stack_frames as $f | .stacks[] | [.allocations, ([.frames[] | $f[.]] | (map(.function) | index("json_default")) as $j
			| select($j) | .[$j + 1:] | (map(.language == "python") | index(true)) as $p | .[:$p] | any(.module // "" | test("/_json[.]")))]
			| select(.[1]) | .[0]' "$json" | awk '{ n += $1 } END { print n + 0 }')" "$N"
	expect_eq "$label: an allocation after an exception unwound through fails()" \
		"$(grep -c '^1 after_exception < main < <module>$' "$TMP/stacks")" 1
	expect_eq "$label: Python threads' allocations under Thread.run" \
		"$(awk '/^[0-9]* thread_work < Thread.run < Thread._bootstrap_inner < Thread._bootstrap$/ { n += $1 } END { print n + 0 }' "$TMP/stacks")" \
		"$((THREADS * N))"
	deep=$(grep '^1 recurse < ' "$TMP/stacks")
	expect_eq "$label: recursion of 100: 64 frames kept, then marked truncated" \
		"$(echo "$deep" | tr '<' '\n' | sed 's/^ *//; s/ *$//' | sed 's/^1 //' | sort | uniq -c | tr -s ' ' | sed 's/^ //' | tr '\n' ',')" \
		"1 [truncated: more than 64 Python frames],64 recurse,"
	# the native frames go on below the Python ones, to the interpreter's main
	expect_eq "$label: native frames below main's <module>, down to Py_BytesMain" \
		"$(jq -r --arg src "/$SRC" '.stack_frames as $f | .stacks[] | [.frames[] | $f[.]] | select(any(.[]; .function == "main" and (.file // "" | endswith($src))))
			| (map(.function) | index("<module>")) as $m | .[$m + 1:] | map(.function) | any(. == "Py_BytesMain")' "$json" | sort -u)" "true"
	# Python frames are ordinary frames: function, file, line, language
	expect_eq "$label: a Python frame in the JSON" \
		"$(jq -r --arg l "$(line gen)" '.stack_frames[] | select(.function == "gen") | "\(.file // "?" | split("/") | last):\(.line) \(.language)"' "$json" | sort -u)" \
		"$SRC:$(line gen) python"
}

# expect_made LABEL JSON: functions made and freed, their code objects'
# addresses handed out again: each named for its own, never another's
expect_made() {
	local label=$1 json=$2 held bad
	jq -r '.stack_frames as $f | .stacks[] | [.allocated_bytes, .allocations, ([.frames[] | $f[.] | select(.file == "<made>")] | first | .function)]
		| select(.[2]) | "\(.[2]) \(.[1]) \(.[0])"' "$json" >"$TMP/made"
	held=$(jqr "$TMP/m.json" .held)
	expect_eq "$label: the program's code objects took addresses again" \
		"$(jq '.codes | length - (unique | length) > 0' "$TMP/m.json")" true
	expect_eq "$label: each of the $held functions held a while, named its own" \
		"$(awk -v big="$BIG" -v held="$held" '$1 ~ /^fn_/ { i = substr($1, 4) + 0; if (i < held && $2 == 1 && $3 == big + i + 1) n++ } END { print n + 0 }' "$TMP/made")" "$held"
	bad=$(awk -v big="$BIG" '$1 ~ /^fn_/ { i = substr($1, 4) + 0; if ($3 != $2 * (big + i + 1)) print }' "$TMP/made")
	expect_eq "$label: functions freed at once: never another's name" "$bad" ""
	# the walk sends a code object's names the first time a CPU sees it,
	# while it lives: those freed at once are named too
	expect_eq "$label: each of the $(jq '.churn | length' "$TMP/m.json") functions freed at once named its own" \
		"$(awk -v big="$BIG" -v held="$held" '$1 ~ /^fn_/ { i = substr($1, 4) + 0; if (i >= held && $2 == 1 && $3 == big + i + 1) n++ } END { print n + 0 }' "$TMP/made")" \
		"$(jq '.churn | length' "$TMP/m.json")"
}

# --- -p: attached while the program waits for SIGUSR1
record_pid_usr1 "$TMP/p.mtrace" "$PY" "$P" "$TMP/m.json"
expect_status "record -p python3.11: exit status" "$RECORD_STATUS" 0 "$TMP/err"
expect_status "$SRC under -p: exit status" "$TARGET_STATUS" 0 "$TMP/target.err"
report_json "$TMP/p.mtrace" "$TMP/p.json"
expect_status "report --json" $? 0 "$TMP/report.err"
expect_lines "-p" "$TMP/p.json"
expect_stacks "-p" "$TMP/p.json"
expect_made "-p" "$TMP/p.json"
share=$(jq -r '.stack_frames as $f | ([.stacks[] | select(any(.frames[]; $f[.].language == "python")) | .allocated_bytes] | add) * 100 / .totals.allocated_bytes | floor' "$TMP/p.json")
if [ "$share" -ge 90 ]; then ok "-p: $share% of the bytes carry a Python frame (>= 90%)"; else not_ok "-p: $share% of the bytes carry a Python frame, want >= 90%"; fi

# --- -- CMD: from the interpreter's first instruction
record_cmd "$TMP/c.mtrace" "$PY" "$P" "$TMP/m.json" --no-wait
expect_status "record -- python3.11: exit status" $? 0 "$TMP/err"
report_json "$TMP/c.mtrace" "$TMP/c.json"
expect_lines "-- CMD" "$TMP/c.json"
expect_stacks "-- CMD" "$TMP/c.json"

# the text report names a Python line as it names a C one
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/c.mtrace" >"$TMP/c.txt" 2>&1
# the site rule: the innermost Python frame is the site (the interpreter's C
# code inside it is its plumbing), and --alloc-fn takes Python names
expect_eq "-- CMD: the buffers' site is their line" \
	"$(jq -r --arg l "$(line buffers)" '[.sites[] | select(.line == ($l | tonumber) and .function == "make_buffers.<locals>.<listcomp>") | .allocations] | add' "$TMP/c.json")" \
	$((2 * N))
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json --alloc-fn 'make_buffers*' "$TMP/c.mtrace" >"$TMP/af.json" 2>"$TMP/report.err"
expect_eq "--alloc-fn 'make_buffers*': the buffers at Handler.handle's line and at main's call" \
	"$(jq -r '[.sites[] | select(.function == "Handler.handle" or .function == "main") | select(.allocations == '"$N"') | "\(.function):\(.line)"] | sort | join(",")' "$TMP/af.json")" \
	"Handler.handle:$(line handle),main:$(grep -n 'KEEP.append(make_buffers(N))' "$P" | cut -d: -f1)"
expect_eq "report: a Python frame with its file and line" \
	"$(grep -cE "^ +[0-9]+\. .* calls +make_buffers.<locals>.<listcomp>  .*$SRC:$(line buffers)\$" "$TMP/c.txt")" 1

# --- --python-objects: pymalloc's objects too (the command runs with
# PYTHONMALLOC=malloc). Each line holding >= 1% of the live bytes within 5%
# of tracemalloc's. Not compared: blocks with no Python frame (tracemalloc's
# <unknown>:0 counts only Python's allocator domains, memtrace every malloc
# of the C code too) and the code objects freed at once (left out with
# --no-churn: their names are gone before they can be read).
timeout -k 5 "$LIMIT" "$PY" -X tracemalloc=1 "$P" "$TMP/truth2.json" --no-wait --no-churn 2>"$TMP/truth.err"
expect_status "python3.11 -X tracemalloc $SRC --no-churn" $? 0 "$TMP/truth.err"
timeout -k 5 "$LIMIT" "$MEMTRACE" record --python-objects -o "$TMP/o.mtrace" -- "$PY" "$P" "$TMP/m2.json" --no-wait --no-churn >"$TMP/out" 2>"$TMP/err"
expect_status "record --python-objects -- python3.11: exit status" $? 0 "$TMP/err"
report_json "$TMP/o.mtrace" "$TMP/o.json"
jq -r '.stack_frames as $f | [.stacks[] | {s: ., p: ([.frames[] | $f[.] | select(.language == "python")] | first)}]
	| group_by([.p.file, .p.line])
	| map("\(if .[0].p then "\(.[0].p.file // "?" | split("/") | last):\(.[0].p.line)" else "<unknown>:0" end) \(map(.s.leaked_bytes) | add)") | .[]' "$TMP/o.json" >"$TMP/o.lines"
jq -r '.tracemalloc | to_entries[] | "\(.key) \(.value.bytes)"' "$TMP/truth2.json" >"$TMP/t.lines"
awk 'NR == FNR { t[$1] = $2; total += $2; next } { m[$1] = $2 }
	END { for (k in t) if (t[k] * 100 >= total && k != "<unknown>:0") print k, t[k], m[k] + 0 }' "$TMP/t.lines" "$TMP/o.lines" | sort >"$TMP/cmp"
expect_eq "--python-objects: the small objects' line holds >= 1% of the bytes" \
	"$(grep -c "^$SRC:$(line small) " "$TMP/cmp")" 1
# one check for them all (how many lines hold 1% is the program's, not this script's)
off=""
while read -r k want got; do
	echo "# --python-objects: $k: live bytes $got, tracemalloc's $want"
	within "$got" "$want" 5 || off="$off $k: $got against $want;"
done <"$TMP/cmp"
expect_eq "--python-objects: every line holding >= 1% of the bytes within 5% of tracemalloc's live bytes ($(wc -l <"$TMP/cmp") lines); off" "$off" ""
expect_within "--python-objects: small objects' count against tracemalloc's" \
	"$(jq -r --arg l "$(line small)" '.stack_frames as $f | [.stacks[] | select(([.frames[] | $f[.] | select(.language == "python")] | first | .line) == ($l | tonumber)) | .leaked_allocations] | add' "$TMP/o.json")" \
	"$(jqr "$TMP/truth2.json" ".tracemalloc[\"$SRC:$(line small)\"].count")" 1

# --- the other versions memtrace knows, where this host has them (pyenv's
# builds, with libpython: the interpreter in a library): the same lines
# and stacks against their own tracemalloc; 3.13's offsets from its
# _Py_DebugOffsets
for v in 3.12 3.13; do
	bin=$(ls -d /root/.pyenv/versions/$v.*/bin/python$v 2>/dev/null | tail -n1)
	if [ -z "$bin" ]; then
		for i in $(seq 28); do skip "CPython $v: not on this host (pyenv)"; done
		continue
	fi
	BUF_FN=make_buffers
	BUF_STACK=make_buffers
	TRUTH=$TMP/truth-$v.json
	timeout -k 5 "$LIMIT" "$bin" -X tracemalloc=1 "$P" "$TRUTH" --no-wait --no-churn 2>"$TMP/truth.err"
	expect_status "$v: -X tracemalloc $SRC" $? 0 "$TMP/truth.err"
	record_cmd "$TMP/v.mtrace" "$bin" "$P" "$TMP/mv.json" --no-wait --no-churn
	expect_status "$v: record -- $(basename "$bin")" $? 0 "$TMP/err"
	report_json "$TMP/v.mtrace" "$TMP/v.json"
	expect_lines "$v" "$TMP/v.json"
	expect_stacks "$v" "$TMP/v.json"
done

# a version memtrace does not know: native frames, and one line saying why
bin=$(ls -d /root/.pyenv/versions/3.10.*/bin/python3.10 2>/dev/null | tail -n1)
if [ -z "$bin" ]; then
	for i in 1 2 3; do skip "CPython 3.10: not on this host (pyenv)"; done
else
	record_cmd "$TMP/old.mtrace" "$bin" "$P" "$TMP/mo.json" --no-wait --no-churn
	expect_status "3.10: record -- python3.10" $? 0 "$TMP/err"
	expect_eq "3.10: one line says why its stacks are native only" \
		"$(grep -c '^memtrace: warning: .*exports no Py_Version (CPython before 3.11); its stacks show native frames only$' "$TMP/err")/$(grep -c warning "$TMP/err")" 1/1
	report_json "$TMP/old.mtrace" "$TMP/old.json"
	expect_eq "3.10: no Python frame in its stacks" "$(jq '[.stack_frames[] | select(.language == "python")] | length' "$TMP/old.json")" 0
fi

# -- CMD of a script: the walk is loaded when its #! names Python (through
# /usr/bin/env too, and the program env execs is looked at again); a shell
# script that execs Python says why its stacks are native
# (the program env execs is found when the recorder next looks, at the
# linker's hook: the script allocates a second after it starts, where the
# look takes milliseconds; allocations before it have native frames only)
printf '#!/usr/bin/env python3.11\nimport time\ntime.sleep(1)\nkeep = [bytearray(100000) for _ in range(7)]\n' >"$TMP/s.py"
printf '#!/bin/sh\nexec /usr/bin/python3.11 "$@"\n' >"$TMP/s.sh"
chmod +x "$TMP/s.py" "$TMP/s.sh"
PATH=/usr/bin:/bin record_cmd "$TMP/s.mtrace" "$TMP/s.py"
expect_status "record -- a #!/usr/bin/env python3.11 script" $? 0 "$TMP/err"
report_json "$TMP/s.mtrace" "$TMP/s.json"
expect_eq "its 7 buffers at its line 4, a Python site" \
	"$(jq -r '[.sites[] | select(.line == 4 and (.file // "" | endswith("/s.py"))) | .allocations] | add' "$TMP/s.json")" 7
record_cmd "$TMP/sh.mtrace" "$TMP/s.sh" "$TMP/s.py"
expect_eq "record -- a shell script that execs python3.11: exit 0, one line why its stacks are native" \
	"$?/$(grep -c '^memtrace: warning: PID [0-9]* runs CPython 3.11.[0-9]*, but its command did not look like Python' "$TMP/err")" 0/1

# -p: only a process started with PYTHONMALLOC=malloc shows its objects
"$PY" -c 'import time; time.sleep(30)' &
pid=$!
timeout -k 5 "$LIMIT" "$MEMTRACE" record --python-objects -o "$TMP/x.mtrace" -p "$pid" 2>"$TMP/err"
expect_one_error "--python-objects -p of a process with pymalloc" $? "$TMP/err"
grep -q "PYTHONMALLOC=malloc" "$TMP/err" && ok "its line says what to do: $(cat "$TMP/err")" || not_ok "its line does not name PYTHONMALLOC: $(cat "$TMP/err")"
[ ! -e "$TMP/x.mtrace" ] && ok "no trace written" || not_ok "a trace was written"
kill "$pid"; wait "$pid" 2>/dev/null

# The verifier's work for a load with the walk (every -p of a Python process
# pays it before "attached"): py_stack's hash loop inlined left one state per
# count of frames for all that followed it (44 k instructions; 17.6 k on
# kernel 6.18 with the hash a global function). A count, not a time.
"$PY" -c 'import time; time.sleep(30)' &
pid=$!
timeout -k 5 "$LIMIT" "$MEMTRACE" record -v -d 0.1 -o "$TMP/verify.mtrace" -p "$pid" >/dev/null 2>"$TMP/err"
insns=$(sed -n 's/^memtrace: BPF programs verified in [0-9.]* ms (\([0-9]*\) instructions processed)$/\1/p' "$TMP/err")
if [ -n "$insns" ] && [ "$insns" -le 27000 ]; then
	ok "the verifier processed $insns instructions for a load with the Python walk (at most 27000)"
else
	not_ok "the verifier processed '${insns:-?}' instructions for a load with the Python walk (at most 27000): $(tail -1 "$TMP/err")"
fi
kill "$pid"; wait "$pid" 2>/dev/null

finish
