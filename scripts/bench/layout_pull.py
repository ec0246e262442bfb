#!/usr/bin/env python3
"""Pulls through a fused layout map against plain same-name pulls of the same bytes, and the
rollout's peak memory of the streaming loader against loading a full state_dict first.

    PYTHONPATH=build/lib/python:tests/python "$(scripts/bootstrap-torch.sh --print)" \
        scripts/bench/layout_pull.py [--hidden 1024] [--layers 8] [--rounds 7] [--bucket 64MiB]

A synthetic Qwen2-shaped bf16 checkpoint (Hugging Face names, unfused; --hidden, --layers,
vocab 32000) is published by one in-process hub (local transport: the copy is a memcpy, so the
comparison isolates what the map adds). Speed, interleaved rounds, medians: (a) a same-name pull
into unfused tensors of the trainer's shapes; (b) pull_into_module(layout="qwen2") into an
engine's fused parameters (qkv_proj, gate_up_proj). Memory, each in a fresh child process
holding the checkpoint and the engine's parameters: peak RSS growth (VmHWM after resetting it
through /proc/self/clear_refs) while (c) iter_weights(bucket) feeds an engine loader, and (d)
pull(into=None) (a full copy) feeds it. Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import tensorhub
import tensorhub.torch as tht


def checkpoint(hidden: int, layers: int) -> dict[str, torch.Tensor]:
    inter, kv, vocab = hidden * 11 // 4, hidden // 4, 32000
    g = torch.Generator().manual_seed(7)

    def t(*shape):
        return torch.randn(*shape, generator=g).to(torch.bfloat16)

    sd = {"model.embed_tokens.weight": t(vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        sd.update({p + "self_attn.q_proj.weight": t(hidden, hidden), p + "self_attn.q_proj.bias": t(hidden),
                   p + "self_attn.k_proj.weight": t(kv, hidden), p + "self_attn.k_proj.bias": t(kv),
                   p + "self_attn.v_proj.weight": t(kv, hidden), p + "self_attn.v_proj.bias": t(kv),
                   p + "self_attn.o_proj.weight": t(hidden, hidden), p + "mlp.gate_proj.weight": t(inter, hidden),
                   p + "mlp.up_proj.weight": t(inter, hidden), p + "mlp.down_proj.weight": t(hidden, inter),
                   p + "input_layernorm.weight": t(hidden), p + "post_attention_layernorm.weight": t(hidden)})
    sd["model.norm.weight"] = t(hidden)
    sd["lm_head.weight"] = t(vocab, hidden)
    return sd


def fused_params(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for name, t in sd.items():
        for part, fused, group in (("q_proj", "qkv_proj", "qkv"), ("gate_proj", "gate_up_proj", "gu")):
            if f".{part}." in name:
                siblings = ["q_proj", "k_proj", "v_proj"] if group == "qkv" else ["gate_proj", "up_proj"]
                rows = sum(sd[name.replace(part, s)].shape[0] for s in siblings)
                out[name.replace(part, fused)] = torch.empty((rows, *t.shape[1:]), dtype=t.dtype)
                break
        else:
            if not any(f".{s}." in name for s in ("k_proj", "v_proj", "up_proj")):
                out[name] = torch.empty_like(t)
    return out


def load(params: dict[str, torch.Tensor], weights) -> None:
    """An engine loader: stacked parts copied into their rows, the rest whole."""
    offsets: dict[str, int] = {}
    with torch.no_grad():
        for name, t in weights:
            for part, fused in (("q_proj", "qkv_proj"), ("k_proj", "qkv_proj"), ("v_proj", "qkv_proj"),
                                ("gate_proj", "gate_up_proj"), ("up_proj", "gate_up_proj")):
                if f".{part}." in name:
                    dest_name = name.replace(part, fused)
                    at = offsets.get(dest_name, 0)
                    params[dest_name].narrow(0, at, t.shape[0]).copy_(t)
                    offsets[dest_name] = at + t.shape[0]
                    break
            else:
                params[name].copy_(t)


def rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


def memory_child(mode: str, hidden: int, layers: int, bucket: str) -> None:
    sd = checkpoint(hidden, layers)
    params = fused_params(sd)
    for t in params.values():
        t.fill_(0)  # resident before the measurement: an engine's parameters are
    with tensorhub.Hub(chunk="1MiB") as hub:
        tht.publish_module(hub, "m", 1, sd)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        before = rss_kib("VmRSS")
        if mode == "stream":
            load(params, tht.iter_weights(hub, "m", 1, bucket_bytes=bucket))
        else:
            r = hub.pull("m", 1, relay=False)
            load(params, ((n, torch.from_numpy(a).view(sd[n].dtype) if sd[n].dtype == torch.bfloat16
                           else torch.from_numpy(a)) for n, a in r.tensors.items()))
        peak = rss_kib("VmHWM")
        assert all(torch.equal(params[n], sd[n]) for n in params if n in sd)
        hub.unpublish("m", 1)
    print(json.dumps({"extra_mib": (peak - before) / 1024}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bucket", default="64MiB")
    ap.add_argument("--memory-child", choices=["stream", "full"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.memory_child:
        memory_child(a.memory_child, a.hidden, a.layers, a.bucket)
        return 0
    sd = checkpoint(a.hidden, a.layers)
    total = sum(t.numel() * t.element_size() for t in sd.values())
    plain = {n: torch.empty_like(t) for n, t in sd.items()}
    fused = fused_params(sd)
    times: dict[str, list[float]] = {"same-name pull": [], "fused-layout pull": []}
    with tensorhub.Hub(chunk="1MiB") as hub:
        tht.publish_module(hub, "m", 1, sd)
        for i in range(-1, a.rounds):  # -1: warm-up (page faults in the destinations)
            order = ["same-name pull", "fused-layout pull"][:: 1 if i % 2 == 0 else -1]
            for what in order:
                t0 = time.perf_counter()
                if what == "same-name pull":
                    tht.pull_into_module(hub, "m", plain, 1, relay=False)
                else:
                    tht.pull_into_module(hub, "m", fused, 1, layout="qwen2", relay=False)
                if i >= 0:
                    times[what].append(time.perf_counter() - t0)
        assert all(torch.equal(plain[n], sd[n]) for n in sd)
        hub.unpublish("m", 1)
    med = {k: statistics.median(v) for k, v in times.items()}
    mem = {}
    for mode in ("stream", "full"):
        out = subprocess.run([sys.executable, __file__, "--memory-child", mode, "--hidden", str(a.hidden), "--layers",
                              str(a.layers), "--bucket", a.bucket], check=True, capture_output=True, text=True,
                             env=dict(os.environ))
        mem[mode] = json.loads(out.stdout.strip().splitlines()[-1])["extra_mib"]
    print(f"checkpoint {total / 2**20:.0f} MiB bf16, {len(sd)} tensors; medians of {a.rounds} interleaved rounds")
    print(f"{'pull':<22}{'median s':>10}{'GB/s':>8}")
    for k, v in med.items():
        print(f"{k:<22}{v:>10.4f}{total / v / 1e9:>8.2f}")
    ratio = med["same-name pull"] / med["fused-layout pull"]
    print(f"fused / same-name speed: {ratio:.2f} x")
    print(f"rollout peak RSS beyond its parameters: iter_weights({a.bucket}) {mem['stream']:.0f} MiB, "
          f"full state_dict first {mem['full']:.0f} MiB")
    print(json.dumps({"bench": "layout_pull", "bytes": total, "rounds": a.rounds, "median_s": med,
                      "fused_over_same_name_speed": round(ratio, 3), "bucket": a.bucket,
                      "stream_extra_rss_mib": round(mem["stream"], 1), "full_extra_rss_mib": round(mem["full"], 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
