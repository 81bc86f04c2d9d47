#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian's redis-server (jemalloc, no frame pointers, no .symtab; it exports
# its functions in .dynsym) attached with -p under redis-benchmark on
# 127.0.0.1, a bounded number of requests: whole stacks reach the command
# loop, and with --alloc-fn for its zmalloc family the top site by bytes is
# a redis function, not a wrapper.
. "$(dirname "$0")/lib.sh"
plan 12

port=16379
cd "$TMP" || exit 1
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
	--dir "$TMP" >"$TMP/redis.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$TMP"' EXIT
for ((i = 0; i < 100; i++)); do
	[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ] && break
	sleep 0.1
done
expect_eq "redis-server answers" "$(redis-cli -h 127.0.0.1 -p "$port" ping)" PONG

timeout -k 5 120 "$MEMTRACE" record -p "$server" -o redis.mtrace 2>"$TMP/err" &
recorder=$!
if wait_for_line "$TMP/err" "memtrace: attached" 20; then ok "attached to redis-server"; else not_ok "never attached: $(cat "$TMP/err")"; fi
timeout 120 redis-benchmark -h 127.0.0.1 -p "$port" -n 4000 -c 4 -t set,get,lpush,lpop -q >"$TMP/bench.out" 2>&1
expect_eq "redis-benchmark ran its requests" $? 0
kill -INT "$recorder"
wait "$recorder"
expect_eq "memtrace exit status" $? 0

report_json redis.mtrace r.json
total=$(jqr r.json .totals.allocations)
reach=$(jq "$NESTED"' | [.sites[].stacks[] | select([.frames[].function] | index("processCommand") or index("aeMain")) | .allocations] | add // 0' r.json)
if [ "$total" -gt 4000 ] && [ $((reach * 100)) -ge $((total * 90)) ]; then
	ok "$reach of $total allocations have a stack that reaches processCommand or aeMain (>= 90%)"
else
	not_ok "$reach of $total allocations reach processCommand or aeMain; want >= 90%"
fi

timeout -k 5 "$LIMIT" "$MEMTRACE" report --json --alloc-fn 'zmalloc*' --alloc-fn 'ztrymalloc*' \
	--alloc-fn 'zcalloc*' --alloc-fn 'zrealloc*' --alloc-fn 'ztryrealloc*' --alloc-fn 'zstrdup' \
	redis.mtrace >w.json
exe=$(readlink -f "$(command -v redis-server)") # Debian: a link to redis-check-rdb
top=$(jq -r '.sites[0] | "\(.function) \(.module)"' w.json)
case $top in
z*alloc* | null* | *" null") not_ok "with --alloc-fn the top site is still a wrapper: $top" ;;
*" $exe") ok "with --alloc-fn the top site by bytes is a redis function: $top" ;;
*) not_ok "with --alloc-fn the top site is not in $exe: $top" ;;
esac
timeout -k 5 "$LIMIT" "$MEMTRACE" report redis.mtrace >r.txt
expect_eq "the text report suggests --alloc-fn for the wrapper" \
	"$(grep -c "^zmalloc looks like an allocation wrapper: try --alloc-fn 'zmalloc\*'$" r.txt)" 1
# --- --rss under load: resident memory added up, against the kernel's RSS
timeout -k 5 120 "$MEMTRACE" record --rss -p "$server" -o rss.mtrace 2>"$TMP/rss.err" &
recorder=$!
expect_line "$TMP/rss.err" "memtrace: attached" 20 "--rss: never attached"
timeout 120 redis-benchmark -h 127.0.0.1 -p "$port" -n 100000 -P 16 -c 4 -t set,get,lpush -r 100000 -d 100 -q \
	>/dev/null 2>&1
kill -INT "$recorder"
wait "$recorder"
expect_eq "--rss: memtrace exit status" $? 0
report_json rss.mtrace rss.json
rss_adds_up "redis-server --rss" rss.json
expect_within_pct "redis-server: the reconciliation's total (anonymous parts, RssFile, RssShmem) against smaps_rollup's Rss at the end" \
	"$(jqr rss.json '.rss.reconciled_last | .resident_anon_bytes + .rss_file_bytes + .rss_shmem_bytes')" \
	"$(jqr rss.json '.rss.rollup_end.lines.Rss')" 2
# jemalloc's mappings were made before -p: the blocks seen in them tell them
expect_eq "redis-server: the allocator's mappings hold most of the anonymous memory (>= 80%)" \
	"$(jqr rss.json '.rss.reconciled_last | .allocator_resident_bytes * 100 >= .resident_anon_bytes * 80')" true
finish
