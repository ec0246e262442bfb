"""Tensor-parallel layouts for resharding (README "Resharding"): which parameters a TP rank holds
a shard of, along which dimension, and the box of a global tensor that shard is.

Megatron-style tensor parallelism of the Hugging Face names (:data:`HF_TP_RULES`): the
column-parallel projections (``q_proj``, ``k_proj``, ``v_proj``, ``gate_proj``, ``up_proj``,
their biases) and the vocabulary (``embed_tokens``, ``lm_head``) are cut along dim 0, the
row-parallel ones (``o_proj``, ``down_proj``) along dim 1; everything else (norms, the
row-parallel biases) is replicated. :class:`TensorParallel` names a rank of such a layout;
:func:`tensorhub.torch.publish_tp_shard` and :func:`tensorhub.torch.pull_tp_shard` publish a
trainer rank's shards as boxes and pull a rollout rank's own shards from any trainer layout (TP
of another size, FSDP, unsharded)::

    tp = tensorhub.tensor_parallel.TensorParallel(rank=k, size=2)
    tht.pull_tp_shard(hub, "policy", rollout_shard_module, tp)
"""

from __future__ import annotations

import dataclasses
import fnmatch
from typing import Mapping, Sequence

from . import _tensorhub

# fnmatch pattern of a parameter name -> the dimension its TP shards are cut along.
HF_TP_RULES: Mapping[str, int] = {
    "*.self_attn.q_proj.weight": 0, "*.self_attn.k_proj.weight": 0, "*.self_attn.v_proj.weight": 0,
    "*.self_attn.q_proj.bias": 0, "*.self_attn.k_proj.bias": 0, "*.self_attn.v_proj.bias": 0,
    "*.mlp.gate_proj.weight": 0, "*.mlp.up_proj.weight": 0,
    "*.self_attn.o_proj.weight": 1, "*.mlp.down_proj.weight": 1,
    "*embed_tokens.weight": 0, "lm_head.weight": 0,
}


def split(global_shape: Sequence[int], dim: int, parts: int, index: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(offset, extent) of part ``index`` of ``parts`` when ``global_shape`` is cut along ``dim`` as
    evenly as possible: the first ``global_shape[dim] % parts`` parts are one larger (what
    ``torch.tensor_split`` and the C++ ``tensorhub::split`` do)."""
    shape = tuple(int(d) for d in global_shape)
    if not 0 <= dim < len(shape):
        raise _tensorhub.UserError(f"split: dimension {dim} is outside a tensor of rank {len(shape)}")
    if parts < 1 or not 0 <= index < parts:
        raise _tensorhub.UserError(f"split: part {index} of {parts} does not exist")
    base, extra = divmod(shape[dim], parts)
    start = index * base + min(index, extra)
    size = base + (1 if index < extra else 0)
    offset = tuple(start if d == dim else 0 for d in range(len(shape)))
    extent = tuple(size if d == dim else n for d, n in enumerate(shape))
    return offset, extent


@dataclasses.dataclass(frozen=True)
class TensorParallel:
    """Rank ``rank`` of a tensor-parallel group of ``size``; ``rules`` maps fnmatch patterns of
    parameter names to the dimension they are cut along (the first matching pattern wins;
    no match: replicated)."""

    rank: int
    size: int
    rules: Mapping[str, int] = dataclasses.field(default_factory=lambda: dict(HF_TP_RULES))

    def __post_init__(self) -> None:
        if self.size < 1 or not 0 <= self.rank < self.size:
            raise _tensorhub.UserError(f"TensorParallel: rank {self.rank} of a group of {self.size} does not exist")

    def dim_of(self, name: str) -> int | None:
        """The dimension parameter ``name`` is cut along, or None when it is replicated."""
        for pattern, dim in self.rules.items():
            if fnmatch.fnmatchcase(name, pattern):
                return int(dim)
        return None
