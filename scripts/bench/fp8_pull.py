#!/usr/bin/env python3
"""A bf16 pull as FP8 (tensorhub.fp8.pull_fp8) vs the plain bf16 pull of the same tensors, same
run, same hub (README "FP8"; issue 45's goal: <= 1.15x).

    mpirun -n 2 --mca osc ucx -x PYTHONPATH /usr/bin/python3 scripts/bench/fp8_pull.py \
        [--tensors 16] [--rows 4096] [--cols 4096] [--staging 64MiB] [--transport cma] [-n 5]

Rank 0 publishes --tensors bf16 matrices; rank 1 pulls them -n times each way, alternating:
into bf16 arrays (verify on, relay off) and into e4m3fn + 128 x 128 scale buffers. Prints a
table and one JSON line: medians, the ratio, and the conversion's own seconds (on its thread,
overlapped with the next batch's pull). Needs PYTHONPATH to hold the package (build/lib/python).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from mpi4py import MPI

import tensorhub
import tensorhub.fp8 as fp8


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tensors", type=int, default=16)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--staging", default="64MiB", help="Fp8PullOptions::staging_bytes")
    ap.add_argument("--transport", default="cma")
    ap.add_argument("-n", "--iterations", type=int, default=5)
    a = ap.parse_args()
    world = MPI.COMM_WORLD
    if world.size != 2:
        raise SystemExit("fp8_pull.py needs exactly 2 ranks (publisher and reader)")
    shape = (a.rows, a.cols)
    grid = (-(-a.rows // 128), -(-a.cols // 128))
    with tensorhub.Hub(world, transport=a.transport) as hub:
        if world.rank == 0:
            rng = np.random.default_rng(0)
            words = {}
            for i in range(a.tensors):
                f = rng.standard_normal(shape).astype(np.float32)
                words[f"w{i}"] = tensorhub.Tensor((f.view(np.uint32) >> 16).astype(np.uint16), "bf16")
            hub.publish("fp8bench", 1, words)
        world.Barrier()
        if world.rank == 1:
            plain = {f"w{i}": tensorhub.Tensor(np.empty(shape, np.uint16), "bf16") for i in range(a.tensors)}
            dst = {f"w{i}": fp8.FP8(np.empty(shape, np.uint8), np.empty(grid, np.float32)) for i in range(a.tensors)}
            staging = tensorhub.parse_bytes(a.staging, "--staging")
            hub.pull("fp8bench", 1, into=plain, relay=False)  # warm-up, both ways
            fp8.pull_fp8(hub, "fp8bench", dst, 1, staging_bytes=staging)
            t_plain, t_fp8, t_convert = [], [], []
            for i in range(a.iterations):
                for way in ((0, 1) if i % 2 == 0 else (1, 0)):
                    t0 = time.perf_counter()
                    if way == 0:
                        hub.pull("fp8bench", 1, into=plain, relay=False)
                        t_plain.append(time.perf_counter() - t0)
                    else:
                        r = fp8.pull_fp8(hub, "fp8bench", dst, 1, staging_bytes=staging)
                        t_fp8.append(time.perf_counter() - t0)
                        t_convert.append(r["convert_seconds"])
            bf16_bytes = a.tensors * a.rows * a.cols * 2
            mp, mf, mc = statistics.median(t_plain), statistics.median(t_fp8), statistics.median(t_convert)
            print(f"# {a.tensors} x bf16[{a.rows},{a.cols}] = {bf16_bytes / 2**20:.0f} MiB over {a.transport}, "
                  f"staging {a.staging} x 2, {a.iterations} rounds each (medians)")
            print(f"{'method':>10} {'median s':>9} {'GB/s of bf16':>13} {'vs plain':>9}")
            print(f"{'plain':>10} {mp:9.4f} {bf16_bytes / mp / 1e9:13.2f} {1.0:9.2f}")
            print(f"{'fp8':>10} {mf:9.4f} {bf16_bytes / mf / 1e9:13.2f} {mf / mp:9.2f}   (conversion {mc:.4f} s)")
            print(json.dumps({"benchmark": "fp8_pull", "tensors": a.tensors, "rows": a.rows, "cols": a.cols,
                              "transport": a.transport, "staging_bytes": staging, "bf16_bytes": bf16_bytes,
                              "plain_s": t_plain, "fp8_s": t_fp8, "convert_s": t_convert,
                              "ratio_plain": mf / mp}))
        world.Barrier()
        if world.rank == 0:
            hub.unpublish("fp8bench", 1)


if __name__ == "__main__":
    main()
