#!/usr/bin/env bash
# memtrace top: the batch JSON and text a script reads, --alloc-fn, -o, the
# messages for wrong use, and the full-screen view driven through tmux as a
# person would (header, top site, sort, search, stacks, q, the terminal
# given back). tests/progs/leak_rate keeps 1000 bytes every 10 ms from
# leak_step (100,000 bytes/s) and churns 4000 freed bytes per step.
source "$(dirname "$0")/lib.sh"
plan 48

LEAK=$PROGS/leak_rate

# off_rate SNAPSHOTS: how many of the JSON lines have a top site whose live
# bytes are more than 5% off 100,000 B/s times their time since attach (each
# one also said as a "#" line)
off_rate() {
	local bad=0 t live
	while read -r t live; do
		awk -v t="$t" -v l="$live" 'BEGIN { e = t / 1e9 * 100000; d = l - e; if (d < 0) d = -d; exit !(d <= 0.05 * e) }' ||
			{ bad=$((bad + 1)); echo "# at $t ns: live $live" >&2; }
	done < <(jq -r '"\(.time_ns) \(.sites[0].live_bytes)"' <<<"$1")
	echo "$bad"
}

# --- batch JSON from the command's start -------------------------------------------
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json -i 0.5 -d 3.2 -o "$TMP/top.mtrace" -- "$LEAK" 5 \
	>"$TMP/top.jsonl" 2>"$TMP/top.err"
expect_eq "top --batch --json -- CMD: exit status" "$?" 0
expect_eq "stderr says it attached" "$(grep -c '^memtrace: attached to PID' "$TMP/top.err")" 1
n=$(wc -l <"$TMP/top.jsonl")
expect_eq "one JSON object per line, each valid" "$(jq -c . "$TMP/top.jsonl" 2>/dev/null | wc -l)" "$n"
expect_eq "every line starts with format 2" "$(jq -r 'keys_unsorted[0] + "=" + (.format | tostring)' "$TMP/top.jsonl" | sort -u)" format=2
if [ "$n" -ge 6 ]; then ok "snapshots every 0.5 s over 3.2 s (and the final one): $n"; else not_ok "snapshots: $n, want >= 6"; fi
# every snapshot after the first second: leak_step first, its live bytes the
# leak's rate times the time since attach (within 5%), churn's live bytes 0
late=$(jq -c 'select(.time_ns >= 1000000000)' "$TMP/top.jsonl")
expect_eq "late snapshots: leak_step is the top site in each" \
	"$(jq -r '.sites[0].function' <<<"$late" | sort -u)" leak_step
expect_eq "leak_step live bytes within 5% of 100000 B/s x time, every late snapshot" "$(off_rate "$late")" 0
expect_eq "churn: never live" "$(jq -r '.sites[] | select(.function == "churn") | .live_bytes' "$TMP/top.jsonl" | sort -u)" 0
expect_eq "a site names its file and line" "$(jq -r '.sites[0] | "\(.file):\(.line)"' <<<"$(tail -1 "$TMP/top.jsonl")")" \
	"$TOP/tests/progs/leak_rate.c:19"
expect_eq "totals.live_bytes is leak_step's" "$(jq -r '.totals.live_bytes == .sites[0].live_bytes' <<<"$late" | sort -u)" true
expect_eq "no drops" "$(jq -r '.totals.dropped_events' "$TMP/top.jsonl" | sort -u)" 0
# -o: the trace is what record writes, and its report agrees with the last snapshot
report_json "$TMP/top.mtrace" "$TMP/top.json"
expect_eq "-o: the trace reads" "$?" 0
expect_eq "-o: report's allocations = the last snapshot's" "$(jqr "$TMP/top.json" .totals.allocations)" \
	"$(tail -1 "$TMP/top.jsonl" | jq .totals.allocations)"
expect_eq "-o: report's leak_step leaked bytes = the last snapshot's live bytes" \
	"$(site "$TMP/top.json" leak_step leaked_bytes)" "$(tail -1 "$TMP/top.jsonl" | jq '.sites[] | select(.function == "leak_step") | .live_bytes')"

