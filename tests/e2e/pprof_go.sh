#!/usr/bin/env bash
# The pprof export as Go's own pprof reads it (Debian's golang-go): -tags lists
# the thread and zone labels of tests/progs/marks (named threads, zones),
# -sample_index picks each sample type, inuse_space is the default, and -list
# finds a site's source without -source_path, run from a directory where a
# relative path would not resolve (the profile names files absolutely).
source "$(dirname "$0")/lib.sh"
plan 20

if ! command -v go >/dev/null; then
	not_ok "go is installed (golang-go, tests/install-deps.sh)"
	skip_rest "no go tool pprof"
	finish
fi
export HOME=$TMP GOCACHE=$TMP/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local # no network, no user state
pprof() { (cd / && timeout -k 5 "$LIMIT" go tool pprof "$@" 2>"$TMP/pprof.err"); }

record_cmd "$TMP/marks.mtrace" "$PROGS/marks"
expect_eq "record marks: exit status" "$?" 0
timeout -k 5 "$LIMIT" "$MEMTRACE" export --format pprof -o "$TMP/marks.pb.gz" "$TMP/marks.mtrace" 2>/dev/null
expect_eq "export pprof: exit status" "$?" 0
report_json "$TMP/marks.mtrace" "$TMP/marks.json"

pprof -tags -sample_index=alloc_space "$TMP/marks.pb.gz" >"$TMP/tags.txt"
expect_eq "go tool pprof -tags: exit status" "$?" 0
for name in main worker-0 worker-1; do
	expect_eq "-tags lists thread_name $name" "$(grep -c "^ *[0-9.]*[kKMG]\?B ([ 0-9.]*%): $name$" "$TMP/tags.txt")" 1
done
for zone in update physics job render shutdown; do
	expect_eq "-tags lists zone $zone" "$(grep -c "^ *[0-9.]*[kKMG]\?B ([ 0-9.]*%): $zone$" "$TMP/tags.txt")" 1
done
expect_eq "-tags has a thread_id tag" "$(grep -c '^ *thread_id:' "$TMP/tags.txt")" 1
# pprof -traces prints each sample's labels; the zone "job" holds worker-0's 384 and worker-1's 768 bytes
pprof -traces -sample_index=alloc_space -tagfocus=zone=job "$TMP/marks.pb.gz" >"$TMP/job.txt"
expect_eq "-tagfocus=zone=job: the job zone's bytes, summed" \
	"$(awk '/^-+\+-+$/ { s = 1; next } s && /^ +[0-9]+B? / { v = $1; sub(/B$/, "", v); t += v; s = 0 } END { print t + 0 }' "$TMP/job.txt")" \
	"$(jq '.zones[] | select(.name == "job") | .allocated_bytes' "$TMP/marks.json")"

pprof -top -nodecount=1 "$TMP/marks.pb.gz" >"$TMP/default.txt"
expect_eq "the default sample type is inuse_space" "$(grep -c '^Type: inuse_space$' "$TMP/default.txt")" 1
for t in alloc_objects alloc_space inuse_objects; do
	pprof -top -nodecount=1 -sample_index=$t "$TMP/marks.pb.gz" >"$TMP/t.txt"
	expect_eq "-sample_index=$t" "$(grep -c "^Type: $t$" "$TMP/t.txt")" 1
done
expect_eq "comments carry the command line" "$(pprof -comments "$TMP/marks.pb.gz" | grep -c "^memtrace: .*/marks$")" 1

pprof -list='^site_update$' -sample_index=alloc_space "$TMP/marks.pb.gz" >"$TMP/list.txt"
expect_eq "-list site_update: found its source without -source_path" \
	"$(grep -c "ROUTINE =* site_update in $TOP/tests/progs/marks.c" "$TMP/list.txt")" 1
# two calls of 100 bytes in each of 4 frames
expect_eq "-list site_update: the malloc line with its 800 bytes" \
	"$(grep -c '^ *800B \+800B \+[0-9]\+:.*malloc(100)' "$TMP/list.txt")" 1
finish
