#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Debian's PostgreSQL 15 (no frame pointers, a backend forked per
# connection) started on 127.0.0.1 with its own data directory, its
# postmaster recorded with -p --follow-children while pgbench -C opens a
# connection, so a new backend, for every transaction: pgbench must run all
# its transactions (a backend held for seconds makes clients time out), every
# backend (by the pid postgres logs when it takes a connection, not by what
# memtrace unwound) gets a trace of its own, and the allocations of each
# backend's trace have stacks that reach PostgresMain or its callers. How much
# throughput is kept is a benchmark (bench/pgbench.sh), not a check here.
. "$(dirname "$0")/lib.sh"
plan 16

PGBIN=/usr/lib/postgresql/15/bin
port=15433
clients=2
per_client=15
data=$TMP/pg
chmod 755 "$TMP"
mkdir -p "$data" && chown postgres: "$data"
as_pg() { runuser -u postgres -- "$@"; }

if ! as_pg "$PGBIN/initdb" -D "$data/db" -A trust >"$TMP/initdb.log" 2>&1; then
	not_ok "initdb failed: $(tail -3 "$TMP/initdb.log" | tr '\n' '|')"
	fail_rest "no postgres to record"
	finish
fi
# Each backend logs its own pid when it takes a connection: which processes
# are backends comes from postgres, not from what memtrace unwound.
as_pg "$PGBIN/postgres" -D "$data/db" -p "$port" -k "$data" -c listen_addresses=127.0.0.1 \
	-c shared_buffers=16MB -c log_connections=on -c "log_line_prefix=%p " >"$TMP/pg.log" 2>&1 &
server=$!
postmaster=""
# runuser passes no signal on: stop the postmaster itself (fast shutdown).
stop_pg() {
	[ -n "$postmaster" ] && kill -INT "$postmaster" 2>/dev/null
	timeout 30 tail --pid="$server" -f /dev/null
	rm -rf "$TMP"
}
trap stop_pg EXIT
for ((i = 0; i < 100; i++)); do
	"$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" && break
	sleep 0.1
done
postmaster=$(head -n1 "$data/db/postmaster.pid" 2>/dev/null)
expect_eq "postgres answers on 127.0.0.1" "$("$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port"; echo $?)" 0
as_pg "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -i -s 1 postgres >"$TMP/init.log" 2>&1
expect_eq "pgbench -i" $? 0

cd "$TMP" || exit 1
timeout -k 5 120 "$MEMTRACE" record -p "$postmaster" --follow-children -o pg.mtrace 2>"$TMP/err" &
recorder=$!
if wait_for_line "$TMP/err" "memtrace: attached" 20; then
	ok "attached to the postmaster"
else
	not_ok "never attached: $(head -c 300 "$TMP/err")"
fi
log_from=$(($(wc -l <"$TMP/pg.log") + 1)) # the backends that connect from now on are recorded
# A connection, so a backend, per transaction; a bounded count, no clock.
timeout 120 "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U postgres -C -S -c "$clients" -t "$per_client" \
	postgres >"$TMP/bench.out" 2>&1
expect_eq "pgbench -C ran under --follow-children" $? 0
expect_eq "pgbench processed every transaction" \
	"$(awk -F': ' '/number of transactions actually processed/ { split($2, a, "/"); print a[1] }' "$TMP/bench.out")" \
	$((clients * per_client))
kill -INT "$recorder"
wait "$recorder"
expect_eq "memtrace exit status" $? 0 || tail -5 "$TMP/err" | sed 's/^/# /'

# The backends: the processes postgres says took a connection while the
# recording ran ("PID LOG:  connection authorized"), each with its trace.
backends=0 reaching=0 bad=""
for pid in $(tail -n +"$log_from" "$TMP/pg.log" | sed -n 's/^\([0-9][0-9]*\) LOG:  connection authorized: .*/\1/p' | sort -u); do
	backends=$((backends + 1))
	t=pg.$pid.mtrace
	[ -f "$t" ] || { bad="$bad $pid(no trace)"; continue; }
	report_json "$t" "$t.json" || { bad="$bad $t(report)"; continue; }
	total=$(jqr "$t.json" .totals.allocations)
	reach=$(jq "$NESTED"' | [.sites[].stacks[] | select([.frames[].function] | index("PostgresMain") or index("BackendRun") or index("BackendStartup") or index("ServerLoop") or index("PostmasterMain")) | .allocations] | add // 0' "$t.json")
	if [ "$total" -gt 0 ] && [ $((reach * 100)) -ge $((total * 90)) ]; then
		reaching=$((reaching + 1))
	else
		bad="$bad $t($reach/$total)"
	fi
done
# pgbench opens one extra connection per client for its own checks.
if [ "$backends" -ge $((clients * per_client)) ]; then
	ok "$backends backends by postgres's log (>= $((clients * per_client)) connections)"
else
	not_ok "$backends backends in postgres's log; want >= $((clients * per_client)): $(tail -n 3 "$TMP/pg.log" | tr '\n' '|')"
fi
expect_eq "backends with a trace whose allocations (>= 90%) reach PostgresMain or its callers" "$reaching${bad:+ (not:$bad)}" "$backends"
# --- --rss on one backend under load (a connection held by pgbench):
# resident memory added up, shared buffers among it, against the kernel's RSS
timeout 120 "$PGBIN/pgbench" -h 127.0.0.1 -p "$port" -U postgres -S -c 1 -T 6 postgres >"$TMP/bench2.out" 2>&1 &
bench=$!
backend=""
sleep 1 # past pgbench's own first connection, which closes at once: its client's stays
for ((i = 0; i < 100; i++)); do
	backend=$(pgrep -n -P "$postmaster" -f '^postgres: postgres postgres 127\.0\.0\.1')
	[ -n "$backend" ] && break
	sleep 0.1
done
[ -n "$backend" ] && ok "pgbench's backend: $backend" || not_ok "no backend for pgbench's connection"
timeout -k 5 60 "$MEMTRACE" record --rss -p "$backend" -d 2 -o rss.mtrace 2>"$TMP/rss.err"
expect_eq "--rss -p BACKEND -d 2: memtrace exit status" $? 0 || sed 's/^/# /' "$TMP/rss.err"
# the kernel's own counters of the backend, still serving pgbench, right after the last snapshot
cat "/proc/$backend/smaps" >rss.smaps 2>/dev/null
[ -s rss.smaps ] && ok "the backend's smaps read after the recording" || not_ok "the backend was gone before its smaps were read"
wait "$bench"
report_json rss.mtrace rss.json
rss_adds_up "postgres backend --rss" rss.json rss.smaps
expect_within_pct "postgres backend: the reconciliation's total (anonymous parts, RssFile, RssShmem) against smaps_rollup's Rss at the end" \
	"$(jqr rss.json '.rss.reconciled_last | .resident_anon_bytes + .rss_file_bytes + .rss_shmem_bytes')" \
	"$(jqr rss.json '.rss.rollup_end.lines.Rss')" 2
expect_eq "postgres backend: shared buffers it touched are resident shmem" \
	"$(jqr rss.json '.rss.reconciled_last.rss_shmem_bytes > 0')" true
finish
