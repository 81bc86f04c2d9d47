#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# --budget: the probes live in windows, figures are estimates. On
# tests/progs/proportions, whose three sites allocate 1 : 3 : 6 calls and
# 100 : 600 : 300 bytes however long it runs, a 20 s recording at 5% must
# find those proportions within 10% and the program's own count of its
# calls within the error the report states, every output must say it is an
# estimate, and bad input gets one line and exit 2. Proportions, not
# timings: what the budget costs is bench/budget.sh's.
source "$(dirname "$0")/lib.sh"
plan 90

mt() { timeout -k 5 "$LIMIT" "$MEMTRACE" "$@"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b ? a / b : 0 }'; }
PROP=$PROGS/proportions

# --- bad input: one line, exit 2, nothing started ---
for bad in 0 101 abc 5x -1 ""; do
	mt record --budget "$bad" -o "$TMP/bad.mtrace" -- "$PROP" 1 >"$TMP/o" 2>"$TMP/e"
	rc=$?
	expect_one_error "--budget '$bad'" "$rc" "$TMP/e"
	expect_eq "--budget '$bad': exit status" "$rc" 2
done
for bad in 100 4095 abc 2T; do
	mt record --budget 5 --large "$bad" -o "$TMP/bad.mtrace" -- "$PROP" 1 >"$TMP/o" 2>"$TMP/e"
	rc=$?
	expect_one_error "--large '$bad'" "$rc" "$TMP/e"
	expect_eq "--large '$bad': exit status" "$rc" 2
done
mt record --budget 5 --sample=64K -o "$TMP/bad.mtrace" -- "$PROP" 1 >"$TMP/o" 2>"$TMP/e"
rc=$?
expect_one_error "--budget with --sample" "$rc" "$TMP/e" \
	"memtrace: --budget and --sample do not combine: --budget already records a share of the time; give one of them"
expect_eq "--budget with --sample: exit status" "$rc" 2
mt top --batch --budget 0 -- "$PROP" 1 >"$TMP/o" 2>"$TMP/e"
rc=$?
expect_one_error "top --budget 0" "$rc" "$TMP/e"
expect_eq "top --budget 0: exit status" "$rc" 2
if [ -e "$TMP/bad.mtrace" ]; then not_ok "a refused recording left a trace"; else ok "no refused recording left a trace"; fi

# --- 20 s at 5%: the known proportions ---
trace=$TMP/b5.mtrace
timeout -k 5 120 "$MEMTRACE" record -o "$trace" --budget 5 -- "$PROP" 20 0 -1 8000 >"$TMP/out" 2>"$TMP/err"
rc=$?
expect_eq "record --budget 5 -- proportions 20 s: exit status" "$rc" 0
if grep -q "^rounds [0-9]" "$TMP/out"; then ok "the program ran to its end: $(head -1 "$TMP/out")"; else not_ok "the program printed no rounds: $(cat "$TMP/out")"; fi
if grep -q "^memtrace: --budget 5%: allocations traced .* windows" "$TMP/err"; then
	ok "memtrace says what the windows covered"
else
	not_ok "no --budget summary line: $(tr '\n' '|' <"$TMP/err")"
