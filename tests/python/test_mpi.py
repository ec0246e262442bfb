"""Under mpirun (3 ranks, mpi4py): rank 0 publishes, ranks 1-2 read (also as one group); ucx for
any NumPy memory, mpi_rma for pool memory from Hub.allocate.

Every test is collective: all ranks run the same tests in the same order; mpirun fails when any
rank fails.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed (python3-mpi4py)")
import tensorhub  # noqa: E402

WORLD = MPI.COMM_WORLD


def weights(version: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(version)
    return {"w": rng.standard_normal((128, 1000)).astype(np.float32),
            "i": rng.integers(-9, 9, size=(3, 7, 11), dtype=np.int64),
            "h": rng.standard_normal(513).astype(np.float16)}


@pytest.fixture(scope="module")
def hub():
    assert WORLD.Get_size() == 3, "run with mpirun -n 3"
    with tensorhub.Hub(WORLD, chunk="32KiB") as h:
        assert h.transport == ("ucx" if tensorhub._tensorhub.HAVE_UCX else "mpi_rma")
        assert h.rank == WORLD.Get_rank()
        yield h


def test_publish_pull_every_reader(hub):
    if WORLD.rank == 0:
        hub.publish("m", 1, weights(1))
    WORLD.barrier()
    if WORLD.rank > 0:
        r = hub.pull("m", "latest")
        exp = weights(1)
        assert r.version == 1 and r.bytes == sum(a.nbytes for a in exp.values())
        assert all(np.array_equal(r.tensors[k], exp[k]) for k in exp)
        assert r.origin_bytes + r.relay_bytes == r.bytes
    WORLD.barrier()
    if WORLD.rank == 0:
        hub.unpublish("m", 1)
    WORLD.barrier()


def test_reading_group_of_two_gets_one_version(hub):
    readers = WORLD.Split(0 if WORLD.rank == 0 else 1, WORLD.rank)
    rounds = 12
    if WORLD.rank == 0:
        v = 0
        hub.publish("g", 1, weights(1 % 5))
        held = [1]
        done = WORLD.irecv(source=1, tag=7)
        while not done.test()[0]:
            v = held[-1] + 1
            hub.publish("g", v, weights(v % 5))
            held.append(v)
            if len(held) > 2:
                hub.unpublish("g", held.pop(0))
            time.sleep(0.01)
        for old in held:
            hub.unpublish("g", old)
    else:
        group = tensorhub.Group("readers", readers)
        assert group.size == 2
        versions = []
        out = {k: np.empty_like(a) for k, a in weights(1).items()}
        assert hub.wait_for("g", None, timeout=60) is not None  # rank 0 may not have published yet
        for _ in range(rounds):
            r = hub.pull("g", "latest", into=out, group=group)
            exp = weights(r.version % 5)
            assert all(np.array_equal(out[k], exp[k]) for k in exp), r.version
            versions.append(r.version)
        other = readers.sendrecv(versions, dest=1 - readers.rank, source=1 - readers.rank)
        assert versions == other, (versions, other)
        assert versions == sorted(versions)
        hub.stop_relaying(out)
        readers.barrier()
        if WORLD.rank == 1:
            WORLD.send(True, dest=0, tag=7)
    readers.Free()
    WORLD.barrier()


def test_pool_memory(hub):
    del hub  # a second hub with a registered pool on every rank
    with tensorhub.Hub(WORLD, pool="8MiB") as h:
        assert h.transport == "mpi_rma"
        a = h.allocate((256, 256), "f32")
        if WORLD.rank == 0:
            a[:] = np.arange(a.size, dtype=np.float32).reshape(a.shape)
            h.publish("pool", 1, {"a": a})
        WORLD.barrier()
        if WORLD.rank > 0:
            r = h.pull("pool", 1, into={"a": a})
            assert r.version == 1 and a[255, 255] == a.size - 1
            h.stop_relaying({"a": a})
        WORLD.barrier()
        if WORLD.rank == 0:
            h.unpublish("pool", 1)
        h.deallocate(a)
        WORLD.barrier()
