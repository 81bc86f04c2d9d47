#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# memtrace agent as a service that other local users cannot take over or
# hold: it stops within a second of SIGTERM or SIGHUP (a ?seconds=600
# profile pending included), exit status 0, its /dev/shm directory gone;
# a dead agent's directory is swept at start; 64 slow clients from one
# address neither hold a request from another nor keep their connections
# past the headers' deadline; ?seconds= profiles are capped. All traffic
# stays on 127.0.0.1 (the other address, 127.0.0.2, is loopback too).
. "$(dirname "$0")/lib.sh"
plan 53

port=16571
cd "$TMP" || exit 1
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# ms since the epoch
ms() { echo $(($(date +%s%N) / 1000000)); }

# has PATTERN FILE: yes or no
has() { if grep -q -- "$1" "$2"; then echo yes; else echo no; fi; }

# memdir PID: the directory in /dev/shm of the agent that timeout PID runs ("" if none)
memdir() { ls -d /dev/shm/memtrace-agent."$(pgrep -P "$1" -x memtrace)".* 2>/dev/null | head -n1; }

# --- a dead agent's directory is swept at start; a running one's is not
sleep 0 &
dead=$!
wait "$dead"
mkdir -m 0700 "/dev/shm/memtrace-agent.$dead.test01"
echo stale >"/dev/shm/memtrace-agent.$dead.test01/leak_rate.1.20260101T000000Z.mtrace"
timeout -k 5 30 "$MEMTRACE" agent --comm nosuch-proc --listen "127.0.0.1:$port" 2>"$TMP/a0.err" &
a0=$!
pids+=("$a0")
expect_line "$TMP/a0.err" "memtrace: agent serving" 10 "the agent never served"
if [ -e "/dev/shm/memtrace-agent.$dead.test01" ]; then
	not_ok "a dead agent's /dev/shm/memtrace-agent.$dead.test01 was left"
	rm -rf "/dev/shm/memtrace-agent.$dead.test01"
else
	ok "a dead agent's /dev/shm directory (pid $dead) swept at start"
fi
mine=$(memdir "$a0")
timeout -k 5 30 "$MEMTRACE" agent --comm nosuch-proc --listen "127.0.0.1:$((port + 1))" 2>"$TMP/a1.err" &
a1=$!
pids+=("$a1")
expect_line "$TMP/a1.err" "memtrace: agent serving" 10 "the second agent never served"
if [ -n "$mine" ] && [ -d "$mine" ]; then ok "a running agent's directory is left alone by another's start"; else not_ok "the first agent's directory '$mine' went"; fi

# --- SIGTERM and SIGHUP before any target attached: exit 0, directory gone
for sig in TERM HUP; do
	a=$a0
	[ $sig = HUP ] && a=$a1
	d=$(memdir "$a")
	kill -$sig "$a"
	wait "$a"
	expect_status "SIG$sig with no target: the agent's exit status" $? 0 "$TMP/a0.err"
	if [ -n "$d" ] && [ ! -e "$d" ]; then ok "SIG$sig with no target: its directory removed"; else not_ok "SIG$sig with no target: '$d' left"; fi
done

