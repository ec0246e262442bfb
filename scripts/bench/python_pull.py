#!/usr/bin/env python3
"""Python pull vs C++ Hub::pull of the same bytes, same hub, same buffers, in the same run.

    mpirun -n 2 --oversubscribe --mca osc ucx python3 scripts/bench/python_pull.py --size 1GiB \
        [--transport ucx|mpi_rma]

Rank 0 publishes --size bytes of f32 in --tensors tensors; rank 1 pulls them --iterations times
each way, interleaved (alternating which goes first): the C++ baseline (_tensorhub's cpp_pull_seconds: Hub::pull called from
C++ in a loop, no Python between) and tensorhub.Hub.pull from Python into the same NumPy arrays
(verify on, relay off for both). Prints a table and one JSON line; the ratio is the median
Python time over the median C++ time (the issue's target: <= 1.05).
Needs PYTHONPATH to hold the package (build/lib/python) or `pip install lib/python`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import tensorhub


def quiet_barrier(comm) -> None:
    """A barrier that sleeps instead of spinning (MPI_Barrier polls a core the puller needs)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.005)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", default="1GiB", help="bytes per version (default 1GiB)")
    p.add_argument("--tensors", type=int, default=16)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--overhead-iterations", type=int, default=200)
    p.add_argument("--transport", default="ucx", choices=["ucx", "mpi_rma"],
                   help="ucx: NumPy arrays; mpi_rma: arrays from a registered pool (Hub.allocate)")
    a = p.parse_args()
    world = MPI.COMM_WORLD
    if world.size != 2:
        print("python_pull.py: run with mpirun -n 2", file=sys.stderr)
        return 2
    total = tensorhub.parse_bytes(a.size, "--size")
    per = max(1, total // a.tensors // 4)
    shapes = {f"t{i}": (per,) for i in range(a.tensors)}
    nbytes = per * 4 * a.tensors
    pool = nbytes + (a.tensors << 15) if a.transport == "mpi_rma" else None
    with tensorhub.Hub(world, transport=a.transport, pool=pool) as hub:
        def array(shape, value):
            x = hub.allocate(shape, "f32") if pool else np.empty(shape, np.float32)
            x[:] = value
            return x

        tiny_shapes = {n: (256,) for n in shapes}  # same tensor count, 1 KiB each
        if world.rank == 0:
            src = {n: array(s, i + 0.5) for i, (n, s) in enumerate(shapes.items())}
            hub.publish("bench", 1, src)
            tiny_src = {n: array(s, 1.0) for n, s in tiny_shapes.items()}
            hub.publish("tiny", 1, tiny_src)
        world.barrier()
        cpp, py = [], []
        if world.rank == 1:
            into = {n: array(s, 0) for n, s in shapes.items()}
            views = [tensorhub._arrays.view(n, x, writable=True).as_tuple() for n, x in into.items()]
            hub.pull("bench", 1, into=into, relay=False)  # warm-up (page faults, connections)
            for i in range(a.iterations):  # alternate which path goes first
                for path in (("cpp", "py") if i % 2 == 0 else ("py", "cpp")):
                    if path == "cpp":
                        cpp += hub._impl.cpp_pull_seconds("bench", 1, views, 1)
                        continue
                    t0 = time.perf_counter()
                    r = hub.pull("bench", 1, into=into, relay=False)
                    py.append(time.perf_counter() - t0)
                    assert r.bytes == nbytes
            assert all(x[0] == i + 0.5 and x[-1] == i + 0.5 for i, x in enumerate(into.values()))
            # Per-call cost of the Python layer, where transfer noise is small: the same two paths
            # on a 16 KiB version of as many tensors.
            tiny = {n: array(s, 0) for n, s in tiny_shapes.items()}
            tviews = [tensorhub._arrays.view(n, x, writable=True).as_tuple() for n, x in tiny.items()]
            tcpp, tpy = [], []
            for i in range(a.overhead_iterations):
                tcpp += hub._impl.cpp_pull_seconds("tiny", 1, tviews, 1)
                t0 = time.perf_counter()
                hub.pull("tiny", 1, into=tiny, relay=False)
                tpy.append(time.perf_counter() - t0)
        quiet_barrier(world)
        if world.rank == 1:
            c, q = statistics.median(cpp), statistics.median(py)
            gib = nbytes / (1 << 30)
            print(f"{'path':<10}{'median s':>10}{'GiB/s':>8}{'min s':>10}{'max s':>10}")
            print(f"{'C++':<10}{c:>10.4f}{gib / c:>8.2f}{min(cpp):>10.4f}{max(cpp):>10.4f}")
            print(f"{'Python':<10}{q:>10.4f}{gib / q:>8.2f}{min(py):>10.4f}{max(py):>10.4f}")
            paired = statistics.median(p / q_ for p, q_ in zip(py, cpp))
            print(f"ratio Python/C++ (median): {q / c:.3f}   (min: {min(py) / min(cpp):.3f}, "
                  f"median of adjacent pairs: {paired:.3f})")
            over = statistics.median(tpy) - statistics.median(tcpp)
            print(f"Python layer per call (16 KiB, {a.tensors} tensors, {a.overhead_iterations}x): C++ "
                  f"{statistics.median(tcpp) * 1e6:.0f} us, Python {statistics.median(tpy) * 1e6:.0f} us, "
                  f"overhead {over * 1e6:.0f} us = {over / c * 100:.3f}% of the {gib:.2f} GiB pull")
            print(json.dumps({"bench": "python_pull", "bytes": nbytes, "tensors": a.tensors,
                              "overhead_seconds": over, "overhead_fraction": over / c,
                              "transport": a.transport, "iterations": a.iterations, "cpp_seconds": cpp,
                              "python_seconds": py, "ratio": q / c,
                              "ratio_min": min(py) / min(cpp), "ratio_paired": paired}))
        if world.rank == 0:
            hub.unpublish("bench", 1)
            hub.unpublish("tiny", 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
