# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Python allocations at known lines, for tests/e2e/python.sh.

Usage: py_alloc.py OUT.json [--no-wait] [--no-churn] [--stay]

Waits for SIGUSR1 (so memtrace can attach with -p), then allocates from the
lines marked "# LINE:name" below and keeps what it allocated. Large blocks
(BIG bytes and more) are past pymalloc's 512 bytes: each is one malloc. It
writes OUT.json with its own account (what each line did, and the addresses
of code objects made and freed), and under -X tracemalloc the live blocks
by line, as tracemalloc counts them. Then (with --stay, once SIGTERM comes)
it leaves with os._exit, so every block it kept is still live when the
recording ends.
"""
import gc
import json
import os
import signal
import sys
import threading
import time
import tracemalloc

BIG = 100_000   # bytes of each large buffer: a malloc of BIG + 1
N = 20          # large blocks a line makes (its list stays on pymalloc's side)
SMALL = 20_000  # tuples and short strings: pymalloc's, seen with --python-objects only
THREADS = 4
DEEP = 100      # Python frames under the deepest allocation: more than memtrace keeps
HELD = 5        # functions made, called once, held a while and freed
CHURN = 40      # more of them, freed at once
KEEP = []


def make_buffers(n):
    return [bytearray(BIG) for _ in range(n)]  # LINE:buffers


def make_small(n):
    return [(i, str(i)) for i in range(n)]  # LINE:small


def make_strings(n):
    return ["s" * (BIG + i) for i in range(n)]  # LINE:strings


class Handler:
    def handle(self, n):
        return make_buffers(n)  # LINE:handle


def gen(n):
    for _ in range(n):
        yield bytearray(BIG)  # LINE:gen


def key_fn(x):
    bytearray(BIG)  # LINE:key
    return -x


def run_sorted(n):
    return sorted(range(n), key=key_fn)  # LINE:sorted


class Opaque:
    pass


def json_default(o):
    KEEP.append(bytearray(BIG))  # LINE:json
    return 0


def run_json(n):
    # the C encoder of the _json extension module calls json_default back
    return json.dumps([Opaque() for _ in range(n)], default=json_default)


def recurse(depth):
    if depth == 0:
        return bytearray(BIG)  # LINE:deep
    return recurse(depth - 1)


def fails():
    raise ValueError("unwound")


def after_exception():
    try:
        fails()
    except ValueError:
        return bytearray(BIG)  # LINE:except


def thread_work(out, n):
    for _ in range(n):
        out.append(bytearray(BIG))  # LINE:thread


def made_functions(first, count, hold):
    """Functions whose code objects are freed before the next is made: the
    allocator hands their addresses out again. fn_I allocates BIG + I bytes
    once, and lives HOLD seconds after (long enough for a recorder to read
    its code object: one freed sooner may go unnamed, never misnamed)."""
    codes = []
    for i in range(first, first + count):
        ns = {}
        exec(compile(f"def fn_{i}():\n    return bytearray({BIG + i})\n", "<made>", "exec"), ns)
        fn = ns[f"fn_{i}"]
        codes.append(id(fn.__code__))
        KEEP.append(fn())
        time.sleep(hold)
        del fn, ns
        gc.collect()
    return codes


def main():
    out = sys.argv[1]
    if "--no-wait" not in sys.argv:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        print("py_alloc: waiting for SIGUSR1", file=sys.stderr, flush=True)
        signal.sigwait({signal.SIGUSR1})
    KEEP.append(make_buffers(N))
    KEEP.append(make_strings(N))
    KEEP.append(make_small(SMALL))
    KEEP.append(Handler().handle(N))
    KEEP.append(list(gen(N)))
    KEEP.append(run_sorted(N))
    KEEP.append(run_json(N))
    KEEP.append(recurse(DEEP))
    KEEP.append(after_exception())
    lists = [[] for _ in range(THREADS)]
    threads = [threading.Thread(target=thread_work, args=(lists[i], N)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    KEEP.append(lists)
    codes = made_functions(0, HELD, 0.3)
    churn = made_functions(HELD, CHURN, 0) if "--no-churn" not in sys.argv else []
    truth = {"big": BIG, "n": N, "small": SMALL, "threads": THREADS, "held": HELD, "codes": codes, "churn": churn}
    if tracemalloc.is_tracing():
        lines = {}
        for t in tracemalloc.take_snapshot().traces:
            f = t.traceback[0]
            k = f"{os.path.basename(f.filename)}:{f.lineno}"
            big = t.size > 512
            e = lines.setdefault(k, {"big_count": 0, "big_bytes": 0, "count": 0, "bytes": 0})
            e["count"] += 1
            e["bytes"] += t.size
            if big:
                e["big_count"] += 1
                e["big_bytes"] += t.size
        truth["tracemalloc"] = lines
    with open(out, "w") as f:
        json.dump(truth, f)
    if "--stay" in sys.argv:
        # for the live views: what it keeps stays live until it is stopped
        print("py_alloc: done", file=sys.stderr, flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        signal.sigwait({signal.SIGTERM})
    sys.stdout.flush()
    os._exit(0)


main()
