#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make agent-cost (and make bench): what each target costs `memtrace agent`
# (issue 45): N copies of tests/progs/leak_rate (100 allocations a second
# each) given as -p to one agent, under its default --budget 1 and under
# --exact, for N in AGENT_COST_TARGETS (default 1 16 64). Once every one is
# attached, and AGENT_COST_SETTLE seconds (default 5) later:
#   kernel memory  the memlock of every BPF map and program the agent holds
#                  (/proc/AGENT/fdinfo), the rings (ring buffers and lanes)
#                  apart, and the part that is per CPU (rings, lanes,
#                  per-CPU arrays: what a host with more CPUs multiplies;
#                  not a ring that all of a target's CPUs share)
#   descriptors    /proc/AGENT/fd, and of them the BPF links (a target's
#                  probes: what is left of its descriptors)
#   agent RSS      VmRSS
# The agent runs with systemd's default soft limit of 1024 descriptors
# (ulimit -Sn 1024), as under its unit. A row whose agent failed says what
# it said. Targets: 64 targets in <= 128 MiB of kernel memory and <= 256
# descriptors; RSS <= 40 MB with one target, <= 160 MB with 64.
# A benchmark, not a test: figures and PASS/MISS, non-zero only when
# something could not run.
set -u -o pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
MEMTRACE=$BUILD/memtrace
COUNTS=${AGENT_COST_TARGETS:-1 16 64}
SETTLE=${AGENT_COST_SETTLE:-5}
MODES=${AGENT_COST_MODES:---budget 1:--exact}
PORT=16491

