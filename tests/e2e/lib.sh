# Shared helpers for e2e tests (bash). Each check prints one TAP line.
# Environment from tests/run.sh: MEMTRACE, PROGS, TOP, BUILD.
set -u
MEMTRACE=${MEMTRACE:-build/memtrace}
PROGS=${PROGS:-build/progs}
TMP=$(mktemp -d /tmp/memtrace-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILS=$((FAILS + 1)); }

# expect_eq DESCRIPTION ACTUAL EXPECTED
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1 = $3"; else not_ok "$1: got '$2', want '$3'"; fi
}

# expect_within DESCRIPTION ACTUAL EXPECTED PERCENT
expect_within() {
	if awk -v a="$2" -v e="$3" -v p="$4" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e != 0 ? d * 100 <= p * e : a == 0) }'; then
		ok "$1: $2 within $4% of $3"
	else
		not_ok "$1: $2 not within $4% of $3"
	fi
}

# jq over a JSON file: jqr FILE FILTER
jqr() { jq -r "$2" "$1"; }

# site FILE FUNCTION FIELD: a field of the site whose function is FUNCTION (summed
# if the function has several sites)
site() { jq -r --arg f "$2" --arg k "$3" '[.sites[] | select(.function == $f) | .[$k]] | add // 0' "$1"; }

finish() { exit $((FAILS > 0)); }
