#!/bin/sh
# Run every test tier and end with one line: "N passed, N failed".
# Each test speaks TAP ("ok ..." / "not ok ..."); cmocka is asked to as well.
# A test program that dies without saying "not ok" counts as one failure.
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
export MEMTRACE="$build/memtrace" PROGS="$build/progs" TOP="$top" BUILD="$build"
export CMOCKA_MESSAGE_OUTPUT=TAP
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

run_one() { # name, command...
	name=$1; shift
	echo "# $name"
	"$@" >"$log" 2>&1
	rc=$?
	cat "$log"
	p=$(grep -c '^ok' "$log")
	f=$(grep -c '^not ok' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $name exited with status $rc"
		f=1
	fi
	passed=$((passed + p))
	failed=$((failed + f))
}

for t in "$build"/tests/test_*; do
	[ -x "$t" ] && run_one "unit: $(basename "$t")" "$t"
done
for t in "$top"/tests/golden/*.sh "$top"/tests/e2e/*.sh; do
	[ -f "$t" ] || continue
	case "$t" in */lib.sh) continue ;; esac
	if [ "$(id -u)" != 0 ] && [ "${t#*/e2e/}" != "$t" ]; then
		echo "# skipping $(basename "$t"): e2e tests need root"
		continue
	fi
	run_one "$(basename "$(dirname "$t")"): $(basename "$t")" bash "$t"
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
