"""A plain (non-MPI) Python process for test_serve.py: publisher or reader of a standalone
coordinator. Prints one JSON line per event on stdout.

  worker.py publish ADDRESS MODEL VERSIONS STOPFILE   publish 1..VERSIONS (keeping the last two),
                                                      then hold them until STOPFILE exists
  worker.py read ADDRESS MODEL ROUNDS RANK SIZE       pull latest ROUNDS times in group "readers"
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

import tensorhub


def weights(version: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(version)
    return {"w": rng.standard_normal((256, 300)).astype(np.float32),
            "b": tensorhub.Tensor(rng.integers(0, 1 << 16, size=777, dtype=np.uint16), "bf16")}


def expected_bytes(version: int) -> dict[str, bytes]:
    return {k: (v.array if isinstance(v, tensorhub.Tensor) else v).tobytes() for k, v in weights(version).items()}


def say(**kv) -> None:
    print(json.dumps(kv), flush=True)


def publish(address: str, model: str, versions: int, stopfile: str) -> None:
    with tensorhub.Hub(address=address, chunk="64KiB") as hub:
        assert hub.transport == "ucx"
        for v in range(1, versions + 1):
            hub.publish(model, v, weights(v))
            say(event="published", version=v)
            if v > 2:
                hub.unpublish(model, v - 2)
            time.sleep(0.02)
        while not os.path.exists(stopfile):
            time.sleep(0.05)
    say(event="closed")


def read(address: str, model: str, rounds: int, rank: int, size: int) -> None:
    with tensorhub.Hub(address=address) as hub:
        assert hub.wait_for(model, None, timeout=60) is not None
        group = tensorhub.Group("readers", size=size, rank=rank)
        for _ in range(rounds):
            r = hub.pull(model, "latest", group=group)
            exp = expected_bytes(r.version)
            ok = all(r.tensors[k].tobytes() == exp[k] for k in exp)
            say(event="pulled", version=r.version, ok=ok, bytes=r.bytes)
    say(event="closed")


if __name__ == "__main__":
    mode, address, model = sys.argv[1:4]
    if mode == "publish":
        publish(address, model, int(sys.argv[4]), sys.argv[5])
    else:
        read(address, model, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