# --- SIGTERM and SIGHUP with a ?seconds=600 profile pending: the profile
# ends at once with what it has, the agent within a second
(exec "$PROGS/leak_rate" 120 >/dev/null 2>&1) &
lr=$!
pids+=("$lr")
for sig in TERM HUP; do
	p=$((port + 2))
	[ $sig = HUP ] && p=$((port + 3))
	timeout -k 5 120 "$MEMTRACE" agent -p "$lr" --exact --listen "127.0.0.1:$p" 2>"$TMP/s$sig.err" &
	a=$!
	pids+=("$a")
	expect_line "$TMP/s$sig.err" "memtrace: attached to PID $lr" 20 "SIG$sig: never attached"
	d=$(memdir "$a")
	curl -s -o "$TMP/d$sig.pb.gz" -w '%{http_code}' --max-time 700 "http://127.0.0.1:$p/debug/pprof/heap?seconds=600" \
		>"$TMP/d$sig.code" &
	c=$!
	sleep 1.5
	t0=$(ms)
	kill -$sig "$a"
	wait "$a"
	st=$?
	took=$(($(ms) - t0))
	expect_status "SIG$sig with ?seconds=600 pending: the agent's exit status" "$st" 0 "$TMP/s$sig.err"
	if [ "$took" -le 1500 ]; then ok "SIG$sig: the agent exited $took ms after it (<= 1500)"; else not_ok "SIG$sig: the agent took $took ms to exit (> 1500)"; fi
	if [ -n "$d" ] && [ ! -e "$d" ]; then ok "SIG$sig: its directory removed"; else not_ok "SIG$sig: '$d' left"; fi
	wait "$c"
	expect_eq "SIG$sig: the pending ?seconds=600 answered" "$(cat "$TMP/d$sig.code")" 200
	dur=$(cd / && go tool pprof -top "$TMP/d$sig.pb.gz" 2>&1 | sed -n 's/^Duration: \([0-9.]*\)\(m\{0,1\}s\),.*/\1\2/p')
	case $dur in
	*ms | 1.* | 2.*) ok "SIG$sig: ... with what it had: a profile of $dur" ;;
	*) not_ok "SIG$sig: the cut profile's duration is '$dur', want the 1.5 s it waited" ;;
	esac
done

# --- 64 slow clients from 127.0.0.1 trickle their headers; a request from
# another connection (from 127.0.0.2) is answered, and the slow ones are
# cut at the headers' deadline (5 s)
timeout -k 5 120 "$MEMTRACE" agent -p "$lr" --exact --listen "127.0.0.1:$((port + 4))" 2>"$TMP/h.err" &
ah=$!
pids+=("$ah")
expect_line "$TMP/h.err" "memtrace: attached to PID $lr" 20 "never attached"
cat >slow.py <<'EOF'
# N connections to PORT, each sending a request line, then a header line
# every 0.5 s for at most SECONDS; prints how many the server took (did not
# close within 1 s), how many of those it closed later, and when the last was
import select, socket, sys, time
n, port, limit = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks, closed = [], {}
for i in range(n):
    s = socket.socket()
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    socks.append(s)
t0 = next_send = time.time()
while time.time() - t0 < limit and len(closed) < n:
    live = [s for i, s in enumerate(socks) if i not in closed]
    for s in select.select(live, [], [], 0.1)[0]:
        try:
            gone = s.recv(4096) == b""
        except OSError:
            gone = True
        if gone:
            closed[socks.index(s)] = time.time() - t0
    if time.time() >= next_send:
        next_send += 0.5
        for i, s in enumerate(socks):
            if i not in closed:
                try:
                    s.send(b"X-Slow: 1\r\n")
                except OSError:
                    closed[i] = time.time() - t0
early = sum(1 for v in closed.values() if v < 1)
late = sorted(v for v in closed.values() if v >= 1)
print(n - early, len(late), "%.1f" % (max(late) if late else -1), flush=True)
EOF
timeout -k 5 60 python3 slow.py 64 $((port + 4)) 20 >slow.out 2>&1 &
slow=$!
sleep 2
t0=$(ms)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --interface 127.0.0.2 "http://127.0.0.1:$((port + 4))/metrics")
took=$(($(ms) - t0))
if [ "$code" = 200 ] && [ "$took" -le 2000 ]; then
	ok "64 slow clients on 127.0.0.1: a request from 127.0.0.2 answered in $took ms (<= 2000)"
else
	not_ok "64 slow clients on 127.0.0.1: a request from 127.0.0.2 got '$code' after $took ms"
fi
wait "$slow"
read -r held cut last <slow.out
expect_eq "... at most 16 of them held from one address" "$held" 16
if [ "${cut:-0}" = "$held" ] && awk -v l="$last" 'BEGIN { exit !(l >= 4 && l <= 9) }'; then
	ok "... each held one cut at the headers' deadline (the last after $last s; 5 s and a scan)"
else
	not_ok "... slow connections cut: ${cut:-?} of ${held:-?}, the last after ${last:-?} s (want all, within 4-9 s): $(cat slow.out)"
