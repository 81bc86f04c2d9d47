# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Python processes forked by multiprocessing, for tests/e2e/python_views.sh.

Usage: py_children.py CHILDREN N

Starts CHILDREN processes with multiprocessing's fork start method; child I
makes N + I large buffers (past pymalloc: a malloc of BIG + 1 each) at the
line marked LINE:child, keeps them and leaves with os._exit. The parent
makes N at LINE:parent.
"""
import multiprocessing
import os
import sys

BIG = 100_000


def child_work(i, n):
    keep = [bytearray(BIG) for _ in range(n + i)]  # LINE:child
    sys.stdout.flush()
    os._exit(0 if len(keep) == n + i else 1)


def main():
    children, n = int(sys.argv[1]), int(sys.argv[2])
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=child_work, args=(i, n)) for i in range(children)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    keep = [bytearray(BIG) for _ in range(n)]  # LINE:parent
    bad = [p.exitcode for p in procs if p.exitcode != 0]
    print(f"py_children: {children} children, {len(keep)} buffers, exit codes {bad or 'all 0'}")
    os._exit(1 if bad else 0)


main()
