"""Pull bf16 tensors of a version as FP8 (the C++ ``tensorhub/fp8_pull.hpp``; README "FP8").

Each destination is an :class:`FP8`: a writable C-contiguous buffer of one byte per element
(NumPy ``uint8``, or a CPU ``torch.float8_e4m3fn`` / ``float8_e5m2`` tensor) and a float32 buffer
of one ``scale_inv`` per block (dequantised = q x scale_inv), in the checkpoint convention::

    import tensorhub.fp8 as fp8
    q = np.empty((4096, 4096), np.uint8); s = np.empty((32, 32), np.float32)
    r = fp8.pull_fp8(hub, "policy", {"model.q_proj.weight": fp8.FP8(q, s, block=128)})

The source bytes are verified against the publisher's checksums, then quantized exactly as
PyTorch's ``(x.float() / scale_inv).to(torch.float8_e4m3fn)`` with ``scale_inv = amax / 448``
per block (a zero block: 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _arrays, _tensorhub
from ._hub import Hub, _version

FORMATS = ("e4m3fn", "e5m2")


@dataclass
class FP8:
    """An FP8 destination: ``data`` (one byte per element), ``scale_inv`` (float32, one per block),
    ``block`` (rows, cols) or one int for square blocks (1 x cols: per-row scales), ``format``."""

    data: Any
    scale_inv: Any
    block: int | tuple[int, int] = 128
    format: str = "e4m3fn"


def _buffer(name: str, what: str, obj: Any, itemsize: int, kind: str) -> tuple[int, int, Any]:
    """(address, element count, keep-alive) of a writable contiguous buffer of `itemsize` bytes
    (NumPy: of dtype kind `kind`, "u" or "f")."""
    if _arrays._is_torch(obj):
        if obj.device.type != "cpu" or not obj.is_contiguous() or obj.element_size() != itemsize:
            raise _tensorhub.UserError(
                f"fp8 '{name}': {what} must be a contiguous CPU tensor of {itemsize}-byte elements")
        return int(obj.data_ptr()), int(obj.numel()), obj
    arr = _arrays._numpy(name, obj)
    want = "uint8" if kind == "u" else "float32"
    if (not arr.flags.c_contiguous or not arr.flags.writeable or arr.dtype.itemsize != itemsize
            or arr.dtype.kind != kind):
        raise _tensorhub.UserError(
            f"fp8 '{name}': {what} must be a writable C-contiguous array of {itemsize}-byte items "
            f"({want}; got {arr.dtype}, shape {arr.shape})")
    return int(arr.__array_interface__["data"][0]), int(arr.size), arr


def pull_fp8(hub: Hub, model: str, into: Mapping[str, FP8], version: Any = "latest", verify: bool = True,
             staging_bytes: int = 256 << 20) -> dict[str, Any]:
    """Pulls the bf16 tensors named in ``into`` and quantizes them into their :class:`FP8`
    buffers. Returns a dict: ``pull`` (the bf16 pulls, summed), ``batches``, ``converted_bytes``,
    ``convert_seconds``, ``staging_bytes`` (the bf16 staged at once: at most ``staging_bytes`` or
    the largest tensor). Raises tensorhub.UserError for a tensor that is not bf16, buffers of the
    wrong size, or NaN/Inf in the source."""
    if not isinstance(into, Mapping) or not into:
        raise _tensorhub.UserError("pull_fp8: into must be a non-empty mapping name -> tensorhub.fp8.FP8")
    tuples, keep = [], []
    for name, d in into.items():
        if not isinstance(d, FP8):
            raise _tensorhub.UserError(f"pull_fp8: '{name}' is {type(d).__name__}, not tensorhub.fp8.FP8")
        if d.format not in FORMATS:
            raise _tensorhub.UserError(f"pull_fp8: '{name}': format {d.format!r} is not one of {FORMATS}")
        rows, cols = (d.block, d.block) if isinstance(d.block, int) else d.block
        data, n, k1 = _buffer(name, "data", d.data, 1, "u")
        scale, m, k2 = _buffer(name, "scale_inv", d.scale_inv, 4, "f")
        keep += [k1, k2]
        tuples.append((name, data, n, scale, m, d.format, int(rows), int(cols)))
    r = hub._impl.pull_fp8(model, _version(version), tuples, bool(verify), int(staging_bytes))
    del keep
    return dict(r)
