#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace export on a fresh recording of alloc_patterns (its figures are in
# tests/progs/alloc_patterns.c): the pprof profile decodes with protoc, carries
# the four heap sample types, and per site the same numbers as report --json;
# the folded stacks have the expected lines and add up to the report's totals.
source "$(dirname "$0")/lib.sh"
plan 78

trace=$TMP/ap.mtrace
json=$TMP/ap.json
proto_dir=$(dirname "$0")

record_cmd "$trace" "$PROGS/alloc_patterns"
expect_eq "record exit status" "$?" 0
report_json "$trace" "$json"
expect_eq "report --json exit status" "$?" 0

# --- pprof ------------------------------------------------------------------
export_cmd() { timeout -k 5 "$LIMIT" "$MEMTRACE" export "$@"; }

export_cmd --format pprof "$trace" 2>"$TMP/export.err"
expect_eq "export --format pprof exit status" "$?" 0
expect_eq "default output is FILE.pb.gz" "$(test -s "$trace.pb.gz" && echo yes)" yes
expect_eq "it is gzip" "$(gzip -t "$trace.pb.gz" 2>&1 && echo valid)" valid
gzip -dc "$trace.pb.gz" >"$TMP/profile.pb"

protoc --decode_raw <"$TMP/profile.pb" >"$TMP/raw.txt" 2>"$TMP/protoc.err"
expect_eq "protoc --decode_raw exit status" "$?" 0
# string_table (field 6) starts with "" and holds the sample types and units
expect_eq "string_table[0] is empty" "$(grep -m1 '^6: ' "$TMP/raw.txt")" '6: ""'
for s in alloc_objects alloc_space inuse_objects inuse_space count bytes space \
	site_peak_block site_malloc_100 site_leak_24 phase_allocate run_pattern main; do
	expect_eq "string table has \"$s\"" "$(grep -cx "6: \"$s\"" "$TMP/raw.txt")" 1
done
build_id=$(readelf -n "$PROGS/alloc_patterns" | awk '/Build ID/ { print $3 }')
expect_eq "mapping of alloc_patterns has its build-id $build_id" \
	"$(grep -cx "6: \"$build_id\"" "$TMP/raw.txt")" 1

# Decoded with profile.proto's field numbers (tests/e2e/pprof_subset.proto):
# one line per sample: leaf function, then the four values.
protoc --proto_path="$proto_dir" --decode=perftools.profiles.Profile pprof_subset.proto \
	<"$TMP/profile.pb" >"$TMP/typed.txt" 2>"$TMP/protoc.err"
expect_eq "protoc --decode=perftools.profiles.Profile exit status" "$?" 0
awk '
	/^[a-z_]+ \{$/ { sect = $1; nloc = 0; nval = 0; first = "" }
	sect == "sample" && /^  location_id:/ { if (nloc++ == 0) leaf = $2 }
	sect == "sample" && /^  value:/ { v[nval++] = $2 }
	sect == "location" && /^  id:/ { lid = $2 }
	sect == "location" && /^    function_id:/ { if (first == "") first = $2 }
	sect == "function" && /^  id:/ { fid = $2 }
	sect == "function" && /^  name:/ { fname[fid] = $2 }
	/^string_table:/ { s = $0; sub(/^string_table: "/, "", s); sub(/"$/, "", s); str[nstr++] = s }
	/^}$/ {
		if (sect == "sample") samples[nsamples++] = leaf " " v[0] " " v[1] " " v[2] " " v[3]
		if (sect == "location") locfn[lid] = first
		sect = ""
	}
	END {
		for (i = 0; i < nsamples; i++) {
			split(samples[i], f, " ")
			print str[fname[locfn[f[1]]]], f[2], f[3], f[4], f[5]
		}
	}' "$TMP/typed.txt" >"$TMP/samples.txt"
sum_col() { awk -v c="$1" '{ s += $c } END { print s + 0 }' "$TMP/samples.txt"; }
expect_eq "alloc_objects add up to totals.allocations" "$(sum_col 2)" "$(jqr "$json" .totals.allocations)"
expect_eq "alloc_space adds up to totals.allocated_bytes" "$(sum_col 3)" "$(jqr "$json" .totals.allocated_bytes)"
expect_eq "inuse_objects add up to totals.leaked_allocations" "$(sum_col 4)" "$(jqr "$json" .totals.leaked_allocations)"
expect_eq "inuse_space adds up to totals.leaked_bytes" "$(sum_col 5)" "$(jqr "$json" .totals.leaked_bytes)"
while read -r fn allocs bytes leaked leaked_bytes; do
	expect_eq "pprof samples of $fn (objects, space, inuse objects, inuse space)" \
		"$(awk -v f="$fn" '$1 == f { a += $2; b += $3; c += $4; d += $5 }
			END { print a + 0, b + 0, c + 0, d + 0 }' "$TMP/samples.txt")" \
		"$allocs $bytes $leaked $leaked_bytes"
