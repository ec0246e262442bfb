"""One plain process, transport 'local', its own coordinator: the API without MPI ranks."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
import weakref

import numpy as np
import pytest

import tensorhub

DTYPES = ["f32", "f16", "bf16", "f64", "i8", "u8", "i16", "i32", "i64", "bool"]


def sample(dtype: str, shape=(3, 5), seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    np_dtype = tensorhub.NUMPY_DTYPES[dtype]
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(np_dtype, np.integer):
        info = np.iinfo(np_dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=np_dtype, endpoint=True)
    return rng.standard_normal(shape).astype(np_dtype)


@pytest.fixture(scope="module")
def hub():
    with tensorhub.Hub(chunk="4KiB") as h:
        assert h.transport == "local" and h.runs_coordinator
        yield h


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_round_trip(hub, dtype):
    model = f"rt-{dtype}"
    a = sample(dtype, (33, 129))
    b = sample(dtype, (7,), seed=1)
    wrap = (lambda x: tensorhub.Tensor(x, dtype)) if dtype == "bf16" else (lambda x: x)
    hub.publish(model, 1, {"a": wrap(a), "b": wrap(b)})
    m = hub.manifest(model, 1)
    assert [(t.name, t.dtype, t.shape) for t in m.tensors] == [("a", dtype, (33, 129)), ("b", dtype, (7,))]
    r = hub.pull(model)  # allocates NumPy arrays (bf16: uint16 words)
    assert r.version == 1 and r.bytes == a.nbytes + b.nbytes
    assert r.tensors["a"].dtype == a.dtype and r.tensors["a"].tobytes() == a.tobytes()
    assert r.tensors["b"].tobytes() == b.tobytes()
    into = {"a": wrap(np.zeros_like(a))}
    r2 = hub.pull(model, 1, into=into)
    got = into["a"].array if dtype == "bf16" else into["a"]
    assert r2.bytes == a.nbytes and got.tobytes() == a.tobytes()
    hub.unpublish(model, 1)


def test_bf16_needs_explicit_dtype(hub):
    w = np.arange(16, dtype=np.uint16)  # raw bf16 words: NumPy has no bf16, TensorHub no u16
    with pytest.raises(tensorhub.UserError, match="Tensor"):
        hub.publish("raw16", 1, {"w": w})
    hub.publish("raw16", 1, {"w": tensorhub.Tensor(w, "bfloat16")})
    assert hub.manifest("raw16", 1)["w"].dtype == "bf16"
    hub.unpublish("raw16", 1)


def test_rejects_non_contiguous_and_wrong_shape(hub):
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    with pytest.raises(tensorhub.UserError, match="not C-contiguous"):
        hub.publish("nc", 1, {"a": a[:, ::2]})
    hub.publish("nc", 1, {"a": a})
    with pytest.raises(tensorhub.UserError, match="not C-contiguous"):
        hub.pull("nc", 1, into={"a": np.zeros((8, 16), np.float32)[:, ::2]})
    with pytest.raises(tensorhub.UserError) as e:
        hub.pull("nc", 1, into={"a": np.zeros((4, 16), np.float32)})
    assert "tensor 'a': destination is f32[4,16]" in str(e.value), str(e.value)
    with pytest.raises(tensorhub.UserError):
        hub.pull("nc", 1, into={"a": np.zeros((8, 8), np.float64)})
    ro = np.zeros((8, 8), np.float32)
    ro.flags.writeable = False
    with pytest.raises(tensorhub.UserError, match="read-only"):
        hub.pull("nc", 1, into={"a": ro})
    with pytest.raises(tensorhub.UserError, match="no TensorHub dtype"):
        hub.publish("nc", 2, {"c": np.zeros(4, np.complex64)})
    with pytest.raises(tensorhub.UserError, match="needs 2-byte items"):
        hub.publish("nc", 2, {"c": tensorhub.Tensor(np.zeros(4, np.float32), "bf16")})
    hub.unpublish("nc", 1)


def test_published_arrays_are_kept_alive(hub):
    a = np.arange(1 << 16, dtype=np.int64)
    expect = a.copy()
    ref = weakref.ref(a)
    hub.publish("life", 1, {"a": a})
    del a
    gc.collect()
    assert ref() is not None, "the hub must hold a published array"
    junk = [np.full(1 << 16, -1, np.int64) for _ in range(8)]  # reuse of freed memory would show
    r = hub.pull("life", 1)
    assert np.array_equal(r.tensors["a"], expect)
    del junk
    hub.unpublish("life", 1)
    gc.collect()
    assert ref() is None, "unpublish must release the array"


def test_exceptions_are_mapped(hub):
    assert issubclass(tensorhub.NotFoundError, tensorhub.UserError)
    assert issubclass(tensorhub.UserError, tensorhub.Error)
    assert issubclass(tensorhub.TimeoutError, tensorhub.TransportError)
    assert issubclass(tensorhub.Error, RuntimeError)
    with pytest.raises(tensorhub.NotFoundError, match="nosuchmodel"):
        hub.manifest("nosuchmodel")
    with pytest.raises(tensorhub.UserError):
        hub.publish("bad name\n", 1, {"a": np.zeros(4, np.float32)})
    with pytest.raises(tensorhub.UserError, match="version"):
        hub.pull("x", version="newest")
    with pytest.raises(tensorhub.UserError, match="cannot read"):
        tensorhub.Hub(pool="lots")


def test_hub_closed():
    h = tensorhub.Hub()
    h.publish("c", 1, {"a": np.zeros(4, np.float32)})
    h.close()
    h.close()  # a second close does nothing
    with pytest.raises(tensorhub.HubClosed):
        h.latest("c")


def test_latest_wait_for_status_progress(hub):
    assert hub.latest("wf") is None
    assert hub.wait_for("wf", None, timeout=0.3) is None
    a = np.ones(3 << 12, np.float32)
    hub.publish("wf", 4, {"a": a})
    assert hub.latest("wf") == 4
    assert hub.wait_for("wf", None, timeout=5) == 4
    seen = []
    r = hub.pull("wf", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (a.nbytes, a.nbytes) and r.local_bytes == a.nbytes
    models = {m["model"]: m for m in hub.status()}
    assert [v["version"] for v in models["wf"]["versions"]] == [4]

    def boom(done, total):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        hub.pull("wf", progress=boom)
    hub.unpublish("wf", 4)


def test_ctrl_c_interrupts_wait(hub):
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        hub.wait_for("never", None, timeout=60)
    timer.join()
    assert time.monotonic() - t0 < 30
    assert hub.latest("never") is None  # the hub still works after the interrupt


def test_buffer_protocol_objects(hub):
    buf = bytearray(range(256)) * 16
    hub.publish("buf", 1, {"raw": buf})
    out = bytearray(len(buf))
    hub.pull("buf", 1, into={"raw": out})
    assert out == buf
    hub.stop_relaying({"raw": out})
    hub.unpublish("buf", 1)


def test_allocate_needs_pool(hub):
    with pytest.raises(tensorhub.UserError):
        hub.allocate((4,), "f32")


def test_import_does_not_import_torch():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, tensorhub, tensorhub.torch; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


class _FakeTorchTensor:
    """Duck-types the torch.Tensor surface tensorhub uses, over NumPy memory (torch absent)."""

    __module__ = "torch"

    class _Device:
        def __init__(self, kind):
            self.type = kind

    def __init__(self, array, dtype, device="cpu"):
        self._a, self.dtype, self.device = array, dtype, self._Device(device)
        self.shape = array.shape

    def data_ptr(self):
        return self._a.__array_interface__["data"][0]

    def is_contiguous(self):
        return self._a.flags.c_contiguous

    def stride(self):
        return tuple(s // self._a.itemsize for s in self._a.strides)

    def element_size(self):
        return self._a.itemsize

    def numel(self):
        return self._a.size


def test_torch_like_tensors_without_torch(hub):
    w = np.arange(24, dtype=np.uint16).reshape(4, 6)
    t = _FakeTorchTensor(w, "torch.bfloat16")
    hub.publish("faketorch", 1, {"w": t})
    assert hub.manifest("faketorch", 1)["w"].dtype == "bf16"
    out = np.zeros_like(w)
    hub.pull("faketorch", 1, into={"w": _FakeTorchTensor(out, "torch.bfloat16")})
    assert np.array_equal(out, w)
    with pytest.raises(tensorhub.UserError, match="not contiguous"):
        hub.publish("faketorch", 2, {"w": _FakeTorchTensor(w[:, ::2], "torch.bfloat16")})
    with pytest.raises(tensorhub.UserError, match="cuda tensors are not supported"):
        hub.publish("faketorch", 2, {"w": _FakeTorchTensor(w, "torch.bfloat16", device="cuda")})
    with pytest.raises(tensorhub.UserError, match="not supported"):
        hub.publish("faketorch", 2, {"w": _FakeTorchTensor(w, "torch.complex32")})
    hub.stop_relaying({"w": tensorhub.Tensor(out, "bf16")})
    hub.unpublish("faketorch", 1)


class _DLPackOnly:
    """An array object known only through the DLPack protocol (not NumPy, no buffer protocol)."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_objects_are_zero_copy(hub):
    a = np.arange(4096, dtype=np.int32)
    hub.publish("dlpack", 1, {"a": _DLPackOnly(a)})
    out = np.zeros_like(a)
    hub.pull("dlpack", 1, into={"a": _DLPackOnly(out)})
    assert np.array_equal(out, a)  # written in place through the DLPack view
    hub.stop_relaying({"a": out})
    hub.unpublish("dlpack", 1)


