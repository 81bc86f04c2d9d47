# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A Python process that grows until something stops it, for
tests/e2e/python_views.sh: waits for SIGUSR1, then keeps 4 MiB more every
20 ms from the line marked LINE:grow (each one malloc, every page written),
printing "py_grow: STEP" before each."""
import signal
import sys
import time

STEP = 4 << 20


def grow(keep, i):
    print(f"py_grow: {i}", flush=True)
    keep.append(b"x" * STEP)  # LINE:grow


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    print("py_grow: waiting for SIGUSR1", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGUSR1})
    keep = []
    for i in range(100000):
        grow(keep, i)
        time.sleep(0.02)


main()
