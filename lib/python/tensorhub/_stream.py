"""tensorhub.torch.iter_weights: a version as (name, tensor) pairs in bounded buckets, for engines
whose own loader must run (quantizing or custom ``load_weights``).

Two bucket buffers: while the caller consumes bucket i from one, bucket i+1 is pulled into the
other (``Hub.pull_async``), so transfer and loading overlap and the extra memory is two buckets
whatever the model's size. A yielded tensor is a view of a bucket buffer: it stays valid until
the caller asks for the first tensor of the next-but-one bucket, i.e. while the caller is on its
bucket and the next one; ``load_weights`` implementations copy each tensor as it comes.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from . import _tensorhub
from ._hub import Hub, TensorInfo, VersionArg, parse_bytes

_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i8": "int8",
                 "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64", "bool": "bool"}


def plan_buckets(tensors: Iterable[TensorInfo], bucket_bytes: int) -> list[list[TensorInfo]]:
    """Manifest order, greedily packed into buckets of at most ``bucket_bytes`` (a larger tensor
    gets a bucket of its own, which then sets the buffer size)."""
    buckets: list[list[TensorInfo]] = []
    size = 0
    for t in tensors:
        if not buckets or size + t.bytes > bucket_bytes:
            buckets.append([])
            size = 0
        buckets[-1].append(t)
        size += t.bytes
    return buckets


def _aligned(n: int) -> int:
    return (n + 63) // 64 * 64  # every tensor starts 64-byte aligned in its bucket


def iter_buckets(hub: Hub, model: str, version: VersionArg = "latest", bucket_bytes: int | str = "256MiB",
                 names: Iterable[str] | None = None, verify: bool = True,
                 deadline: float | None = None) -> Iterator[list[tuple[str, Any]]]:
    """Yields each bucket of ``version`` as a list of ``(published name, CPU tensor)``, manifest
    order, the next bucket in flight while the caller holds the current one; a list stays valid
    until the caller asks for the next-but-one. For APIs that take a batch of tensors per call
    (SGLang's ``update_weights_from_tensor``)."""
    import torch

    limit = parse_bytes(bucket_bytes, "bucket_bytes")
    if limit <= 0:
        raise _tensorhub.UserError("iter_weights: bucket_bytes must be positive")
    manifest = hub.manifest(model, version)  # one version for every bucket
    wanted = manifest.tensors
    if names is not None:
        want = set(names)
        unknown = want - {t.name for t in wanted}
        if unknown:
            raise _tensorhub.UserError(f"iter_weights: {model} v{manifest.version} has no tensor(s) {sorted(unknown)[:5]}")
        wanted = tuple(t for t in wanted if t.name in want)
    buckets = plan_buckets(wanted, limit)
    if not buckets:
        return
    capacity = max(sum(_aligned(t.bytes) for t in b) for b in buckets)
    buffers = [torch.empty(capacity, dtype=torch.uint8) for _ in range(min(2, len(buckets)))]

    def views(i: int) -> dict[str, Any]:
        out, at, buf = {}, 0, buffers[i % len(buffers)]
        for t in buckets[i]:
            flat = buf[at:at + t.bytes].view(getattr(torch, _TORCH_DTYPES[t.dtype]))
            out[t.name] = flat.view(t.shape)
            at += _aligned(t.bytes)
        return out

    def start(i: int) -> tuple[Any, dict[str, Any]]:
        into = views(i)
        return hub.pull_async(model, manifest.version, into=into, verify=verify, relay=False, deadline=deadline), into

    pending = start(0)
    try:
        for i in range(len(buckets)):
            handle, into = pending
            handle.result()  # raises the pull's error
            pending = start(i + 1) if i + 1 < len(buckets) else None
            yield list(into.items())
    finally:
        if pending is not None:  # the caller stopped early (or an error): nothing left in flight
            pending[0].cancel()


def iter_weights(hub: Hub, model: str, version: VersionArg = "latest", bucket_bytes: int | str = "256MiB",
                 names: Iterable[str] | None = None, verify: bool = True,
                 deadline: float | None = None) -> Iterator[tuple[str, Any]]:
    """Yields ``(published name, CPU tensor)`` for every tensor of ``version`` (or of ``names``),
    in manifest order, pulled in buckets of at most ``bucket_bytes`` with the next bucket in
    flight while the caller consumes the current one (module docstring for how long a tensor
    stays valid). For an engine loader::

        engine.load_weights(tht.iter_weights(hub, "policy", v, bucket_bytes="512MiB"))
    """
    for bucket in iter_buckets(hub, model, version, bucket_bytes, names, verify, deadline):
        yield from bucket
