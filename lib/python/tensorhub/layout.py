"""Layout maps: which published tensors fill which parameter of a rollout, and where.

A trainer publishes Hugging Face names, unfused (``...self_attn.q_proj.weight``, ``k_proj``,
``v_proj``, ``mlp.gate_proj``, ``up_proj``, one tensor per expert). Rollout engines keep fused
parameters under their own names (``qkv_proj.weight`` = [q; k; v], ``gate_up_proj.weight`` =
[gate; up], experts stacked in ``w13_weight`` / ``w2_weight``). A :class:`LayoutMap` says, per
destination parameter, which published tensors fill it and at which offsets; a pull through it
(``tensorhub.torch.pull_into_module(..., layout=...)``) writes each published tensor straight
into its block of the destination's storage: no intermediate full-size tensor.

The map is plain data (a dict, or JSON through :meth:`LayoutMap.to_json` / :meth:`load`)::

    {"params": {
        "lm_head.weight": "lm_head.weight",                       # the same tensor (a rename
                                                                  #   when the names differ)
        "model.layers.0.self_attn.qkv_proj.weight":               # concatenation along dim 0,
            {"cat": ["model.layers.0.self_attn.q_proj.weight",    #   offsets from the manifest
                     "model.layers.0.self_attn.k_proj.weight",
                     "model.layers.0.self_attn.v_proj.weight"], "dim": 0},
        "model.layers.0.mlp.experts.w2_weight":                   # explicit placements: the
            [{"source": "model.layers.0.mlp.experts.0.down_proj.weight", "at": [0, 0, 0]},
             {"source": "model.layers.0.mlp.experts.1.down_proj.weight", "at": [1, 0, 0]}]},
     "ignore": {"model.rotary.inv_freq": "recomputed by the engine"}}

``at`` is the block's first index in each destination dimension; a source of lower rank fills
the trailing dimensions (its leading ones are size 1). Destinations the map does not name are
filled from the published tensor of the same name (``identity=True``). Every block must be one
contiguous run of the destination's memory (true for any split along the first dimension that
is not indexed, i.e. all fusions engines use on one rank); other placements are a resharding
and are refused.

:meth:`LayoutMap.check` reports every problem before any byte moves: published tensors nothing
reads (unless ignored), tensors read twice, destinations not filled exactly once in every
element, dtype, rank and bounds mismatches. Built-in maps for the fused layouts of vLLM and
SGLang: :func:`tensorhub.layout_rules.fused`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Iterable, Mapping, Sequence

from . import _tensorhub

Shape = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Slot:
    """A tensor's shape and TensorHub dtype name (``bf16``, ``f32``, ...)."""

    shape: Shape
    dtype: str


@dataclasses.dataclass(frozen=True)
class Part:
    """One published tensor placed in a destination: its block starts at ``at`` (empty: 0...)."""

    source: str
    at: Shape = ()


@dataclasses.dataclass(frozen=True)
class _Cat:
    sources: tuple[str, ...]
    dim: int


def _entry(dest: str, spec: Any) -> tuple[Part, ...] | _Cat:
    if isinstance(spec, str):
        return (Part(spec),)
    if isinstance(spec, Part):
        return (spec,)
    if isinstance(spec, Mapping):
        if set(spec) - {"cat", "dim"} or not isinstance(spec.get("cat"), Sequence) or not spec["cat"]:
            raise _tensorhub.UserError(f"layout: '{dest}': a fusion is {{'cat': [names...], 'dim': d}}, got {spec!r}")
        dim = spec.get("dim", 0)
        if not isinstance(dim, int) or dim < 0:
            raise _tensorhub.UserError(f"layout: '{dest}': 'dim' must be an integer >= 0, got {dim!r}")
        return _Cat(tuple(str(s) for s in spec["cat"]), dim)
    if isinstance(spec, Sequence) and spec:
        parts = []
        for p in spec:
            if isinstance(p, Part):
                parts.append(p)
            elif isinstance(p, str):
                parts.append(Part(p))
            elif isinstance(p, Mapping) and "source" in p and set(p) <= {"source", "at"}:
                at = p.get("at", ())
                if not isinstance(at, Sequence) or not all(isinstance(a, int) and a >= 0 for a in at):
                    raise _tensorhub.UserError(f"layout: '{dest}': 'at' must be a list of integers >= 0, got {at!r}")
                parts.append(Part(str(p["source"]), tuple(at)))
            else:
                raise _tensorhub.UserError(f"layout: '{dest}': a placement is {{'source': name, 'at': [...]}}, got {p!r}")
        return tuple(parts)
    raise _tensorhub.UserError(f"layout: '{dest}': expected a name, a fusion or a list of placements, got {spec!r}")


