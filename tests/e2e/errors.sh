#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Bad input: one line "memtrace: ..." on stderr, a non-zero exit status that
# is not a crash, and nothing written. Damaged traces: the report either
# succeeds and says the trace is partial, or refuses with one line.
source "$(dirname "$0")/lib.sh"
plan 154

mt() { timeout -k 5 "$LIMIT" "$MEMTRACE" "$@"; }

# --- report on things that are not (whole) traces ---
printf 'this is not a trace\n' >"$TMP/text"
mt report --json "$TMP/text" >"$TMP/o" 2>"$TMP/e"
expect_one_error "report on a text file" $? "$TMP/e"
mt report --json "$TMP/missing.mtrace" >"$TMP/o" 2>"$TMP/e"
expect_one_error "report on a missing file" $? "$TMP/e"
mt report --json "$TMP" >"$TMP/o" 2>"$TMP/e"
expect_one_error "report on a directory" $? "$TMP/e"
: >"$TMP/empty"
mt report --json "$TMP/empty" >"$TMP/o" 2>"$TMP/e"
expect_one_error "report on an empty file" $? "$TMP/e"

# a real trace to damage
good=$TMP/good.mtrace
mt record -o "$good" -- "$PROGS/alloc_patterns" >/dev/null 2>"$TMP/e"
expect_eq "record a trace to damage" $? 0
size=$(stat -c %s "$good" 2>/dev/null || echo 0)
if [ "$size" -gt 0 ]; then ok "trace is $size bytes"; else not_ok "no trace recorded"; fi

# damaged_report DESCRIPTION FILE: exit 0 with valid JSON that says it is
# partial (or a warning saying so), or one "memtrace: " line and a plain error
damaged_report() {
	local rc
	mt report --json "$2" >"$TMP/o" 2>"$TMP/e"
	rc=$?
	# two checks either way: read (JSON, said partial) or refused (status, one line)
	if [ "$rc" = 0 ]; then
		if jq -e . "$TMP/o" >/dev/null 2>&1; then ok "$1: exit 0, JSON out"; else not_ok "$1: exit 0 but the output is not JSON"; fi
		if jq -e '.trace.partial == true' "$TMP/o" >/dev/null 2>&1 ||
			grep -qiE 'partial|truncat|incomplete|corrupt' "$TMP/e"; then
			ok "$1: read as partial"
		else
			not_ok "$1: exit 0 and nothing says the trace is partial"
		fi
	else
		expect_one_error "$1" "$rc" "$TMP/e"
	fi
}

offsets="1 3 4 7 8 12 15 16 24 31 32 48 64 100 128 256 512"
offsets="$offsets $((size / 4)) $((size / 3)) $((size / 2)) $((size * 2 / 3)) $((size * 3 / 4))"
offsets="$offsets $((size - 256)) $((size - 64)) $((size - 16)) $((size - 8)) $((size - 4)) $((size - 1))"
for off in $offsets; do # 28 cuts, each inside a trace of 1 KiB or more
	if [ "$off" -le 0 ] || [ "$off" -ge "$size" ]; then
		not_made 2 "a cut at $off of a trace of $size bytes"
		continue
	fi
	head -c "$off" "$good" >"$TMP/cut.mtrace"
	damaged_report "report on the trace cut at $off of $size bytes" "$TMP/cut.mtrace"
done

# the header of a real trace followed by garbage; a trace with zeroed bytes
{ head -c 16 "$good"; head -c 4096 /dev/urandom; } >"$TMP/junk.mtrace"
damaged_report "report on a trace header followed by random bytes" "$TMP/junk.mtrace"
for at in $((size / 3)) $((size / 2)) $((size - 32)); do
	cp "$good" "$TMP/zeroed.mtrace"
	dd if=/dev/zero of="$TMP/zeroed.mtrace" bs=1 seek="$at" count=16 conv=notrunc status=none
	damaged_report "report on the trace with 16 bytes zeroed at $at" "$TMP/zeroed.mtrace"
done

# bytes appended after the END record: damage, said in one warning line with
# offset and length; everything before is reported; --strict refuses it
cp "$good" "$TMP/appended.mtrace"
printf 'appended after the end' >>"$TMP/appended.mtrace"
mt report --json "$TMP/appended.mtrace" >"$TMP/o" 2>"$TMP/e"
expect_status "trailing bytes: report exit status" $? 0 "$TMP/e"
expect_eq "trailing bytes: the warning" "$(cat "$TMP/e")" \
	"memtrace: warning: $TMP/appended.mtrace: 22 bytes after the end record, at offset $size, ignored; everything before is reported"
expect_eq "trailing bytes: everything before is reported" "$(jq .totals.allocations "$TMP/o")" 56
mt export --format folded "$TMP/appended.mtrace" >"$TMP/o" 2>"$TMP/e"
expect_eq "trailing bytes: export warns once" "$(grep -c 'bytes after the end record' "$TMP/e")" 1
for cmd in report "export --format folded"; do
	mt $cmd --strict "$TMP/appended.mtrace" >"$TMP/o" 2>"$TMP/e"
	expect_one_error "$cmd --strict with trailing bytes" $? "$TMP/e" \
		"memtrace: failed to read $TMP/appended.mtrace: 22 bytes after the end record, at offset $size; --strict refuses any damage"
