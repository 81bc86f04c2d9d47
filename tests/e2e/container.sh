#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A target in its own mount and PID namespace with its own root directory,
# as a container runs it: alloc_patterns copied to /prog of a fresh root
# with copies of exactly the libraries ldd lists (its libc and dynamic
# linker are other files than the host's, so a probe on the host's libc
# would see nothing, and /prog does not exist on the host). memtrace -p gets
# the PID as the host sees it and must resolve every file through
# /proc/PID/root; the figures are record_pid.sh's, and the sites must be
# symbolized from the container's files.
source "$(dirname "$0")/lib.sh"
plan 42

root=$TMP/root
trace=$TMP/ctr.mtrace
json=$TMP/ctr.json
ns_pid=""

cleanup() {
	[ -n "$ns_pid" ] && kill -KILL "$ns_pid" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# make_root DIR PROGRAM: PROGRAM as DIR/prog, its libraries at their paths
make_root() {
	local dir=$1 prog=$2 lib
	mkdir -p "$dir" || return 1
	cp "$prog" "$dir/prog" || return 1
	for lib in $(ldd "$prog" | grep -o '/[^ ]*'); do
		mkdir -p "$dir$(dirname "$lib")" && cp -L "$lib" "$dir$lib" || return 1
	done
}

if make_root "$root" "$PROGS/alloc_patterns"; then
	ok "container root with $(find "$root" -type f | wc -l) files"
else
	not_ok "could not build the container root"
	fail_rest "no container root"
	finish
fi
host_libc=$(ldd "$PROGS/alloc_patterns" | awk '/libc\.so/ { print $3 }')
if [ "$(stat -L -c %i "$host_libc")" != "$(stat -c %i "$root$host_libc")" ]; then
	ok "the container's libc is a copy, not the host's file"
else
	not_ok "the container's libc is the host's file"
fi

# run_case NAME TRACE CMD...: start CMD (an unshare that ends in /prog wait 5),
# attach memtrace -p to the program's host PID, signal it, check the report.
run_case() {
	local name=$1 trace=$2 json=$2.json unshare_job unshare_pid nspid rec want_line
	# its checks: 13, and one more for the files deleted before the attach
	local checks=13
	[ -z "${BEFORE_ATTACH:-}" ] || checks=14
	shift 2
	echo "# $name"
	: >"$TMP/target.err"
	timeout -k 5 "$LIMIT" "$@" >"$TMP/out" 2>"$TMP/target.err" &
	unshare_job=$!
	wait_for_line "$TMP/target.err" "alloc_patterns: waiting for SIGUSR1" 10
	# timeout's child is unshare, whose child (the namespace's PID 1) execs
	# /prog in the end: the program is unshare's only child.
	unshare_pid=$(pgrep -x -P "$unshare_job" unshare)
	ns_pid=""
	[ -n "$unshare_pid" ] && ns_pid=$(pgrep -P "$unshare_pid" | head -n1)
	if [ -z "$ns_pid" ]; then
		not_made "$checks" "$name: no program inside the namespace: $(head -c 300 "$TMP/target.err")"
		return
	fi
	nspid=$(awk '/^NSpid:/ { print $2 "," $3 }' "/proc/$ns_pid/status")
	expect_eq "$name: host PID $ns_pid is PID 1 in its namespace (NSpid host,ns)" "$nspid" "$ns_pid,1"
	if [ "$(stat -L -c %d:%i "/proc/$ns_pid/ns/mnt")" != "$(stat -L -c %d:%i /proc/self/ns/mnt)" ]; then
		ok "$name: it runs in another mount namespace"
	else
		not_ok "$name: it runs in the host's mount namespace"
	fi
	if [ -e /prog ]; then
		not_ok "$name: /prog exists on the host, the test proves nothing"
	else
		ok "$name: /prog exists only in the container"
	fi
	if [ -n "${BEFORE_ATTACH:-}" ]; then
		# inside the container (reached from here through its root), after
		# the program mapped its files
		for f in $BEFORE_ATTACH; do rm "/proc/$ns_pid/root$f"; done
		expect_eq "$name: the program and its libc show as deleted in /proc/PID/maps" \
			"$(grep -c -e '/prog (deleted)$' -e 'libc\.so.* (deleted)$' "/proc/$ns_pid/maps" | awk '{ print ($1 >= 2) }')" 1
	fi
	echo "# $name: /prog as the host's /proc/PID/maps shows it: $(awk '$6 ~ /prog$/ { print $6; exit }' "/proc/$ns_pid/maps")"

	: >"$TMP/err" # the case before's "attached" must not be seen (replaced_files.sh)
	timeout -k 5 "$LIMIT" "$MEMTRACE" record -o "$trace" -p "$ns_pid" 2>"$TMP/err" &
	rec=$!
	if wait_for_line "$TMP/err" "memtrace: attached" 10; then
		ok "$name: memtrace -p $ns_pid printed 'memtrace: attached'"
	else
		not_ok "$name: memtrace -p did not attach within 10 s: $(head -c 300 "$TMP/err")"
		not_made 8 "$name: memtrace -p did not attach"
		kill -USR1 "$ns_pid" 2>/dev/null
		wait "$unshare_job" "$rec"
		ns_pid=""
		return
	fi
	kill -USR1 "$ns_pid" 2>/dev/null
	wait "$unshare_job"
	expect_eq "$name: target exit status" "$?" 5
	wait "$rec"
	expect_eq "$name: memtrace -p exit status when the target exits" "$?" 0
	ns_pid=""
	report_json "$trace" "$json"
	expect_eq "$name: report --json exit status" "$?" 0
	if [ ! -s "$json" ]; then
		not_made 6 "$name: no report to check"
		return
	fi
	expect_alloc_patterns "$json" 4 "$name"

	# symbolized from the container's own /prog, with file:line from its DWARF
	expect_eq "$name: site_malloc_100 module's basename" \
		"$(jq -r '[.sites[] | select(.function == "site_malloc_100") | .module // "" | sub(".*/"; "")][0]' "$json")" prog
	expect_eq "$name: site_malloc_100 file" \
		"$(jq -r '[.sites[] | select(.function == "site_malloc_100") | .file // "" | sub(".*/"; "")][0]' "$json")" \
		alloc_patterns.c
	want_line=$(grep -n '^NOINLINE void \*site_malloc_100' "$TOP/tests/progs/alloc_patterns.c" | cut -d: -f1)
	expect_eq "$name: site_malloc_100 line" "$(site "$json" site_malloc_100 line)" "$want_line"
	expect_eq "$name: sites without a function name" \
		"$(jq '[.sites[] | select(.function == null)] | length' "$json")" 0
}

# Docker's way: the root is a tmpfs mounted inside the new mount namespace
# and made the namespace's root with pivot_root, so nothing of it is
# reachable from the host but through /proc/PID/root, and /proc/PID/maps
# shows container paths. sh (the namespace's PID 1) execs /prog.
src=$root
root=$TMP/mnt
mkdir -p "$root"
run_case "pivot_root into a tmpfs" "$TMP/pivot.mtrace" \
	unshare --mount --pid --fork --mount-proc sh -c '
		mount -t tmpfs memtrace-ctr "$1" && cp -a "$2/." "$1/" && cd "$1" &&
		mkdir old && pivot_root . old && exec /prog wait 5' sh "$root" "$src"

# The same container after an upgrade inside it: /prog and its libc deleted
# once the program runs, so neither exists anywhere but in its mappings.
BEFORE_ATTACH="/prog $host_libc" run_case "pivot_root, files deleted in the container" \
	"$TMP/pivot-deleted.mtrace" \
	unshare --mount --pid --fork --mount-proc sh -c '
		mount -t tmpfs memtrace-ctr "$1" && cp -a "$2/." "$1/" && cd "$1" &&
		mkdir old && pivot_root . old && exec /prog wait 5' sh "$root" "$src"

# chroot into a directory of the host's tree: /proc/PID/maps shows the
# files by their host paths (the kernel prints paths as the reader sees them).
run_case "chroot into a host directory" "$TMP/chroot.mtrace" \
	unshare --mount --pid --fork --mount-proc chroot "$src" /prog wait 5
finish
