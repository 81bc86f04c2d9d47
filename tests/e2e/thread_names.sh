#!/usr/bin/env bash
# A name for every thread (tests/progs/thread_names): its command name, a
# pthread_setname_np of its own or by another thread, a prctl(PR_SET_NAME),
# or none (the name it was created with); from the start (-- CMD: the names
# come from the kernel's tracepoints as the threads start and rename) and
# joined late (-p: the names are read at attach). Checked in report --json's
# threads, the text report, and the thread labels of the pprof export.
source "$(dirname "$0")/lib.sh"
plan 15

proto_dir=$TOP/tests/e2e

# bytes_by_thread JSON TRACE: "name=bytes" per thread, sorted, from the pprof thread_id labels
bytes_by_thread() {
	local json=$1 trace=$2
	rm -f "$TMP/p.pb.gz" # export never writes over a file
	timeout -k 5 "$LIMIT" "$MEMTRACE" export --format pprof -o "$TMP/p.pb.gz" "$trace" 2>/dev/null
	gzip -dc "$TMP/p.pb.gz" | protoc --proto_path="$proto_dir" --decode=perftools.profiles.Profile \
		pprof_subset.proto >"$TMP/p.txt"
	# alloc_space per thread_id label
	awk '
		/^string_table:/ { s = $0; sub(/^string_table: "/, "", s); sub(/"$/, "", s); str[n++] = s }
		/^sample \{$/ { in_s = 1; nv = 0 }
		in_s && /^  value:/ { if (nv++ == 1) space = $2 }
		in_s && /^    key:/ { key = $2 }
		in_s && /^    num:/ { lab[++nl] = key " " $2 " " space }
		/^\}$/ { in_s = 0 }
		END { # the string table comes after the samples
			for (i = 1; i <= nl; i++) { split(lab[i], f, " "); if (str[f[1]] == "thread_id") by[f[2]] += f[3] }
			for (t in by) print t, by[t]
		}' "$TMP/p.txt" >"$TMP/by_tid.txt"
	jq -r '.threads[] | "\(.tid) \(.name)"' "$json" | while read -r tid name; do
		echo "$name=$(awk -v t="$tid" '$1 == t { print $2 }' "$TMP/by_tid.txt")"
	done | sort
}

check() { # LABEL JSON TRACE
	local label=$1 json=$2 trace=$3
	expect_eq "$label: every thread named, the way it was named" \
		"$(jq -r '[.threads[].name] | sort | join(",")' "$json")" \
		"disk-io,named-by-main,net-io,thread_names,thread_names"
	bytes_by_thread "$json" "$trace" >"$TMP/named.txt"
	expect_eq "$label: pthread_setname_np thread's allocation" "$(grep '^net-io=' "$TMP/named.txt")" "net-io=100"
	expect_eq "$label: prctl thread's allocation" "$(grep '^disk-io=' "$TMP/named.txt")" "disk-io=200"
	expect_eq "$label: thread named by main" "$(grep '^named-by-main=' "$TMP/named.txt")" "named-by-main=400"
	expect_eq "$label: the unrenamed thread keeps the name it was created with" \
		"$(grep -c '^thread_names=300$' "$TMP/named.txt")" 1
	timeout -k 5 "$LIMIT" "$MEMTRACE" report "$trace" >"$TMP/text.txt" 2>/dev/null
	expect_eq "$label: the text report names them" \
		"$(grep '^Threads named:' "$TMP/text.txt" | grep -o 'net-io\|disk-io\|named-by-main' | sort | tr '\n' ' ')" \
		"disk-io named-by-main net-io "
}

record_cmd "$TMP/cmd.mtrace" "$PROGS/thread_names"
expect_eq "-- CMD: exit status" "$?" 0
report_json "$TMP/cmd.mtrace" "$TMP/cmd.json"
check "-- CMD" "$TMP/cmd.json" "$TMP/cmd.mtrace"

record_pid_usr1 "$TMP/pid.mtrace" "$PROGS/thread_names" wait
expect_eq "-p: memtrace attached" "$?" 0
expect_eq "-p: exit statuses" "$TARGET_STATUS $RECORD_STATUS" "0 0"
report_json "$TMP/pid.mtrace" "$TMP/pid.json"
check "-p" "$TMP/pid.json" "$TMP/pid.mtrace"
finish