done
mt diff --strict "$good" "$TMP/appended.mtrace" >"$TMP/o" 2>"$TMP/e"
expect_one_error "diff --strict with trailing bytes" $? "$TMP/e" \
	"memtrace: failed to read $TMP/appended.mtrace: 22 bytes after the end record, at offset $size; --strict refuses any damage"
head -c $((size / 2)) "$good" >"$TMP/half.mtrace"
mt report --strict "$TMP/half.mtrace" >"$TMP/o" 2>"$TMP/e"
expect_one_error "report --strict on a partial trace" $? "$TMP/e"
expect_eq "report --strict on a partial trace: says --strict" "$(grep -c -- '--strict refuses a partial trace$' "$TMP/e")" 1

# --- record errors: refused, nothing written, the command not run ---
# Each message is asserted word for word: a test that accepts any error line
# passed once while the line was wrong.
# a PID that does not exist: beyond pid_max
nopid=$(($(cat /proc/sys/kernel/pid_max) + 1))
mt record -o "$TMP/nopid.mtrace" -p "$nopid" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -p of a PID that does not exist" $? "$TMP/e" \
	"memtrace: no process with PID $nopid; check the PID (pidof NAME)"
[ -e "$TMP/nopid.mtrace" ] && not_ok "record -p $nopid left a file" || ok "record -p $nopid wrote nothing"

mt record -o "$TMP/nocmd.mtrace" -- "$TMP/no-such-command" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a path that does not exist" $? "$TMP/e" \
	"memtrace: failed to start '$TMP/no-such-command': no such file; check the path"
[ -e "$TMP/nocmd.mtrace" ] && not_ok "record -- missing command left a file" ||
	ok "record -- missing command wrote nothing"

mt record -o "$TMP/nocmd.mtrace" -- no-such-command-in-path >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a command not in PATH" $? "$TMP/e" \
	"memtrace: failed to start 'no-such-command-in-path': no such command in PATH; check its name"

mkdir "$TMP/adir"
mt record -o "$TMP/d.mtrace" -- "$TMP/adir" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a directory" $? "$TMP/e" \
	"memtrace: failed to start '$TMP/adir': it is a directory; give a program"

printf '#!/bin/sh\ntouch "%s/ran0"\n' "$TMP" >"$TMP/noexec.sh"
chmod 0644 "$TMP/noexec.sh"
mt record -o "$TMP/ne.mtrace" -- "$TMP/noexec.sh" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a file without execute permission" $? "$TMP/e" \
	"memtrace: failed to start '$TMP/noexec.sh': $TMP/noexec.sh is not executable; check its permissions (chmod +x)"
[ -e "$TMP/ran0" ] && not_ok "the unexecutable script ran" || ok "the unexecutable script did not run"

printf 'touch "%s/ran00"\n' "$TMP" >"$TMP/nohashbang"
chmod 0755 "$TMP/nohashbang"
mt record -o "$TMP/nh.mtrace" -- "$TMP/nohashbang" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a script without #!" $? "$TMP/e" \
	"memtrace: failed to execute '$TMP/nohashbang': Exec format error; check that it is a program or a script with a #! line"
[ -e "$TMP/nh.mtrace" ] && not_ok "exec failure left a trace" || ok "exec failure wrote nothing"

