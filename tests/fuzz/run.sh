#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Build the fuzz harnesses and run each for SECONDS, printing one TAP line
# per harness: ok when it ran without a crash, a leak, a hang (an input
# taking over 10 s) or running out of memory (2 GiB); not ok with the
# input that did it, saved under $BUILD/fuzz/crashes/.
# usage: tests/fuzz/run.sh SECONDS [WORKDIR]
#   WORKDIR keeps the corpus grown by earlier runs (make fuzz uses
#   $BUILD/fuzz/work); without it the run starts from the seeds in
#   tests/fuzz/corpus and leaves nothing behind.
set -u
seconds=${1:?usage: run.sh SECONDS [WORKDIR]}
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
out=$build/fuzz
crashes=$out/crashes
harnesses="fuzz_trace_file fuzz_trace_records fuzz_usdt fuzz_unwind_table fuzz_unwind_walk fuzz_elf_util fuzz_symbolize fuzz_python_lines"
# the harnesses that take a whole ELF file also start from the hostile ELF
# files of gen_elf_corpus.py
elf_harnesses=" fuzz_usdt fuzz_unwind_table fuzz_elf_util fuzz_symbolize "
work=${2:-}
tmp=""
if [ -z "$work" ]; then
	tmp=$(mktemp -d /tmp/memtrace-fuzz.XXXXXX)
	work=$tmp
fi
trap '[ -n "$tmp" ] && rm -rf "$tmp"' EXIT
mkdir -p "$work"
fails=0
# the plan, from the list: the build, then each harness
echo "1..$(($(echo $harnesses | wc -w) + 1))"

if ! timeout -k 5 600 sh "$top/tests/fuzz/build.sh" "$out" >"$work/build.log" 2>&1; then
	echo "not ok - build the fuzz harnesses (clang, libclang-rt-14-dev): $(tail -n 3 "$work/build.log" | tr '\n' '|')"
	exit 1
fi
echo "ok - built the fuzz harnesses ($harnesses)"
mkdir -p "$crashes"
for h in $harnesses; do
	mkdir -p "$work/$h"
	log=$work/$h.log
	before=$(ls "$crashes" | wc -l)
	# seeds, then what earlier runs found (regress/: each an input that once
	# crashed, replayed first by every run, make test's short one too)
	seeds="" elf=""
	case "$elf_harnesses" in *" $h "*) elf=corpus/elf ;; esac
	for d in "corpus/$h" $elf "regress/$h"; do
		[ -d "$top/tests/fuzz/$d" ] && seeds="$seeds $top/tests/fuzz/$d"
	done
	timeout -k 10 $((seconds + 120)) "$out/$h" -max_total_time="$seconds" -timeout=10 \
		-rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
		${FUZZ_SEED:+-seed=$FUZZ_SEED} -artifact_prefix="$crashes/$h-" "$work/$h" $seeds >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
	if [ "$rc" = 0 ]; then
		echo "ok - $h: ${runs:-?} inputs in ${seconds} s, no crash, hang or leak (${cov:-cov: ?})"
	else
		crash=$(ls -t "$crashes" | head -n 1)
		[ "$(ls "$crashes" | wc -l)" -gt "$before" ] || crash=""
		echo "not ok - $h: exit status $rc after ${runs:-?} inputs; input: ${crash:+$crashes/$crash}; reproduce with $out/$h ${crash:+$crashes/$crash}"
		grep -E 'ERROR:|runtime error|SUMMARY|^ +#[0-9]+ ' "$log" | head -n 25 | sed 's/^/#   /'
		fails=$((fails + 1))
	fi
done
exit $((fails > 0))
