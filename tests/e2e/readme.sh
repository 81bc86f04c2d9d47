#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# README.md's examples, run: every fenced block of the README carries a
# marker on the line before it (<!-- readme.sh: run | screen WxH S | file
# NAME [then CMD] | not run: WHY -->; tests/e2e/readme_blocks.py says what
# each means), and a block without one fails. Each "$ " command of a run
# block runs here, from a scratch directory that stands for the source tree
# (build/memtrace is $MEMTRACE, build/progs is $PROGS, inproc is the tree's),
# the commands of one block in one shell, as a reader types them; each must
# exit 0 and print what the README shows under it, in its shape: the same
# lines in the same order with any numbers, or the JSON keys shown
# (readme_blocks.py compare). Paths are the tree's, said as the README's
# (/work/main, where its output was made). A screen block runs its command
# in a tmux terminal of that size. The agent listens on a port of its own
# here, not 6071, and "sudo " is dropped (the tier runs as root). Blocks
# marked "not run" (a real service or a tool this host lacks) are listed
# and counted. Also: the README is at most 400 lines, and its two commands
# are the Makefile's (make demo records and reports the demo; make test
# ends with run.sh's totals line). README_DUMP=DIR keeps each command's
# output there (lineL.N.out), to paste real output into the README.
. "$(dirname "$0")/lib.sh"

README=$TOP/README.md
BLOCKS=$TMP/blocks
W=$TMP/work
PORT=$((20000 + $$ % 20000))
mkdir -p "$W/build"
ln -s "$MEMTRACE" "$W/build/memtrace"
ln -s "$PROGS" "$W/build/progs"
ln -s "$TOP/inproc" "$W/inproc"
SHOWN_TOP=/work/main

python3 "$TOP/tests/e2e/readme_blocks.py" extract "$README" "$BLOCKS"

# The plan, from the README's blocks: the 4 checks of the README itself, a
# check per command of a run block, one per screen, per file checked by a
# command and per block without a marker, and the count at the end
planned=5
while IFS=$'\t' read -r id line kind arg; do
	case $kind in
	run) planned=$((planned + $(ls "$BLOCKS/$id".cmd.* 2>/dev/null | wc -l))) ;;
	screen) planned=$((planned + 1)) ;;
	file) [ "$arg" = "${arg%% *}" ] || planned=$((planned + 1)) ;;
	notrun) ;;
	*) planned=$((planned + 1)) ;;
	esac
done <"$BLOCKS/index"
plan "$planned"

# The README's two commands are the Makefile's.
lines=$(wc -l <"$README")
if [ "$lines" -le 400 ]; then ok "README.md is $lines lines (at most 400)"; else not_ok "README.md is $lines lines, more than 400"; fi
expect_eq "README: the two commands come first" "$(grep -m2 -oE '^sudo make (demo|test)' "$README" | tr '\n' ' ')" "sudo make demo sudo make test "
expect_eq "make demo records the demo and reports it, as the README shows" \
	"$(sed -n '/^demo:/,/^$/p' "$TOP/Makefile" | grep -cE '^\s+\$\(BUILD\)/memtrace (record -o \$\(BUILD\)/demo\.mtrace -- \$\(BUILD\)/progs/demo|report \$\(BUILD\)/demo\.mtrace)$')" 2
expect_eq "make test runs tests/run.sh, whose last line is 'N passed, N failed, N skipped'" \
	"$(sed -n '/^test:/,/^$/p' "$TOP/Makefile" | grep -c 'tests/run.sh') $(grep -c '^echo "$passed passed, $failed failed, $skipped skipped"$' "$TOP/tests/run.sh")" "1 1"

# the actual output, as the README would say it: the tree's paths as /work/main
shown() { sed -e "s#$W/#$SHOWN_TOP/#g" -e "s#$TOP/#$SHOWN_TOP/#g" "$1"; }

# command ID N: the README's command N of block ID, as it runs here
command_of() {
	sed -e 's/^sudo //' -e "s/127\.0\.0\.1:6071/127.0.0.1:$PORT/g" "$BLOCKS/$1.cmd.$2" |
		sed -E "/(^|[ \/])memtrace agent / { /--listen/! s/( agent )/\1--listen 127.0.0.1:$PORT /; }"
}

# check ID N ACTUAL STATUS: command N of block ID exited 0 and printed the
# README's output in shape
check() {
	local id=$1 n=$2 actual=$3 status=$4 cmd why
	cmd=$(head -c 90 "$BLOCKS/$id.cmd.$n")
	shown "$actual" >"$actual.shown"
	[ -z "${README_DUMP:-}" ] || cp "$actual.shown" "$README_DUMP/line$line.$n.out"
	why=$(python3 "$TOP/tests/e2e/readme_blocks.py" compare "$BLOCKS/$id.out.$n" "$actual.shown")
	if [ "$status" != 0 ]; then
		not_ok "README line $line: '$cmd' exited $status"
		sed 's/^/#   /' "$actual.shown" | tail -n 15
	elif [ "$why" = "${why#text: }" ] && [ "$why" = "${why#JSON: }" ]; then
		not_ok "README line $line: '$cmd': $why"
		sed 's/^/#   got: /' "$actual.shown" | head -n 40
	else
		ok "README line $line: '$cmd': exit 0; $why"
	fi
}

