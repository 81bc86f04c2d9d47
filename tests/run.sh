#!/bin/sh
# Run every test tier and end with one line: "N passed, N failed, N skipped".
# Each test speaks TAP on stdout ("ok ..." / "not ok ...", a "# SKIP why"
# directive on either for a check this host cannot make, and a plan "1..N");
# cmocka is asked to as well (its skip() prints "not ok N # SKIP name": a
# skip, not a failure). What a test prints on stderr is shown, never
# counted. A test program fails as a whole when it dies without saying
# "not ok", when it prints no plan, when it prints its plan after a check
# (the plan comes from the test's own list, before it runs, so that a check
# never made shows), or when its plan does not match the checks it printed.
# A tier that cannot run (the end-to-end tier without root, a unit test of
# tests/unit not built, a tier with no tests at all) is a failure with a line
# that says which, never a silent skip.
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
export MEMTRACE="$build/memtrace" PROGS="$build/progs" TOP="$top" BUILD="$build"
export CMOCKA_MESSAGE_OUTPUT=TAP
passed=0
failed=0
skipped=0
log=$(mktemp)
err=$(mktemp)
trap 'rm -f "$log" "$err"' EXIT

run_one() { # name, command...
	name=$1; shift
	echo "# $name"
	"$@" >"$log" 2>"$err"
	rc=$?
	cat "$log"
	sed 's/^/# stderr: /' "$err"
	skip='^\(not \)\{0,1\}ok[^#]*# *[Ss][Kk][Ii][Pp]'
	s=$(grep -c "$skip" "$log")
	p=$(grep '^ok' "$log" | grep -vc "$skip")
	f=$(grep '^not ok' "$log" | grep -vc "$skip")
	made=$((p + s + f))
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\)$/\1/p' "$log" | tail -n 1)
	plan_at=$(grep -n '^1\.\.[0-9]' "$log" | head -n 1 | cut -d: -f1)
	first_at=$(grep -n '^\(not \)\{0,1\}ok\b' "$log" | head -n 1 | cut -d: -f1)
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=$((f + 1))
	fi
	if [ -z "$plan" ]; then
		echo "not ok - $name printed no plan (1..N): it stopped before its end"
		f=$((f + 1))
	elif [ "$plan" != "$made" ]; then
		echo "not ok - $name planned $plan checks and made $made"
		f=$((f + 1))
	elif [ -n "$first_at" ] && [ "$first_at" -lt "$plan_at" ]; then
		echo "not ok - $name printed its plan (1..$plan) after its checks: a plan counted at the end cannot show a check never made"
		f=$((f + 1))
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
}

# tier WHAT WHERE FILES...: a tier with no test at all (none of FILES, the
# expansion of WHERE, is one) is a failure, not a pass of nothing
tier() {
	what=$1 where=$2
	shift 2
	for f in "$@"; do
		case "$f" in */lib.sh) continue ;; esac
		[ -f "$f" ] && return 0
	done
	echo "not ok - the $what tier has no tests: no $where in $top"
	failed=$((failed + 1))
	return 1
}

# the unit tier: one program per tests/unit/test_*.c, each built (make unit)
tier unit "tests/unit/test_*.c" "$top"/tests/unit/test_*.c
for src in "$top"/tests/unit/test_*.c; do
	[ -f "$src" ] || continue
	t=$build/tests/$(basename "$src" .c)
	if [ -x "$t" ]; then
		run_one "unit: $(basename "$t")" "$t"
	else
		echo "not ok - unit: $(basename "$t") is not built in $build/tests (make unit)"
		failed=$((failed + 1))
	fi
done
tier golden "tests/golden/*.sh" "$top"/tests/golden/*.sh
tier end-to-end "tests/e2e/*.sh" "$top"/tests/e2e/*.sh
for t in "$top"/tests/golden/*.sh "$top"/tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	case "$t" in */lib.sh) continue ;; esac
	if [ "$(id -u)" != 0 ] && [ "${t#*/e2e/}" != "$t" ]; then
		echo "not ok - $(basename "$t"): the end-to-end tier attaches real probes and needs root (sudo make test)"
		failed=$((failed + 1))
		continue
	fi
	run_one "$(basename "$(dirname "$t")"): $(basename "$t")" bash "$t"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
