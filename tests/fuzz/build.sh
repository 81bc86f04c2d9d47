#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Build the libFuzzer harnesses into OUT (default build/fuzz) with clang,
# ASan and UBSan, compiling the user/ modules they reach directly (the
# Makefile's libmemtrace.a is gcc-built without sanitizers).
# usage: tests/fuzz/build.sh [OUT]
set -e
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$top/build/fuzz}
CLANG=${CLANG:-clang}
SAN="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
INC=$(for d in "$top"/user/*/; do printf -- "-I%s " "${d%/}"; done)
CFLAGS="-O1 -g -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE $INC -I$top/bpf -I$top/build -I$top/tests/fuzz \
-DMT_FUZZ_WALK=\"$top/tests/fuzz/walk\""
# What the readers and every writer of a read trace need.
TRACE_SRC="trace_reader replay resident recent live_table live_sites arena analysis sites marks heap_series export_chrome u64map strtab report_text report_json json_out debuginfod symbolizer elf_util
export_folded export_pprof export_write protobuf diff diff_print trace_load util target_file"
USDT_SRC="usdt"
UNWIND_SRC="unwind_table cfi_check"
LIBS="-lzstd -lz -ldw -lelf -liberty -lm"

mkdir -p "$out/obj"
compile() { # NAME SOURCE
	src=$2
	obj=$out/obj/$1.o
	if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ -n "$(find "$top/user" "$top/tests/fuzz" -name '*.h' -newer "$obj")" ]; then
		$CLANG $CFLAGS $SAN -c "$src" -o "$obj"
	fi
	echo "$obj"
}
objs() { # module names under user/STAGE/
	for m in "$@"; do compile "$m" "$(ls "$top"/user/*/"$m".c)"; done
}
link() { # HARNESS OBJECTS...
	h=$1
	shift
	$CLANG $SAN -o "$out/$h" "$(compile "$h" "$top/tests/fuzz/$h.c")" "$@" $LIBS
	echo "built $out/$h"
}
consume=$(compile fuzz_consume "$top/tests/fuzz/fuzz_consume.c")
link fuzz_trace_file $consume $(objs $TRACE_SRC)
link fuzz_trace_records $consume $(objs $TRACE_SRC)
link fuzz_usdt $consume $(objs $TRACE_SRC $USDT_SRC)
link fuzz_unwind_table $consume $(objs $TRACE_SRC $UNWIND_SRC)
link fuzz_unwind_walk $consume $(objs $TRACE_SRC $UNWIND_SRC)
link fuzz_elf_util $consume $(objs $TRACE_SRC)
link fuzz_symbolize $consume $(objs $TRACE_SRC)
link fuzz_python_lines $(objs python_lines)
