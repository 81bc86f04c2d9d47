#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Golden tier: report every checked-in trace (tests/golden/*.mtrace) as text
# and as JSON and compare with the expected files next to it (diff -u), so a
# change to the reader, the analyses or the report output shows up in review
# as a change to a .report.txt or .report.json. Needs no root: report reads
# only the trace file, whose symbols were stored in it when it was recorded.
#
# usage: check.sh            check, one TAP line per check; exit 1 on failure
#        check.sh --update   first rewrite the expected files from the current
#                            build (after an intended change; review the diff)
#
# Environment: MEMTRACE, the memtrace binary (default build/memtrace under the
# repository root).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
MEMTRACE=${MEMTRACE:-$top/build/memtrace}
update=0
case "${1-}" in
--update) update=1 ;;
"") ;;
*)
	echo "usage: $0 [--update]" >&2
	exit 2
	;;
esac

TMP=$(mktemp -d /tmp/memtrace-golden.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
count=0

ok() {
	count=$((count + 1))
	echo "ok $count - $*"
}
not_ok() {
	count=$((count + 1))
	fails=$((fails + 1))
	echo "not ok $count - $*"
}
# show FILE: a file's lines as TAP diagnostics, so they cannot be read as results
show() { sed 's/^/# /' "$1"; }

# report NAME OUT [OPTIONS...]: memtrace report [OPTIONS] NAME.mtrace > OUT,
# stderr to OUT.err; returns report's exit status
report() {
	local name=$1 out=$2
	shift 2
	timeout -k 5 60 "$MEMTRACE" report "$@" "$here/$name.mtrace" >"$out" 2>"$out.err"
}

# compare NAME KIND [OPTIONS...]: the report against NAME.report.KIND
compare() {
	local name=$1 kind=$2 want got rc=0 what
	want="$here/$name.report.$kind"
	got="$TMP/$name.$kind"
	shift 2
	what="report${*:+ $*}"
	report "$name" "$got" "$@" || rc=$?
	if [ "$rc" != 0 ]; then
		not_ok "$name: $what exits 0 (status $rc)"
		show "$got.err"
		return
	fi
	if [ "$update" = 1 ] && ! cmp -s "$got" "$want"; then
		echo "# updating $(basename "$want")"
		cp "$got" "$want"
	fi
	if [ ! -f "$want" ]; then
		not_ok "$name: $(basename "$want") exists (run $0 --update)"
	elif diff -u --label "tests/golden/$(basename "$want") (expected)" \
		--label "memtrace $what (now)" "$want" "$got" >"$TMP/diff"; then
		ok "$name: $what matches $(basename "$want")"
	else
		not_ok "$name: $what differs from $(basename "$want")"
		show "$TMP/diff"
	fi
}

# expect_json NAME FILTER EXPECTED: a value of the report's JSON, anchoring the
# expected files to figures known from the program's source
expect_json() {
	local got
	got=$(jq -r "$2" "$TMP/$1.json" 2>&1)
	if [ "$got" = "$3" ]; then
		ok "$1: $2 = $3"
	else
		not_ok "$1: $2: got '$got', want '$3'"
	fi
}

# The anchors, TRACE FILTER EXPECTED: a value of the trace's JSON report known
# from its program's source (the comment at the top of tests/progs/TRACE.c or
# .cpp; cxx_new_delete's whole process, libstdc++'s emergency pool of 72704
# bytes included)
ANCHORS='alloc_patterns .trace.partial false
alloc_patterns .totals.allocations 56
alloc_patterns .totals.frees 48
alloc_patterns .totals.allocated_bytes 8400544
alloc_patterns .totals.peak_bytes 8393460
alloc_patterns .totals.leaked_allocations 8
alloc_patterns .totals.leaked_bytes 4852
alloc_patterns .totals.temporary_allocations 7
alloc_patterns .totals.unmatched_frees 0
alloc_patterns .totals.dropped_events 0
alloc_patterns .sites[] | select(.function == "site_peak_block") | .peak_bytes 8388608
alloc_patterns .sites[] | select(.function == "site_temporary") | .temporary_allocations 7
cxx_new_delete .trace.partial false
cxx_new_delete .totals.allocations 19
cxx_new_delete .totals.frees 15
cxx_new_delete .totals.allocated_bytes 74964
cxx_new_delete .totals.peak_bytes 74964
cxx_new_delete .totals.leaked_allocations 4
cxx_new_delete .totals.leaked_bytes 72752
cxx_new_delete .totals.dropped_events 0
cxx_new_delete [.sites[] | select(.function == "site_new_leak_16()") | .leaked_bytes] | add 48
cxx_new_delete [.sites[] | select(.function == "site_new_aligned_nothrow_384()") | .allocated_bytes] | add 384'

# anchors NAME: NAME's anchors, as FILTER EXPECTED
anchors() { grep "^$1 " <<<"$ANCHORS" | cut -d' ' -f2-; }

# expect_partial NAME: a copy cut at 60% of the trace is read as partial and
# said so first, not refused and not reported as complete
expect_partial() {
	local name=$1 cut="$TMP/$1.cut" size rc=0
	size=$(stat -c %s "$here/$name.mtrace")
	mkdir -p "$cut"
	head -c $((size * 6 / 10)) "$here/$name.mtrace" >"$cut/$name.mtrace"
	timeout -k 5 60 "$MEMTRACE" report "$cut/$name.mtrace" >"$cut/out" 2>"$cut/err" || rc=$?
	if [ "$rc" = 0 ] && head -n 1 "$cut/out" | grep -q '^WARNING: trace is partial'; then
		ok "$name: report of its first $((size * 6 / 10)) of $size bytes starts with 'WARNING: trace is partial'"
	else
		not_ok "$name: report of its first $((size * 6 / 10)) of $size bytes (status $rc) starts with 'WARNING: trace is partial'"
		head -n 3 "$cut/out" >"$cut/head"
		show "$cut/head"
		show "$cut/err"
	fi
}

if [ ! -x "$MEMTRACE" ]; then
	echo "1..1"
	echo "not ok - memtrace binary $MEMTRACE is built (make)"
	exit 1
fi
if ! command -v jq >/dev/null; then
	echo "1..1"
	echo "not ok - jq is installed (tests/install-deps.sh)"
	exit 1
fi

# The plan, from the traces and the anchors: per trace its text and JSON
# reports, its cut copy, and its anchors
traces=()
for trace in "$here"/*.mtrace; do
	[ -f "$trace" ] && traces+=("$(basename "$trace" .mtrace)")
done
if [ ${#traces[@]} = 0 ]; then
	echo "1..1"
	not_ok "golden traces found in $here"
	exit 1
fi
plan=0
for name in "${traces[@]}"; do
	plan=$((plan + 3 + $(anchors "$name" | grep -c .)))
done
echo "1..$plan"

for name in "${traces[@]}"; do
	compare "$name" txt
	compare "$name" json --json
	# the anchors read the JSON report that compare left in $TMP/NAME.json
	while read -r line; do
		expect_json "$name" "${line% *}" "${line##* }"
	done < <(anchors "$name")
	expect_partial "$name"
done

if [ "$count" != "$plan" ]; then
	not_ok "check.sh made $count checks of the $plan it planned"
fi
exit $((fails > 0))
