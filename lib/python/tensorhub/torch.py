"""torch helpers: publish a module's parameters by name, pull into them in place.

torch is imported only when one of these is called (``import tensorhub`` never imports it)::

    import tensorhub.torch as tht
    tht.publish_module(hub, "policy", step, model)          # trainer
    tht.pull_into_module(hub, "policy", model)              # rollout: fills model's tensors
    tht.pull_into_module(hub, "policy", engine_model, layout="qwen2")   # fused engine layout
    engine.load_weights(tht.iter_weights(hub, "policy", bucket_bytes="512MiB"))  # engine's loader
    tht.publish_tp_shard(hub, "policy", step, tp_shard_model, TensorParallel(rank, 8))  # TP trainer
    tht.pull_tp_shard(hub, "policy", rollout_shard, TensorParallel(k, 2))  # its own TP=2 shard

Tensors must be CPU and contiguous (bf16 included); ``state_dict()`` names are the tensor names.
With ``layout`` (a :class:`tensorhub.layout.LayoutMap`, or a family name for the built-in fused
maps of :mod:`tensorhub.layout_rules`) each published tensor is pulled straight into its block
of the rollout's parameter: ``q_proj``, ``k_proj``, ``v_proj`` into ``qkv_proj`` and so on.
"""

from __future__ import annotations

from typing import Any

from . import _arrays, _tensorhub
from ._hub import Group, Hub, PullResult, VersionArg
from ._stream import iter_buckets, iter_weights, plan_buckets
from ._arrays import Slice
from .layout import LayoutMap, Part, Slot
from .tensor_parallel import TensorParallel, split

__all__ = ["check_layout", "iter_buckets", "iter_weights", "layout_for", "module_tensors", "plan_buckets", "publish_module",
           "publish_tp_shard", "pull_into_module", "pull_tp_shard", "unique_tensors"]


def module_tensors(module_or_state_dict: Any) -> dict[str, Any]:
    """name -> tensor (sharing the module's storage) from an ``nn.Module`` or a state_dict."""
    import torch  # noqa: F401 - fails here, with torch's own message, when torch is absent

    sd = module_or_state_dict.state_dict() if hasattr(module_or_state_dict, "state_dict") else module_or_state_dict
    return {name: t.detach() for name, t in sd.items()}


