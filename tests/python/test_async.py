"""Hub.pull_async / PullHandle, deadlines and unpublish(timeout) in one plain process: a publishing
hub (its own coordinator) and a reading hub joined to it, both over the 'local' transport, so the
reader's chunks really travel through the transfer engine (not its own-copy path)."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

import tensorhub


@pytest.fixture(scope="module")
def hubs():
    with tensorhub.Hub(chunk="4KiB") as pub:
        with tensorhub.Hub(address=pub.address, transport="local") as reader:
            yield pub, reader


def params(seed: int, n: int = 4096) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal(n).astype(np.float32), "b": rng.integers(0, 1 << 30, n // 2).astype(np.int64)}


def zeros_like(p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: np.zeros_like(v) for k, v in p.items()}


def test_async_pull_equals_sync_and_two_in_flight(hubs):
    pub, reader = hubs
    p = params(1)
    pub.publish("async-eq", 1, p)
    sync = reader.pull("async-eq", 1, into=zeros_like(p), relay=False)
    set_a, set_b = zeros_like(p), zeros_like(p)
    seen = []
    with reader.pull_async("async-eq", 1, into=set_a, relay=False, progress=lambda d, t: seen.append((d, t))) as h1, \
            reader.pull_async("async-eq", "latest", into=set_b, relay=False) as h2:
        assert h1.wait() and h2.wait(timeout=60.0) and h1.ready() and h2.ready()
        r1, r2 = h1.result(), h2.result()
    assert r1.version == r2.version == sync.version == 1 and r1.bytes == r2.bytes == sync.bytes
    assert h1.progress == (sync.bytes, sync.bytes) and seen and seen[-1] == (sync.bytes, sync.bytes)
    for k, v in p.items():
        assert r1.tensors[k] is set_a[k] and set_a[k].tobytes() == v.tobytes() == set_b[k].tobytes()
        assert sync.tensors[k].tobytes() == v.tobytes()
    assert h1.result() is r1  # may be called again
    with pytest.raises(tensorhub.UserError, match="overlap"):
        with reader.pull_async("async-eq", 1, into=set_a, relay=False, progress=lambda d, t: _slow()) as h3:
            reader.pull_async("async-eq", 1, into=set_a, relay=False)  # same arrays while h3 runs
    assert h3.ready()  # leaving the with block cancelled it (or it had ended)
    pub.unpublish("async-eq", 1)


def _slow() -> None:
    threading.Event().wait(0.001)  # GIL released: ~4 s for a 4096-chunk pull


def test_cancel_mid_transfer_leaves_buffers_alone_and_unpublish_returns(hubs):
    pub, reader = hubs
    n = 4 << 20  # 16 MiB of f32 = 4096 chunks of 4 KiB; the progress callback slows each one down
    src = {"w": np.arange(n, dtype=np.float32)}
    pub.publish("async-cancel", 1, src)
    dst = {"w": np.full(n, -1.0, dtype=np.float32)}
    started = threading.Event()

    def progress(done: int, total: int) -> None:
        started.set()
        _slow()

    h = reader.pull_async("async-cancel", 1, into=dst, progress=progress)
    assert started.wait(60)
    h.cancel()
    assert h.ready()
    after = dst["w"].copy()
    try:
        r = h.result()
    except tensorhub.Cancelled:
        done, total = h.progress
        assert total == src["w"].nbytes and done < total
        assert not np.array_equal(after, src["w"])  # stopped part way
    else:  # it had ended before cancel(): a finished pull is left as it is
        assert r.version == 1 and np.array_equal(after, src["w"])
    assert issubclass(tensorhub.Cancelled, tensorhub.Error)
    # No pin left: the publisher's unpublish returns (a TimeoutError here would mean a leak).
    pub.unpublish("async-cancel", 1, timeout=30.0)
    assert np.array_equal(dst["w"], after)  # nothing wrote the buffer after cancel() returned
    h.cancel()  # again: nothing to do
    reader.stop_relaying(dst)


def slow_version(pub, model: str) -> dict[str, np.ndarray]:
    """16 MiB (4096 chunks of 4 KiB): with the progress callback _slow_progress a pull of it takes
    >= 4 s, so deadlines and timeouts of 0.2 s pass during its transfer."""
    src = {"w": np.arange(4 << 20, dtype=np.float32)}
    pub.publish(model, 1, src)
    return src


def _slow_progress(done: int, total: int) -> None:
    _slow()


def test_deadlines(hubs):
    pub, reader = hubs
    src = slow_version(pub, "async-deadline")
    into = zeros_like(src)
    with pytest.raises(tensorhub.TimeoutError):
        reader.pull("async-deadline", 1, into=into, progress=_slow_progress, deadline=0.2)
    h = reader.pull_async("async-deadline", 1, into=into, progress=_slow_progress, deadline=0.2)
    with pytest.raises(tensorhub.TimeoutError):
        h.result()
    with pytest.raises(tensorhub.NotFoundError):  # a version never published fails at once
        reader.pull("async-deadline", 7, into=into, deadline=30.0)
    assert reader.pull("async-deadline", 1, into=into, deadline=30.0).version == 1
    assert into["w"].tobytes() == src["w"].tobytes()
    with pytest.raises(tensorhub.UserError, match="deadline"):
        reader.pull_async("async-deadline", 1, into=into, deadline=-1)
    with pytest.raises(tensorhub.UserError, match="into="):
        reader.pull_async("async-deadline", 1)
    reader.stop_relaying(into)
    pub.unpublish("async-deadline", 1, timeout=30.0)


def test_result_timeout_and_progress_exception(hubs):
    pub, reader = hubs
    src = slow_version(pub, "async-later")
    into = zeros_like(src)
    h = reader.pull_async("async-later", 1, into=into, relay=False, progress=_slow_progress)
    assert not h.wait(0.05)
    with pytest.raises(tensorhub.TimeoutError, match="did not end"):
        h.result(timeout=0.05)
    assert not h.ready()  # result(timeout) leaves the pull running
    h.cancel()
    with pytest.raises(tensorhub.Cancelled):
        h.result()

    def boom(done: int, total: int) -> None:
        raise ValueError("progress failed")

    h2 = reader.pull_async("async-later", 1, into=into, relay=False, progress=boom)
    with pytest.raises(ValueError, match="progress failed"):
        h2.result()
    assert into["w"].tobytes() == src["w"].tobytes()  # the pull itself completed
    pub.unpublish("async-later", 1, timeout=30.0)


def test_ctrl_c_interrupts_wait_and_cancel_follows(hubs):
    pub, reader = hubs
    slow_version(pub, "async-sigint")
    into = {"w": np.zeros(4 << 20, dtype=np.float32)}
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    with reader.pull_async("async-sigint", 1, into=into, relay=False, progress=_slow_progress) as h:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            h.wait()  # >= 4 s of transfer: the signal comes first
        timer.join()
    assert h.ready()  # leaving the with block cancelled it
    with pytest.raises(tensorhub.Cancelled):
        h.result()
    pub.unpublish("async-sigint", 1, timeout=30.0)


def test_prefetch_and_swap_loop(hubs):
    """The README's loop: generate with one buffer set while the next version fills the other."""
    pub, reader = hubs
    versions = {v: params(10 + v) for v in range(1, 5)}
    cur, spare = zeros_like(versions[1]), zeros_like(versions[1])
    held, nxt = 0, None
    for v, p in versions.items():
        pub.publish("async-loop", v, p)
        if nxt is None:
            nxt = reader.pull_async("async-loop", "latest", into=spare)
        # ... generate with `cur` here ...
        held = nxt.result(timeout=60).version
        nxt = None
        cur, spare = spare, cur
        assert held == v and cur["a"].tobytes() == p["a"].tobytes()
        if v > 1:
            pub.unpublish("async-loop", v - 1, timeout=30.0)
    reader.stop_relaying(cur)
    reader.stop_relaying(spare)
    pub.unpublish("async-loop", 4)


