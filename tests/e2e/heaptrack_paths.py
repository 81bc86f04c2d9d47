#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""heaptrack's data file (the text inside heaptrack's .zst, on stdin) to one
line "COUNT BYTES PATH" per call path, for tests/e2e/sqlite.sh. PATH is the
frames named sqlite3*, outermost first, joined by ';' (what the test's
norm.awk makes of a folded line); allocations with no such frame are left
out.

The lines read (heaptrack 1.4, file version 3; numbers in hex; what
heaptrack_interpret writes and heaptrack_print reads):
  s LEN STRING            string N (from 1; 0 is the empty string)
  i IP MODULE [FN [FILE LINE [FN FILE LINE]...]]
                          instruction pointer N (from 1): its function (if
                          known), its file and line (if known), then the
                          functions inlined at it (only with a file)
  t IP PARENT             trace node N (from 1): an ip and its caller's node
                          (0: none)
  a SIZE TRACE            allocation info N (from 0): requested size, trace
  + INFO                  an allocation of allocation info INFO
Everything else (frees, timestamps, RSS, comments) does not matter here.
"""
import re
import sys

SQLITE = re.compile(r"^sqlite3[A-Za-z0-9_]*$")


def main():
    strings = [""]
    ips = [None]
    traces = [None]
    infos = []
    paths = {}  # trace node -> path
    count = {}
    size = {}

    def path_of(node):
        names = []  # innermost first
        while node:
            ip, parent = traces[node]
            names.extend(reversed(ips[ip]))
            node = parent
        return ";".join(n for n in reversed(names) if SQLITE.match(n))

    for line in sys.stdin:
        line = line.rstrip("\n")
        kind = line[:1]
        if kind == "s":
            _, n, rest = (line.split(" ", 2) + [""])[:3]
            strings.append(rest[: int(n, 16)])
        elif kind == "i":
            f = [int(x, 16) for x in line.split()[1:]]
            # FN, then FN of each inlined triple after FILE LINE. Their
            # order does not matter here: libsqlite3 has no line table, so
            # no sqlite3* function comes with inlined ones.
            ips.append([strings[f[i]] for i in [2] + list(range(5, len(f), 3)) if i < len(f)])
        elif kind == "t":
            ip, parent = (int(x, 16) for x in line.split()[1:3])
            traces.append((ip, parent))
        elif kind == "a":
            sz, node = (int(x, 16) for x in line.split()[1:3])
            infos.append((sz, node))
        elif kind == "+":
            sz, node = infos[int(line.split()[1], 16)]
            if node not in paths:
                paths[node] = path_of(node)
            p = paths[node]
            if p:
                count[p] = count.get(p, 0) + 1
                size[p] = size.get(p, 0) + sz
    for p in count:
        print(count[p], size[p], p)


if __name__ == "__main__":
    main()
