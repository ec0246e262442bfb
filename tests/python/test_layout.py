"""Layout maps without torch: resolution, the checker's every complaint, JSON round trips."""

import json

import pytest

import tensorhub
from tensorhub.layout import LayoutMap, Part, Slot, contiguous_block
from tensorhub.layout_rules import fused


def slots(**kw):
    return {k.replace("__", "."): Slot(tuple(v), "bf16") for k, v in kw.items()}


SOURCES = slots(a__q=[4, 8], a__k=[2, 8], a__v=[2, 8], norm=[8])
DESTS = slots(a__qkv=[8, 8], norm=[8])
QKV = {"a.qkv": {"cat": ["a.q", "a.k", "a.v"], "dim": 0}}


def test_cat_offsets_and_identity():
    placed = LayoutMap(QKV).resolve(SOURCES, DESTS)
    assert placed["a.qkv"] == [Part("a.q", (0, 0)), Part("a.k", (4, 0)), Part("a.v", (6, 0))]
    assert placed["norm"] == [Part("norm")]


def test_every_problem_is_reported_before_anything_moves():
    dests = slots(a__qkv=[9, 8], extra=[3])
    sources = dict(SOURCES, stray=Slot((1,), "bf16"))
    problems = LayoutMap({**QKV, "nope": "a.q"}).check(sources, dests)
    text = "\n".join(problems)
    assert "destination 'nope': the rollout has no such parameter" in text
    assert "'a.qkv': 8 of 72 elements are filled by nothing" in text
    assert "destination 'extra': nothing fills it" in text
    assert "published 'stray' is read by nothing" in text
    assert "published 'norm' is read by nothing" in text
    with pytest.raises(tensorhub.UserError, match="problems"):
        LayoutMap(QKV).resolve(sources, dests)


def test_ignore_identity_off_dtype_overlap_twice_bounds():
    lm = LayoutMap(QKV, ignore={"norm": "not in the rollout"}, identity=False)
    assert lm.check(SOURCES, slots(a__qkv=[8, 8])) == []
    bad_dtype = {"a.qkv": Slot((8, 8), "f32")}
    assert any("dtype bf16 vs f32" in p for p in lm.check(SOURCES, bad_dtype))
    overlap = LayoutMap({"a.qkv": [Part("a.q", (0, 0)), Part("a.k", (3, 0)), Part("a.v", (6, 0))]}, ["norm"])
    assert any("'a.q' and 'a.k' overlap" in p for p in overlap.check(SOURCES, slots(a__qkv=[8, 8])))
    twice = LayoutMap({"x": "a.q", "y": "a.q"}, ["a.k", "a.v", "norm"])
    assert any("'a.q' is read into 2 places" in p for p in twice.check(SOURCES, slots(x=[4, 8], y=[4, 8])))
    oob = LayoutMap({"x": [Part("a.q", (1, 0))]}, ["a.k", "a.v", "norm"])
    assert any("out of bounds" in p for p in oob.check(SOURCES, slots(x=[4, 8])))
    missing = LayoutMap({"x": "a.nothing"}, ["a.q", "a.k", "a.v", "norm"])
    assert any("'a.nothing' is not published" in p for p in missing.check(SOURCES, slots(x=[4, 8])))


def test_a_column_split_is_a_resharding_and_refused():
    sources = slots(l=[4, 4], r=[4, 4])
    lm = LayoutMap({"w": {"cat": ["l", "r"], "dim": 1}})
    problems = lm.check(sources, slots(w=[4, 8]))
    assert len(problems) == 2 and all("not one contiguous block" in p for p in problems)


def test_contiguous_block_rule():
    assert contiguous_block((2, 8), (0, 0), (4, 8))
    assert contiguous_block((1, 3, 8), (1, 2, 0), (4, 5, 8))
    assert not contiguous_block((2, 4), (0, 0), (4, 8))
    assert contiguous_block((1, 1, 4), (0, 0, 2), (2, 2, 8))
    assert not contiguous_block((2, 1, 8), (0, 0, 0), (4, 2, 8))


def test_json_round_trip_and_bad_files(tmp_path):
    lm = LayoutMap({**QKV, "w2": [Part("e0", (0, 0, 0)), Part("e1", (1, 0, 0))], "r": "old"}, {"x": "why"})
    path = tmp_path / "map.json"
    path.write_text(lm.to_json())
    back = LayoutMap.load(str(path))
    assert back.to_json() == lm.to_json() and back.ignore == {"x": "why"}
    path.write_text("{not json")
    with pytest.raises(tensorhub.UserError, match="not JSON"):
        LayoutMap.load(str(path))
    path.write_text(json.dumps({"params": {"a": {"cat": []}}}))
    with pytest.raises(tensorhub.UserError, match="a fusion is"):
        LayoutMap.load(str(path))
    with pytest.raises(tensorhub.UserError, match="integers >= 0"):
        LayoutMap({"a": [{"source": "x", "at": [-1]}]})
    with pytest.raises(tensorhub.UserError):
        LayoutMap({"a": 3})


def test_builtin_rules_dense_and_moe():
    sources = slots(l__attn__q_proj__weight=[4, 8], l__attn__k_proj__weight=[2, 8], l__attn__v_proj__weight=[2, 8],
                    l__attn__q_proj__bias=[4], l__attn__k_proj__bias=[2], l__attn__v_proj__bias=[2],
                    l__mlp__gate_proj__weight=[6, 8], l__mlp__up_proj__weight=[6, 8], l__mlp__down_proj__weight=[8, 6])
    dests = slots(l__attn__qkv_proj__weight=[8, 8], l__attn__qkv_proj__bias=[8], l__mlp__gate_up_proj__weight=[12, 8],
                  l__mlp__down_proj__weight=[8, 6])
    assert fused(dests, sources, "qwen2").check(sources, dests) == []
    experts = {}
    for e in range(3):
        experts.update(slots(**{f"m__experts__{e}__w1__weight": [6, 8], f"m__experts__{e}__w3__weight": [6, 8],
                                f"m__experts__{e}__w2__weight": [8, 6]}))
    edests = slots(m__experts__w13_weight=[3, 12, 8], m__experts__w2_weight=[3, 8, 6])
    lm = fused(edests, experts, "mixtral")
    assert lm.check(experts, edests) == []
    w13 = lm.resolve(experts, edests)["m.experts.w13_weight"]
    assert Part("m.experts.2.w3.weight", (2, 6, 0)) in w13
    with pytest.raises(tensorhub.UserError, match="unknown model family"):
        fused(dests, sources, "gpt5")