# run_block ID: its commands in one shell, each one's output apart
run_block() {
	local id=$1 n script=$TMP/$1.sh out=$TMP/$1.all
	n=$(ls "$BLOCKS/$id".cmd.* 2>/dev/null | wc -l)
	{
		echo 'cd "$1" || exit 1; export HOME="$1"; exec 2>&1'
		for ((c = 1; c <= n; c++)); do
			echo "echo '@@readme.sh@@ start $c'"
			echo "{ $(command_of "$id" "$c")"
			echo "}; echo \"@@readme.sh@@ end $c \$?\""
			# a program started with & is the one to attach to once it
			# has exec'd (a reader is never that quick; this script is)
			if grep -q '&[[:space:]]*$' "$BLOCKS/$id.cmd.$c"; then
				echo 'for i in $(seq 50); do [ "$(readlink /proc/$!/exe)" != "$(readlink /proc/$$/exe)" ] && break; sleep 0.1; done'
			fi
		done
		echo 'kill $(jobs -p) 2>/dev/null; wait'
	} >"$script"
	timeout -k 5 180 bash "$script" "$W" >"$out" 2>&1 </dev/null
	for ((c = 1; c <= n; c++)); do
		sed -n "/^@@readme.sh@@ start $c\$/,/^@@readme.sh@@ end $c /p" "$out" | sed '1d;$d' >"$TMP/$id.$c.out"
		status=$(sed -n "s/^@@readme.sh@@ end $c \([0-9]*\)\$/\1/p" "$out")
		check "$id" "$c" "$TMP/$id.$c.out" "${status:-never ended}"
		RUN=$((RUN + 1))
	done
}

# missing_tool ID: the first tool block ID's commands use that this host
# lacks (the block is then skipped, not failed)
missing_tool() {
	local t
	for t in go promtool curl jq tmux cc; do
		grep -qE "(^|[;|&] *)$t " "$BLOCKS/$1".cmd.* 2>/dev/null || continue
		command -v "$t" >/dev/null || { echo "$t"; return; }
	done
}

# screen_block ID WxH SECONDS: its one command in a terminal of that size,
# the screen SECONDS later (then q); on a busy host up to 10 s more, until
# it has the README's shape
screen_block() {
	local id=$1 size=$2 secs=$3 s=readme-$$-$1 i
	tmux kill-session -t "$s" 2>/dev/null
	tmux new-session -d -s "$s" -x "${size%x*}" -y "${size#*x}" \
		"cd '$W' && HOME='$W' $(command_of "$id" 1); echo \"@@readme.sh@@ end \$?\"; sleep 30"
	sleep "$secs"
	for ((i = 0; i < 20; i++)); do
		tmux capture-pane -p -t "$s" >"$TMP/$id.1.out"
		shown "$TMP/$id.1.out" >"$TMP/$id.1.try"
		python3 "$TOP/tests/e2e/readme_blocks.py" compare "$BLOCKS/$id.out.1" "$TMP/$id.1.try" >/dev/null && break
		sleep 0.5
	done
	tmux send-keys -t "$s" q
	local i
	for ((i = 0; i < 50; i++)); do
		tmux capture-pane -p -t "$s" | grep -q '^@@readme.sh@@ end' && break
		sleep 0.1
	done
	status=$(tmux capture-pane -p -t "$s" | sed -n 's/^@@readme.sh@@ end \([0-9]*\)$/\1/p')
	tmux kill-session -t "$s" 2>/dev/null
	check "$id" 1 "$TMP/$id.1.out" "${status:-still running after q}"
	RUN=$((RUN + 1))
}

RUN=0
FILES=0
NOTRUN=0
while IFS=$'\t' read -r -u 3 id line kind arg; do
	tool=$(missing_tool "$id")
	if [ -n "$tool" ]; then
		case $kind in
		run) skips "$(ls "$BLOCKS/$id".cmd.* | wc -l)" "README line $line: its commands need $tool, not installed here" ;;
		*) skip "README line $line: its commands need $tool, not installed here" ;;
		esac
		continue
	fi
	case $kind in
	run) run_block "$id" ;;
	screen) screen_block "$id" ${arg} ;;
	file)
		name=${arg%% *}
		cp "$BLOCKS/$id.body" "$W/$name"
		FILES=$((FILES + 1))
		if [ "$arg" != "$name" ]; then
			then_cmd=${arg#"$name" then }
			if ! command -v "${then_cmd%% *}" >/dev/null; then
				skip "README line $line: $name is checked by ${then_cmd%% *}, not installed here"
				continue
			fi
			(cd "$W" && HOME=$W timeout -k 5 "$LIMIT" bash -c "$then_cmd") >"$TMP/$id.then" 2>&1
			expect_status "README line $line: $name, checked by '$then_cmd'" "$?" 0 "$TMP/$id.then"
		fi
		;;
	notrun)
		echo "# not run: README line $line ($(head -n1 "$BLOCKS/$id.body" | head -c 70)): $arg"
		NOTRUN=$((NOTRUN + 1))
		;;
	*) not_ok "README line $line: a fenced block without a readme.sh marker (run, screen, file or not run)" ;;
	esac
done 3<"$BLOCKS/index"
ok "README: $RUN commands run and compared, $FILES blocks written as files, $NOTRUN blocks marked not run"
finish