def test_publish_async_commits_and_is_read(hubs):
    pub, reader = hubs
    p = params(7)
    h = pub.publish_async("pub-async", 1, p)
    r = h.result(timeout=60.0)
    assert h.ready() and h.wait(0) and h.result() is r
    assert r.committed and r.bytes == sum(v.nbytes for v in p.values()) and r.hash_threads >= 1
    assert 0 <= r.call_seconds <= r.hashed_seconds <= r.commit_seconds
    got = reader.pull("pub-async", 1, into=zeros_like(p), relay=False)
    for k, v in p.items():
        assert got.tensors[k].tobytes() == v.tobytes()
    sync = pub.publish("pub-async", 2, params(8))
    assert isinstance(sync, tensorhub.PublishResult) and sync.committed
    with pytest.raises(tensorhub.UserError, match="already published"):
        pub.publish_async("pub-async", 2, params(9))
    pub.unpublish("pub-async", 1)
    pub.unpublish("pub-async", 2)


def test_unpublish_cancels_a_publish_still_hashing(hubs):
    pub, _ = hubs
    big = {"w": np.zeros(1 << 28, dtype=np.float32)}  # 1 GiB in 4 KiB chunks: hashing takes a while
    h = pub.publish_async("pub-cancel", 1, big)
    pub.unpublish("pub-cancel", 1)  # the array is ours again once this returns
    with pytest.raises(tensorhub.Cancelled):
        h.result()
    assert pub.latest("pub-cancel") is None
    h2 = pub.publish_async("pub-cancel", 2, big)
    h2.cancel()
    assert h2.ready()
    with pytest.raises(tensorhub.Cancelled):
        h2.result()
    with pytest.raises(tensorhub.NotFoundError):
        pub.unpublish("pub-cancel", 2)
    assert ("pub-cancel", 1) not in pub._published and ("pub-cancel", 2) not in pub._published
