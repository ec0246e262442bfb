"""tensorhub.torch with torch itself: same-name pulls, and real models (transformers, random init
from small configs: nothing downloaded) published by a trainer and pulled into a rollout engine's
fused layout through tensorhub.layout. Label python; runs in the venv scripts/bootstrap-torch.sh
makes (tests/python/CMakeLists.txt)."""

from __future__ import annotations

import pytest
import torch
import transformers

import tensorhub
import tensorhub.torch as tht
from fused_qwen2 import FusedCausalLM

torch.manual_seed(1234)


@pytest.fixture(scope="module")
def hub():
    with tensorhub.Hub(chunk="64KiB") as h:
        yield h


def test_same_name_pull(hub):
    src = torch.nn.Linear(8, 4).to(torch.bfloat16)
    dst = torch.nn.Linear(8, 4).to(torch.bfloat16)
    tht.publish_module(hub, "torchm", 1, src)
    assert hub.manifest("torchm", 1)["weight"].dtype == "bf16"
    tht.pull_into_module(hub, "torchm", dst)
    assert torch.equal(src.weight, dst.weight) and torch.equal(src.bias, dst.bias)
    hub.unpublish("torchm", 1)


def small(kind: str, tied: bool):
    common = dict(vocab_size=512, hidden_size=64, intermediate_size=160, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=tied)
    if kind == "qwen2":
        cfg, cls, bias = transformers.Qwen2Config(**common), transformers.Qwen2ForCausalLM, True
    else:
        cfg, cls, bias = transformers.LlamaConfig(**common), transformers.LlamaForCausalLM, False
    cfg._attn_implementation = "eager"  # the forward FusedCausalLM follows
    return cfg, cls(cfg).to(torch.bfloat16).eval(), bias


def storage(module):
    return {n: t.data_ptr() for n, t in module.state_dict().items()}


@pytest.mark.parametrize("kind,tied", [("qwen2", True), ("llama", False)])
def test_fused_pull_gives_bitwise_equal_logits(hub, kind, tied):
    cfg, trainer, bias = small(kind, tied)
    rollout = FusedCausalLM(cfg, bias).to(torch.bfloat16).eval()
    ids = torch.randint(0, cfg.vocab_size, (2, 23))
    with torch.no_grad():
        want = trainer(ids).logits
        assert not torch.equal(rollout(ids), want)  # random init differs before the pull
    model = f"hf-{kind}"
    tht.publish_module(hub, model, 1, trainer)
    assert tht.check_layout(hub, model, rollout, kind) == []
    before = storage(rollout)
    r = tht.pull_into_module(hub, model, rollout, layout=kind)
    assert storage(rollout) == before  # written in place: no parameter was replaced
    with torch.no_grad():
        assert torch.equal(rollout(ids), want)
    published = sum(t.numel() * t.element_size() for t in trainer.state_dict().values())
    tied_bytes = trainer.lm_head.weight.numel() * 2 if tied else 0
    assert r.bytes == published - tied_bytes  # the tied lm_head is not read twice
    hub.unpublish(model, 1)


def test_a_map_that_does_not_fit_moves_nothing(hub):
    cfg, trainer, bias = small("qwen2", True)
    tht.publish_module(hub, "hf-misfit", 1, trainer)
    other = transformers.Qwen2Config(**{**cfg.to_dict(), "intermediate_size": 96})
    rollout = FusedCausalLM(other, bias).to(torch.bfloat16)
    snapshot = {n: t.clone() for n, t in rollout.state_dict().items()}
    problems = tht.check_layout(hub, "hf-misfit", rollout, "qwen2")
    assert any("gate_up_proj.weight" in p and "out of bounds" in p for p in problems), problems
    assert any("down_proj.weight" in p for p in problems), problems
    with pytest.raises(tensorhub.UserError, match="layout map does not fit"):
        tht.pull_into_module(hub, "hf-misfit", rollout, layout="qwen2")
    assert all(torch.equal(snapshot[n], t) for n, t in rollout.state_dict().items())
    hub.unpublish("hf-misfit", 1)