fi
expect_eq "... and 127.0.0.1 is served again" \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$((port + 4))/metrics")" 200

# --- at most 4 ?seconds= profiles at once: a 5th is 503
for i in 1 2 3 4; do
	curl -s -o /dev/null -w '%{http_code}' --max-time 60 "http://127.0.0.1:$((port + 4))/debug/pprof/heap?seconds=30" \
		>"$TMP/q$i.code" &
	pids+=($!)
done
sleep 1
expect_eq "a 5th ?seconds= profile while 4 wait: 503" \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$((port + 4))/debug/pprof/heap?seconds=1")" 503
expect_eq "... a profile without ?seconds= still served" \
	"$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "http://127.0.0.1:$((port + 4))/debug/pprof/heap")" 200
t0=$(ms)
kill -TERM "$ah"
wait "$ah"
st=$?
took=$(($(ms) - t0))
if [ "$st" = 0 ] && [ "$took" -le 1500 ]; then ok "SIGTERM with 4 profiles pending: exit 0 in $took ms"; else not_ok "SIGTERM with 4 profiles pending: status $st after $took ms"; fi
for i in 1 2 3 4; do
	for _ in $(seq 50); do [ -s "$TMP/q$i.code" ] && break; sleep 0.1; done
done
expect_eq "... each of them answered" "$(cat "$TMP"/q[1-4].code)" "200200200200"

kill "$lr" 2>/dev/null
wait "$lr" 2>/dev/null

# --- matching that another user cannot take over. The service: a copy of
# leak_rate, run by root. 100 processes of nobody's named like it (a copy of sleep,
# owned by root, so only --user and the cap stop them), and one whose
# program is a copy owned by another user (daemon): refused by default.
# A name of this run's own: other tests on the host may run leak_rate.
name=svc$$
chmod 711 "$TMP"
mkdir -m 755 "$TMP/svc" "$TMP/own" "$TMP/other"
cp "$PROGS/leak_rate" "$TMP/svc/$name"
cp /bin/sleep "$TMP/own/$name"
cp /bin/sleep "$TMP/other/$name"
chown daemon "$TMP/other/$name"
nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups) # it execs: $! is the program's pid
(exec "$TMP/svc/$name" 120 >/dev/null 2>&1) &
svc=$!
pids+=("$svc")
hostile=()
for _ in $(seq 100); do
	"${nobody[@]}" "$TMP/own/$name" 120 &
	hostile+=($!)
done
pids+=("${hostile[@]}")
"${nobody[@]}" "$TMP/other/$name" 120 &
foreign=$!
pids+=("$foreign")
# up PORT: the pids /metrics has a target_up series of, sorted
up() { curl -s --max-time 10 "http://127.0.0.1:$1/metrics" | sed -n 's/^memtrace_target_up{pid="\([0-9]*\)".*/\1/p' | sort -n; }
nobody_pids() { # PIDS...: how many of them are nobody's processes
	local n=0 p
	for p in "$@"; do [ "$(stat -c %U "/proc/$p" 2>/dev/null)" = nobody ] && n=$((n + 1)); done
	echo $n
}

timeout -k 5 60 "$MEMTRACE" agent --comm "$name" --user root --exact --listen "127.0.0.1:$((port + 5))" \
	2>"$TMP/u1.err" &
au=$!
pids+=("$au")
for _ in $(seq 100); do [ "$(up $((port + 5)))" = "$svc" ] && break; sleep 0.1; done
sleep 2 # ten scans more: none of nobody's comes
got=$(up $((port + 5)) | tr '\n' ' ')
expect_eq "--comm NAME --user root, 100 of nobody's named so: the targets" "$got" "$svc " ||
	sed 's/^/# /' "$TMP/u1.err" | head -5
kill -INT "$au"
wait "$au"

