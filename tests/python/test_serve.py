"""Plain Python processes (no mpirun) joined to a standalone `tensorhub serve` over ucx."""

from __future__ import annotations

import json

import numpy as np

import tensorhub
from conftest import run_worker
from worker import expected_bytes


def events(proc, timeout=120):
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")], out


def test_plain_processes(serve, tmp_path):
    stop = tmp_path / "stop"
    pub = run_worker("worker.py", "publish", serve, "plain", "3", str(stop))
    try:
        with tensorhub.Hub(address=serve) as hub:
            assert hub.transport == "ucx" and not hub.runs_coordinator and hub.address == serve
            v = None
            while v != 3:
                v = hub.wait_for("plain", v, timeout=60)
                assert v is not None
            r = hub.pull("plain", 3)
            exp = expected_bytes(3)
            assert r.version == 3 and r.origin_bytes == r.bytes
            assert all(r.tensors[k].tobytes() == exp[k] for k in exp)
            assert hub.manifest("plain", 3)["b"].dtype == "bf16"
            into = {"w": np.empty((256, 300), np.float32)}
            r2 = hub.pull("plain", 2, into=into, relay=False)
            assert r2.bytes == into["w"].nbytes and into["w"].tobytes() == expected_bytes(2)["w"]
    finally:
        stop.touch()
        evs, out = events(pub)
    assert [e["version"] for e in evs if e["event"] == "published"] == [1, 2, 3], out


def test_reading_group_of_two_gets_one_version(serve, tmp_path):
    stop = tmp_path / "stop"
    pub = run_worker("worker.py", "publish", serve, "grp", "40", str(stop))
    readers = [run_worker("worker.py", "read", serve, "grp", "15", str(r), "2") for r in range(2)]
    try:
        got = [events(p)[0] for p in readers]
    finally:
        stop.touch()
        events(pub)
    pulls = [[e for e in g if e["event"] == "pulled"] for g in got]
    assert len(pulls[0]) == len(pulls[1]) == 15
    assert all(e["ok"] for p in pulls for e in p), pulls
    assert [e["version"] for e in pulls[0]] == [e["version"] for e in pulls[1]], pulls
    versions = [e["version"] for e in pulls[0]]
    assert versions == sorted(versions), versions
