"""Built-in layout maps: Hugging Face checkpoints into the fused parameters vLLM and SGLang keep.

On one tensor-parallel rank both engines hold, per decoder layer (their model files
``llama.py``, ``qwen2.py``, ``qwen3.py``, ``qwen3_moe.py``, ``mixtral.py``):

============================================  ==============================================
engine parameter                              published (Hugging Face) tensors, in order
============================================  ==============================================
``<attn>.qkv_proj.weight`` / ``.bias``        ``<attn>.q_proj``, ``k_proj``, ``v_proj`` (dim 0)
``<mlp>.gate_up_proj.weight``                 ``<mlp>.gate_proj.weight``, ``up_proj.weight``
``<moe>.experts.w13_weight`` [E, 2I, H]       per expert e: ``<moe>.experts.<e>.gate_proj`` at
                                              [e, 0, 0], ``up_proj`` at [e, I, 0] (Mixtral:
                                              ``w1``, ``w3``)
``<moe>.experts.w2_weight`` [E, H, I]         ``<moe>.experts.<e>.down_proj`` (Mixtral: ``w2``)
``<moe>.experts.w13_weight`` / ``w2_weight``   ``<moe>.experts.gate_up_proj`` / ``down_proj``
                                              (transformers 5 keeps experts stacked, same order)
everything else                               the tensor of the same name
============================================  ==============================================

The rules match destination names, so one rule set serves every family; ``family`` is checked
and names the map in errors. What the engine quantizes, or fuses differently (tensor-parallel
slices: the resharding issue), is not covered: use ``tensorhub.torch.iter_weights`` and the
engine's own loader there.
"""

from __future__ import annotations

import re
from typing import Mapping

from . import _tensorhub
from .layout import LayoutMap, Part, Slot

FAMILIES = ("llama", "qwen2", "qwen3", "qwen3_moe", "mixtral")

_QKV = re.compile(r"^(?P<p>.*)\.qkv_proj\.(?P<k>weight|bias)$")
_GATE_UP = re.compile(r"^(?P<p>.*)\.gate_up_proj\.weight$")
_W13 = re.compile(r"^(?P<p>.*)\.experts\.w13_weight$")
_W2 = re.compile(r"^(?P<p>.*)\.experts\.w2_weight$")

# Expert tensor names: (gate, up, down), Qwen/DeepSeek style first, then Mixtral's.
_EXPERT_NAMES = (("gate_proj", "up_proj", "down_proj"), ("w1", "w3", "w2"))


def _expert_names(prefix: str, sources: Mapping[str, Slot]) -> tuple[str, str, str]:
    for names in _EXPERT_NAMES:
        if f"{prefix}.experts.0.{names[0]}.weight" in sources:
            return names
    return _EXPERT_NAMES[0]  # the check then reports the missing tensors by these names


def fused(dests: Mapping[str, Slot], sources: Mapping[str, Slot], family: str | None = None) -> LayoutMap:
    """The map for the rollout parameters ``dests`` (name -> Slot) from the published ``sources``
    of a ``family`` model (one of FAMILIES, or None). Check it with ``LayoutMap.check``."""
    if family is not None and family not in FAMILIES:
        raise _tensorhub.UserError(f"layout: unknown model family '{family}' (built in: {', '.join(FAMILIES)})")
    params: dict[str, object] = {}
    for dest, slot in dests.items():
        if m := _QKV.match(dest):
            p, k = m["p"], m["k"]
            params[dest] = {"cat": [f"{p}.q_proj.{k}", f"{p}.k_proj.{k}", f"{p}.v_proj.{k}"], "dim": 0}
        elif m := _GATE_UP.match(dest):
            p = m["p"]
            params[dest] = {"cat": [f"{p}.gate_proj.weight", f"{p}.up_proj.weight"], "dim": 0}
        elif (m := _W13.match(dest)) and f"{m['p']}.experts.gate_up_proj" in sources:
            params[dest] = f"{m['p']}.experts.gate_up_proj"  # transformers 5 stacks experts itself
        elif (m := _W2.match(dest)) and f"{m['p']}.experts.down_proj" in sources:
            params[dest] = f"{m['p']}.experts.down_proj"
        elif (m := _W13.match(dest)) and len(slot.shape) == 3:
            p = m["p"]
            gate, up, _ = _expert_names(p, sources)
            half = slot.shape[1] // 2
            params[dest] = [part for e in range(slot.shape[0]) for part in (
                Part(f"{p}.experts.{e}.{gate}.weight", (e, 0, 0)), Part(f"{p}.experts.{e}.{up}.weight", (e, half, 0)))]
        elif (m := _W2.match(dest)) and len(slot.shape) == 3:
            p = m["p"]
            down = _expert_names(p, sources)[2]
            params[dest] = [Part(f"{p}.experts.{e}.{down}.weight", (e, 0, 0)) for e in range(slot.shape[0])]
    return LayoutMap(params, identity=True)
