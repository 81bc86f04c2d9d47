# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by the bench scripts: figures and verdicts, and the host's uprobe
# hit cost, which every row is printed beside (it moves every figure), and
# Debian's redis-server under redis-benchmark for the rows that load one.
# Needs MEMTRACE, MB (build/bench/malloc_bench) and WORK set.

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"%.${2:-1}f\", $1 }"; }
verdict() { awk -v v="$1" -v l="$2" 'BEGIN { if (v <= l) print "PASS"; else printf "MISS (+%.0f%%)\n", (v / l - 1) * 100 }'; }
verdict_min() { awk -v v="$1" -v l="$2" 'BEGIN { if (v >= l) print "PASS"; else printf "MISS (-%.0f%%)\n", (1 - v / l) * 100 }'; }
# paired FILE MODE [BASE]: lines "REP MODE VALUE" in FILE; MODE's value over
# BASE's (u) in the same rep, one ratio per rep, printed "median q1 q3".
# Runs of one rep are adjacent, so a host that changes speed between reps
# (this VM's untraced redis moved from 470 k to 880 k requests/s within a
# minute) moves both sides of a ratio, not one side of a ratio of medians.
paired() {
	awk -v m="$2" -v b="${3:-u}" '{ v[$1 " " $2] = $3; reps[$1] = 1 }
		END { for (r in reps) if ((r " " b) in v && (r " " m) in v && v[r " " b] > 0) print v[r " " m] / v[r " " b] }' "$1" |
		sort -g | awk -f "$(dirname "${BASH_SOURCE[0]}")/quartiles.awk"
}
now_us() { echo $(($(date +%s%N) / 1000)); }
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$2"; }

# ns per malloc+free pair of malloc_bench, under memtrace record ARGS if given
pair_ns() {
	local line
	if [ $# = 0 ]; then
		line=$("$MB" 1 200000 2>/dev/null | grep '^malloc_bench ')
	else
		line=$("$MEMTRACE" record -o "$WORK/h.mtrace" "$@" -- "$MB" 1 200000 2>/dev/null | grep '^malloc_bench ')
		rm -f "$WORK/h.mtrace"
	fi
	field ns_per_pair "$line"
}

# Sets B (untraced), E (empty entry probes), F (entry+return) in ns per pair
# and HIT, one uprobe hit in us.
host_hit() {
	B=$(for _ in 1 2 3; do pair_ns; done | median)
	E=$(for _ in 1 2 3; do pair_ns --empty-probes=entry; done | median)
	F=$(for _ in 1 2 3; do pair_ns --empty-probes=entry+return; done | median)
	HIT=$(calc "($E - $B) / 2 / 1000" 2)
}

# redis_start PORT: Debian's redis-server on 127.0.0.1:PORT, nothing saved,
# its files in WORK; sets SERVER (the caller's cleanup stops it). 1 if it
# does not answer within 10 s.
redis_start() {
	redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$WORK" \
		>"$WORK/redis.log" 2>&1 &
	SERVER=$!
	for _ in $(seq 100); do
		[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ] && return 0
		sleep 0.1
	done
	return 1
}

# redis_rps PORT N: requests/s of redis-benchmark -P 16 over N requests of
# set, get, lpush and lpop (random keys of 10000, 100-byte values), the keys
# flushed first: the whole run's rate (N over the summed time of the tests).
redis_rps() {
	redis-cli -h 127.0.0.1 -p "$1" flushall >/dev/null
	redis-benchmark -h 127.0.0.1 -p "$1" -P 16 -t set,get,lpush,lpop -r 10000 -d 100 -n "$2" -q 2>/dev/null |
		tr '\r' '\n' | awk -v n="$2" '/requests per second/ { k++; t += n / $2 } END { if (t) printf "%.0f\n", k * n / t }'
}
