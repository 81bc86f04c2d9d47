#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Stripped and odd binaries: alloc_patterns built with -g, then stripped in
# the ways distributions ship programs, recorded with -- CMD. The reference
# is the unstripped build (same code, so the same sites and stacks):
#   dynsym    -rdynamic, strip --strip-all: names from .dynsym
#   mini      strip --strip-all plus .gnu_debugdata (MiniDebugInfo, as Fedora
#             ships: an xz-compressed ELF with the .symtab entries that
#             .dynsym lacks): names
#   link      strip --strip-all plus .gnu_debuglink to prog.debug beside it:
#             names, files and lines
#   link_sub  the same with the debug file in .debug/
#   buildid   strip --strip-all, the debug file installed for the test as
#             /usr/lib/debug/.build-id/xx/yyyy.debug: names, files and lines
#   nosym     a PIE stripped of everything (it exports nothing): every site
#             and frame of the program is "nosym+0xOFF", never a wrong name
source "$(dirname "$0")/lib.sh"
plan 32

SRC=$TOP/tests/progs/alloc_patterns.c
CFLAGS_PROG="-O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread"
installed=""
cleanup() {
	[ -n "$installed" ] && rm -f "$installed" && rmdir "$(dirname "$installed")" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# build NAME [CFLAGS...]: $TMP/NAME/NAME from alloc_patterns.c, with a
# build-id of its own: the same code built twice gets the same one, and the
# buildid variant's debug file would then name the nosym variant too.
build() {
	local name=$1 id
	shift
	mkdir -p "$TMP/$name"
	id=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
	timeout -k 5 "$LIMIT" gcc $CFLAGS_PROG "$@" -Wl,--build-id=0x"$id" -o "$TMP/$name/$name" "$SRC"
}

# MiniDebugInfo, the recipe of gdb's manual: the function symbols .dynsym
# lacks, in an otherwise empty debug file, xz-compressed into .gnu_debugdata.
add_minidebuginfo() {
	local bin=$1 d=$TMP/mini.work
	mkdir -p "$d"
	nm -D "$bin" --format=posix --defined-only | awk '{ print $1 }' | sort >"$d/dynsyms" &&
		nm "$bin" --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ { print $1 }' | sort >"$d/funcsyms" &&
		comm -13 "$d/dynsyms" "$d/funcsyms" >"$d/keep" &&
		objcopy --only-keep-debug "$bin" "$d/debug" &&
		objcopy -S --remove-section .gdb_index --remove-section .comment \
			--keep-symbols="$d/keep" "$d/debug" "$d/mini" &&
		strip --strip-all -R .comment "$bin" &&
		xz -f "$d/mini" &&
		objcopy --add-section .gnu_debugdata="$d/mini.xz" "$bin"
}

set_up() {
	build full &&
		build dynsym -rdynamic && strip --strip-all "$TMP/dynsym/dynsym" &&
		build mini && add_minidebuginfo "$TMP/mini/mini" &&
		build link && objcopy --only-keep-debug "$TMP/link/link" "$TMP/link/link.debug" &&
		strip --strip-all "$TMP/link/link" &&
		objcopy --add-gnu-debuglink="$TMP/link/link.debug" "$TMP/link/link" &&
		build link_sub && mkdir -p "$TMP/link_sub/.debug" &&
		objcopy --only-keep-debug "$TMP/link_sub/link_sub" "$TMP/link_sub/.debug/link_sub.debug" &&
		strip --strip-all "$TMP/link_sub/link_sub" &&
		objcopy --add-gnu-debuglink="$TMP/link_sub/.debug/link_sub.debug" "$TMP/link_sub/link_sub" &&
		build buildid && objcopy --only-keep-debug "$TMP/buildid/buildid" "$TMP/buildid.debug" &&
		strip --strip-all "$TMP/buildid/buildid" &&
		build nosym && strip --strip-all "$TMP/nosym/nosym"
}
if set_up >"$TMP/setup.log" 2>&1; then
	ok "built the reference and 6 stripped variants"
else
	not_ok "could not build the variants: $(tail -n 3 "$TMP/setup.log" | tr '\n' '|')"
	fail_rest "no stripped variants"
	finish
fi

# What each variant has left, checked before it is relied on.
syms() { readelf -W --syms "$1" 2>/dev/null | grep -c ' FUNC .* site_malloc_100$'; }
expect_eq "dynsym: .dynsym has site_malloc_100, no .symtab" \
	"$(syms "$TMP/dynsym/dynsym") $(readelf -S "$TMP/dynsym/dynsym" | grep -c '\.symtab')" "1 0"
expect_eq "mini: .gnu_debugdata, no .symtab, nothing in .dynsym" \
	"$(readelf -S "$TMP/mini/mini" | grep -c -e '\.gnu_debugdata' -e '\.symtab') $(syms "$TMP/mini/mini")" "1 0"
expect_eq "link: .gnu_debuglink, no symbols" \
	"$(readelf -S "$TMP/link/link" | grep -c '\.gnu_debuglink') $(syms "$TMP/link/link")" "1 0"
expect_eq "nosym: no symbol of the program at all" "$(syms "$TMP/nosym/nosym")" 0

build_id=$(readelf -n "$TMP/buildid/buildid" | awk '/Build ID:/ { print $3 }')
debug_file=/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug
if [ -z "$build_id" ]; then
	not_ok "buildid: the binary has no build-id"
elif [ -e "$debug_file" ]; then
	not_ok "buildid: $debug_file already exists; not touching it"
else
	mkdir -p "$(dirname "$debug_file")" && cp "$TMP/buildid.debug" "$debug_file" && installed=$debug_file
	expect_eq "buildid: debug file installed as $debug_file" "$([ -f "$debug_file" ] && echo yes)" yes
fi

# record NAME: record the variant, its report in $TMP/NAME.json
record() {
	local name=$1
	record_cmd "$TMP/$name.mtrace" "$TMP/$name/$name" &&
		report_json "$TMP/$name.mtrace" "$TMP/$name.json"
	expect_eq "$name: recorded and reported" "$?" 0
	[ -s "$TMP/$name.json" ] || echo '{"sites": [], "totals": {}}' >"$TMP/$name.json"
}

# Per site: its figures, and the function, file and line of every frame of
# the program's own module; what the variant can know is compared with the
# reference. FIELDS: "function" or "function file line".
SITE_FIGURES='"\(.allocations) \(.allocated_bytes) \(.leaked_allocations) \(.leaked_bytes) \(.temporary_allocations) \(.peak_bytes)"'
sites_of() { # JSON PROGRAM_BASENAME WITH_LINES
	jq -r --arg p "$2" --argjson lines "$3" '
		def own: select((.module // "") | endswith("/" + $p));
		def where: if $lines then "\(.function):\(.file // "" | sub(".*/"; "")):\(.line)" else "\(.function)" end;
		'"$NESTED"' | .sites[] | select(.allocations > 0) |
		"\(.allocations) \(.allocated_bytes) \(.leaked_allocations) \(.leaked_bytes) \(.temporary_allocations) \(.peak_bytes) " +
		([.stacks[0].frames[] | own | where] | join(" < "))' "$1" | sort
}

record full
for v in dynsym mini link link_sub buildid nosym; do
	record "$v"
done
[ -n "$installed" ] && rm -f "$installed" && rmdir "$(dirname "$installed")" 2>/dev/null
installed=""

want_sites=$(jq '[.sites[] | select(.allocations > 0)] | length' "$TMP/full.json")
expect_eq "reference: sites with allocations" "$want_sites" 14
expect_eq "reference: site_malloc_100 is symbolized with its line" \
	"$(jq -r '.sites[] | select(.function == "site_malloc_100") | "\(.file | sub(".*/"; "")):\(.line)"' "$TMP/full.json")" \
	"alloc_patterns.c:$(grep -n '^NOINLINE void \*site_malloc_100' "$SRC" | cut -d: -f1)"

for v in dynsym mini link link_sub buildid nosym; do
	expect_eq "$v: totals" \
		"$(jq -c '.totals | del(.peak_time_ns)' "$TMP/$v.json")" \
		"$(jq -c '.totals | del(.peak_time_ns)' "$TMP/full.json")"
done

# names only: .dynsym and MiniDebugInfo carry no lines
for v in dynsym mini; do
	sites_of "$TMP/full.json" full false | sed 's/\bfull\b/'"$v"'/g' >"$TMP/want"
	sites_of "$TMP/$v.json" "$v" false >"$TMP/got"
	if diff -u "$TMP/want" "$TMP/got" >"$TMP/diff"; then
		ok "$v: every site and every frame of the program named as in the unstripped build"
	else
		not_ok "$v: sites differ from the unstripped build: $(head -c 600 "$TMP/diff" | tr '\n' '|')"
	fi
done

# names, files and lines from the separate debug file
for v in link link_sub buildid; do
	sites_of "$TMP/full.json" full true >"$TMP/want"
	sites_of "$TMP/$v.json" "$v" true >"$TMP/got"
	if diff -u "$TMP/want" "$TMP/got" >"$TMP/diff"; then
		ok "$v: every site and frame of the program has the unstripped build's function, file and line"
	else
		not_ok "$v: sites differ from the unstripped build: $(head -c 600 "$TMP/diff" | tr '\n' '|')"
	fi
done

# no symbols: module+offset names only, one per site, the same figures
json=$TMP/nosym.json
expect_eq "nosym: sites with allocations" "$(jq '[.sites[] | select(.allocations > 0)] | length' "$json")" 14
bad=$(jq -r '.sites[] | select(.allocations > 0) | .name | select(test("^nosym\\+0x[0-9a-f]+$") | not)' "$json")
expect_eq "nosym: site names that are not nosym+0xOFF" "$bad" ""
named=$(jq -r "$NESTED"' | [.sites[].stacks[].frames[] | select((.module // "") | endswith("/nosym")) |
	select(.function != null or .file != null)] | length' "$json")
expect_eq "nosym: frames of the program with a function or file name" "$named" 0
expect_eq "nosym: distinct site names" \
	"$(jq -r '.sites[] | select(.allocations > 0) | .name' "$json" | sort -u | wc -l)" 14
jq -r ".sites[] | select(.allocations > 0) | $SITE_FIGURES" "$TMP/full.json" | sort >"$TMP/want"
jq -r ".sites[] | select(.allocations > 0) | $SITE_FIGURES" "$json" | sort >"$TMP/got"
if diff -u "$TMP/want" "$TMP/got" >"$TMP/diff"; then
	ok "nosym: the 14 sites have the reference's figures"
else
	not_ok "nosym: site figures differ: $(head -c 400 "$TMP/diff" | tr '\n' '|')"
fi
# the text report names them the same way
timeout -k 5 "$LIMIT" "$MEMTRACE" report "$TMP/nosym.mtrace" >"$TMP/nosym.txt" 2>&1
if grep -q 'nosym+0x[0-9a-f]' "$TMP/nosym.txt"; then
	ok "nosym: the text report shows nosym+0xOFF"
else
	not_ok "nosym: the text report has no nosym+0xOFF name"
fi
finish