timeout -k 5 60 "$MEMTRACE" agent --comm "$name" --exact --listen "127.0.0.1:$((port + 6))" 2>"$TMP/u2.err" &
au=$!
pids+=("$au")
for _ in $(seq 100); do [ "$(up $((port + 6)) | wc -l)" -ge 17 ] && break; sleep 0.1; done
t0=$(ms)
sleep 3
targets=$(up $((port + 6)))
refusals=$(grep -c "^memtrace: not recording PID [0-9]* ($name): uid 65534 has 16 processes recorded already, the most one user's may hold (--per-user)" "$TMP/u2.err")
secs=$((($(ms) - t0 + 999) / 1000))
t0=$(ms)
kill -INT "$au"
wait "$au"
echo "# the agent recording 17 stopped in $(($(ms) - t0)) ms"
if grep -qx "$svc" <<<"$targets"; then ok "without --user: the service is recorded"; else not_ok "without --user: the service $svc is not among the targets"; fi
# shellcheck disable=SC2086
expect_eq "without --user: nobody's processes hold --per-user's 16 slots, no more" "$(nobody_pids $targets)" 16
if [ "$refusals" -ge 1 ] && [ "$refusals" -le $((secs + 2)) ]; then
	ok "... the others' refusals said, a line a second at most: $refusals lines in ${secs}+ s"
else
	not_ok "... $refusals refusal lines (want 1 to $((secs + 2)) in ${secs}+ s): $(grep -v attached "$TMP/u2.err" | head -3)"
fi
expect_eq "... a program owned by another user (daemon) is refused, once, saying why" \
	"$(grep -c "^memtrace: not recording PID $foreign ($name): its program is owned by uid 1, neither root nor the uid it runs as (65534); give -p $foreign to record it anyway$" "$TMP/u2.err")/$(grep -xc "$foreign" <<<"$targets")" 1/0
kill "${hostile[@]}" "$foreign" "$svc" 2>/dev/null
wait "${hostile[@]}" "$foreign" "$svc" 2>/dev/null

# --- output: a comm of bytes that are not UTF-8 (0xff 0xfe) leaves /metrics
# valid UTF-8 that promtool parses; the command line is served only with
# --show-cmdline
bad=$(printf '\xff\xfelr%s' $$)
cp "$PROGS/leak_rate" "$TMP/svc/$bad"
(exec -a "leak_rate-secret-$$" "$TMP/svc/$bad" 30 >/dev/null 2>&1) &
bp=$!
pids+=("$bp")
mkdir -m 700 "$TMP/out"
timeout -k 5 60 "$MEMTRACE" agent -p "$bp" --exact -o "$TMP/out" --rotate 1 --listen "127.0.0.1:$((port + 7))" \
	2>"$TMP/o.err" &
ao=$!
pids+=("$ao")
expect_line "$TMP/o.err" "memtrace: attached to PID $bp" 20 "never attached to $bp"
sleep 2.5 # a file or two whole
curl -s --max-time 10 "http://127.0.0.1:$((port + 7))/metrics" >metrics.txt
if python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' metrics.txt 2>/dev/null; then
	ok "/metrics with a comm of 0xff 0xfe: valid UTF-8"
else
	not_ok "/metrics with a comm of 0xff 0xfe is not valid UTF-8: $(grep target_up metrics.txt | od -c | head -3 | tr '\n' ' ')"
fi
expect_eq "... the bytes shown as U+FFFD" "$(grep -c "^memtrace_target_up{pid=\"$bp\",comm=\"$(printf '\xef\xbf\xbd\xef\xbf\xbd')lr$$\"} 1$" metrics.txt)" 1
expect_eq "... promtool check metrics parses it" "$(promtool check metrics <metrics.txt 2>&1 | grep -ci 'error\|invalid')" 0
curl -s --max-time 10 -o cmd.pb.gz "http://127.0.0.1:$((port + 7))/debug/pprof/heap?pid=$bp"
curl -s --max-time 30 -o cmd.html "http://127.0.0.1:$((port + 7))/report?pid=$bp"
expect_eq "without --show-cmdline: the command line in neither the profile nor /report" \
	"$( (cd / && go tool pprof -comments "$TMP/cmd.pb.gz" 2>&1; cat "$TMP/cmd.html") | grep -c "leak_rate-secret-$$")/$(has leak_step cmd.html)" 0/yes