# --- batch JSON of a running process, --alloc-fn -------------------------------------
"$LEAK" 15 & # bounded by its argument, killed below; no timeout wrapper: $! must be the program
target=$!
wait_exec "$target" "$LEAK"
sleep 0.5
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json -i 0.5 -d 2.2 -p "$target" >"$TMP/pid.jsonl" 2>"$TMP/pid.err"
expect_eq "top -p: exit status" "$?" 0
expect_eq "top -p: leaves no trace file behind" "$(ls "${TMPDIR:-/tmp}"/memtrace-top.*.mtrace 2>/dev/null | wc -l)" 0
late=$(jq -c 'select(.time_ns >= 1000000000)' "$TMP/pid.jsonl")
expect_eq "top -p: leak_step first" "$(jq -r '.sites[0].function' <<<"$late" | sort -u)" leak_step
expect_eq "top -p: live bytes count only what was allocated since attach (within 5%)" "$(off_rate "$late")" 0
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json -i 0.5 -d 1.2 --alloc-fn leak_step -p "$target" \
	>"$TMP/fn.jsonl" 2>/dev/null
expect_eq "top --alloc-fn leak_step: the site is its caller" "$(tail -1 "$TMP/fn.jsonl" | jq -r '.sites[0].function')" main
kill "$target" 2>/dev/null
wait "$target"

# --- batch text ------------------------------------------------------------------------
timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch -i 0.5 -d 1.2 -- "$LEAK" 2 >"$TMP/top.txt" 2>/dev/null
headers=$(grep -c '^memtrace top: PID [0-9]* (leak_rate), ' "$TMP/top.txt")
expect_eq "top --batch: a header per snapshot" "$headers" "$(grep -c '^  *LIVE BYTES' "$TMP/top.txt")"
# every 0.5 s over 1.2 s, and the last one: at least 3 (0 = 0 proves nothing)
if [ "$headers" -ge 3 ]; then ok "top --batch: $headers snapshots"; else not_ok "top --batch: $headers snapshots, want >= 3"; fi
expect_eq "top --batch: leak_step's row names its file and module" \
	"$(grep -m1 -o "leak_step  $TOP/tests/progs/leak_rate.c:19  \\[leak_rate\\]" "$TMP/top.txt")" \
	"leak_step  $TOP/tests/progs/leak_rate.c:19  [leak_rate]"

# --- wrong use: one line each, exit status 2 ------------------------------------------------
check_usage() { # DESCRIPTION EXPECTED-LINE ARGS...
	local what=$1 want=$2
	shift 2
	timeout -k 5 "$LIMIT" "$MEMTRACE" top "$@" </dev/null >"$TMP/u.out" 2>"$TMP/u.err"
	expect_eq "$what: exit status" "$?" 2
	expect_eq "$what: the line" "$(cat "$TMP/u.err")" "$want"
}
check_usage "no target" "memtrace: give either -p PID or -- CMD [ARGS...]; see memtrace top --help"
check_usage "--json alone" "memtrace: --json needs --batch: the screen view is not JSON" --json -p 1
check_usage "not a terminal" \
	"memtrace: failed to start top: stdout is not a terminal; use --batch (or --batch --json) for a script" -- "$LEAK" 1
check_usage "bad interval" "memtrace: invalid interval 'x'; give seconds from 0.05 to 3600, e.g. -i 2" -i x -- "$LEAK" 1

# --- the screen, through tmux ---------------------------------------------------------------
S=memtrace-top-$$
screen() { tmux capture-pane -p -t "$S"; }
# wait_screen PATTERN SECONDS: until the screen shows PATTERN
wait_screen() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		screen | grep -q -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
tmux kill-session -t "$S" 2>/dev/null
tmux new-session -d -s "$S" -x 80 -y 24 \
	"'$MEMTRACE' top -i 0.5 -- '$LEAK' 60; echo \"EXITED \$?\"; stty -a | grep -o -- '-*icanon' | head -1; sleep 60"
