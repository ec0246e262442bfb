#!/usr/bin/env python3
"""Mooncake Transfer Engine read benchmark on one host (TCP over loopback), for
scripts/bench/mooncake.sh.

    python3 scripts/bench/mooncake_te.py --size 1GiB --chunk 4MiB --iterations 5

Starts a target process (this script, --role target) that registers --size bytes with a pattern,
then reads them into a registered local buffer in --chunk pieces with one
batch_transfer_sync_read per iteration (after --warmup untimed ones), checks the bytes and prints
one JSON line: {"seconds": [...], "median_gbps": ...}. Needs the mooncake-transfer-engine
package (mooncake.sh installs it into a venv). Protocol "tcp", metadata "P2PHANDSHAKE" (no
etcd or metadata server).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def parse_bytes(text: str) -> int:
    for unit in ("GiB", "MiB", "KiB", "B"):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


def engine(host: str):
    from mooncake.engine import TransferEngine  # imported late: --help works without it

    te = TransferEngine()
    rc = te.initialize(host, "P2PHANDSHAKE", "tcp", "")
    if rc != 0:
        raise RuntimeError(f"TransferEngine.initialize({host!r}, P2PHANDSHAKE, tcp) returned {rc}")
    return te


def pattern(size: int) -> np.ndarray:
    return (np.arange(size, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)


def register(te, buf: np.ndarray) -> int:
    addr = buf.ctypes.data
    rc = te.register_memory(addr, buf.nbytes)
    if rc != 0:
        raise RuntimeError(f"register_memory of {buf.nbytes} bytes returned {rc}")
    return addr


def target(args) -> int:
    te = engine(args.host)
    buf = pattern(parse_bytes(args.size))
    addr = register(te, buf)
    print(json.dumps({"session": f"{args.host}:{te.get_rpc_port()}", "address": addr}), flush=True)
    sys.stdin.read()  # until the initiator closes our stdin
    return 0


def initiator(args) -> int:
    size = parse_bytes(args.size)
    chunk = parse_bytes(args.chunk)
    proc = subprocess.Popen(
        [sys.executable, __file__, "--role", "target", "--size", args.size, "--host", args.host],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Mooncake target process exited ({proc.wait()}) before it was ready")
        peer = json.loads(line)
        te = engine(args.host)
        dst = np.ones(size, dtype=np.uint8)  # touched before timing
        base = register(te, dst)
        offsets = list(range(0, size, chunk))
        local = [base + o for o in offsets]
        remote = [peer["address"] + o for o in offsets]
        lengths = [min(chunk, size - o) for o in offsets]
        seconds = []
        for i in range(args.warmup + args.iterations):
            t = time.perf_counter()
            rc = te.batch_transfer_sync_read(peer["session"], local, remote, lengths)
            dt = time.perf_counter() - t
            if rc != 0:
                raise RuntimeError(f"batch_transfer_sync_read returned {rc}")
            if i >= args.warmup:
                seconds.append(dt)
        if not np.array_equal(dst, pattern(size)):
            raise RuntimeError("Mooncake read: the bytes differ from the target's pattern")
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    med = statistics.median(seconds)
    print(
        json.dumps(
            {
                "benchmark": "mooncake_te",
                "protocol": "tcp",
                "bytes": size,
                "chunk_bytes": chunk,
                "seconds": seconds,
                "median_gbps": size / med / 1e9,
                "best_gbps": size / min(seconds) / 1e9,
            }
        )
    )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=["initiator", "target"], default="initiator")
    p.add_argument("--size", default="1GiB")
    p.add_argument("--chunk", default="4MiB")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--host", default="127.0.0.1")
    args = p.parse_args()
    return target(args) if args.role == "target" else initiator(args)


if __name__ == "__main__":
    sys.exit(main())
