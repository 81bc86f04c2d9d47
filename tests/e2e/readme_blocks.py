#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The README's examples, for tests/e2e/readme.sh.

  readme_blocks.py extract README OUTDIR
      Every fenced block of README, each with the marker on the line before
      it, an HTML comment that GitHub does not show:
        <!-- readme.sh: run -->            "$ " lines are commands, the lines
                                           under each its output
        <!-- readme.sh: screen WxH S -->   its one "$ " command runs in a WxH
                                           terminal; the screen S seconds later
        <!-- readme.sh: file NAME [then CMD] -->  the block is written to NAME
                                           (and CMD run on it, status 0)
        <!-- readme.sh: not run: WHY -->   shown, not run; WHY is printed
      OUTDIR/index gets a line per block: ID LINE KIND ARG (tab-separated);
      OUTDIR/ID.cmd.N the Nth command, OUTDIR/ID.out.N what the README shows
      under it, OUTDIR/ID.body the block itself.

  readme_blocks.py compare EXPECTED ACTUAL
      Exit 0 if ACTUAL has the shape of EXPECTED, else say why and exit 1.
      JSON (one value or one per line): every key path EXPECTED shows is in
      ACTUAL, with its value's type (arrays' items merged; a null shown
      stands for any value). Text: EXPECTED's lines appear in ACTUAL
      in that order, each as a whole line in which every number (with its
      unit: B, KiB, ms, ...) may differ, and so may the spacing between
      columns, a word's plural after a number, hex ids and sparkline bars;
      lines of "..." and blank lines stand for what the README left out.
"""
import json
import os
import re
import sys

MARK = re.compile(r'^<!--\s*readme\.sh:\s*(.*?)\s*-->\s*$')


def extract(readme, outdir):
    lines = open(readme, encoding='utf-8').read().split('\n')
    os.makedirs(outdir, exist_ok=True)
    index = []
    i = 0
    n = 0
    while i < len(lines):
        if not lines[i].startswith('```'):
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith('```'):
            j += 1
        body = lines[start + 1:j]
        k = start - 1
        while k >= 0 and lines[k].strip() == '':
            k -= 1
        m = MARK.match(lines[k]) if k >= 0 else None
        directive = m.group(1) if m else ''
        n += 1
        bid = '%02d' % n
        with open(os.path.join(outdir, bid + '.body'), 'w', encoding='utf-8') as f:
            f.write('\n'.join(body) + '\n')
        if not m:
            kind, arg = 'unmarked', ''
        elif directive.startswith('not run:'):
            kind, arg = 'notrun', directive[len('not run:'):].strip()
        else:
            kind, _, arg = directive.partition(' ')
        if kind in ('run', 'screen'):
            cmds = []
            for line in body:
                if line.startswith('$ '):
                    cmds.append([line[2:], []])
                elif cmds:
                    cmds[-1][1].append(line)
            for c, (cmd, out) in enumerate(cmds, 1):
                with open(os.path.join(outdir, '%s.cmd.%d' % (bid, c)), 'w', encoding='utf-8') as f:
                    f.write(cmd + '\n')
                with open(os.path.join(outdir, '%s.out.%d' % (bid, c)), 'w', encoding='utf-8') as f:
                    f.write('\n'.join(out) + ('\n' if out else ''))
        index.append('\t'.join([bid, str(start + 1), kind, arg]))
        i = j + 1
    with open(os.path.join(outdir, 'index'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(index) + '\n')


def json_values(text):
    """The JSON values of TEXT one after another, or None if it is not JSON."""
    dec = json.JSONDecoder()
    vals = []
    pos = 0
    text = text.strip()
    if not text or text[0] not in '{[':
        return None
    while pos < len(text):
        try:
            v, pos = dec.raw_decode(text, pos)
        except ValueError:
            return None
        vals.append(v)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return vals


def key_paths(v, prefix=''):
    """Each key's path, and each value's path with its type ("null" for a
    null, which the caller lets stand for any type)."""
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            p = prefix + '.' + k
            out.add(p)
            out |= key_paths(x, p)
    elif isinstance(v, list):
        for x in v:
            out |= key_paths(x, prefix + '[]')
    else:
        kind = ('null' if v is None else 'boolean' if isinstance(v, bool) else
                'number' if isinstance(v, (int, float)) else 'string')
        out.add(prefix + ':' + kind)
    return out


UNITS = r'(?:B|KiB|MiB|GiB|TiB|kB|MB|GB|TB|ns|us|µs|ms|s|min|h)'
NUM = r'[-+]?(?:0x[0-9a-fA-F]+|[0-9]+(?:[.,][0-9]+)*)'
TOKEN = re.compile(r'(?P<hex>\b[0-9a-f]{16,}\b)'
                   r'|(?P<num>' + NUM + r')(?:(?P<usp>\s?)(?P<unit>' + UNITS + r')\b)?(?P<wsp>[ \t]+)?(?P<word>[A-Za-z]+(?=\W|$))?'
                   r'|(?P<bars>[▁▂▃▄▅▆▇█]+)'
                   r'|(?P<ws>\s+)'
                   r'|(?P<ch>.)')


def line_regex(line):
    out = []
    for m in TOKEN.finditer(line.strip()):
        if m.group('hex'):
            out.append(r'[0-9a-f]+')
        elif m.group('num') is not None:
            out.append(NUM + r'(?:\s?' + UNITS + r'\b)?')
            if m.group('wsp'):
                out.append(r'\s*')
            w = m.group('word')
            if w:
                stem = w[:-1] if w.endswith('s') and len(w) > 2 else w
                out.append(re.escape(stem) + 's?' if not m.group('unit') else re.escape(w))
        elif m.group('bars'):
            out.append(r'[▁▂▃▄▅▆▇█ ]*')
        elif m.group('ws'):
            out.append(r'\s*')
        else:
            out.append(re.escape(m.group('ch')))
    return re.compile(r'^\s*' + ''.join(out) + r'\s*$')


def compare(expected_file, actual_file):
    expected = open(expected_file, encoding='utf-8').read()
    actual = open(actual_file, encoding='utf-8', errors='replace').read()
    want = json_values(expected)
    if want is not None:
        got = json_values(actual)
        if got is None:
            print('the README shows JSON; the output is not JSON: %r' % actual[:200])
            return 1
        wp = set().union(*(key_paths(v) for v in want))
        gp = set().union(*(key_paths(v) for v in got))
        missing = sorted(p for p in wp - gp if not p.endswith(':null'))
        if missing:
            print('JSON keys the README shows that the output lacks: ' + ' '.join(missing))
            return 1
        print('JSON: the %d key paths and types shown are in the output' % len(wp))
        return 0
    want_lines = [l for l in expected.split('\n') if l.strip() not in ('', '...')]
    got_lines = actual.split('\n')
    pos = 0
    for w in want_lines:
        rx = line_regex(w)
        while pos < len(got_lines) and not rx.match(got_lines[pos]):
            pos += 1
        if pos == len(got_lines):
            print('no line of the shape of %r (in order, after the lines before it)' % w)
            return 1
        pos += 1
    print('text: the %d lines shown, in order' % len(want_lines))
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == 'extract':
        extract(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == 'compare':
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