def unique_tensors(module_or_state_dict: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """module_tensors without aliases (tied weights: ``lm_head.weight`` sharing the embedding's
    storage), and alias -> the name kept (the first in state_dict order)."""
    kept: dict[tuple[int, int, tuple[int, ...]], str] = {}
    out: dict[str, Any] = {}
    aliases: dict[str, str] = {}
    for name, t in module_tensors(module_or_state_dict).items():
        key = (int(t.data_ptr()), t.numel() * t.element_size(), tuple(t.shape))
        if key in kept and t.numel() > 0:
            aliases[name] = kept[key]
        else:
            kept[key] = name
            out[name] = t
    return out, aliases


def publish_module(hub: Hub, model: str, version: int, module_or_state_dict: Any,
                   group: Group | None = None) -> None:
    """Publishes every tensor of the module / state_dict by reference (the module must not change
    until ``hub.unpublish(model, version)``)."""
    hub.publish(model, version, module_tensors(module_or_state_dict), group=group)


def _slot(name: str, t: Any) -> Slot:
    dtype = _arrays._FROM_TORCH.get(str(t.dtype))
    if dtype is None:
        raise _tensorhub.UserError(f"parameter '{name}': torch dtype {t.dtype} is not supported")
    return Slot(tuple(int(d) for d in t.shape), dtype)


def layout_for(manifest: Any, module_or_state_dict: Any, layout: LayoutMap | str | None = None
               ) -> tuple[LayoutMap, dict[str, Slot], dict[str, Slot], dict[str, Any]]:
    """(map, published slots, rollout slots, rollout tensors) for pulling ``manifest`` into the
    module: ``layout`` "fused" (or None) or a family name gives the built-in fused map; tied aliases in the
    rollout are dropped and the published tensors of their names ignored."""
    from . import layout_rules

    tensors, aliases = unique_tensors(module_or_state_dict)
    sources = {t.name: Slot(tuple(t.shape), t.dtype) for t in manifest.tensors}
    dests = {n: _slot(n, t) for n, t in tensors.items()}
    if isinstance(layout, LayoutMap):
        lmap = layout
    else:
        lmap = layout_rules.fused(dests, sources, None if layout in (None, "fused") else layout)
    tied = {a: f"tied to '{k}' in the rollout" for a, k in aliases.items() if a in sources}
    return lmap.with_ignored(tied), sources, dests, tensors


def check_layout(hub: Hub, model: str, module_or_state_dict: Any, layout: LayoutMap | str = "fused",
                 version: VersionArg = "latest") -> list[str]:
    """Every problem of pulling ``version`` into the module through ``layout``; nothing moves."""
    lmap, sources, dests, _ = layout_for(hub.manifest(model, version), module_or_state_dict, layout)
    return lmap.check(sources, dests)


def _block(dest: Any, part: Part, shape: tuple[int, ...]) -> Any:
    """The view of ``dest`` that ``part`` fills (checked contiguous by LayoutMap.check)."""
    region = dest
    block = (1,) * (dest.dim() - len(shape)) + shape
    for dim, (start, size) in enumerate(zip(part.at or (0,) * dest.dim(), block)):
        region = region.narrow(dim, start, size)
    return region.view(shape)


def pull_into_module(hub: Hub, model: str, module_or_state_dict: Any, version: VersionArg = "latest",
                     layout: LayoutMap | str | None = None, **kwargs: Any) -> PullResult:
    """Pulls ``version`` into the module's tensors in place. Without ``layout`` names, dtypes
    and shapes must match; with one (a LayoutMap, "fused", or a family of
    :data:`tensorhub.layout_rules.FAMILIES`) the map is checked in full first (UserError listing
    every problem, before any byte moves), then each published tensor lands in its block."""
    import torch

    with torch.no_grad():
        if layout is None:
            return hub.pull(model, version, into=module_tensors(module_or_state_dict), **kwargs)
        manifest = hub.manifest(model, version)  # one version for the map and the pull
        lmap, sources, dests, tensors = layout_for(manifest, module_or_state_dict, layout)
        placed = lmap.resolve(sources, dests)
        into = {p.source: _block(tensors[d], p, sources[p.source].shape) for d, parts in placed.items() for p in parts}
        return hub.pull(model, manifest.version, into=into, **kwargs)


def publish_tp_shard(hub: Hub, model: str, version: int, module_or_state_dict: Any, tp: TensorParallel,
                     group: Group | None = None) -> None:
    """A trainer's tensor-parallel rank publishes its shards as boxes of the global tensors: a
    parameter ``tp.rules`` cut along dim d is box ``tp.rank`` of ``tp.size`` of the global tensor
    of its name, whose shape is the local one times ``tp.size`` along d (Megatron's even split);
    a replicated parameter is published whole by TP rank 0 only. Every rank of the TP group calls
    it with the same ``group`` (the version commits once all shards are in)."""
    tensors: dict[str, Any] = {}
    for name, t in unique_tensors(module_or_state_dict)[0].items():
        dim = tp.dim_of(name)
        if dim is None or t.dim() <= dim:
            if tp.rank == 0:
                tensors[name] = t
            continue
        global_shape = list(t.shape)
        global_shape[dim] *= tp.size
        offset = [0] * t.dim()
        offset[dim] = tp.rank * int(t.shape[dim])
        tensors[f"{name}.tp{tp.rank}"] = Slice(t, name, global_shape, offset)
    hub.publish(model, version, tensors, group=group)


def pull_tp_shard(hub: Hub, model: str, module_or_state_dict: Any, tp: TensorParallel,
                  version: VersionArg = "latest", **kwargs: Any) -> PullResult:
    """A rollout's tensor-parallel rank pulls its own shard of every parameter, in place, whatever
    layout the trainer published (TP of another size, FSDP boxes, unsharded tensors): a
    parameter ``tp.rules`` cut along dim d gets box ``tp.rank`` of ``tp.size`` of the global
    tensor of its name (``split``: uneven sizes too), a replicated one the whole tensor. A local
    shape that is not that box is a UserError before any byte moves."""
    import torch

    manifest = hub.manifest(model, version)  # one version for the shapes and the pull
    shapes: dict[str, tuple[int, ...]] = {}
    for t in manifest.tensors:
        if t.global_name:
            shapes.setdefault(t.global_name, tuple(t.global_shape))
        else:
            shapes[t.name] = tuple(t.shape)
    into: dict[str, Any] = {}
    for name, t in unique_tensors(module_or_state_dict)[0].items():
        if name not in shapes:
            raise _tensorhub.UserError(f"parameter '{name}' is not in '{model}' v{manifest.version}")
        global_shape = shapes[name]
        dim = tp.dim_of(name)
        if dim is None or len(global_shape) <= dim:
            into[name] = t
            continue
        offset, extent = split(global_shape, dim, tp.size, tp.rank)
        if tuple(t.shape) != extent:
            raise _tensorhub.UserError(
                f"parameter '{name}' {tuple(t.shape)} is not TP rank {tp.rank} of {tp.size}'s box {extent} of "
                f"{name}{global_shape} cut along dim {dim}")
        into[name] = Slice(t, name, global_shape, offset)
    with torch.no_grad():
        return hub.pull(model, manifest.version, into=into, **kwargs)