fi
# A link's close waits for the kernel's grace periods, so it runs on a
# thread of its own; when that thread could not start (once: glibc refused
# a stack smaller than memtrace's thread-local storage) every tail ran tens
# of ms long and redis-server got a tenth of its windows.
expect_eq "every probe detached on a closer thread (no warning)" "$(grep -c 'cannot start a thread to detach probes' "$TMP/err")" 0
version=$(od -An -tu4 -j8 -N4 "$trace" | tr -d ' ')
expect_eq "a --budget trace is format version 2 (weighted)" "$version" 2
report_json "$trace" "$TMP/b5.json"
expect_eq "report --json of it: exit status" $? 0
windows=$(jqr "$TMP/b5.json" '.trace.budget.windows')
if [ "${windows:-0}" -ge 10 ]; then ok "$windows windows in 20 s"; else not_ok "only '${windows}' windows in 20 s"; fi
expect_eq "trace.budget.budget_ppm" "$(jqr "$TMP/b5.json" '.trace.budget.budget_ppm')" 50000
expect_eq "trace.budget.large_bytes: large blocks traced, from the default 128 KiB" "$(jqr "$TMP/b5.json" '.trace.budget.large_bytes')" 131072
expect_eq "totals.peak_bytes (not known)" "$(jqr "$TMP/b5.json" '.totals.peak_bytes')" null
small=$(site "$TMP/b5.json" site_small allocations)
if [ "${small:-0}" -gt 0 ]; then
	sb=$(site "$TMP/b5.json" site_small allocated_bytes)
	expect_within "site_mid calls / site_small calls" "$(ratio "$(site "$TMP/b5.json" site_mid allocations)" "$small")" 3 10
	expect_within "site_keep calls / site_small calls" "$(ratio "$(site "$TMP/b5.json" site_keep allocations)" "$small")" 6 10
	expect_within "site_mid bytes / site_small bytes" "$(ratio "$(site "$TMP/b5.json" site_mid allocated_bytes)" "$sb")" 6 10
	expect_within "site_keep bytes / site_small bytes" "$(ratio "$(site "$TMP/b5.json" site_keep allocated_bytes)" "$sb")" 3 10
	expect_within "site_small: temporary share (freed at once)" "$(ratio "$(site "$TMP/b5.json" site_small temporary_allocations)" "$small")" 1 10
else
	not_made 5 "site_small has no allocations: $(jq -c '[.sites[] | {function, allocations}]' "$TMP/b5.json")"
fi
# The program's own count: each round makes 1, 3 and 6 calls of 100, 200
# and 50 bytes. The estimates are within the 95% interval the report states
# (1.96 of its standard errors), an interval narrower than half of them.
rounds=$(awk '$1 == "rounds" && NF == 2 { print $2 }' "$TMP/out")
in_interval() { # LABEL ESTIMATE SE TRUTH
	if [[ $3 =~ ^[0-9]+$ ]] && awk -v e="$2" -v se="$3" -v t="$4" 'BEGIN { d = e - t; if (d < 0) d = -d; exit !(d <= 1.96 * se) }'; then
		ok "$1: $2 within 1.96 x $3 (the stated error) of the count $4"
	else
		not_ok "$1: $2 not within 1.96 x '$3' (the stated error) of the count $4"
	fi
}
for f in "site_small 1 100" "site_mid 3 200" "site_keep 6 50"; do
	set -- $f
	in_interval "$1 allocations" "$(site "$TMP/b5.json" "$1" allocations)" \
		"$(jq -r --arg f "$1" '[.sites[] | select(.function == $f) | .allocations_se][0]' "$TMP/b5.json")" $((rounds * $2))
done
in_interval "totals.allocations" "$(jqr "$TMP/b5.json" .totals.allocations)" \
	"$(jqr "$TMP/b5.json" .trace.budget.allocations_se)" $((rounds * 10))
in_interval "totals.allocated_bytes" "$(jqr "$TMP/b5.json" .totals.allocated_bytes)" \
	"$(jqr "$TMP/b5.json" .trace.budget.allocated_bytes_se)" $((rounds * 1000))
# ... an interval that says something: its half under half the estimate
se=$(jqr "$TMP/b5.json" .trace.budget.allocations_se)
if [[ $se =~ ^[0-9]+$ ]] && awk -v se="$se" -v e="$(jqr "$TMP/b5.json" .totals.allocations)" 'BEGIN { exit !(1.96 * se < 0.5 * e) }'; then
	ok "the stated 95% error of totals.allocations (1.96 x $se) is under half the estimate"
else
	not_ok "the stated 95% error of totals.allocations (1.96 x '$se') is not under half the estimate"
