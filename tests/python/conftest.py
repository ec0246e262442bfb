"""Fixtures for the Python tests (tests/python/CMakeLists.txt runs them with PYTHONPATH set to the
staged package and TENSORHUB_BIN to the CLI)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(autouse=True, scope="session")
def job_token():
    """The token every hub of the session joins with. A hub that starts its own coordinator uses
    TENSORHUB_TOKEN / TENSORHUB_TOKEN_FILE / ~/.tensorhub/token when one is there, else a fresh
    secret that a second hub joining it by address cannot know. Without this, the tests that join
    a hub in the same process passed only after `tensorhub serve` (another test) had written
    ~/.tensorhub/token: here it is written first, as serve writes it (mode 600)."""
    if not (os.environ.get("TENSORHUB_TOKEN") or os.environ.get("TENSORHUB_TOKEN_FILE")):
        path = os.path.join(os.path.expanduser("~"), ".tensorhub", "token")
        if not os.path.exists(path):
            import secrets
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
    yield


@pytest.fixture
def tensorhub_bin() -> str:
    path = os.environ.get("TENSORHUB_BIN", "")
    assert path and os.access(path, os.X_OK), "TENSORHUB_BIN must name the tensorhub executable"
    return path


@pytest.fixture
def serve(tensorhub_bin, tmp_path):
    """A standalone coordinator (`tensorhub serve`) on a free loopback port: yields its address."""
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([tensorhub_bin, "serve", "--listen", "127.0.0.1:0"], stdout=out,
                                stderr=subprocess.STDOUT)
    try:
        port = None
        for _ in range(200):
            m = re.search(r"listening on [^:\s]*:(\d+)", log.read_text())
            if m:
                port = m.group(1)
                break
            assert proc.poll() is None, "serve exited: " + log.read_text()
            time.sleep(0.05)
        assert port, "serve did not start: " + log.read_text()
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def run_worker(script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120):
    """Runs tests/python/<script> in a plain Python process (no MPI launcher)."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen([sys.executable, os.path.join(HERE, script), *args], env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def pytest_runtest_logreport(report):
    """Under mpirun a failure on one rank would leave the others waiting in a collective: print it
    and abort the whole job (mpirun then exits non-zero)."""
    if not report.failed or "mpi4py.MPI" not in sys.modules:
        return
    mpi = sys.modules["mpi4py.MPI"]
    world = mpi.COMM_WORLD
    if world.Get_size() > 1:
        sys.stderr.write(f"rank {world.Get_rank()}: {report.nodeid} failed:\n{report.longreprtext}\n")
        sys.stderr.flush()
        world.Abort(1)