done <<'TABLE'
site_peak_block   8  8388608  0  0
site_pvalloc      1  4096     1  4096
site_malloc_100   10 1000     1  100
site_leak_24      3  72       3  72
site_temporary    7  336      0  0
TABLE
expect_eq "period_type is space/bytes, period 1" \
	"$(awk '/^period_type \{/ { p = 1; next } p && /^}/ { p = 0 } p { printf "%s ", $2 } /^period:/ { print $2 }' \
		"$TMP/typed.txt")" "7 4 1"

# never over an existing file; -o - writes to stdout
before=$(md5sum <"$trace.pb.gz")
export_cmd --format pprof "$trace" 2>"$TMP/err"
expect_one_error "export onto an existing FILE.pb.gz" "$?" "$TMP/err"
expect_eq "the existing file is untouched" "$(md5sum <"$trace.pb.gz")" "$before"
export_cmd --format pprof -o - "$trace" 2>"$TMP/err" | gzip -dc >"$TMP/stdout.pb"
expect_eq "-o - writes the same profile to stdout" "$(cmp -s "$TMP/stdout.pb" "$TMP/profile.pb" && echo same)" same

# --- folded -----------------------------------------------------------------
export_cmd --format folded "$trace" >"$TMP/folded.txt" 2>"$TMP/err"
expect_eq "export --format folded exit status" "$?" 0
expect_eq "folded: site_peak_block's line" \
	"$(grep -c ';main;run_pattern;phase_peak;site_peak_block 8388608$' "$TMP/folded.txt")" 1
expect_eq "folded: site_malloc_100's line" \
	"$(grep -c ';main;run_pattern;phase_allocate;site_malloc_100 1000$' "$TMP/folded.txt")" 1
expect_eq "folded: every line is 'frames value'" \
	"$(grep -cvE '^[^ ].* [1-9][0-9]*$' "$TMP/folded.txt")" 0
fsum() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
expect_eq "folded allocated adds up to totals.allocated_bytes" "$(fsum "$TMP/folded.txt")" \
	"$(jqr "$json" .totals.allocated_bytes)"
while read -r metric total; do
	export_cmd --format folded --metric "$metric" -o "$TMP/folded.$metric" "$trace" 2>"$TMP/err"
	expect_eq "folded --metric $metric exit status" "$?" 0
	expect_eq "folded --metric $metric adds up to totals.$total" "$(fsum "$TMP/folded.$metric")" \
		"$(jqr "$json" ".totals.$total")"
done <<'TABLE'
leaked              leaked_bytes
peak                peak_bytes
allocations         allocations
leaked-allocations  leaked_allocations
TABLE
expect_eq "folded --metric leaked: site_leak_24" \
	"$(grep -c ';phase_peak;site_leak_24 72$' "$TMP/folded.leaked")" 1
expect_eq "folded --metric leaked leaves out stacks with nothing leaked" \
	"$(grep -c 'site_peak_block\|site_temporary' "$TMP/folded.leaked")" 0
expect_eq "folded --metric peak: site_peak_block" \
	"$(grep -c ';site_peak_block 8388608$' "$TMP/folded.peak")" 1

# --- pprof labels: thread and zone (tests/progs/marks: named threads, zones) -------
record_cmd "$TMP/marks.mtrace" "$PROGS/marks"
expect_eq "record marks: exit status" "$?" 0
report_json "$TMP/marks.mtrace" "$TMP/marks.json"
export_cmd --format pprof -o "$TMP/marks.pb.gz" "$TMP/marks.mtrace" 2>/dev/null
gzip -dc "$TMP/marks.pb.gz" | protoc --proto_path="$proto_dir" --decode=perftools.profiles.Profile \
	pprof_subset.proto >"$TMP/marks.txt" 2>"$TMP/protoc.err"