# A FIFO with execute permission where the command should be: memtrace reads
# a script's #! line to know whether Python runs, and must not wait there on
# a writer that never comes; exec refuses it.
mkfifo "$TMP/fifo"
chmod 0755 "$TMP/fifo"
mt record -o "$TMP/ff.mtrace" -- "$TMP/fifo" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -- a FIFO (no wait on its #! line)" $? "$TMP/e" \
	"memtrace: failed to execute '$TMP/fifo': Permission denied; check that it is a program or a script with a #! line"
[ -e "$TMP/ff.mtrace" ] && not_ok "record -- a FIFO left a trace" || ok "record -- a FIFO wrote nothing"

# A program whose library is missing: its dynamic linker gives up before the
# libraries are loaded. Its own message passes through; ours says what happened.
cp "$PROGS/launch_ctor" "$TMP/no_lib_here"
mt record -o "$TMP/nl.mtrace" -- "$TMP/no_lib_here" >"$TMP/o" 2>"$TMP/e"
rc=$?
expect_eq "record -- a program whose library is missing: exit status" "$rc" 1
expect_eq "record -- a program whose library is missing: the linker's message passes through" \
	"$(grep -c 'error while loading shared libraries: libctorlib.so' "$TMP/e")" 1
expect_eq "record -- a program whose library is missing: our message" "$(grep '^memtrace:' "$TMP/e")" \
	"memtrace: '$TMP/no_lib_here' ended before its libraries were loaded (see its own message above); nothing was recorded"
[ -e "$TMP/nl.mtrace" ] && not_ok "missing library left a trace" || ok "missing library wrote nothing"

mt record -o "$TMP/no/such/dir/x.mtrace" -- touch "$TMP/ran1" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -o into a directory that does not exist" $? "$TMP/e" \
	"memtrace: failed to create $TMP/no/such/dir/x.mtrace: No such file or directory; choose a writable path with -o"
[ -e "$TMP/ran1" ] && not_ok "the command ran although -o could not be created" ||
	ok "the command did not run when -o could not be created"

mt record -o /proc/memtrace-e2e.mtrace -- touch "$TMP/ran2" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -o into an unwritable place (/proc)" $? "$TMP/e" \
	"memtrace: failed to create /proc/memtrace-e2e.mtrace: No such file or directory; choose a writable path with -o"
[ -e "$TMP/ran2" ] && not_ok "the command ran although -o was unwritable" ||
	ok "the command did not run when -o was unwritable"

echo "precious" >"$TMP/exists.mtrace"
before=$(sha256sum <"$TMP/exists.mtrace")
mt record -o "$TMP/exists.mtrace" -- touch "$TMP/ran3" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -o onto an existing file" $? "$TMP/e" \
	"memtrace: failed to create $TMP/exists.mtrace: file exists; remove it or choose another with -o"
expect_eq "existing file untouched" "$(sha256sum <"$TMP/exists.mtrace")" "$before"
[ -e "$TMP/ran3" ] && not_ok "the command ran although -o exists" ||
	ok "the command did not run when -o exists"

ln -s "$TMP/link-target.mtrace" "$TMP/dangling.mtrace"
mt record -o "$TMP/dangling.mtrace" -- touch "$TMP/ran4" >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -o through a dangling symlink" $? "$TMP/e" \
	"memtrace: failed to create $TMP/dangling.mtrace: it is a symbolic link; memtrace never writes through one"
[ -e "$TMP/link-target.mtrace" ] && not_ok "a file was created through the symlink" ||
	ok "nothing created through the dangling symlink"
[ -e "$TMP/ran4" ] && not_ok "the command ran although -o is a symlink" ||
	ok "the command did not run when -o is a symlink"

echo "precious" >"$TMP/target.mtrace"
ln -s "$TMP/target.mtrace" "$TMP/link.mtrace"
mt record -o "$TMP/link.mtrace" -- true >"$TMP/o" 2>"$TMP/e"
expect_one_error "record -o through a symlink to a file" $? "$TMP/e" \
	"memtrace: failed to create $TMP/link.mtrace: it is a symbolic link; memtrace never writes through one"
expect_eq "symlink target untouched" "$(cat "$TMP/target.mtrace")" precious
if [ -L "$TMP/link.mtrace" ]; then ok "symlink still a symlink"; else not_ok "symlink replaced"; fi

# The default name (memtrace.COMM.PID.mtrace) in a directory we may not write.
ro=$TMP/ro
mkdir "$ro"
(cd "$ro" && chmod 0555 . &&
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all,+bpf,+perfmon \
		--ambient-caps=+bpf,+perfmon --bounding-set=-all,+bpf,+perfmon \
		"$MEMTRACE" record -- touch "$TMP/ran5") >"$TMP/o" 2>"$TMP/e"
expect_one_error "record with the default name in an unwritable directory" $? "$TMP/e" \
	"memtrace: failed to create a trace in the current directory: Permission denied; choose a writable path with -o"
[ -e "$TMP/ran5" ] && not_ok "the command ran although its trace could not be created" ||
	ok "the command did not run when its trace could not be created"
chmod 0755 "$ro"

# Without root or CAP_BPF+CAP_PERFMON: refused before anything starts.
nobody_dir=$(mktemp -d /tmp/memtrace-nobody.XXXXXX)
chmod 0777 "$nobody_dir"
timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$MEMTRACE" record -o "$nobody_dir/x.mtrace" -- "$PROGS/alloc_patterns" >"$TMP/out" 2>"$TMP/e"
expect_one_error "record without privileges" $? "$TMP/e"
expect_eq "record without privileges: names the capabilities" \
	"$(grep -c 'CAP_BPF and CAP_PERFMON' "$TMP/e")" 1
expect_eq "record without privileges: no trace file" "$(ls "$nobody_dir" | wc -l)" 0
expect_eq "record without privileges: command not run" "$(wc -c <"$TMP/out")" 0
rm -rf "$nobody_dir"

# Reports need no privileges.
timeout 60 "$MEMTRACE" record -o "$TMP/priv.mtrace" -- "$PROGS/alloc_patterns" >/dev/null 2>&1
chmod 0644 "$TMP/priv.mtrace"
chmod 0755 "$TMP"
timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
	"$MEMTRACE" report --json "$TMP/priv.mtrace" >"$TMP/priv.json" 2>"$TMP/e"
expect_status "report without privileges: exit status" $? 0 "$TMP/e"
expect_eq "report without privileges: allocations" "$(jq .totals.allocations "$TMP/priv.json")" 56

finish