def contiguous_block(block: Shape, at: Shape, dest: Shape) -> bool:
    """Whether the block of shape ``block`` at ``at`` is one contiguous run of a C-order ``dest``:
    full in every dimension after some dimension j, size 1 in every dimension before it."""
    j = 0
    while j < len(dest) and block[j] == 1:
        j += 1
    return all(block[i] == dest[i] for i in range(j + 1, len(dest)))


def _flat_start(at: Shape, dest: Shape) -> int:
    start = 0
    for a, d in zip(at, dest):
        start = start * d + a
    return start


class LayoutMap:
    """Destination parameter -> the published tensors that fill it (module docstring)."""

    def __init__(self, params: Mapping[str, Any], ignore: Mapping[str, str] | Iterable[str] = (),
                 identity: bool = True) -> None:
        if not isinstance(params, Mapping):
            raise _tensorhub.UserError(f"layout: params must be a mapping destination -> spec, got {type(params).__name__}")
        self._entries = {str(d): _entry(str(d), s) for d, s in params.items()}
        self.ignore: dict[str, str] = (dict(ignore) if isinstance(ignore, Mapping)
                                       else {str(n): "ignored" for n in ignore})
        self.identity = bool(identity)

    def with_ignored(self, more: Mapping[str, str]) -> "LayoutMap":
        """A copy that also ignores ``more`` (published name -> why)."""
        copy = LayoutMap({}, {**self.ignore, **more}, self.identity)
        copy._entries = dict(self._entries)
        return copy

    # ---- files ------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str) -> "LayoutMap":
        """A map from a JSON file (the format of the module docstring)."""
        with open(path, encoding="utf-8") as f:
            try:
                doc = json.load(f)
            except json.JSONDecodeError as e:
                raise _tensorhub.UserError(f"layout file {path}: not JSON: {e}") from None
        if not isinstance(doc, Mapping) or "params" not in doc or set(doc) - {"params", "ignore", "identity"}:
            raise _tensorhub.UserError(f"layout file {path}: expected {{'params': ..., 'ignore': ..., 'identity': ...}}")
        return cls(doc["params"], doc.get("ignore", {}), doc.get("identity", True))

    def to_json(self) -> str:
        def spec(e: tuple[Part, ...] | _Cat) -> Any:
            if isinstance(e, _Cat):
                return {"cat": list(e.sources), "dim": e.dim}
            if len(e) == 1 and not e[0].at:
                return e[0].source
            return [{"source": p.source, "at": list(p.at)} for p in e]

        return json.dumps({"params": {d: spec(e) for d, e in self._entries.items()}, "ignore": self.ignore,
                           "identity": self.identity}, indent=1)

    # ---- resolution -------------------------------------------------------------------------
    def placements(self, sources: Mapping[str, Slot], dests: Mapping[str, Slot]) -> tuple[dict[str, list[Part]], list[str]]:
        """Every destination's parts with offsets resolved, and the problems found doing so."""
        out: dict[str, list[Part]] = {}
        problems: list[str] = []
        for dest, e in self._entries.items():
            if dest not in dests:
                problems.append(f"destination '{dest}': the rollout has no such parameter")
                continue
            if isinstance(e, _Cat):
                rank = len(dests[dest].shape)
                if e.dim >= rank:
                    problems.append(f"destination '{dest}': cat along dim {e.dim} of a rank-{rank} parameter")
                    continue
                parts, offset = [], 0
                for s in e.sources:
                    at = [0] * rank
                    at[e.dim] = offset
                    parts.append(Part(s, tuple(at)))
                    if s in sources and len(sources[s].shape) == rank:
                        offset += sources[s].shape[e.dim]
                out[dest] = parts
            else:
                out[dest] = list(e)
        if self.identity:
            for dest in dests:
                if dest not in out and dest in sources:
                    out[dest] = [Part(dest)]
        return out, problems

    def check(self, sources: Mapping[str, Slot], dests: Mapping[str, Slot]) -> list[str]:
        """Every problem of pulling ``sources`` (published name -> Slot) into ``dests`` (rollout
        parameter -> Slot) through this map; empty when the pull can go ahead."""
        placed, problems = self.placements(sources, dests)
        readers: dict[str, list[str]] = {}
        for dest, parts in placed.items():
            d = dests[dest]
            runs: list[tuple[int, int, str]] = []
            for p in parts:
                readers.setdefault(p.source, []).append(dest)
                s = sources.get(p.source)
                if s is None:
                    problems.append(f"destination '{dest}': '{p.source}' is not published")
                    continue
                where = f"'{p.source}' {list(s.shape)} in '{dest}' {list(d.shape)}"
                if s.dtype != d.dtype:
                    problems.append(f"{where}: dtype {s.dtype} vs {d.dtype} (a conversion is not a layout)")
                if len(s.shape) > len(d.shape):
                    problems.append(f"{where}: the source has more dimensions than the destination")
                    continue
                block = (1,) * (len(d.shape) - len(s.shape)) + tuple(s.shape)
                at = p.at or (0,) * len(d.shape)
                if len(at) != len(d.shape):
                    problems.append(f"{where}: 'at' {list(at)} needs {len(d.shape)} indices")
                    continue
                if any(a + b > n for a, b, n in zip(at, block, d.shape)):
                    problems.append(f"{where} at {list(at)}: out of bounds")
                    continue
                if not contiguous_block(block, at, d.shape):
                    problems.append(f"{where} at {list(at)}: not one contiguous block of the destination "
                                    "(a resharding, not a layout)")
                    continue
                runs.append((_flat_start(at, d.shape), math.prod(block), p.source))
            runs.sort()
            overlap = False
            for (a, n, x), (b, _, y) in zip(runs, runs[1:]):
                if a + n > b:
                    problems.append(f"destination '{dest}': '{x}' and '{y}' overlap")
                    overlap = True
            total, filled = math.prod(d.shape), sum(n for _, n, _ in runs)
            if not overlap and len(runs) == len(parts) and filled != total:
                problems.append(f"destination '{dest}': {total - filled} of {total} elements are filled by nothing")
        for dest in dests:
            if dest not in placed:
                problems.append(f"destination '{dest}': nothing fills it (map it, or publish '{dest}')")
        for src, ds in readers.items():
            if len(ds) > 1:
                problems.append(f"'{src}' is read into {len(ds)} places ({', '.join(ds)})")
        for src in sources:
            if src not in readers and src not in self.ignore:
                problems.append(f"published '{src}' is read by nothing (map it, or list it in ignore)")
        return problems

    def resolve(self, sources: Mapping[str, Slot], dests: Mapping[str, Slot]) -> dict[str, list[Part]]:
        """The placements, or a UserError listing every problem :meth:`check` finds."""
        problems = self.check(sources, dests)
        if problems:
            shown = "\n  ".join(problems[:20])
            more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
            raise _tensorhub.UserError(f"layout map does not fit ({len(problems)} problems):\n  {shown}{more}")
        return self.placements(sources, dests)[0]

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LayoutMap({len(self._entries)} entries, {len(self.ignore)} ignored, identity={self.identity})"
