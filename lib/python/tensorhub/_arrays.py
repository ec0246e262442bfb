"""Array objects <-> the (name, dtype, shape, address, bytes) views the C++ hub takes.

Accepted: NumPy arrays, any object with the buffer protocol or ``__dlpack__`` (through
``numpy.asarray`` / ``numpy.from_dlpack``, zero-copy), torch CPU tensors (duck-typed: torch is
never imported here), and :class:`Tensor` wrappers that name a dtype NumPy lacks (``bf16``)
over a raw view of the same item size. Nothing is ever copied: a non-contiguous array is an
error, not a silent copy.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np

from . import _tensorhub

# TensorHub dtype name -> NumPy dtype holding it (bf16 is stored as raw 16-bit words).
NUMPY_DTYPES: dict[str, Any] = {
    "f32": np.float32,
    "f16": np.float16,
    "bf16": np.uint16,
    "f64": np.float64,
    "i8": np.int8,
    "u8": np.uint8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "bool": np.bool_,
}
# Dtypes NumPy has no type for: they need an explicit Tensor(array, dtype=...).
RAW_DTYPES = frozenset({"bf16"})

_FROM_NUMPY = {np.dtype(v): k for k, v in NUMPY_DTYPES.items() if k not in RAW_DTYPES}

_FROM_TORCH = {
    "torch.float32": "f32",
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float64": "f64",
    "torch.int8": "i8",
    "torch.uint8": "u8",
    "torch.int16": "i16",
    "torch.int32": "i32",
    "torch.int64": "i64",
    "torch.bool": "bool",
}


class Tensor:
    """An array with an explicit TensorHub dtype, for dtypes NumPy lacks.

    Example::

        w = np.zeros((4096, 4096), dtype=np.uint16)   # bf16 bits
        hub.publish("policy", 1, {"w": tensorhub.Tensor(w, dtype="bf16")})

    The array's item size must equal the dtype's size (a ``uint16``/``int16``/``float16``
    view for ``bf16``).
    """

    __slots__ = ("array", "dtype")

    def __init__(self, array: Any, dtype: str) -> None:
        self.array = array
        self.dtype = _tensorhub.dtype_name(dtype)

    def __repr__(self) -> str:
        return f"tensorhub.Tensor({self.array!r}, dtype={self.dtype!r})"


class Slice:
    """An array that holds a box of a global tensor: its offset in the global tensor, its extent
    the array's shape (README "Resharding"). ``array`` may be a :class:`Tensor`.

    In ``publish``: a trainer's FSDP / tensor-parallel shard; the coordinator checks at commit that
    the boxes of each global tensor tile it exactly. In ``pull`` / ``pull_async``: the box this
    reader wants, in any layout: it is filled from every published box that meets it (nothing
    is gathered anywhere; such a pull does not relay).

    Example (rank r of 4 holds rows r*1024 .. (r+1)*1024 of q [4096, 4096]; a TP=2 rollout rank k
    reads rows k*2048 .. (k+1)*2048)::

        hub.publish("policy", step, {f"q.tp{r}": tensorhub.Slice(shard, "q", (4096, 4096), (r * 1024, 0))},
                    group=group)
        hub.pull("policy", into={"q": tensorhub.Slice(mine, "q", (4096, 4096), (k * 2048, 0))})
    """

    __slots__ = ("array", "global_name", "global_shape", "offset")

    def __init__(self, array: Any, global_name: str, global_shape: Any, offset: Any) -> None:
        if not isinstance(global_name, str) or not global_name:
            raise _tensorhub.UserError("Slice: global_name must be a non-empty string")
        self.array = array
        self.global_name = global_name
        self.global_shape = tuple(int(d) for d in global_shape)
        self.offset = tuple(int(d) for d in offset)

    def __repr__(self) -> str:
        return f"tensorhub.Slice({self.array!r}, {self.global_name!r}, {self.global_shape}, {self.offset})"


class View(NamedTuple):
    """What the C++ side sees of one tensor, plus the objects that own its memory."""

    name: str
    dtype: str
    shape: list[int]
    address: int
    nbytes: int
    owner: Any  # keeps the memory alive (the caller's object and any NumPy view of it)
    box: tuple[str, list[int], list[int]] | None = None  # (global name, global shape, offset) of a Slice

    def as_tuple(self) -> tuple[str, str, list[int], int, int]:
        return (self.name, self.dtype, self.shape, self.address, self.nbytes)


def _is_torch(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr")


def _torch_view(name: str, t: Any, dtype: str | None, writable: bool) -> View:
    del writable  # torch tensors have no read-only flag; the caller owns the contract
    if t.device.type != "cpu":
        raise _tensorhub.UserError(
            f"tensor '{name}': {t.device.type} tensors are not supported yet (host memory only)"
        )
    if not t.is_contiguous():
        raise _tensorhub.UserError(
            f"tensor '{name}' is not contiguous (strides {tuple(t.stride())}): "
            "TensorHub never copies; pass t.contiguous() (a copy you keep alive)"
        )
    name_of = _FROM_TORCH.get(str(t.dtype))
    if name_of is None:
        raise _tensorhub.UserError(f"tensor '{name}': torch dtype {t.dtype} is not supported")
    if dtype is not None and _tensorhub.dtype_size(dtype) != t.element_size():
        raise _tensorhub.UserError(f"tensor '{name}': dtype {dtype} does not match {t.dtype}")
    return View(name, dtype or name_of, list(t.shape), int(t.data_ptr()), t.numel() * t.element_size(), t)


def _numpy(name: str, obj: Any) -> np.ndarray:
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack__"):
        return np.from_dlpack(obj)
    try:
        memoryview(obj).release()
    except TypeError:
        raise _tensorhub.UserError(
            f"tensor '{name}': {type(obj).__name__} is not an array (needs the buffer protocol, "
            "__dlpack__, or a torch tensor)"
        ) from None
    return np.asarray(obj)


def view(name: str, obj: Any, *, writable: bool) -> View:
    """The zero-copy view of ``obj`` for tensor ``name``; raises tensorhub.UserError."""
    if not isinstance(name, str):
        raise _tensorhub.UserError(f"tensor names are strings, got {type(name).__name__}")
    if isinstance(obj, Slice):
        inner = view(name, obj.array, writable=writable)
        return inner._replace(box=(obj.global_name, list(obj.global_shape), list(obj.offset)))
    dtype = None
    if isinstance(obj, Tensor):
        dtype, obj = obj.dtype, obj.array
    if _is_torch(obj):
        return _torch_view(name, obj, dtype, writable)
    arr = _numpy(name, obj)
    # DLPack carries no read-only flag (NumPy marks every import read-only): the object's owner
    # vouches for it, as with torch tensors.
    via_dlpack = not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__")
    if not arr.flags.c_contiguous:
        raise _tensorhub.UserError(
            f"tensor '{name}' is not C-contiguous (shape {arr.shape}, strides {arr.strides}): "
            "TensorHub never copies; pass numpy.ascontiguousarray(x) (a copy you keep alive)"
        )
    if writable and not arr.flags.writeable and not via_dlpack:
        raise _tensorhub.UserError(f"tensor '{name}' is read-only and cannot be pulled into")
    if dtype is None:
        dtype = _FROM_NUMPY.get(arr.dtype)
        if dtype is None:
            raise _tensorhub.UserError(
                f"tensor '{name}': NumPy dtype {arr.dtype} has no TensorHub dtype "
                "(f32 f16 bf16 f64 i8 u8 i16 i32 i64 bool; wrap raw bf16 words as Tensor(x, 'bf16'))"
            )
    elif _tensorhub.dtype_size(dtype) != arr.dtype.itemsize:
        raise _tensorhub.UserError(
            f"tensor '{name}': dtype {dtype} needs {_tensorhub.dtype_size(dtype)}-byte items, "
            f"the array has {arr.dtype} ({arr.dtype.itemsize} bytes)"
        )
    address = arr.__array_interface__["data"][0]
    return View(name, dtype, [int(d) for d in arr.shape], int(address), int(arr.nbytes), (obj, arr))


def views(tensors: Mapping[str, Any], *, writable: bool) -> list[View]:
    if not isinstance(tensors, Mapping):
        raise _tensorhub.UserError(f"tensors must be a mapping name -> array, got {type(tensors).__name__}")
    return [view(n, a, writable=writable) for n, a in tensors.items()]


def empty(dtype: str, shape: list[int]) -> np.ndarray:
    """A new NumPy array for a tensor of the manifest (bf16 as uint16 words)."""
    return np.empty(shape, dtype=NUMPY_DTYPES[dtype])
