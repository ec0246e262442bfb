"""tensorhub.fp8.pull_fp8 in one plain process (transport 'local'): bf16 tensors published as
raw words, pulled as FP8 into NumPy buffers and into torch float8 tensors (compared with torch's cast),
checked against the quantizer's definition computed here in NumPy: scale_inv = amax / fmax per
block in float32, q = round-to-nearest-even of x / scale_inv; errors for bad buffers."""

from __future__ import annotations

import numpy as np
import pytest
import torch  # the venv scripts/bootstrap-torch.sh makes (CMake: TENSORHUB_TORCH_PYTHON)

import tensorhub
import tensorhub.fp8 as fp8


def bf16_words(shape, seed):
    rng = np.random.default_rng(seed)
    f = (rng.standard_normal(shape) * 3).astype(np.float32)
    return (f.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bf16: exact as float32 below


def as_float(words):
    return (words.astype(np.uint32) << 16).view(np.float32)


def e4m3fn_values():
    """Every finite e4m3fn value, by code 0..126 (positive)."""
    out = []
    for c in range(127):
        e, m = c >> 3, c & 7
        out.append(m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    return np.array(out, dtype=np.float64)


def reference_e4m3fn(x, block):
    """(q, scale_inv) by the definition, per block x block, e4m3fn, round half to even."""
    rows, cols = x.shape
    grid = (-(-rows // block), -(-cols // block))
    scales = np.empty(grid, np.float32)
    q = np.empty(x.shape, np.uint8)
    values = e4m3fn_values()
    for br in range(grid[0]):
        for bc in range(grid[1]):
            blk = x[br * block:(br + 1) * block, bc * block:(bc + 1) * block]
            amax = np.float32(np.abs(blk).max())
            s = np.float32(1.0) if amax == 0 else np.float32(amax / np.float32(448.0))
            scales[br, bc] = s
            v = (blk / s).astype(np.float32).astype(np.float64)
            a = np.abs(v)
            idx = np.searchsorted(values, a)  # values[idx-1] <= a < values[idx] (or equal)
            idx = np.clip(idx, 1, len(values) - 1)
            lo, hi = values[idx - 1], values[idx]
            code = np.where(a - lo < hi - a, idx - 1, idx)
            tie = (a - lo) == (hi - a)
            code = np.where(tie, np.where((idx - 1) % 2 == 0, idx - 1, idx), code)
            code = np.where(a >= values[-1], 126, code)
            code = np.where(a == 0, 0, code)
            q[br * block:(br + 1) * block, bc * block:(bc + 1) * block] = (code | np.where(v < 0, 0x80, 0))
    return q, scales


@pytest.fixture(scope="module")
def hub():
    with tensorhub.Hub(chunk="4KiB") as h:
        yield h


def test_pull_fp8_matches_the_definition(hub):
    w = bf16_words((300, 200), 1)
    e = bf16_words((7,), 2)
    hub.publish("fp8", 1, {"w": tensorhub.Tensor(w, "bf16"), "e": tensorhub.Tensor(e, "bf16")})
    q = np.zeros((300, 200), np.uint8)
    s = np.zeros((3, 2), np.float32)
    qe = np.zeros(7, np.uint8)
    se = np.zeros(1, np.float32)
    r = fp8.pull_fp8(hub, "fp8", {"w": fp8.FP8(q, s), "e": fp8.FP8(qe, se, block=(1, 7), format="e5m2")},
                     staging_bytes=64 << 10)
    assert r["batches"] == 2 and r["converted_bytes"] == (w.size + e.size) * 2
    assert r["pull"]["version"] == 1
    want_q, want_s = reference_e4m3fn(as_float(w), 128)
    assert np.array_equal(s, want_s)
    assert np.array_equal(q, want_q)
    assert se[0] == np.float32(np.abs(as_float(e)).max() / np.float32(57344.0))
    hub.unpublish("fp8", 1)


def test_pull_fp8_into_torch_float8_equals_torch_cast(hub):
    w = bf16_words((130, 129), 3)
    hub.publish("fp8t", 1, {"w": tensorhub.Tensor(w, "bf16")})
    q = torch.empty((130, 129), dtype=torch.float8_e4m3fn)
    s = torch.empty((2, 2), dtype=torch.float32)
    fp8.pull_fp8(hub, "fp8t", {"w": fp8.FP8(q, s)})
    x = torch.from_numpy(as_float(w))
    for br in range(2):
        for bc in range(2):
            blk = x[br * 128:(br + 1) * 128, bc * 128:(bc + 1) * 128]
            ref_s = blk.abs().amax() / 448.0
            assert s[br, bc].item() == ref_s.item()
            got = q[br * 128:(br + 1) * 128, bc * 128:(bc + 1) * 128].view(torch.uint8)
            assert torch.equal(got, (blk / ref_s).to(torch.float8_e4m3fn).view(torch.uint8))
    hub.unpublish("fp8t", 1)


def test_pull_fp8_refuses_bad_buffers(hub):
    w = bf16_words((4, 4), 4)
    hub.publish("fp8b", 1, {"w": tensorhub.Tensor(w, "bf16"), "f": np.zeros(4, np.float32)})
    with pytest.raises(tensorhub.UserError, match="needs 16 FP8 bytes and 1 scales"):
        fp8.pull_fp8(hub, "fp8b", {"w": fp8.FP8(np.zeros(15, np.uint8), np.zeros(1, np.float32))})
    with pytest.raises(tensorhub.UserError, match="is f32, not bf16"):
        fp8.pull_fp8(hub, "fp8b", {"f": fp8.FP8(np.zeros(4, np.uint8), np.zeros(1, np.float32))})
    with pytest.raises(tensorhub.UserError, match="scale_inv must be a writable"):
        fp8.pull_fp8(hub, "fp8b", {"w": fp8.FP8(np.zeros(16, np.uint8), np.zeros(1, np.int32))})
    with pytest.raises(tensorhub.UserError, match="format 'e4'"):
        fp8.pull_fp8(hub, "fp8b", {"w": fp8.FP8(np.zeros(16, np.uint8), np.zeros(1, np.float32), format="e4")})
    hub.unpublish("fp8b", 1)
