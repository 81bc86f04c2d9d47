# Shared helpers for e2e tests (bash). Each check prints one TAP line. A
# script says how many checks it makes (plan N) before its first and ends
# with finish; every path through it makes them all (a check this host cannot
# make is a skip, one an earlier failure made impossible a failure).
# Environment from tests/run.sh: MEMTRACE, PROGS, TOP, BUILD.
set -u
TOP=${TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
MEMTRACE=$(realpath "${MEMTRACE:-build/memtrace}")
PROGS=$(realpath "${PROGS:-build/progs}")
TMP=$(mktemp -d /tmp/memtrace-e2e.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
# One byte per check made, from any subshell: a check's number, and finish's
# count of them against the plan.
CHECKS=$TMP/.checks
: >"$CHECKS"
PLAN=

# plan N: the number of checks this script makes, declared before the first
# (its own list: each host makes them all, a check it cannot make being a
# skip). "1..N" goes out at once, so a check that is never made shows as the
# plan not met: finish fails the script, and so does tests/run.sh when it
# stops before finish.
plan() { PLAN=$1; echo "1..$1"; }

# check_no: the next check's number
check_no() { printf . >>"$CHECKS"; wc -c <"$CHECKS"; }
ok() { echo "ok $(check_no) - $*"; }
not_ok() { echo "not ok $(check_no) - $*"; FAILS=$((FAILS + 1)); }
# skip REASON: a check this host cannot make; counted apart, never as a pass.
skip() { echo "ok $(check_no) # SKIP $*"; }
# skips N REASON: N checks this host cannot make
skips() {
	local i
	for ((i = 0; i < $1; i++)); do skip "${*:2}"; done
}
# skip_rest REASON: every planned check not made yet is a skip (a script that
# cannot run here at all, or whose rest needs what this host lacks).
skip_rest() {
	local i made
	made=$(wc -c <"$CHECKS")
	for ((i = made; i < ${PLAN:-0}; i++)); do skip "$*"; done
}

# expect_eq DESCRIPTION ACTUAL EXPECTED. Each expect_* returns 1 on a
# mismatch, so `expect_eq ... || sed 's/^/# /' ERRFILE` says why.
expect_eq() {
	if [ "$2" = "$3" ]; then ok "$1 = $3"; else not_ok "$1: got '$2', want '$3'"; return 1; fi
}

# expect_status DESCRIPTION ACTUAL EXPECTED STDERR_FILE: an exit status, and
# on a mismatch what the command said last, so a failure in CI explains itself
expect_status() {
	if [ "$2" = "$3" ]; then ok "$1 = $3"; else not_ok "$1: got '$2', want '$3'; its stderr ended: $(tail -n 3 "$4" | tr '\n' '|')"; return 1; fi
}

# expect_within DESCRIPTION ACTUAL EXPECTED PERCENT
expect_within() {
	if awk -v a="$2" -v e="$3" -v p="$4" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e != 0 ? d * 100 <= p * e : a == 0) }'; then
		ok "$1: $2 within $4% of $3"
	else
		not_ok "$1: $2 not within $4% of $3"
		return 1
	fi
}

# jq over a JSON file: jqr FILE FILTER
jqr() { jq -r "$2" "$1"; }

# site FILE FUNCTION FIELD: a field of the site whose function is FUNCTION (summed
# if the function has several sites)
site() { jq -r --arg f "$2" --arg k "$3" '[.sites[] | select(.function == $f) | .[$k]] | add // 0' "$1"; }

# finish: the end of a script; fails it when it made other than its plan.
finish() {
	local made
	made=$(wc -c <"$CHECKS")
	if [ -z "$PLAN" ]; then
		not_ok "$(basename "$0") declares its plan (plan N before its first check); it made $made checks"
	elif [ "$made" != "$PLAN" ]; then
		not_ok "$(basename "$0") made $made checks of the $PLAN it planned"
	fi
	exit $((FAILS > 0))
}