fi
keep=$(site "$TMP/b5.json" site_keep allocations)
expect_within "site_keep: long-lived share (kept in a ring of 60000)" \
	"$(ratio "$(site "$TMP/b5.json" site_keep leaked_allocations)" "$keep")" 1 10
expect_eq "site_small: none long-lived" "$(site "$TMP/b5.json" site_small leaked_allocations)" 0
mt report "$trace" >"$TMP/b5.txt" 2>"$TMP/e"
expect_eq "the text report says it is an estimate" \
	"$(grep -c '^NOTE: recorded with --budget 5%: the probes lived in windows, so every figure is an estimate' "$TMP/b5.txt")" 1
expect_eq "the text report: peak not known" "$(grep -c '^  peak: *not known with --budget$' "$TMP/b5.txt")" 1
expect_eq "the text report: long-lived, not leaks" \
	"$(grep -c "^Long-lived (outlived their window's tail: estimates, not leaks)$" "$TMP/b5.txt")" 1
mt export --format pprof -o "$TMP/b5.pb.gz" "$trace" 2>"$TMP/e"
expect_status "export --format pprof: exit status" $? 0 "$TMP/e"
expect_eq "the pprof profile's comment says --budget" "$(gzip -dc "$TMP/b5.pb.gz" | grep -a -c -- '--budget 5%: probes lived in')" 1
mt report --html "$TMP/b5.html" "$trace" 2>"$TMP/e"
expect_status "report --html: exit status" $? 0 "$TMP/e"
expect_eq "the HTML page warns it is an estimate" "$(grep -c "Recorded with --budget" "$TMP/b5.html")" 1

# --- -p at 1% on a running program: it is unharmed and the sites are found ---
"$PROP" 6 0 -1 8000 >"$TMP/p.out" &
target=$!
sleep 0.5
mt record -p "$target" -d 3 --budget 1 --large 1M -o "$TMP/b1.mtrace" >/dev/null 2>"$TMP/e"
expect_status "record -p --budget 1 --large 1M -d 3: exit status" $? 0 "$TMP/e"
wait "$target"
expect_eq "the target's own exit status" $? 0
if grep -q "^rounds [0-9]" "$TMP/p.out"; then ok "the target ran to its end"; else not_ok "the target printed no rounds"; fi
report_json "$TMP/b1.mtrace" "$TMP/b1.json"
expect_eq "report --json of it: exit status" $? 0
expect_eq "all three sites seen at 1%" "$(jq -r '[.sites[].function] | map(select(test("^site_"))) | sort | join(" ")' "$TMP/b1.json")" \
	"site_keep site_mid site_small"
expect_eq "trace.budget.large_bytes with --large 1M" "$(jqr "$TMP/b1.json" '.trace.budget.large_bytes')" 1048576

# --- --follow-children: each process its own windows, the hit timed once ---
mkdir -p "$TMP/f"
(cd "$TMP/f" && timeout -k 5 "$LIMIT" "$MEMTRACE" record --budget 5 --follow-children -o f.mtrace -- \
	sh -c "$PROP 3 0 -1 8000 & $PROP 3 0 -1 8000 & wait" >/dev/null 2>"$TMP/e")
expect_eq "record --budget 5 --follow-children: exit status" $? 0
n=0
traces=("$TMP"/f/f.*.1.mtrace)
for i in 0 1; do # the two the shell started (their pids unknown)
	t=${traces[i]:-$TMP/f/missing-$i.mtrace}
	[ -f "$t" ] && n=$((n + 1))
	report_json "$t" "$TMP/f.json"
	small=$(site "$TMP/f.json" site_small allocations)
	expect_eq "$(basename "$t"): format version 2 and windows" \
		"$(od -An -tu4 -j8 -N4 "$t" | tr -d ' ') $(jqr "$TMP/f.json" '.trace.budget.windows > 2')" "2 true"
	expect_within "$(basename "$t"): site_mid calls / site_small calls" \
		"$(ratio "$(site "$TMP/f.json" site_mid allocations)" "$small")" 3 20
done
expect_eq "a trace for each proportions the shell started" "$n/${#traces[@]}" 2/2
# Following costs are charged as the probes' are: the supervisor's CPU time
# per process and each recorder's own start, in each --budget line's total.
lines=$(grep -c '^memtrace: --budget 5%:' "$TMP/e")
expect_eq "each followed recording's --budget line: following's share above 0, the total its parts' sum" \
	"$(sed -nE 's/.*about ([0-9.]+)% of its work \(the probes ([0-9.]+)%(, the large blocks. probes ([0-9.]+)%)?, the recorder.s CPU on a busy host ([0-9.]+)%, following it ([0-9.]+)%\)$/\1 \2 \5 \6 \4/p' "$TMP/e" |
		awk '$4 > 0 { d = $1 - $2 - $3 - $4 - $5; if (d < 0) d = -d; if (d <= 0.03) n++ } END { print n + 0 }')/$lines" "$lines/$lines"