def test_builtin_map_round_trips_through_json(hub, tmp_path):
    cfg, trainer, bias = small("llama", False)
    tht.publish_module(hub, "hf-json", 1, trainer)
    rollout = FusedCausalLM(cfg, bias).to(torch.bfloat16)
    lmap = tht.layout_for(hub.manifest("hf-json"), rollout, "llama")[0]
    path = tmp_path / "llama.json"
    path.write_text(lmap.to_json())
    tht.pull_into_module(hub, "hf-json", rollout, layout=tensorhub.layout.LayoutMap.load(str(path)))
    sd = trainer.state_dict()
    qkv = rollout.model.layers[2].self_attn.qkv_proj.weight
    p = "model.layers.2.self_attn."
    assert torch.equal(qkv, torch.cat([sd[p + "q_proj.weight"], sd[p + "k_proj.weight"], sd[p + "v_proj.weight"]]))
    hub.unpublish("hf-json", 1)


def test_moe_experts_land_in_the_engines_stacks(hub):
    cfg = transformers.Qwen3MoeConfig(vocab_size=256, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                                      num_experts=8, num_experts_per_tok=2)
    trainer = transformers.Qwen3MoeForCausalLM(cfg).to(torch.bfloat16)
    sd = trainer.state_dict()
    # The engine's parameters (vLLM / SGLang names): fused qkv, experts stacked in w13 / w2.
    engine = {}
    for name, t in sd.items():
        if name.endswith("q_proj.weight"):
            p = name[: -len("q_proj.weight")]
            rows = sum(sd[p + f"{x}_proj.weight"].shape[0] for x in "qkv")
            engine[p + "qkv_proj.weight"] = torch.empty(rows, t.shape[1], dtype=t.dtype)
        elif name.endswith("experts.gate_up_proj"):
            engine[name.replace("gate_up_proj", "w13_weight")] = torch.empty_like(t)
        elif name.endswith("experts.down_proj"):
            engine[name.replace("down_proj", "w2_weight")] = torch.empty_like(t)
        elif not any(name.endswith(f"{x}_proj.weight") for x in "kv"):
            engine[name] = torch.empty_like(t)
    tht.publish_module(hub, "hf-moe", 1, trainer)
    assert tht.check_layout(hub, "hf-moe", engine, "qwen3_moe") == []
    tht.pull_into_module(hub, "hf-moe", engine, layout="qwen3_moe")
    p = "model.layers.1.mlp.experts."
    assert torch.equal(engine[p + "w13_weight"], sd[p + "gate_up_proj"])
    assert torch.equal(engine[p + "w2_weight"], sd[p + "down_proj"])
    assert torch.equal(engine["model.layers.1.self_attn.k_norm.weight"], sd["model.layers.1.self_attn.k_norm.weight"])
    hub.unpublish("hf-moe", 1)


def test_iter_weights_feeds_an_engine_loader_two_buckets_at_a_time(hub):
    cfg, trainer, bias = small("qwen2", True)
    tht.publish_module(hub, "hf-stream", 1, trainer)
    rollout = FusedCausalLM(cfg, bias).to(torch.bfloat16).eval()
    sd = trainer.state_dict()
    storages = set()
    seen = []

    def watched(it):
        for name, t in it:  # checked as it comes: valid while the loader has it
            assert torch.equal(t, sd[name]), name
            storages.add(t.untyped_storage().data_ptr())
            seen.append(name)
            yield name, t

    bucket = 40 << 10
    assert len(tht.plan_buckets(hub.manifest("hf-stream").tensors, bucket)) > 4
    rollout.load_weights(watched(tht.iter_weights(hub, "hf-stream", 1, bucket_bytes=bucket)))
    assert seen == list(sd) and len(storages) == 2  # every tensor, through two buffers only
    ids = torch.randint(0, cfg.vocab_size, (1, 19))
    with torch.no_grad():
        assert torch.equal(rollout(ids), trainer(ids).logits)
    hub.unpublish("hf-stream", 1)


def test_iter_weights_names_errors_and_early_stop(hub):
    cfg, trainer, _ = small("llama", False)
    tht.publish_module(hub, "hf-stream2", 1, trainer)
    sd = trainer.state_dict()
    picked = ["model.norm.weight", "model.layers.1.mlp.up_proj.weight"]
    got = dict(tht.iter_weights(hub, "hf-stream2", names=picked, bucket_bytes="1MiB"))
    assert list(got) == [n for n in sd if n in picked] and all(torch.equal(got[n], sd[n]) for n in picked)
    with pytest.raises(tensorhub.UserError, match="no tensor"):
        next(tht.iter_weights(hub, "hf-stream2", names=["nope"]))
    with pytest.raises(tensorhub.UserError, match="positive"):
        next(tht.iter_weights(hub, "hf-stream2", bucket_bytes=0))
    buckets = list(b for b in tht.iter_buckets(hub, "hf-stream2", bucket_bytes=64 << 10))
    plan = tht.plan_buckets(hub.manifest("hf-stream2").tensors, 64 << 10)
    assert [[n for n, _ in b] for b in buckets] == [[t.name for t in b] for b in plan] and len(plan) > 2
    it = tht.iter_weights(hub, "hf-stream2", bucket_bytes=8 << 10)
    next(it)
    it.close()  # stops early: the bucket in flight is cancelled
    hub.unpublish("hf-stream2", 1, timeout=30)