# A jq filter that puts report --json's stacks back in their sites: the JSON
# writes each stack once in "stacks" and each frame once in "stack_frames",
# and a site lists its stacks (a stack its frames) by index. Prefix a query
# with it: jq "$NESTED"' | .sites[].stacks[].frames[].function' FILE
NESTED='.stack_frames as $f | .stacks as $s | .sites |= map(.stacks |= map($s[.] | .frames |= map($f[.])))'


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
	# RECORD_FLAGS: more options for every such run (tests/e2e/preload.sh: --preload)
	timeout -k 5 "$LIMIT" "$MEMTRACE" record ${RECORD_FLAGS:-} -o "$trace" -- "$@" >"$TMP/out" 2>"$TMP/err"
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

# expect_line FILE PATTERN SECONDS WHY [SHOW]: wait_for_line as a check, ok
# when a line of FILE starts with PATTERN within SECONDS, else not ok WHY and
# the start of SHOW (default FILE) as comments
expect_line() {
	if wait_for_line "$1" "$2" "$3"; then
		ok "${1##*/}: a line '$2' within $3 s"
	else
		not_ok "$4"
		head -c 300 "${5:-$1}" | sed 's/^/# /'
		return 1
	fi
}

# not_made N WHY: N checks that could not be made, WHY (an earlier step
# failed): each a failure, so that a script makes its plan on every path
not_made() {
	local i
	for ((i = 0; i < $1; i++)); do not_ok "not made: $2"; done
}

# fail_rest WHY: every planned check not made yet is a failure (a script
# that cannot go on, e.g. what the rest needs could not be built)
fail_rest() {
	not_made $((${PLAN:-0} - $(wc -c <"$CHECKS"))) "$*"
}

# expect_alloc_patterns JSON UNMATCHED [LABEL]: the exact per-site figures and
# totals of tests/progs/alloc_patterns (the table in its source), as two
# checks: the site table and the totals, each printing the difference when
# it fails. UNMATCHED is 0 for a run from its start, 4 for its "wait" mode
# joined with -p.
expect_alloc_patterns() {
	local json=$1 unmatched=$2 label=${3:+$3: } want got
	expect_alloc_patterns_sites "$json" "${3:-}"
	# glibc makes no allocation of its own in this program: totals are exact
	want="allocations=56 frees=48 allocated_bytes=8400544 peak_bytes=8393460 leaked_allocations=8 leaked_bytes=4852 temporary_allocations=7 unmatched_frees=$unmatched dropped_events=0"
	got=$(jq -r '.totals | "allocations=\(.allocations) frees=\(.frees) allocated_bytes=\(.allocated_bytes) peak_bytes=\(.peak_bytes) leaked_allocations=\(.leaked_allocations) leaked_bytes=\(.leaked_bytes) temporary_allocations=\(.temporary_allocations) unmatched_frees=\(.unmatched_frees) dropped_events=\(.dropped_events)"' "$json" 2>/dev/null)
	expect_eq "${label}alloc_patterns totals" "$got" "$want"
}

