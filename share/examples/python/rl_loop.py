#!/usr/bin/env python3
"""An RL-style weight loop with TensorHub: one trainer, rollout workers, bitwise checks.

The trainer trains a small NumPy MLP with SGD and publishes every step (by reference: two
parameter buffers alternate, a version is unpublished before its buffer is written again).
Each rollout pulls ``latest`` into its own model between "generations" and checks that it holds
exactly the trainer's version: the SHA-256 of the flattened parameters, which the trainer
publishes with them (and, under mpirun, also sends at the end).

One MPI job (rank 0 trains, the others roll out; transport mpi_rma)::

    mpirun -n 3 python3 share/examples/python/rl_loop.py --steps 20

Separate plain processes against a standalone coordinator (transport ucx)::

    tensorhub serve --listen 127.0.0.1:7070 &
    python3 rl_loop.py trainer --hub 127.0.0.1:7070 --steps 20 --rollouts 2 &
    python3 rl_loop.py rollout --hub 127.0.0.1:7070 --steps 20 --id 0 &
    python3 rl_loop.py rollout --hub 127.0.0.1:7070 --steps 20 --id 1
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np

import tensorhub

POLICY = "policy"
SHAPES = {"w1": (16, 64), "b1": (64,), "w2": (64, 1), "b2": (1,)}


def digest(params: dict[str, np.ndarray]) -> bytes:
    h = hashlib.sha256()
    for name in sorted(SHAPES):
        h.update(np.ascontiguousarray(params[name]).tobytes())
    return h.digest()


def init_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: (rng.standard_normal(s) * 0.3).astype(np.float32) for n, s in SHAPES.items()}


def sgd_step(src: dict[str, np.ndarray], dst: dict[str, np.ndarray], step: int, lr: float = 0.05) -> float:
    """dst = src - lr * grad of the MSE of y = sin(sum x) on a fresh batch; returns the loss."""
    rng = np.random.default_rng(1000 + step)
    x = rng.standard_normal((64, 16)).astype(np.float32)
    y = np.sin(x.sum(axis=1, keepdims=True))
    h = np.tanh(x @ src["w1"] + src["b1"])
    out = h @ src["w2"] + src["b2"]
    d_out = 2 * (out - y) / len(x)
    d_h = (d_out @ src["w2"].T) * (1 - h * h)
    grads = {"w2": h.T @ d_out, "b2": d_out.sum(0), "w1": x.T @ d_h, "b1": d_h.sum(0)}
    for n in SHAPES:
        np.subtract(src[n], lr * grads[n].astype(np.float32), out=dst[n])
    return float(np.mean((out - y) ** 2))


def generate(params: dict[str, np.ndarray], seed: int) -> float:
    """A stand-in for a generation: run the policy on some inputs."""
    x = np.random.default_rng(seed).standard_normal((32, 16)).astype(np.float32)
    return float((np.tanh(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]).mean())


def train(hub: tensorhub.Hub, steps: int) -> dict[int, bytes]:
    """Publishes versions 1..steps; returns version -> digest. Keeps the last version published."""
    bufs = [init_params(), init_params()]
    shas = [np.zeros(32, np.uint8), np.zeros(32, np.uint8)]
    digests = {}
    for step in range(1, steps + 1):
        cur, prev = bufs[step % 2], bufs[(step - 1) % 2]
        if step > 2:
            hub.unpublish(POLICY, step - 2)  # its buffer is about to be written
        loss = sgd_step(prev, cur, step)
        d = digest(cur)
        shas[step % 2][:] = np.frombuffer(d, np.uint8)
        hub.publish(POLICY, step, {**cur, "sha256": shas[step % 2]})
        digests[step] = d
        print(f"trainer: published v{step} loss {loss:.4f} sha256 {d.hex()[:16]}", flush=True)
        time.sleep(0.02)
    return digests


def rollout(hub: tensorhub.Hub, steps: int, who: str) -> dict[int, bytes]:
    """Pulls latest between generations until version `steps`; returns version -> digest seen."""
    params = {n: np.empty(s, np.float32) for n, s in SHAPES.items()}
    sha = np.empty(32, np.uint8)
    seen: dict[int, bytes] = {}
    last = None
    while last is None or last < steps:
        if hub.wait_for(POLICY, last, timeout=120) is None:
            raise SystemExit(f"{who}: no version after v{last} within 120 s")
        r = hub.pull(POLICY, "latest", into={**params, "sha256": sha})
        d = digest(params)
        if d != sha.tobytes():
            raise SystemExit(f"{who}: v{r.version} differs from the trainer's parameters")
        seen[r.version] = d
        last = r.version
        print(f"{who}: v{r.version} bitwise identical ({r.bytes} B in {r.seconds * 1e3:.1f} ms); "
              f"generation output {generate(params, r.version):+.4f}", flush=True)
    return seen


def run_mpi(steps: int) -> int:
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    if world.size < 2:
        print("rl_loop: under mpirun give at least 2 ranks (or use the trainer/rollout commands)",
              file=sys.stderr)
        return 2
    with tensorhub.Hub(world) as hub:
        mine = train(hub, steps) if world.rank == 0 else rollout(hub, steps, f"rollout {world.rank}")
        everything = world.gather(mine, root=0)  # the last version stays published until here
    if world.rank == 0:
        for r, seen in enumerate(everything[1:], start=1):
            bad = [v for v, d in seen.items() if mine.get(v) != d]
            if bad or steps not in seen:
                print(f"rl_loop: rollout {r} mismatched versions {bad} (saw {sorted(seen)})", file=sys.stderr)
                return 1
        print(f"rl_loop: {world.size - 1} rollouts held exactly the trainer's versions "
              f"(final v{steps}); ok", flush=True)
    return 0


def run_trainer(address: str, steps: int, rollouts: int) -> int:
    with tensorhub.Hub(address=address) as hub:
        train(hub, steps)
        for i in range(rollouts):  # hold the last version until every rollout has it
            if hub.wait_for(f"ack{i}", None, timeout=120) is None:
                print(f"trainer: rollout {i} never acknowledged v{steps}", file=sys.stderr)
                return 1
    print(f"rl_loop: trainer done, {rollouts} rollouts acknowledged v{steps}; ok", flush=True)
    return 0


def run_rollout(address: str, steps: int, ident: int) -> int:
    with tensorhub.Hub(address=address) as hub:
        seen = rollout(hub, steps, f"rollout {ident}")
        ack = np.ones(1, np.uint8)
        hub.publish(f"ack{ident}", 1, {"ack": ack})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until the trainer has left (no origin holder)
            versions = [v for m in hub.status() if m["model"] == POLICY for v in m["versions"]]
            if all(v["origin_holders"] == 0 for v in versions):
                break
            time.sleep(0.05)
    print(f"rl_loop: rollout {ident} held exactly the trainer's versions {sorted(seen)[:3]}... "
          f"v{steps}; ok", flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", nargs="?", choices=["trainer", "rollout"], help="plain-process role (default: mpirun)")
    p.add_argument("--hub", default=None, help="coordinator address (default TENSORHUB_HUB)")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rollouts", type=int, default=2, help="trainer: rollouts to wait for")
    p.add_argument("--id", type=int, default=0, help="rollout: its number (0..rollouts-1)")
    a = p.parse_args()
    if a.steps < 1:
        p.error("--steps must be >= 1")
    if a.role is None:
        return run_mpi(a.steps)
    address = a.hub
    if a.role == "trainer":
        return run_trainer(address, a.steps, a.rollouts)
    return run_rollout(address, a.steps, a.id)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except tensorhub.Error as e:
        print(f"rl_loop: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