def test_slices_of_a_global_tensor(hub):
    """Boxes of a global tensor (resharding): the manifest shows them, an overlap is refused at
    commit with the tensors named, and each box is pulled by its name."""
    w = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    top, bottom = np.ascontiguousarray(w[:5]), np.ascontiguousarray(w[5:])
    hub.publish("boxes", 1, {"w.tp0": tensorhub.Slice(top, "w", (8, 6), (0, 0)),
                             "w.tp1": tensorhub.Slice(bottom, "w", w.shape, (5, 0)),
                             "norm": np.ones(6, np.float32)})
    m = hub.manifest("boxes", 1)
    assert (m["w.tp1"].global_name, m["w.tp1"].global_shape, m["w.tp1"].box_offset) == ("w", (8, 6), (5, 0))
    assert m["norm"].global_name == "" and m["norm"].box_offset == ()
    got = np.zeros((3, 6), np.float32)
    hub.pull("boxes", 1, into={"w.tp1": got})
    assert np.array_equal(got, w[5:])
    hub.unpublish("boxes", 1)
    with pytest.raises(tensorhub.UserError, match=r"'w.tp0' \[0:5, 0:6\] and 'w.tp1' \[4:7, 0:6\] overlap"):
        hub.publish("boxes", 2, {"w.tp0": tensorhub.Slice(top, "w", (8, 6), (0, 0)),
                                 "w.tp1": tensorhub.Slice(bottom, "w", (8, 6), (4, 0))})
    with pytest.raises(tensorhub.UserError, match="non-empty"):
        tensorhub.Slice(top, "", (8, 6), (0, 0))