# --- /report reads -o DIR's files through the directory, never a symlink:
# one named as the target's newest file, to a trace of another program
"$MEMTRACE" record -o "$TMP/other.mtrace" -- "$PROGS/alloc_patterns" >/dev/null 2>&1
base=$(ls "$TMP/out" | sed -n '1s/\.[^.]*\.mtrace$//p')
ln -s "$TMP/other.mtrace" "$TMP/out/$base.29991231T235959Z.mtrace"
code=$(curl -s --max-time 30 -o link.html -w '%{http_code}' "http://127.0.0.1:$((port + 7))/report?pid=$bp")
expect_eq "/report with a symlink as the newest file: the target's own report, not the link's" \
	"$code/$(has site_peak_block link.html)/$(has leak_step link.html)" 200/no/yes
rm -f "$TMP/out/$base.29991231T235959Z.mtrace"
kill -INT "$ao"
wait "$ao"
(exec -a "leak_rate-secret-$$" "$TMP/svc/$bad" 30 >/dev/null 2>&1) &
bp2=$!
pids+=("$bp2")
timeout -k 5 60 "$MEMTRACE" agent -p "$bp2" --exact --show-cmdline --rotate 1 --listen "127.0.0.1:$((port + 8))" \
	2>"$TMP/o2.err" &
ao=$!
pids+=("$ao")
expect_line "$TMP/o2.err" "memtrace: attached to PID $bp2" 20 "never attached to $bp2"
sleep 2.5
curl -s --max-time 10 -o cmd2.pb.gz "http://127.0.0.1:$((port + 8))/debug/pprof/heap?pid=$bp2"
curl -s --max-time 30 -o cmd2.html "http://127.0.0.1:$((port + 8))/report?pid=$bp2"
expect_eq "with --show-cmdline: the command line in the profile's comments and in /report" \
	"$( (cd / && go tool pprof -comments "$TMP/cmd2.pb.gz" 2>&1) | grep -c "leak_rate-secret-$$")/$(has "leak_rate-secret-$$" cmd2.html)" 1/yes
kill -INT "$ao"
wait "$ao"
kill "$bp" "$bp2" 2>/dev/null
wait "$bp" "$bp2" 2>/dev/null

# --- -o DIR that others can write is refused, one line
mkdir -m 777 "$TMP/open"
chmod 777 "$TMP/open" # past the umask
timeout -k 5 10 "$MEMTRACE" agent -p $$ -o "$TMP/open" >/dev/null 2>"$TMP/open.err"
expect_one_error "-o a directory of mode 0777" $? "$TMP/open.err" \
	"memtrace: invalid -o '$TMP/open': $TMP/open is writable by group or others (mode 0777); give a directory of root's (or the agent's user's) that no one else can write, e.g. made with mkdir -m 0700"
mkdir -m 700 "$TMP/theirs"
chown nobody "$TMP/theirs"
timeout -k 5 10 "$MEMTRACE" agent -p $$ -o "$TMP/theirs" >/dev/null 2>"$TMP/theirs.err"
expect_one_error "-o a directory of nobody's" $? "$TMP/theirs.err"

# --- --keep counts per program (COMM), not per process: a service
# restarted keeps 2 files in all; --max-bytes removes the oldest first
mkdir -m 700 "$TMP/keep"
for d in 01 02 03; do head -c 409600 /dev/zero >"$TMP/keep/old.1.202001${d}T000000Z.mtrace"; done
kname=keep$$
cp "$PROGS/leak_rate" "$TMP/svc/$kname"
timeout -k 5 60 "$MEMTRACE" agent --comm "$kname" --exact -o "$TMP/keep" --rotate 1 --keep 5 --max-bytes 1M \
	--listen "127.0.0.1:$((port + 9))" 2>"$TMP/k.err" &
ak=$!
pids+=("$ak")
wait_for_line "$TMP/k.err" "memtrace: agent serving" 10
for run in 1 2; do
	"$TMP/svc/$kname" 3 >/dev/null 2>&1
	sleep 0.5
done
sleep 1.5 # a prune (every second) after the second run ended
kill -INT "$ak"
wait "$ak"
files=$(ls "$TMP/keep" | grep "^$kname\.")
npids=$(sed 's/^[^.]*\.\([0-9]*\)\..*/\1/' <<<"$files" | sort -u | wc -l)
expect_eq "--keep 5 over two runs of 3 s in files of 1 s: 5 files of the program in all (from 2 processes)" \
	"$(wc -l <<<"$files")/$npids" 5/2
