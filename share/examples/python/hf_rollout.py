#!/usr/bin/env python3
"""A Hugging Face trainer and a rollout engine's fused model, wired through TensorHub.

The trainer is a ``transformers`` Qwen2 (small config, random init: nothing is downloaded) that
"trains" by nudging its weights each step and publishes its state_dict (bf16, tied embeddings,
Hugging Face names) by reference, plus its logits on a fixed prompt as a second model
(``policy-logits``). The rollout holds the fused parameters vLLM and SGLang keep
(``fused_qwen2.py``: ``qkv_proj``, ``gate_up_proj``) and takes each new version at a step
boundary, one of two ways:

* ``--loader map``: ``tensorhub.torch.pull_into_module(..., layout="qwen2")`` writes every
  published tensor straight into its block of the fused parameters (no intermediate copy);
* ``--loader stream``: ``model.load_weights(tensorhub.torch.iter_weights(...))``, the engine's own
  loader fed in bounded buckets (two buckets of memory), for loaders that must run (quantized).

Each version's rollout logits must be bitwise equal to the trainer's. Plain processes against a
standalone coordinator (transport ucx)::

    tensorhub serve --listen 127.0.0.1:7070 &
    python3 hf_rollout.py trainer --hub 127.0.0.1:7070 --steps 4 &
    python3 hf_rollout.py rollout --hub 127.0.0.1:7070 --steps 4 --loader map &
    python3 hf_rollout.py rollout --hub 127.0.0.1:7070 --steps 4 --loader stream --id 1

Needs torch and transformers (``scripts/bootstrap-torch.sh`` makes a venv with both).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import transformers

import tensorhub
import tensorhub.torch as tht
from fused_qwen2 import FusedCausalLM

POLICY = "policy"


def config() -> transformers.Qwen2Config:
    cfg = transformers.Qwen2Config(vocab_size=1024, hidden_size=128, intermediate_size=352, num_hidden_layers=4,
                                   num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=512,
                                   tie_word_embeddings=True)
    cfg._attn_implementation = "eager"  # the forward fused_qwen2.py follows
    return cfg


PROMPT = torch.arange(0, 1024, 37).unsqueeze(0)  # a fixed prompt both sides score


def run_trainer(hub: tensorhub.Hub, steps: int, rollouts: int) -> int:
    torch.manual_seed(0)
    # Two models alternate: a published version must not change until it is unpublished.
    models = [transformers.Qwen2ForCausalLM(config()).to(torch.bfloat16).eval() for _ in range(2)]
    models[1].load_state_dict(models[0].state_dict())
    logits = [None, None]
    for step in range(1, steps + 1):
        cur, prev = models[step % 2], models[(step - 1) % 2]
        if step > 2:
            hub.unpublish(POLICY, step - 2)  # cur's buffers are about to be written
            hub.unpublish(POLICY + "-logits", step - 2)
        with torch.no_grad():
            for p_cur, p_prev in zip(cur.parameters(), prev.parameters()):
                p_cur.copy_(p_prev + 0.01 * torch.randn_like(p_prev))  # a "training step"
            logits[step % 2] = cur(PROMPT).logits.contiguous()
        tht.publish_module(hub, POLICY, step, cur)
        hub.publish(POLICY + "-logits", step, {"logits": logits[step % 2]})
        print(f"trainer: published v{step}", flush=True)
        time.sleep(0.2)
    for i in range(rollouts):  # keep the last version until every rollout has it
        if hub.wait_for(f"ack{i}", None, timeout=300) is None:
            print(f"trainer: rollout {i} never acknowledged v{steps}", file=sys.stderr)
            return 1
    print(f"hf_rollout: trainer done, {rollouts} rollouts acknowledged v{steps}; ok", flush=True)
    return 0


def take(hub: tensorhub.Hub, model: FusedCausalLM, version: int, loader: str, bucket: str) -> tuple[float, bool]:
    """Loads ``version`` into the engine's model at a step boundary; (seconds, logits equal)."""
    problems = tht.check_layout(hub, POLICY, model, "qwen2", version)  # before any byte moves
    if problems:
        raise tensorhub.UserError("the layout does not fit:\n  " + "\n  ".join(problems))
    t0 = time.perf_counter()
    if loader == "map":
        tht.pull_into_module(hub, POLICY, model, version, layout="qwen2")
    else:
        model.load_weights(tht.iter_weights(hub, POLICY, version, bucket_bytes=bucket))
    took = time.perf_counter() - t0
    with torch.no_grad():
        mine = model(PROMPT)
    want = torch.empty_like(mine)
    hub.pull(POLICY + "-logits", version, into={"logits": want})
    return took, torch.equal(mine, want)


def run_rollout(hub: tensorhub.Hub, steps: int, ident: int, loader: str, bucket: str) -> int:
    model = FusedCausalLM(config(), bias=True).to(torch.bfloat16).eval()
    last = None
    while last is None or last < steps:
        if hub.wait_for(POLICY, last, timeout=300) is None:
            print(f"rollout {ident}: no version after v{last}", file=sys.stderr)
            return 1
        version = hub.latest(POLICY)
        try:
            took, same = take(hub, model, version, loader, bucket)
        except tensorhub.NotFoundError:
            continue  # superseded and unpublished before we read it: take the newer latest
        if not same:
            print(f"rollout {ident}: v{version} logits differ from the trainer's", file=sys.stderr)
            return 1
        print(f"rollout {ident}: v{version} via {loader} in {took * 1e3:.1f} ms; logits bitwise equal", flush=True)
        last = version
    hub.publish(f"ack{ident}", 1, {"ack": torch.ones(1, dtype=torch.uint8)})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until the trainer has left (our ack must stay readable)
        versions = [v for m in hub.status() if m["model"] == POLICY for v in m["versions"]]
        if all(v["origin_holders"] == 0 for v in versions):
            break
        time.sleep(0.05)
    print(f"hf_rollout: rollout {ident} ({loader}) matched the trainer through v{steps}; ok", flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("role", choices=["trainer", "rollout"])
    p.add_argument("--hub", default=None, help="coordinator address (default TENSORHUB_HUB)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--rollouts", type=int, default=2, help="trainer: rollouts to wait for")
    p.add_argument("--id", type=int, default=0, help="rollout: its number (0..rollouts-1)")
    p.add_argument("--loader", choices=["map", "stream"], default="map", help="rollout: how it takes a version")
    p.add_argument("--bucket", default="1MiB", help="rollout --loader stream: bucket size")
    a = p.parse_args()
    if a.steps < 1:
        p.error("--steps must be >= 1")
    with tensorhub.Hub(address=a.hub) as hub:
        if a.role == "trainer":
            return run_trainer(hub, a.steps, a.rollouts)
        return run_rollout(hub, a.steps, a.id, a.loader, a.bucket)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except tensorhub.Error as e:
        print(f"hf_rollout: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
