#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Rust as `cargo build --release` builds it (optimized, no frame pointers,
# line tables; the machine's rustc, else Debian's), std only: whole stacks
# through the inlined alloc:: frames to main, exact figures per site, and
# the site is the program's own function, not Rust's allocation plumbing,
# which stays in the stack. Also C linked by lld, whose segments start
# mid-page as Rust's do (the mapping's load bias is found from its PT_LOAD,
# not from the segment its first page begins in).
. "$(dirname "$0")/lib.sh"
plan 14

RUSTC=$(command -v rustc || ls "$HOME/.cargo/bin/rustc" /root/.cargo/bin/rustc /usr/bin/rustc 2>/dev/null | head -n1)
if [ -z "$RUSTC" ]; then
	not_ok "no rustc: tests/install-deps.sh installs Debian's rustc where none is"
	skip_rest "no rustc"
	finish
fi
cd "$TMP" || exit 1
"$RUSTC" -C opt-level=3 -C debuginfo=1 -C force-frame-pointers=no -o rsalloc "$TOP/tests/progs/rust/rsalloc.rs" 2>rustc.err
rc=$? # before the description's own command substitution sets $?
expect_status "rsalloc builds with $("$RUSTC" --version | cut -d' ' -f1-2)" $rc 0 rustc.err
record_cmd rs.mtrace ./rsalloc
expect_eq "record -- rsalloc: exit status" $? 0
expect_eq "rsalloc's output" "$(cat "$TMP/out")" "rsalloc: 1045 64"
report_json rs.mtrace rs.json
# sites: the program's functions, exact
expect_eq "make_vec: 10 allocations of 800..872 bytes, all freed" \
	"$(jq -r '[.sites[] | select(.function == "rsalloc::make_vec")] | "\(length) \(map(.allocations) | add) \(map(.allocated_bytes) | add) \(map(.leaked_bytes) | add)"' rs.json)" "1 10 8360 0"
expect_eq "make_map: one allocation (a HashMap of 64), freed" \
	"$(jq -r '[.sites[] | select(.function == "rsalloc::make_map")] | "\(length) \(map(.allocations) | add) \(map(.leaked_bytes) | add)"' rs.json)" "1 1 0"
expect_eq "no site is Rust's plumbing (alloc::, RawVec, hashbrown, __rust_alloc)" \
	"$(jq '[.sites[].function // "" | select(test("^<?alloc::|hashbrown::|^__rust_|^__rdl_"))] | length' rs.json)" 0
# stacks: whole, the plumbing kept above the site
paths=$(jq -r "$NESTED"' | .sites[] | select(.function == "rsalloc::make_vec") | .stacks[] | [.frames[].function // "?"] | join(" < ")' rs.json)
expect_eq "make_vec's 10 stacks: plumbing, make_vec < layer < main, whole to _start" \
	"$(grep -c '^alloc::alloc::alloc < .* < rsalloc::make_vec < rsalloc::layer < rsalloc::main < .* < _start$' <<<"$paths")" 10
expect_eq "no stack is cut short" "$(jq "$NESTED"' | [.sites[].stacks[].frames[].function // "" | select(startswith("[truncated"))] | length' rs.json)" 0

# C linked by lld, no frame pointers: alloc_patterns' exact table, stacks to main
if command -v ld.lld >/dev/null && clang -O1 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls -fuse-ld=lld \
	-o ap_lld "$TOP/tests/progs/alloc_patterns.c" 2>cc.err; then
	ok "alloc_patterns built with clang and lld"
	lld_x=$(readelf -lW ap_lld | awk '$1 == "LOAD" && / R E / { print (substr($2, length($2) - 2) != "000") }')
	expect_eq "lld put the code segment mid-page (what the test is about)" "$lld_x" 1
	record_cmd ap.mtrace ./ap_lld
	expect_eq "record -- ap_lld: exit status" $? 0
	report_json ap.mtrace ap.json
	expect_alloc_patterns ap.json 0 "lld"
	expect_eq "lld: every site's stacks reach main" \
		"$(jq "$NESTED"' | [.sites[] | select(.function | startswith("site_")) | .stacks[] | [.frames[].function] | index("main") != null] | all' ap.json)" true
else
	not_ok "clang with lld (Debian's lld) could not build alloc_patterns: $(head -c 300 cc.err)"
	not_made 6 "no alloc_patterns built with lld"
fi
finish
