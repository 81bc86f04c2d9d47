# Shared helpers for e2e tests (bash). Each check prints one TAP line.
# Environment from tests/run.sh: MEMTRACE, PROGS, TOP, BUILD.
set -u
MEMTRACE=$(realpath "${MEMTRACE:-build/memtrace}")
PROGS=$(realpath "${PROGS:-build/progs}")
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

# --- recording and checking helpers ---------------------------------------
# Every external command runs under timeout, so a hang is a failure, not a
# stuck CI job.
LIMIT=${LIMIT:-60}

# expect_site FILE FUNCTION FIELD EXPECTED
expect_site() { expect_eq "$2 $3" "$(site "$1" "$2" "$3")" "$4"; }

# expect_total FILE FIELD EXPECTED
expect_total() { expect_eq "totals.$2" "$(jqr "$1" ".totals.$2")" "$3"; }

# record_cmd TRACE CMD [ARGS...]: memtrace record -o TRACE -- CMD; the command's
# stdout goes to $TMP/out, memtrace's stderr to $TMP/err; returns memtrace's
# exit status.
record_cmd() {
	local trace=$1
	shift
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$trace" -- "$@" >"$TMP/out" 2>"$TMP/err"
}

# report_json TRACE OUT: memtrace report --json TRACE > OUT; returns its status
# (stderr in $TMP/report.err).
report_json() {
	timeout -k 5 "$LIMIT" "$MEMTRACE" report --json "$1" >"$2" 2>"$TMP/report.err"
}

# wait_for_line FILE PATTERN SECONDS: wait until a line of FILE starts with
# PATTERN; returns 1 on timeout.
wait_for_line() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q "^$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# wait_exec PID PROGRAM: wait (10 s at most) until PID runs PROGRAM, i.e. the
# shell's fork has exec'd it; only then is it the process to attach to.
wait_exec() {
	local i want
	want=$(realpath "$2")
	for ((i = 0; i < 100; i++)); do
		[ "$(readlink "/proc/$1/exe" 2>/dev/null)" = "$want" ] && return 0
		sleep 0.1
	done
	return 1
}

# record_pid_usr1 TRACE CMD [ARGS...]: start CMD (which waits for SIGUSR1),
# attach memtrace -p to it, wait (10 s at most) for "memtrace: attached" on
# memtrace's stderr ($TMP/err), send SIGUSR1, wait for both. Sets TARGET_STATUS
# and RECORD_STATUS; returns 1 if memtrace never said it attached.
record_pid_usr1() {
	local trace=$1 target rec rc=0
	shift
	timeout -k 5 "$LIMIT" "$@" >"$TMP/out" 2>"$TMP/target.err" &
	target=$!
	# the target must be blocked in sigwait before memtrace looks at it
	wait_for_line "$TMP/target.err" "[a-z_]*: waiting for SIGUSR1" 10
	# timeout runs the program as its child: trace the program, not timeout
	local pid
	pid=$(pgrep -P "$target" | head -n1)
	[ -n "$pid" ] || pid=$target
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$trace" -p "$pid" 2>"$TMP/err" &
	rec=$!
	if ! wait_for_line "$TMP/err" "memtrace: attached" 10; then
		rc=1
	fi
	kill -USR1 "$pid" 2>/dev/null
	wait "$target"
	TARGET_STATUS=$?
	wait "$rec"
	RECORD_STATUS=$?
	return $rc
}

# expect_one_error DESCRIPTION STATUS STDERR_FILE: a non-zero status that is
# not a crash (>= 128: signal), and exactly one stderr line "memtrace: ...".
expect_one_error() {
	local lines first
	lines=$(wc -l <"$3")
	first=$(head -n1 "$3")
	if [ "$2" = 0 ]; then
		not_ok "$1: exit status 0, want non-zero"
	elif [ "$2" -ge 128 ]; then
		not_ok "$1: exit status $2 (killed by a signal or timed out)"
	else
		ok "$1: exit status $2"
	fi
	if [ "$lines" = 1 ] && [ "${first#memtrace: }" != "$first" ]; then
		ok "$1: one line on stderr: $first"
	else
		not_ok "$1: want one 'memtrace: ' line on stderr, got $lines: $(head -c 300 "$3" | tr '\n' '|')"
	fi
}
