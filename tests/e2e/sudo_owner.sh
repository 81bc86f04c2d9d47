#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Under sudo (root, SUDO_UID and SUDO_GID set) a trace belongs to the user
# who ran sudo, still mode 0600, so they report on it without sudo; without
# them it is root's. Also each trace of --follow-children.
. "$(dirname "$0")/lib.sh"
plan 8

cd "$TMP" || exit 1
chmod 755 "$TMP" # the user must reach the file to read it

SUDO_UID=65534 SUDO_GID=65534 timeout -k 5 "$LIMIT" "$MEMTRACE" record -o sudo.mtrace -- "$PROGS/alloc_patterns" >/dev/null 2>err
expect_eq "record with SUDO_UID/SUDO_GID: exit status" "$?" 0
expect_eq "its owner, group and mode" "$(stat -c '%u:%g %a' sudo.mtrace)" "65534:65534 600"
setpriv --reuid=65534 --regid=65534 --clear-groups timeout -k 5 "$LIMIT" "$MEMTRACE" report --json sudo.mtrace >user.json 2>user.err
expect_eq "that user reports on it without sudo: exit status" "$?" 0
expect_eq "that user reports on it: allocations" "$(jqr user.json .totals.allocations)" 56

env -u SUDO_UID -u SUDO_GID timeout -k 5 "$LIMIT" "$MEMTRACE" record -o root.mtrace -- "$PROGS/alloc_patterns" >/dev/null 2>err
expect_eq "record without SUDO_UID: owner, group and mode" "$(stat -c '%u:%g %a' root.mtrace)" "0:0 600"
SUDO_UID=65534 timeout -k 5 "$LIMIT" "$MEMTRACE" record -o half.mtrace -- "$PROGS/alloc_patterns" >/dev/null 2>err
expect_eq "SUDO_UID without SUDO_GID: root's" "$(stat -c '%u:%g %a' half.mtrace)" "0:0 600"

SUDO_UID=65534 SUDO_GID=65534 timeout -k 5 "$LIMIT" "$MEMTRACE" record --follow-children -o kids.mtrace -- \
	"$PROGS/forker" "$PROGS/alloc_patterns" >/dev/null 2>err
expect_eq "--follow-children under sudo: exit status" "$?" 0
owners=$(stat -c '%u:%g %a' kids*.mtrace | sort -u)
expect_eq "--follow-children under sudo: every trace's owner and mode ($(ls kids*.mtrace | wc -l) traces)" "$owners" "65534:65534 600"
finish