expect_eq "labelled profile decodes" "$?" 0
# one line per sample: alloc_space thread_id thread_name zone ("-" for none)
awk '
	/^string_table:/ { s = $0; sub(/^string_table: "/, "", s); sub(/"$/, "", s); str[nstr++] = s }
	/^sample \{$/ { insample = 1; nval = 0; tid = "-"; tname = "-"; zone = "-" }
	insample && /^  value:/ { if (nval++ == 1) space = $2 }
	insample && /^  label \{$/ { key = ""; sv = ""; nv = "" }
	insample && /^    key:/ { key = $2 }
	insample && /^    str:/ { sv = $2 }
	insample && /^    num:/ { nv = $2 }
	insample && /^  \}$/ { lab[key] = sv != "" ? "s" sv : "n" nv }
	/^\}$/ && insample { out[n++] = space; for (k in lab) out[n - 1] = out[n - 1] " " k "=" lab[k]; delete lab; insample = 0 }
	END {
		for (i = 0; i < n; i++) {
			m = split(out[i], f, " "); tid = "-"; tname = "-"; zone = "-"
			for (j = 2; j <= m; j++) {
				split(f[j], kv, "="); v = substr(kv[2], 2)
				if (str[kv[1]] == "thread_id") tid = v
				if (str[kv[1]] == "thread_name") tname = str[v]
				if (str[kv[1]] == "zone") zone = str[v]
			}
			print f[1], tid, tname, zone
		}
	}' "$TMP/marks.txt" >"$TMP/labels.txt"
expect_eq "every sample has a thread_id label" "$(awk '$2 == "-"' "$TMP/labels.txt" | wc -l)" 0
for z in update physics job render shutdown; do
	expect_eq "zone label $z: alloc_space = the report's exclusive bytes of $z" \
		"$(awk -v z="$z" '$4 == z { s += $1 } END { print s + 0 }' "$TMP/labels.txt")" \
		"$(jq --arg z "$z" '.zones[] | select(.name == $z) | .allocated_bytes' "$TMP/marks.json")"
done
expect_eq "thread_name labels: main and the two workers" \
	"$(awk '$3 != "-" { print $3 }' "$TMP/labels.txt" | sort -u | tr '\n' ' ')" "main worker-0 worker-1 "
expect_eq "zone job: worker-1 allocated twice what worker-0 did (32 vs 64 bytes a block)" \
	"$(awk '$4 == "job" { s[$3] += $1 } END { print s["worker-1"] / s["worker-0"] }' "$TMP/labels.txt")" 2
expect_eq "labelled samples still add up to the report's allocated bytes" \
	"$(awk '{ s += $1 } END { print s + 0 }' "$TMP/labels.txt")" "$(jqr "$TMP/marks.json" .totals.allocated_bytes)"
comments=$(awk '/^comment:/ { print $2 }' "$TMP/marks.txt" | while read -r i; do
	awk -v i="$i" '/^string_table:/ { if (n++ == i) { sub(/^string_table: /, ""); print } }' "$TMP/marks.txt"
done)
expect_eq "a comment holds the command line" "$(grep -c "^\"memtrace: .*/marks\"$" <<<"$comments")" 1
expect_eq "default_sample_type is inuse_space" \
	"$(awk '/^default_sample_type:/ { d = $2 } /^string_table:/ { s[n++] = $2 } END { print s[d] }' "$TMP/marks.txt")" '"inuse_space"'

# --- errors: one line, non-zero ---------------------------------------------
echo "not a trace" >"$TMP/not-a-trace"
export_cmd --format pprof -o "$TMP/x.pb.gz" "$TMP/not-a-trace" 2>"$TMP/err"
expect_one_error "export --format pprof of a non-trace file" "$?" "$TMP/err"
expect_eq "no output file is left behind" "$(test -e "$TMP/x.pb.gz" && echo exists)" ""
export_cmd --format folded "$TMP/not-a-trace" >/dev/null 2>"$TMP/err"
expect_one_error "export --format folded of a non-trace file" "$?" "$TMP/err"
export_cmd --format folded "$TMP/missing.mtrace" >/dev/null 2>"$TMP/err"
expect_one_error "export of a missing file" "$?" "$TMP/err"
export_cmd --format svg "$trace" 2>"$TMP/err"
expect_one_error "export --format svg (unknown)" "$?" "$TMP/err"
export_cmd --format folded --metric bytes "$trace" 2>"$TMP/err"
expect_one_error "export --metric bytes (unknown)" "$?" "$TMP/err"
export_cmd "$trace" 2>"$TMP/err"
expect_one_error "export without --format" "$?" "$TMP/err"
finish
