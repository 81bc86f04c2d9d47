#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The HTML pages' own files (user/output/html/) as what they are: each
# script passes `node --check`, the style parses as CSS without an error
# (python3-tinycss2), and the pages memtrace writes hold every file
# verbatim where its mark was, with no mark left and their whole scripts
# (the shared one and the page's own, as the page runs them) valid too.
# Needs no root: the pages come from the checked-in golden traces.
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
MEMTRACE=${MEMTRACE:-$top/build/memtrace}
assets=$top/user/output/html
TMP=$(mktemp -d /tmp/memtrace-html-assets.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
count=0
fails=0
ok() { count=$((count + 1)); echo "ok $count - $*"; }
not_ok() { count=$((count + 1)); fails=$((fails + 1)); echo "not ok $count - $*"; }
show() { sed 's/^/# /' "$1"; }

# node_check WHAT FILE
node_check() {
	if node --check "$2" >"$TMP/node.err" 2>&1; then
		ok "$1 passes node --check"
	else
		not_ok "$1 fails node --check"
		show "$TMP/node.err"
	fi
}

# the plan: 4 scripts, the style, 2 pages written, 7 assets held, and per
# page its marks and its script
plan=$((4 + 1 + 2 + 7 + 2 * 2))
echo "1..$plan"

for js in common.js rss.js report.js diff.js; do
	node_check "user/output/html/$js" "$assets/$js"
done

# The style: tinycss2 turns what it cannot parse into error nodes.
if /usr/bin/python3 - "$assets/style.css" >"$TMP/css.err" 2>&1 <<'PY'; then
import sys, tinycss2
rules = tinycss2.parse_stylesheet(open(sys.argv[1], encoding='utf-8').read(), skip_comments=True, skip_whitespace=True)
errors = [r for r in rules if r.type == 'error']
for r in rules:
    if r.type == 'qualified-rule':
        errors += [d for d in tinycss2.parse_declaration_list(r.content, skip_comments=True, skip_whitespace=True) if d.type == 'error']
for e in errors:
    print('line %d: %s' % (e.source_line, e.message))
qualified = sum(r.type == 'qualified-rule' for r in rules)
print('%d rules' % qualified)
sys.exit(1 if errors or qualified == 0 else 0)
PY
	ok "user/output/html/style.css parses as CSS: $(tail -n1 "$TMP/css.err")"
else
	not_ok "user/output/html/style.css does not parse as CSS"
	show "$TMP/css.err"
fi

# The pages memtrace writes from them.
if "$MEMTRACE" report --html "$TMP/report.html" "$here/alloc_patterns.mtrace" 2>"$TMP/report.err"; then
	ok "report --html wrote report.html"
else
	not_ok "report --html failed"
	show "$TMP/report.err"
fi
if "$MEMTRACE" diff --html "$TMP/diff.html" "$here/alloc_patterns.mtrace" "$here/cxx_new_delete.mtrace" 2>"$TMP/diff.err"; then
	ok "diff --html wrote diff.html"
else
	not_ok "diff --html failed"
	show "$TMP/diff.err"
fi

# holds PAGE ASSET: the asset's text is in the page, byte for byte
holds() {
	if /usr/bin/python3 -c 'import sys; sys.exit(open(sys.argv[2], "rb").read() not in open(sys.argv[1], "rb").read())' "$TMP/$1" "$assets/$2"; then
		ok "$1 holds $2 verbatim"
	else
		not_ok "$1 does not hold $2 verbatim"
	fi
}
holds report.html style.css
holds report.html common.js
holds report.html report.js
holds report.html rss.js
holds diff.html style.css
holds diff.html common.js
holds diff.html diff.js

for page in report.html diff.html; do
	n=$(grep -c '<!-- memtrace:' "$TMP/$page")
	if [ "$n" = 0 ]; then ok "$page: every mark filled"; else not_ok "$page: $n marks left unfilled"; fi
	# the page's script, as the browser runs it: the last <script> element
	/usr/bin/python3 - "$TMP/$page" "$TMP/$page.js" <<'PY'
import re, sys
page = open(sys.argv[1], encoding='utf-8').read()
scripts = re.findall(r'<script>\n(.*?)</script>', page, re.S)
open(sys.argv[2], 'w', encoding='utf-8').write(scripts[-1] if scripts else '')
PY
	if [ -s "$TMP/$page.js" ]; then
		node_check "$page's whole script" "$TMP/$page.js"
	else
		not_ok "$page has no script"
	fi
done

if [ "$count" != "$plan" ]; then
	not_ok "html_assets.sh made $((count)) checks of the $plan it planned"
fi
exit $((fails > 0))
