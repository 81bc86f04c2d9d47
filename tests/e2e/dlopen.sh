#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A library loaded with dlopen after recording began: its allocations are
# counted and symbolized (the module map follows the target's mappings), and
# its memtrace.h marks are attached.
. "$(dirname "$0")/lib.sh"
plan 16

record_cmd "$TMP/dl.mtrace" "$PROGS/dlopen_host" "$PROGS/libplugin.so"
expect_eq "dlopen_host: exit status" $? 0
report_json "$TMP/dl.mtrace" "$TMP/dl.json"
expect_site "$TMP/dl.json" plugin_work allocations 10
expect_site "$TMP/dl.json" plugin_work allocated_bytes 770
expect_site "$TMP/dl.json" plugin_work leaked_bytes 770
expect_eq "plugin_work: source file" \
	"$(jq -r '[.sites[] | select(.function == "plugin_work") | .file] | first' "$TMP/dl.json")" \
	"$TOP/tests/progs/plugin/plugin.c" # absolute: gcc's relative name joined to its compilation directory
expect_eq "plugin_work: module" \
	"$(jq -r '[.sites[] | select(.function == "plugin_work") | .module] | first' "$TMP/dl.json" | xargs basename)" \
	"libplugin.so"
expect_eq "plugin_zone: entered" "$(jq '[.zones[] | select(.name == "plugin_zone") | .count] | add' "$TMP/dl.json")" 10
expect_eq "plugin_zone: allocations inside" \
	"$(jq '[.zones[] | select(.name == "plugin_zone") | .allocations] | add' "$TMP/dl.json")" 10

# Used 50 ms after dlopen, long before the periodic look: the dynamic linker
# hook must have made the recorder attach the library's marks already.
record_cmd "$TMP/fast.mtrace" "$PROGS/dlopen_host" "$PROGS/libplugin.so" 50
expect_eq "dlopen_host, 50 ms: exit status" $? 0
report_json "$TMP/fast.mtrace" "$TMP/fast.json"
expect_eq "50 ms after dlopen: plugin_zone entered" \
	"$(jq '[.zones[] | select(.name == "plugin_zone") | .count] | add' "$TMP/fast.json")" 10
expect_site "$TMP/fast.json" plugin_work allocations 10
expect_eq "50 ms after dlopen: plugin_work symbolized from its file" \
	"$(jq -r '[.sites[] | select(.function == "plugin_work") | .file] | first' "$TMP/fast.json")" \
	"$TOP/tests/progs/plugin/plugin.c"

# A library loaded later with an allocator of its own, which its code is
# bound to: that allocator gets probed when the library appears.
record_cmd "$TMP/pa.mtrace" "$PROGS/dlopen_host" "$PROGS/libplugalloc.so"
expect_eq "dlopen_host with libplugalloc: exit status" $? 0
report_json "$TMP/pa.mtrace" "$TMP/pa.json"
expect_site "$TMP/pa.json" plugin_work allocations 10
expect_site "$TMP/pa.json" plugin_work allocated_bytes 330
expect_site "$TMP/pa.json" plugin_work leaked_bytes 330
finish