if wait_screen 'leak_step' 10; then ok "screen: the top site appears"; else not_ok "screen: no leak_step"; screen; fi
expect_eq "screen: the header" "$(screen | head -1 | grep -o '^memtrace top  PID [0-9]* (leak_rate)' | sed 's/PID [0-9]*/PID N/')" \
	"memtrace top  PID N (leak_rate)"
# In 80 columns the row is cut at the site's path, never inside a figure.
expect_eq "screen: 80 columns keep leak_step's five figures whole before its name" \
	"$(screen | grep -cE '^ *[0-9.]+ [KMG]?i?B +[0-9]+ +[0-9.]+ [KMG]?i?B +[0-9]+ +[0-9.]+ [KMG]?i?B  leak_step')" 1
expect_eq "screen: sorted by live bytes, leak_step is the first row" "$(screen | sed -n 5p | grep -o 'leak_step')" leak_step
tmux send-keys -t "$S" 3
wait_screen '>ALLOCATED' 3
expect_eq "screen: key 3 sorts by allocated bytes: churn first" "$(screen | sed -n 5p | grep -o 'churn')" churn
tmux send-keys -t "$S" / s t e p Enter
wait_screen '\[/step\]' 3
expect_eq "screen: / searches: the search shows in the header" "$(screen | sed -n 2p | grep -o '\[/step\]')" "[/step]"
expect_eq "screen: / searches: churn is gone" "$(screen | grep -c churn)" 0
expect_eq "screen: / searches: leak_step stays" "$(screen | sed -n 5p | grep -o leak_step)" leak_step
tmux send-keys -t "$S" Enter
wait_screen 'stacks of leak_step' 3
expect_eq "screen: Enter shows the site's stacks down to main" "$(screen | grep -o '#1  main' | head -1)" "#1  main"
tmux send-keys -t "$S" q
wait_screen '^EXITED' 10
expect_eq "screen: q quits with status 0" "$(screen | grep -o '^EXITED [0-9]*')" "EXITED 0"
expect_eq "screen: q gives the terminal back (canonical mode again)" "$(screen | grep -o -- '-*icanon' | head -1)" icanon
expect_eq "screen: q leaves the alternate screen" "$(tmux display -p -t "$S" '#{alternate_on}')" 0
tmux kill-session -t "$S" 2>/dev/null

# SIGTERM gives the terminal back too; the target exiting shows its final state until q
tmux new-session -d -s "$S" -x 100 -y 30 \
	"'$MEMTRACE' top -i 0.5 -- '$LEAK' 1; echo \"EXITED \$?\"; sleep 60"
if wait_screen 'the target exited: q quits' 15; then ok "screen: the target's exit is said, the view stays"; else not_ok "screen: no exit footer"; screen; fi
expect_eq "screen: the final state shows 100 blocks of leak_step live" \
	"$(screen | grep 'leak_step' | awk '{ print $3 }' | head -1)" 100
tmux send-keys -t "$S" q
wait_screen '^EXITED' 10
expect_eq "screen: after the target's exit q returns the command's status" "$(screen | grep -o '^EXITED [0-9]*')" "EXITED 0"
tmux kill-session -t "$S" 2>/dev/null
sleep 60 &
idle=$!
tmux new-session -d -s "$S" -x 80 -y 24 \
	"'$MEMTRACE' top -i 0.5 -p $idle; echo \"EXITED \$?\"; stty -a | grep -o -- '-*icanon' | head -1; sleep 60"
wait_screen 'memtrace top' 10
expect_eq "screen: a process that allocates nothing yet" "$(screen | grep -c 'no allocations yet')" 1
pkill -TERM -f "^$MEMTRACE top -i 0.5 -p $idle" # anchored: not the shell or tmux that name it too
wait_screen '^EXITED' 10
expect_eq "screen: SIGTERM: memtrace exits 0" "$(screen | grep -o '^EXITED [0-9]*')" "EXITED 0"
expect_eq "screen: SIGTERM gives the terminal back" "$(screen | grep -o -- '-*icanon' | head -1)" icanon
tmux kill-session -t "$S" 2>/dev/null
kill "$idle" 2>/dev/null
finish
