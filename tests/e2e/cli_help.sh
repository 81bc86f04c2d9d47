#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# What a user finds about memtrace itself: --version / -V (version, build,
# libbpf, the kernel's features), help COMMAND and COMMAND --help, a man
# page per command that lists every option --help does, and make install
# putting the binary, the man pages and bash and zsh completion in place.
. "$(dirname "$0")/lib.sh"
plan 47

cd "$TMP" || exit 1
# expect_same DESCRIPTION A B: two outputs, the same (not printed: long)
expect_same() {
	if [ "$2" = "$3" ]; then ok "$1 ($(wc -l <<<"$2") lines)"; else not_ok "$1: '$2' vs '$3'"; fi
}

# --version. The kernel's features as its version says they should be:
# multi-uprobe links from 6.6, uprobe sessions from 6.13, optimized uprobes
# (the uprobe syscall: a probe on a 5-byte nop becomes a call) from 6.18.
"$MEMTRACE" --version >v.out 2>v.err
expect_eq "--version: exit status" "$?" 0
expect_eq "--version: nothing on stderr" "$(cat v.err)" ""
if grep -Eq '^memtrace [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{12}(\+changes)?, gcc [0-9.]+, (static|dynamic)\)$' <(sed -n 1p v.out); then
	ok "--version: line 1 is $(sed -n 1p v.out)"
else
	not_ok "--version: line 1 is '$(sed -n 1p v.out)'"
fi
expect_eq "--version: line 2 (libbpf inside)" "$(sed -n 2p v.out | grep -Ec '^libbpf v1\.[0-9]+$')" 1
kv=$(uname -r | awk -F'[.-]' '{ print $1 * 1000 + $2 }')
yes_from() { [ "$kv" -ge "$1" ] && echo yes || echo no; }
expect_eq "--version: line 3 (the kernel)" "$(sed -n 3p v.out)" \
	"kernel $(uname -r): BTF yes, uprobe sessions $(yes_from 6013), multi-uprobe links $(yes_from 6006), optimized uprobes on 5-byte nops $(yes_from 6018)"
expect_same "-V is --version" "$("$MEMTRACE" -V)" "$(cat v.out)"
capsh --drop=cap_bpf,cap_sys_admin -- -c "$MEMTRACE --version" >v2.out 2>&1
expect_eq "--version without CAP_BPF: the kernel line" "$(sed -n 3p v2.out)" \
	"kernel $(uname -r): BTF yes, uprobe sessions unknown (needs root or CAP_BPF to try), multi-uprobe links unknown (needs root or CAP_BPF to try), optimized uprobes on 5-byte nops $(yes_from 6018)"

# help COMMAND is COMMAND --help.
expect_same "help: the command list, as --help" "$("$MEMTRACE" help)" "$("$MEMTRACE" --help)"
for c in record report diff export top agent; do
	expect_same "help $c is $c --help" "$("$MEMTRACE" help "$c")" "$("$MEMTRACE" "$c" --help)"
done
"$MEMTRACE" help bogus >h.out 2>h.err
expect_eq "help bogus: exit status" "$?" 2
expect_eq "help bogus: the message" "$(cat h.err)" "memtrace: unknown command 'bogus'; see memtrace --help"

# Man pages: render without a warning, and name every option --help names.
for c in "" record report diff export top agent; do
	page=$TOP/docs/man/memtrace${c:+-$c}.1
	expect_eq "man page $(basename "$page"): groff warnings" "$(groff -man -Tascii -ww -z "$page" 2>&1)" ""
	[ -n "$c" ] || continue
	text=$(groff -man -Tascii "$page" 2>/dev/null | col -b)
	missing=""
	for opt in $("$MEMTRACE" "$c" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
		grep -q -- "$opt" <<<"$text" || missing="$missing $opt"
	done
	expect_eq "man page of $c: options of $c --help it does not name" "$missing" ""
done

# make install into a staging directory.
stage=$TMP/stage
make -C "$TOP" -s install DESTDIR="$stage" PREFIX=/usr >install.out 2>&1
expect_eq "make install: exit status" "$?" 0
for f in bin/memtrace share/man/man1/memtrace.1 share/man/man1/memtrace-record.1 share/man/man1/memtrace-report.1 \
	share/man/man1/memtrace-diff.1 share/man/man1/memtrace-export.1 share/man/man1/memtrace-top.1 \
	share/man/man1/memtrace-agent.1 \
	share/bash-completion/completions/memtrace share/zsh/vendor-completions/_memtrace; do
	expect_eq "installed: /usr/$f" "$([ -s "$stage/usr/$f" ] && echo yes || echo no)" yes
done
expect_eq "installed man page renders: its NAME line" \
	"$(MANWIDTH=200 man -l "$stage/usr/share/man/man1/memtrace-report.1" 2>/dev/null | sed -n '/^NAME/{n;p}' | sed 's/^ *//')" \
	"memtrace-report - summarize a trace: top sites, leaks, peak, temporaries"

# bash completion, as bash runs it: COMP_WORDS up to the cursor.
complete_words() { # WORD... (the last is the one being completed)
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _memtrace; echo "${COMPREPLY[*]}"' \
		_ "$stage/usr/share/bash-completion/completions/memtrace" "$@"
}
expect_eq "bash: memtrace rep<TAB>" "$(complete_words memtrace rep)" "report"
expect_eq "bash: memtrace help e<TAB>" "$(complete_words memtrace help e)" "export"
expect_eq "bash: memtrace export --format <TAB>" "$(complete_words memtrace export --format '')" "pprof folded chrome"
expect_eq "bash: memtrace report --j<TAB>" "$(complete_words memtrace report --j)" "--json"
touch a.mtrace b.txt
expect_eq "bash: memtrace report <TAB> offers traces" "$(complete_words memtrace report '' | tr ' ' '\n' | grep -c 'a.mtrace\|b.txt')" 1
if command -v zsh >/dev/null; then
	expect_eq "zsh: _memtrace parses" "$(zsh -n "$stage/usr/share/zsh/vendor-completions/_memtrace" 2>&1)" ""
else
	not_ok "zsh is not installed (tests/install-deps.sh installs it): its completion went unchecked"
fi
finish
