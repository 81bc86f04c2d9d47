#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# inproc/memtrace.h emits USDT notes that tools can read: for C and C++,
# with every compiler at hand, -O0 and -O2, readelf -n shows provider
# memtrace, every probe with its argument specs (SIZE@OPERAND, registers or
# constants only: libbpf 1.1 refuses %rip-relative operands), semaphores on
# exactly the pool probes; two translation units share one _.stapsdt.base
# and one semaphore per probe; a MEMTRACE_DISABLE build has no notes and
# compiles warning-free even with variables used only in marks.
# Needs no root (it only compiles), but lives with the e2e tests.
source "$(dirname "$0")/lib.sh"
plan 99
TOP=${TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
INC=$TOP/inproc

cat >"$TMP/use.c" <<'EOF'
#include "memtrace.h"
#include <stdlib.h>
static char arena[64];
void *volatile sink;
void other_tu(void);
int main(int argc, char **argv)
{
	size_t n = (size_t)argc * 8; /* used only in a mark */
	MEMTRACE_THREAD_NAME("main");
	{
		MEMTRACE_ZONE("scoped");
		MEMTRACE_ZONE_BEGIN("manual");
		sink = malloc(1);
		MEMTRACE_ZONE_END("manual");
	}
	MEMTRACE_ALLOC("pool", arena, n);
	MEMTRACE_FREE("pool", arena);
	MEMTRACE_POOL_RESET("pool");
	MEMTRACE_FRAME_MARK();
	MEMTRACE_FRAME_MARK_NAMED(argv[0]);
	other_tu();
	return MEMTRACE_POOL_TRACED();
}
EOF
cat >"$TMP/other.c" <<'EOF'
#include "memtrace.h"
void other_tu(void)
{
	MEMTRACE_ZONE("other");
	MEMTRACE_ALLOC("pool", &other_tu, 1);
}
EOF
cp "$TMP/use.c" "$TMP/use.cpp"
cp "$TMP/other.c" "$TMP/other.cpp"
sed -i 's/^void other_tu(void);/extern "C" void other_tu(void);/' "$TMP/use.cpp"
sed -i 's/^void other_tu(void)$/extern "C" void other_tu(void)/' "$TMP/other.cpp"

# probe, argument count, semaphore (1: non-zero)
PROBES="zone_begin 1 0
zone_end 1 0
frame_mark 1 0
alloc 3 1
free 2 1
pool_reset 1 1
thread_name 1 0"

# check_notes LABEL BINARY
check_notes() {
	local label=$1 bin=$2 notes bad
	notes=$(readelf -n "$bin" | awk '/Provider:/ { p = $2 } /Name:/ { n = $2 }
		/Semaphore:/ { s = $NF } /Arguments:/ { sub(/^ *Arguments: */, ""); print p, n, s, $0 }')
	expect_eq "$label: every note's provider" "$(echo "$notes" | awk '{ print $1 }' | sort -u)" memtrace
	while read -r probe nargs sema; do
		local lines
		lines=$(echo "$notes" | awk -v n="$probe" '$2 == n')
		if [ -z "$lines" ]; then
			not_ok "$label: probe $probe missing"
			continue
		fi
		bad=$(echo "$lines" | awk -v want="$nargs" -v sema="$sema" '{
			ok = NF - 3 == want
			for (i = 4; i <= NF; i++)
				if ($i !~ /^8@(%[a-z0-9]+|\$-?[0-9]+|x[0-9]+|[0-9]+)$/) ok = 0
			if ((sema == 1) != ($3 !~ /^0x0+$/)) ok = 0
			if (!ok) print
		}')
		if [ -z "$bad" ]; then
			ok "$label: $probe: $(echo "$lines" | wc -l) note(s), $nargs argument(s) like '$(echo "$lines" | head -1 | cut -d' ' -f4-)', semaphore $([ "$sema" = 1 ] && echo set || echo none)"
		else
			not_ok "$label: $probe: bad note(s): $bad"
		fi
	done <<<"$PROBES"
	expect_eq "$label: _.stapsdt.base symbols" "$(nm "$bin" | grep -c ' _\.stapsdt\.base$')" 1
	expect_eq "$label: memtrace_alloc_semaphore symbols" "$(nm "$bin" | grep -c ' memtrace_alloc_semaphore$')" 1
	expect_eq "$label: semaphores in .probes" \
		"$(readelf -S -W "$bin" | awk '$2 == ".probes" { print $3 }')" PROGBITS
}

# check_notes' checks: the provider, each probe, three of the symbols
notes_checks=$((4 + $(grep -c . <<<"$PROBES")))

# Each compiler once: cc is gcc on Debian (the same binary twice checks
# nothing new). One this host lacks is skipped, its checks counted.
cxx_for() { case $1 in clang) echo clang++ ;; gcc) echo g++ ;; *) echo c++ ;; esac; }
for c in gcc clang; do
	cxx=$(cxx_for "$c")
	for opt in -O0 -O2; do
		bin=$TMP/use-$c$opt
		if ! command -v "$c" >/dev/null; then
			skips "$notes_checks" "C $c $opt: no $c here"
		elif "$c" $opt -Wall -Wextra -Werror -I"$INC" "$TMP/use.c" "$TMP/other.c" -o "$bin" 2>"$TMP/cc.err"; then
			check_notes "C $c $opt" "$bin"
		else
			not_made "$notes_checks" "C $c $opt: does not compile: $(head -3 "$TMP/cc.err")"
		fi
		if ! command -v "$cxx" >/dev/null; then
			skips "$notes_checks" "C++ $cxx $opt: no $cxx here"
		elif "$cxx" $opt -std=c++11 -Wall -Wextra -Werror -I"$INC" "$TMP/use.cpp" "$TMP/other.cpp" -o "$bin++" 2>"$TMP/cc.err"; then
			check_notes "C++ $cxx $opt" "$bin++"
		else
			not_made "$notes_checks" "C++ $cxx $opt: does not compile: $(head -3 "$TMP/cc.err")"
		fi
	done
	for lang in c cpp; do
		comp=$c
		[ $lang = cpp ] && comp=$cxx
		bin=$TMP/off-$c-$lang
		if ! command -v "$comp" >/dev/null; then
			skips 2 "MEMTRACE_DISABLE $comp: no $comp here"
		elif "$comp" -O2 -Wall -Wextra -Werror -DMEMTRACE_DISABLE -I"$INC" "$TMP/use.$lang" "$TMP/other.$lang" -o "$bin" 2>"$TMP/cc.err"; then
			expect_eq "MEMTRACE_DISABLE $comp: .note.stapsdt sections" "$(readelf -S -W "$bin" | grep -c '\.note\.stapsdt')" 0
			expect_eq "MEMTRACE_DISABLE $comp: semaphores" "$(nm "$bin" | grep -c semaphore)" 0
		else
			not_made 2 "MEMTRACE_DISABLE $comp: does not compile warning-free: $(head -3 "$TMP/cc.err")"
		fi
	done
done

# Disabled marks do not evaluate their arguments.
cat >"$TMP/noeval.c" <<'EOF2'
#include "memtrace.h"
#include <stdlib.h>
int main(void)
{
	MEMTRACE_ZONE((abort(), "zone"));
	MEMTRACE_ALLOC((abort(), "pool"), (abort(), NULL), (abort(), 1));
	MEMTRACE_THREAD_NAME((abort(), "t"));
	return MEMTRACE_POOL_TRACED();
}
EOF2
if cc -O0 -DMEMTRACE_DISABLE -I"$INC" "$TMP/noeval.c" -o "$TMP/noeval" 2>"$TMP/cc.err" &&
	"$TMP/noeval"; then
	ok "MEMTRACE_DISABLE: arguments not evaluated (no abort)"
else
	not_ok "MEMTRACE_DISABLE: arguments evaluated or build failed: $(head -3 "$TMP/cc.err")"
fi

# The test programs built by make progs.
for p in marks marks_cxx; do
	n=$(readelf -n "$PROGS/$p" | grep -c 'Provider: memtrace')
	if [ "${n:-0}" -gt 0 ]; then ok "$p: $n memtrace notes"; else not_ok "$p: no memtrace notes"; fi
done
finish