expect_eq "--max-bytes 1M with 3 old files of 400 KiB: the oldest removed, the two newer kept" \
	"$(ls "$TMP/keep" | grep '^old\.' | tr '\n' ' ')" "old.1.20200102T000000Z.mtrace old.1.20200103T000000Z.mtrace "

# --- least privilege: the agent as nobody with exactly the capabilities of
# dist/memtrace-agent.service records a root process whose program is 0700
# in a 0700 directory and deleted since it started (only /proc/PID/map_files
# reaches it): attached, no warning, its functions named. Without
# CAP_CHECKPOINT_RESTORE the names are lost: the unit needs it.
unit=$TOP/dist/memtrace-agent.service
caps=$(sed -n 's/^AmbientCapabilities=//p' "$unit" | tr 'A-Z ' 'a-z,')
expect_eq "the unit's bounding set is its ambient set" "$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")" \
	"$(sed -n 's/^AmbientCapabilities=//p' "$unit")"
expect_eq "the unit runs as a user of its own" "$(grep -cx 'DynamicUser=yes' "$unit")" 1
# as_unit CAPS ARGS...: memtrace as nobody with ambient CAPS only
as_unit() {
	local c=$1
	shift
	capsh --caps="$c+eip cap_setuid,cap_setgid,cap_setpcap+ep" --keep=1 --user=nobody --addamb="$c" -- \
		-c 'exec "$0" "$@"' "$MEMTRACE" "$@"
}
for run in unit no_checkpoint; do
	c=$caps
	[ $run = no_checkpoint ] && c=$(sed 's/,*cap_checkpoint_restore//' <<<"$caps")
	mkdir -m 700 "$TMP/priv"
	cp "$PROGS/leak_rate" "$TMP/priv/lrgone"
	chmod 700 "$TMP/priv/lrgone"
	(exec "$TMP/priv/lrgone" 30 >/dev/null 2>&1) &
	gp=$!
	pids+=("$gp")
	wait_exec "$gp" "$TMP/priv/lrgone"
	rm -rf "$TMP/priv"
	# the unit's StateDirectory: --oom-dir in a directory of its user's (any
	# warning fails the check below: the flight recorder loads with this set)
	mkdir -p -m 0700 "$TMP/state.$run"
	chown nobody "$TMP/state.$run"
	timeout -k 5 60 bash -c "$(declare -f as_unit); MEMTRACE=$MEMTRACE; as_unit $c agent -p $gp --exact --listen 127.0.0.1:$((port + 10)) --oom-dir $TMP/state.$run/oom" \
		2>"$TMP/cap.err" &
	ac=$!
	pids+=("$ac")
	wait_for_line "$TMP/cap.err" "memtrace: attached to PID $gp" 20
	sleep 1.5
	curl -s --max-time 10 -o cap.pb.gz "http://127.0.0.1:$((port + 10))/debug/pprof/allocs"
	named=$( (cd / && go tool pprof -top "$TMP/cap.pb.gz" 2>&1) | grep -c ' leak_step$')
	warned=$(grep -c 'warning' "$TMP/cap.err")
	attached=$(grep -c "^memtrace: attached to PID $gp " "$TMP/cap.err")
	kill -INT "$ac" 2>/dev/null
	wait "$ac"
	kill "$gp" 2>/dev/null
	wait "$gp" 2>/dev/null
	if [ $run = unit ]; then
		expect_eq "as nobody with the unit's capabilities ($caps): a deleted 0700 program of root's recorded and named (attached/warnings/leak_step)" \
			"$attached/$warned/$named" 1/0/1 || sed 's/^/# /' "$TMP/cap.err" | head -5
	else
		expect_eq "... without CAP_CHECKPOINT_RESTORE: attached, but its names lost (attached/leak_step)" \
			"$attached/$named" 1/0 || sed 's/^/# /' "$TMP/cap.err" | head -5
	fi
done
finish