if [ "$lines" -ge 3 ]; then ok "--budget lines of the followed run: $lines (sh, its children, the programs they ran)"; else not_ok "--budget lines of the followed run: $lines"; fi

# --- the large blocks' probes (the C library's mmap and munmap where the
# kernel has no kprobes) are attached throughout, windows or not: a program
# starting thread after thread, each mapping and unmapping 16 KiB as a
# Python thread does for its frames, spends the budget on them alone. The
# line says their share apart; past two seconds they are detached and the
# trace says from when (test_budget: the windows' price has none of their
# hits, and the next window waits for them). The one large block it maps
# first is exact: mapped before, its free after (a window may see it).
mt record --budget 1 -o "$TMP/churn.mtrace" -- "$PROGS/thread_churn" 4 >/dev/null 2>"$TMP/e"
expect_status "--budget 1 on a program starting threads for 4 s: exit status" $? 0 "$TMP/e"
expect_eq "... its line gives the large blocks' probes' share apart, above the budget" \
	"$(sed -nE 's/.*\(the probes [0-9.]+%, the large blocks. probes ([0-9.]+)%, .*/\1/p' "$TMP/e" | awk '{ print ($1 > 0.8) }')" 1
expect_eq "... detached past 2 s, said once with what spares them" \
	"$(grep -cE "^memtrace: the large blocks' probes alone cost more than --budget 1% allows .*: detached [2-3]\.[0-9] s in, .*--large 0 spares them" "$TMP/e")" 1
report_json "$TMP/churn.mtrace" "$TMP/churn.json"
expect_eq "... its one large block mapped before exact, no thread's 16 KiB counted as one" \
	"$(jqr "$TMP/churn.json" '.trace.budget.large_allocations')" 1
mt report "$TMP/churn.mtrace" >"$TMP/churn.txt" 2>&1
expect_eq "... the report says until when they were exact" \
	"$(grep -cE "^ +until [2-3]\.[0-9] s: their probes cost more than the budget, and were" "$TMP/churn.txt")" 1
mt record --budget 1 --large 0 -o "$TMP/churn0.mtrace" -- "$PROGS/thread_churn" 1 >/dev/null 2>"$TMP/e"
expect_eq "--large 0: no large blocks' probes, nothing said of them" \
	"$(grep -c "large blocks' probes" "$TMP/e")" 0

# --- top says so in its header ---
mt top --batch -i 1 -d 3 --budget 5 -- "$PROP" 3 0 -1 8000 >"$TMP/top.out" 2>"$TMP/e"
expect_status "top --batch --budget 5: exit status" $? 0 "$TMP/e"
if grep -q "^  --budget 5%: [0-9]* windows, allocations traced" "$TMP/top.out"; then
	ok "top's snapshots say --budget"
else
	not_ok "top's snapshots do not say --budget: $(head -3 "$TMP/top.out" | tr '\n' '|')"
fi
finish
