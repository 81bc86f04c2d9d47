#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A stripped program recorded here; its debug file only on a debuginfod
# server (Debian's debuginfod, on 127.0.0.1). The report names its sites
# (function, file:line) only when DEBUGINFOD_URLS points at the server; the
# trace keeps the build-ids and offsets that make this possible. A server
# without the file: one line says which module could not be fetched.
. "$(dirname "$0")/lib.sh"
plan 13

port=18002
cd "$TMP" || exit 1
gcc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -o full "$TOP/tests/progs/alloc_patterns.c"
mkdir srv
# Only the server has the debug file: not beside the program (libdw would find
# prog.debug there), no debuglink, nothing under /usr/lib/debug.
objcopy --only-keep-debug full srv/prog.debug
strip --strip-all -o prog full
rm full
export DEBUGINFOD_CACHE_PATH=$TMP/cache
debuginfod -F srv -p "$port" -d "$TMP/index.sqlite" >server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$TMP"' EXIT
id=$(readelf -n prog | sed -n 's/.*Build ID: //p')
# Until the server has scanned srv/; a client caches a miss, so each try starts afresh.
for ((i = 0; i < 100; i++)); do
	rm -rf "$TMP/probe-cache"
	DEBUGINFOD_CACHE_PATH=$TMP/probe-cache DEBUGINFOD_URLS=http://127.0.0.1:$port \
		debuginfod-find debuginfo "$id" >/dev/null 2>&1 && break
	sleep 0.2
done
if [ "$i" -lt 100 ]; then ok "the server has prog's debug file"; else not_ok "the server never indexed prog.debug: $(tail -3 server.log)"; fi

record_cmd t.mtrace ./prog
expect_eq "record the stripped program: exit status" $? 0
unset DEBUGINFOD_URLS
report_json t.mtrace plain.json
expect_eq "without DEBUGINFOD_URLS: no site is named" \
	"$(jq '[.sites[] | select(.function // "" | startswith("site_"))] | length' plain.json)" 0

DEBUGINFOD_URLS=http://127.0.0.1:$port timeout -k 5 "$LIMIT" "$MEMTRACE" report --json t.mtrace >named.json 2>named.err
expect_eq "with DEBUGINFOD_URLS: report exit status" $? 0
expect_alloc_patterns_sites named.json "through debuginfod"
expect_eq "with DEBUGINFOD_URLS: site_malloc_100 has its file and line" \
	"$(jq -r '[.sites[] | select(.function == "site_malloc_100")][0] | "\(.file | split("/") | last) \(.line > 0)"' named.json)" \
	"alloc_patterns.c true"
expect_eq "with DEBUGINFOD_URLS: nothing said about prog" "$(grep -c '(prog[,)]' named.err)" 0

DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_CACHE_PATH=$TMP/cache2 timeout -k 5 "$LIMIT" "$MEMTRACE" report --json t.mtrace >none.json 2>none.err
expect_eq "a server that is not there: report exit status" $? 0
expect_eq "a server that is not there: one line naming the module" \
	"$(grep -c '^memtrace: debuginfod had no debug info for [0-9]* modules\? (.*prog.*); their frames keep module+offset$' none.err)" 1
expect_eq "a server that is not there: sites still counted" "$(jqr none.json .totals.allocations)" 56
# memtrace top names the live sites through the same server, asked once per module
DEBUGINFOD_URLS=http://127.0.0.1:$port timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json --top 100 -- ./prog \
	>top.jsonl 2>top.err
expect_eq "top with DEBUGINFOD_URLS: exit status" $? 0
expect_eq "top with DEBUGINFOD_URLS: the final snapshot names site_malloc_100 with its file" \
	"$(tail -1 top.jsonl | jq -r '[.sites[] | select(.function == "site_malloc_100")][0] | "\(.file | split("/") | last) \(.allocations)"')" \
	"alloc_patterns.c 10"
DEBUGINFOD_URLS=http://127.0.0.1:1 DEBUGINFOD_CACHE_PATH=$TMP/cache3 timeout -k 5 "$LIMIT" "$MEMTRACE" top --batch --json -- ./prog \
	>top-none.jsonl 2>top-none.err
expect_eq "top, a server that is not there: one line naming the module" \
	"$(grep -c '^memtrace: debuginfod had no debug info for [0-9]* modules\? (.*prog.*); their frames keep module+offset$' top-none.err)" 1
finish