die() {
	echo "bench/agent_cost: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "attaches BPF programs: run it as root"
make -s all progs >/dev/null 2>&1 || die "failed to build memtrace and tests/progs"
mkdir -p "$BUILD/bench"
MB=$BUILD/bench/malloc_bench # host_hit times the uprobe hit with it
[ -x "$MB" ] || ${CC:-gcc} -O2 -g -fno-omit-frame-pointer -pthread -o "$MB" bench/malloc_bench.c ||
	die "failed to build $MB"
WORK=$(mktemp -d "$BUILD/bench/agent_cost.XXXXXX") || die "no work directory"
agent="" targets=""
stop_all() {
	[ -n "$agent" ] && kill -INT "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
	agent=""
	for p in $targets; do kill "$p" 2>/dev/null; done
	for p in $targets; do wait "$p" 2>/dev/null; done
	targets=""
}
cleanup() {
	stop_all
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. bench/common.sh
host_hit

# kmem PID: "total rings percpu unwind progs" bytes of the BPF objects PID
# holds, each once however many descriptors it has: the memlock of each
# map and program. The maps in its arrays of maps too (bpftool reads their
# ids): a target's rings and lanes are held there and by their mappings,
# without a descriptor. rings: ring buffers and lanes (one-entry mmapable
# arrays); per CPU: those and the per-CPU arrays and hashes; unwind: the
# unwind rows (mmapable arrays of 16-byte rows)
kmem() {
	python3 - "$1" <<'PY'
import glob, json, subprocess, sys
seen, tot = set(), dict(total=0, rings=0, percpu=0, unwind=0, progs=0)
def add(oid, m, t, fl, n, vs):
    if oid in seen:
        return
    seen.add(oid)
    tot['total'] += m
    if oid[0] == 'p':
        tot['progs'] += m
        return
    if t == 27 or (t == 2 and fl & 0x400 and n == 1 and m >= 65536):
        tot['rings'] += m
        if inner.get(oid[1:], 1) == 1:  # a ring in several CPUs' slots is one for them all
            tot['percpu'] += m
    elif t in (5, 6, 10):
        tot['percpu'] += m
    elif t == 2 and fl & 0x400 and vs == 16:
        tot['unwind'] += m
outer, inner = [], {}  # inner: map id -> the outer arrays' slots holding it
for f in glob.glob('/proc/%s/fdinfo/*' % sys.argv[1]):
    try:
        kv = dict(l.split(':', 1) for l in open(f).read().splitlines() if ':' in l)
    except OSError:
        continue
    kv = {k.strip(): v.strip() for k, v in kv.items()}
    if 'memlock' not in kv:
        continue
    if 'prog_id' in kv:
        add('p' + kv['prog_id'], int(kv['memlock']), 0, 0, 0, 0)
    elif 'map_id' in kv:
        t = int(kv['map_type'])
        add('m' + kv['map_id'], int(kv['memlock']), t, int(kv['map_flags'], 16), int(kv['max_entries']),
            int(kv['value_size']))
        if t in (12, 13):  # array and hash of maps
            outer.append(kv['map_id'])
types = {'ringbuf': 27, 'array': 2, 'percpu_array': 6, 'percpu_hash': 5, 'lru_percpu_hash': 10}
for o in outer:
    try:
        for e in json.loads(subprocess.run(['bpftool', '-j', 'map', 'dump', 'id', o], capture_output=True,
                                           text=True).stdout or '[]'):
            v = e.get('value')
            if isinstance(v, list) and len(v) == 4:
                i = str(int(''.join(x[2:] for x in reversed(v)), 16))
                inner[i] = inner.get(i, 0) + 1
    except (OSError, ValueError):
        pass
if inner:
    try:
        maps = json.loads(subprocess.run(['bpftool', '-j', 'map', 'show'], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        maps = []
    for m in maps:
        if str(m.get('id')) in inner:
            add('m%s' % m['id'], int(m.get('bytes_memlock', 0)), types.get(m.get('type'), 0), int(m.get('flags', 0)),
                int(m.get('max_entries', 0)), int(m.get('bytes_value', 0)))
print(tot['total'], tot['rings'], tot['percpu'], tot['unwind'], tot['progs'])
PY
}
mib() { calc "$1 / 1048576" 1; }

echo "agent cost bench: $(nproc) CPUs, kernel $(uname -r), $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo); host uprobe hit $HIT us"
echo "  N copies of tests/progs/leak_rate as -p under one agent (soft limit of 1024 descriptors), measured $SETTLE s after the last attached:"
printf '  %-10s %4s  %10s %8s %8s %8s %8s  %6s %6s  %7s  %s\n' mode N "kernel MiB" rings "per CPU" unwind programs fds links \
	"RSS MB" verdict
IFS=: read -r -a modes <<<"$MODES"
for mode in "${modes[@]}"; do
	for n in $COUNTS; do
		args=()
		for _ in $(seq "$n"); do
			"$BUILD/progs/leak_rate" 600 &
			targets="$targets $!"
			args+=(-p "$!")
		done
		(ulimit -Sn 1024 && exec "$MEMTRACE" agent "${args[@]}" $mode --listen "127.0.0.1:$PORT" -d 900) \
			2>"$WORK/agent.err" &
		agent=$!
		attached=0
		for _ in $(seq $((n * 20 + 200))); do
			attached=$(grep -c '^memtrace: attached to PID ' "$WORK/agent.err")
			[ $((attached + $(grep -c '^memtrace: failed' "$WORK/agent.err"))) -ge "$n" ] && break
			kill -0 "$agent" 2>/dev/null || break
			sleep 0.1
		done
		if [ "$attached" -lt "$n" ]; then
			printf '  %-10s %4d  only %d attached (%d failed): %s\n' "$mode" "$n" "$attached" \
				"$(grep -c '^memtrace: failed' "$WORK/agent.err")" "$(grep -m1 '^memtrace: failed' "$WORK/agent.err" | cut -c1-140)"
			stop_all
			continue
		fi
		sleep "$SETTLE"
		read -r total rings percpu unwind progs <<<"$(kmem "$agent")"
		fds=$(ls "/proc/$agent/fd" | wc -l)
		links=$(ls -l "/proc/$agent/fd" | grep -c 'anon_inode:bpf_link$')
		rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
		v=""
		[ "$n" = 1 ] && v="RSS $(verdict "$(calc "$rss / 1000" 1)" 40)"
		[ "$n" = 64 ] && v="kernel $(verdict "$(mib "$total")" 128), fds $(verdict "$fds" 256), RSS $(verdict "$(calc "$rss / 1000" 1)" 160)"
		printf '  %-10s %4d  %10s %8s %8s %8s %8s  %6d %6d  %7s  %s\n' "$mode" "$n" "$(mib "$total")" "$(mib "$rings")" \
			"$(mib "$percpu")" "$(mib "$unwind")" "$(mib "$progs")" "$fds" "$links" "$(calc "$rss / 1000" 1)" "$v"
		stop_all
	done
done
