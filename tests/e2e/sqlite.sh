#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian's sqlite3 (stripped, no frame pointers, allocating through
# sqlite3Malloc in libsqlite3) running a script: the stacks are whole, from
# the allocator to the sqlite3 executable's main loop, for at least 95% of
# allocations (with frame pointers alone every stack was one frame long);
# the top 10 call paths by allocations and by bytes are heaptrack's, with
# the same figures.
. "$(dirname "$0")/lib.sh"
plan 17

cd "$TMP" || exit 1
cat >script.sql <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5000)
INSERT INTO t SELECT x, printf('%032x', x * 2654435761), x * 1.5 FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(c) FROM t WHERE b LIKE 'A%';
SELECT b FROM t ORDER BY b LIMIT 3;
SQL
timeout -k 5 "$LIMIT" "$MEMTRACE" record ${RECORD_FLAGS:-} -o sq.mtrace -- sqlite3 :memory: <script.sql >out 2>err
expect_eq "sqlite3 under memtrace: exit status" $? 0
expect_eq "sqlite3 under memtrace: its output" "$(head -n1 out | cut -d'|' -f1 | grep -c '^[0-9]')" 1
report_json sq.mtrace sq.json
exe=$(readlink -f "$(command -v sqlite3)")
total=$(jqr sq.json .totals.allocations)
reach=$(jq --arg exe "$exe" "$NESTED"' | [.sites[].stacks[] | select([.frames[].module] | index($exe)) | .allocations] | add // 0' sq.json)
if [ "$total" -gt 10000 ] && [ $((reach * 100)) -ge $((total * 95)) ]; then
	ok "$reach of $total allocations have a stack that reaches $exe (>= 95%)"
else
	not_ok "$reach of $total allocations reach $exe; want >= 95%"
fi
expect_eq "the wrapper is named in the report's hint" \
	"$(timeout -k 5 "$LIMIT" "$MEMTRACE" report sq.mtrace | grep -c "^sqlite3Malloc looks like an allocation wrapper")" 1
timeout -k 5 "$LIMIT" "$MEMTRACE" report --json --alloc-fn 'sqlite3Malloc*' --alloc-fn 'sqlite3Realloc*' sq.mtrace >w.json
expect_eq "without --alloc-fn the top site is the helper sqlite3Malloc calls" \
	"$(jq -r "$NESTED"' | .sites[0].stacks[0].frames[1].function' sq.json)" sqlite3Malloc
expect_eq "with --alloc-fn no site has sqlite3Malloc in its first two frames" \
	"$(jq "$NESTED"' | [.sites[].stacks[].frames[0:2][].function | select(. == "sqlite3Malloc")] | length' w.json)" 0
expect_eq "with --alloc-fn the allocations are all still there" "$(jqr w.json .totals.allocations)" "$total"
# The same rule in diff and export: the helper under sqlite3Malloc is no site.
helper=$(jqr sq.json '.sites[0].name')
for opt in "" "--alloc-fn sqlite3Malloc*"; do
	n=$(timeout -k 5 "$LIMIT" "$MEMTRACE" diff --json $opt sq.mtrace sq.mtrace | jq --arg h "$helper" '[.sites[] | select(.name == $h)] | length')
	expect_eq "diff ${opt:-without --alloc-fn}: sites named $helper" "$n" "$([ -z "$opt" ] && echo 1 || echo 0)"
	n=$(timeout -k 5 "$LIMIT" "$MEMTRACE" export --format folded $opt -o - sq.mtrace | grep -c 'sqlite3Malloc')
	if [ -z "$opt" ]; then
		[ "$n" -gt 0 ] && ok "export without --alloc-fn: $n stacks show sqlite3Malloc" || not_ok "export: no stack shows sqlite3Malloc"
	else
		expect_eq "export --alloc-fn: no stack shows sqlite3Malloc" "$n" 0
	fi
done

# The top 10 call paths by allocations agree with heaptrack's on the same
# script. Both as folded stacks; a path is its named sqlite3* frames (the
# stripped binaries' other frames have no name in either tool, and heaptrack
# prints their addresses, memtrace module+offset); allocations outside
# sqlite (no such frame) are left out: heaptrack's own injection makes one.
cat >norm.awk <<'AWK'
{
	n = split($0, parts, " ")
	count = parts[n]
	m = split(substr($0, 1, length($0) - length(count) - 1), f, ";")
	path = ""
	for (i = 1; i <= m; i++) {
		name = f[i]
		sub(/ \(.*$/, "", name)
		if (name ~ /^sqlite3[A-Za-z0-9_]*$/)
			path = path (path == "" ? "" : ";") name
	}
	if (path != "")
		sum[path] += count
}
END { for (p in sum) print sum[p], p }
AWK
timeout -k 5 120 heaptrack -o "$TMP/ht" sqlite3 :memory: <script.sql >/dev/null 2>ht.err
expect_eq "heaptrack on the same script: exit status" $? 0
timeout -k 5 120 heaptrack_print -f "$TMP/ht.zst" -p 0 -a 0 -T 0 -F ht.folded --flamegraph-cost-type allocations >/dev/null 2>&1
timeout -k 5 "$LIMIT" "$MEMTRACE" export --format folded --metric allocations -o mt.folded sq.mtrace
awk -f norm.awk ht.folded | sort -k1,1nr -k2 | head -n 10 >ht.top
awk -f norm.awk mt.folded | sort -k1,1nr -k2 | head -n 10 >mt.top
expect_eq "heaptrack's top paths: 10 of them" "$(wc -l <ht.top)" 10
expect_eq "the top 10 call paths by allocations are heaptrack's, with the same counts" "$(cat mt.top)" "$(cat ht.top)"

# The same by bytes. heaptrack_print has no allocated-bytes cost type for
# folded output, so tests/e2e/heaptrack_paths.py reads heaptrack's data file
# itself (its string, ip, trace and allocation lines) into "COUNT BYTES PATH"
# per path, with norm.awk's notion of a path. Its counts must be
# heaptrack_print's own (so the parser reads the file as heaptrack does);
# then its bytes must be memtrace's exactly: both count the requested size
# (calloc nmemb*size, realloc's new size), and heaptrack's own allocations
# (its injection, in libheaptrack_preload and libunwind) have no sqlite3
# frame and are left out, so no tolerance is needed.
zstdcat "$TMP/ht.zst" | python3 "$TOP/tests/e2e/heaptrack_paths.py" >ht.paths
awk '{ c = $1; $2 = ""; sub(/  /, " "); print }' ht.paths | sort -k1,1nr -k2 | head -n 10 >ht.top.count
expect_eq "heaptrack_paths.py's top 10 by allocations are heaptrack_print's" "$(cat ht.top.count)" "$(cat ht.top)"
awk '{ $1 = ""; sub(/^ /, ""); print }' ht.paths | sort -k1,1nr -k2 | head -n 10 >ht.top.bytes
timeout -k 5 "$LIMIT" "$MEMTRACE" export --format folded --metric allocated -o mt.bytes.folded sq.mtrace
awk -f norm.awk mt.bytes.folded | sort -k1,1nr -k2 | head -n 10 >mt.top.bytes
expect_eq "heaptrack's top paths by bytes: 10 of them" "$(wc -l <ht.top.bytes)" 10
expect_eq "the top 10 call paths by bytes are heaptrack's, with the same byte totals" "$(cat mt.top.bytes)" "$(cat ht.top.bytes)"
finish
