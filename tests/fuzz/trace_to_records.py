#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Turn a trace (docs/trace-format.md) into fuzz_trace_records.c's input:
each chunk's decompressed records as {u8 type, u16 length, bytes}. A chunk
larger than 65535 raw bytes is cut (the harness wraps what it gets).
usage: trace_to_records.py TRACE OUT"""
import struct
import subprocess
import sys

def main():
    data = open(sys.argv[1], "rb").read()
    if data[:6] != b"MTRACE":
        sys.exit("not a trace")
    off = struct.unpack_from("<I", data, 16)[0]
    out = bytearray()
    while off + 32 <= len(data):
        if data[off:off + 4] != b"MTCK":
            break
        ctype, = struct.unpack_from("<H", data, off + 4)
        size, = struct.unpack_from("<I", data, off + 12)
        payload = data[off + 32:off + 32 + size]
        raw = subprocess.run(["zstd", "-d", "-c", "-q"], input=payload,
                             stdout=subprocess.PIPE, check=True).stdout[:65535]
        out += struct.pack("<BH", ctype, len(raw)) + raw
        off += 32 + size
    open(sys.argv[2], "wb").write(out)

main()