def test_pull_by_box(hub):
    """Resharding reads: a destination Slice names any box of a global tensor (here the other cut:
    columns of a tensor published as row blocks), a plain destination named after the global
    tensor gets all of it, and a wrong box is refused."""
    w = np.arange(9 * 7, dtype=np.float32).reshape(9, 7)
    hub.publish("rs", 1, {f"w.{r}": tensorhub.Slice(np.ascontiguousarray(w[r * 3:(r + 1) * 3]), "w", w.shape,
                                                     (r * 3, 0)) for r in range(3)})
    cols = np.zeros((9, 3), np.float32)
    rows = np.zeros((4, 7), np.float32)
    whole = np.zeros_like(w)
    r = hub.pull("rs", 1, into={"cols": tensorhub.Slice(cols, "w", w.shape, (0, 4)),
                                "rows": tensorhub.Slice(rows, "w", w.shape, (2, 0)), "w": whole})
    assert np.array_equal(cols, w[:, 4:]) and np.array_equal(rows, w[2:6]) and np.array_equal(whole, w)
    assert r.staged_bytes == 0  # this process holds every shard: copied from its own memory
    v = next(x for m in hub.status() if m["model"] == "rs" for x in m["versions"] if x["version"] == 1)
    assert v["tensors"] == 3
    assert v["global_tensors"] == [{"name": "w", "dtype": "f32", "shape": (9, 7), "boxes": 3}]
    with pytest.raises(tensorhub.UserError, match="does not lie inside"):
        hub.pull("rs", 1, into={"x": tensorhub.Slice(rows, "w", w.shape, (6, 0))})
    hub.unpublish("rs", 1)