# expect_alloc_patterns_sites JSON [LABEL]: the per-site half of the above, for
# runs where something else allocates too (another allocator's start-up): one
# check of the whole table, its diff printed when it fails.
expect_alloc_patterns_sites() {
	local json=$1 label=${2:+$2: } want got
	# function allocs bytes leaked leaked_bytes temporary peak_bytes
	want='site_malloc_100      10  1000     1  100   0  100
site_calloc_10x32    5   1600     1  320   0  320
site_realloc_grow    5   2000     0  0     0  0
site_realloc_shrink  5   200      0  0     0  0
site_realloc_null    3   192      1  64    0  64
site_reallocarray    2   328      0  0     0  0
site_posix_memalign  2   400      1  200   0  200
site_aligned_alloc   2   512      0  0     0  0
site_memalign        2   200      0  0     0  0
site_valloc          1   1000     0  0     0  0
site_pvalloc         1   4096     1  4096  0  4096
site_temporary       7   336      0  0     7  0
site_peak_block      8   8388608  0  0     0  8388608
site_leak_24         3   72       3  72    0  72'
	want=$(awk '{ print $1, $2, $3, $4, $5, $6, $7 }' <<<"$want")
	got=$(awk '{ print $1 }' <<<"$want" | while read -r fn; do
		jq -r --arg f "$fn" '[.sites[] | select(.function == $f)] |
			"\($f) \(map(.allocations) | add // 0) \(map(.allocated_bytes) | add // 0) \(map(.leaked_allocations) | add // 0) \(map(.leaked_bytes) | add // 0) \(map(.temporary_allocations) | add // 0) \(map(.peak_bytes) | add // 0)"' "$json" 2>/dev/null
	done)
	if [ "$got" = "$want" ]; then
		ok "${label}alloc_patterns site table (14 sites x 6 figures) as in its source"
	else
		not_ok "${label}alloc_patterns site table differs (function allocations bytes leaked leaked_bytes temporary peak):"
		diff <(echo "$want") <(echo "$got") | sed 's/^/#   /'
	fi
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
	# emptied here, not by the background jobs' 2>, which truncate only when
	# those children run: a first look before that saw the lines of the call
	# before (replaced_files.sh released its target before memtrace started)
	: >"$TMP/target.err"
	: >"$TMP/err"
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

# expect_one_error DESCRIPTION STATUS STDERR_FILE [LINE]: a non-zero status that
# is not a crash and one "memtrace: " line on stderr: exactly LINE when given.
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
	if [ $# -ge 4 ]; then
		expect_eq "$1: the message" "$first" "$4"
	fi
}

# --rss checks shared by rss.sh, rss_reconcile.sh, redis.sh and postgres.sh
# within A B PCT: |A - B| <= PCT% of B
# (numbers only: an empty or non-numeric figure is a failure, not 0 within 0)
within() {
	[[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ && $2 =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || return 1
	awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d * 100 <= p * b) }'
}
expect_within_pct() { # LABEL GOT WANT PCT
	if within "$2" "$3" "$4"; then ok "$1: $2 within $4% of $3"; else not_ok "$1: $2 not within $4% of $3"; fi
}
# The reconciliation of report --json's JSON against what the kernel counts
# itself (its parts against the programs' own truth are each test's): the
# pagemap total against the kernel's RssAnon of the same moment within 1%;
# with SMAPS, the target's /proc/PID/smaps read while it held still at the
# end of the recording, the files' private pages against the Anonymous lines
# of its private file mappings (within 5%: read after memtrace detached,
# they lack the pages of code its uprobes made anonymous, 5 on bash), and
# the thread stacks at least [stack]'s.
rss_adds_up() { # LABEL JSON [SMAPS]
	expect_within_pct "$1: pagemap's total against the kernel's RssAnon of the same moment" \
		"$(jqr "$2" '.rss.reconciled_last.resident_anon_bytes')" "$(jqr "$2" '.rss.reconciled_last.rss_anon_bytes')" 1
	[ $# -ge 3 ] || return 0
	# smaps: a mapping's line, then its fields; a file's private one is "ADDR PERMS(...p) OFF DEV INODE /path"
	local files stack
	files=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { f = substr($2, 4, 1) == "p" && substr($6, 1, 1) == "/" }
		f && $1 == "Anonymous:" { kb += $2 } END { print kb * 1024 }' "$3")
	stack=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { f = $6 == "[stack]" } f && $1 == "Anonymous:" { kb += $2 } END { print kb * 1024 }' "$3")
	expect_within_pct "$1: files' private pages against smaps' Anonymous of the private file mappings" \
		"$(jqr "$2" '.rss.reconciled_last.file_private_bytes')" "$files" 5
	expect_eq "$1: thread stacks hold at least the main thread's [stack] ($stack bytes in smaps)" \
		"$(jqr "$2" ".rss.reconciled_last.thread_stacks_bytes >= $stack")" true
}