def test_iter_buckets_into_load_state_dict(hub):
    cfg, trainer, _ = small("qwen2", True)
    tht.publish_module(hub, "hf-sd", 1, trainer)
    rollout = transformers.Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    for bucket in tht.iter_buckets(hub, "hf-sd", 1, bucket_bytes=96 << 10):
        result = rollout.load_state_dict(dict(bucket), strict=False)  # copies into the parameters
        assert not result.unexpected_keys
    ids = torch.randint(0, cfg.vocab_size, (2, 11))
    with torch.no_grad():
        assert torch.equal(rollout(ids).logits, trainer(ids).logits)
    hub.unpublish("hf-sd", 1)


def tp_shards(full: dict, tp_size: int, rank: int, tp_cls) -> dict:
    """Rank ``rank``'s Megatron shards of a full state_dict (torch.tensor_split: first parts larger)."""
    rules = tp_cls(0, 1)
    out = {}
    for name, t in full.items():
        dim = rules.dim_of(name)
        out[name] = t if dim is None or t.dim() <= dim else torch.tensor_split(t, tp_size, dim)[rank].contiguous()
    return out


def test_tp4_trainer_resharded_into_tp2_tp3_and_tp1_rollouts():
    """A TP=4 trainer (4 hubs of one publishing group, each publishing its shards as boxes) and
    rollouts at TP=2, an uneven TP=3 and TP=1 each pulling their own shards: every shard equals
    the trainer's full parameter cut the rollout's way, and the TP=1 pull gives bitwise-equal
    logits."""
    from tensorhub.tensor_parallel import TensorParallel, split

    cfg, trainer, _ = small("qwen2", False)
    full = {n: t.detach().contiguous() for n, t in trainer.state_dict().items()}
    with tensorhub.Hub(chunk="16KiB") as first:
        others = [tensorhub.Hub(address=first.address, transport="local", chunk="16KiB") for _ in range(4)]
        try:
            hubs = [first] + others[:3]
            for r, h in enumerate(hubs):
                shard = tp_shards(full, 4, r, TensorParallel)
                tht.publish_tp_shard(h, "tp4", 1, shard, TensorParallel(r, 4), group=tensorhub.Group("trainer", size=4, rank=r))
            m = first.manifest("tp4", 1)
            assert sum(1 for t in m.tensors if t.global_name) > 0
            reader = others[3]
            for size in (2, 3):
                for k in range(size):
                    want = tp_shards(full, size, k, TensorParallel)
                    got = {n: torch.zeros_like(t) for n, t in want.items()}
                    tht.pull_tp_shard(reader, "tp4", got, TensorParallel(k, size), relay=False)
                    for n in want:
                        assert torch.equal(got[n], want[n]), f"{n} of TP rank {k} of {size}"
            rollout = small("qwen2", False)[1]
            tht.pull_tp_shard(reader, "tp4", rollout, TensorParallel(0, 1), relay=False)
            ids = torch.randint(0, cfg.vocab_size, (2, 17))
            with torch.no_grad():
                assert torch.equal(rollout(ids).logits, trainer(ids).logits)
            # A local shape that is not the rank's box is refused before anything moves.
            bad = {"model.layers.0.self_attn.q_proj.weight": torch.zeros(7, 64, dtype=torch.bfloat16)}
            with pytest.raises(tensorhub.UserError, match="is not TP rank 0 of 2"):
                tht.pull_tp_shard(reader, "tp4", bad, TensorParallel(0, 2))
            assert split((10, 3), 0, 4, 1) == ((3, 0), (3, 3)) and split((10, 3), 0, 4, 3) == ((8, 0), (2, 3))
            for h in hubs:
                h.unpublish("tp4", 1)
        finally:
            for h in reversed(others):
                h.close()
