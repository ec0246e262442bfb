"""A rollout-engine style Qwen2 / Llama (hf_rollout.py and tests/python/test_torch.py): the
parameters vLLM and SGLang keep on one rank (``self_attn.qkv_proj`` = [q; k; v] with its bias,
``mlp.gate_up_proj`` = [gate; up], the embedding tied to ``lm_head`` when the config says so), one
GEMM per fused projection, a forward that follows Hugging Face's eager one step by step (the same
norms, rotary embedding and softmax in float32, so equal weights give equal logits), and a
``load_weights(iterable of (name, tensor))`` that works like those engines' loaders."""

from __future__ import annotations

import torch
from torch import nn
from transformers.models.qwen2.modeling_qwen2 import Qwen2RMSNorm, Qwen2RotaryEmbedding, apply_rotary_pos_emb


class Attention(nn.Module):
    def __init__(self, cfg, bias: bool) -> None:
        super().__init__()
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.heads, self.kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
        self.q_size, self.kv_size = self.heads * self.head_dim, self.kv_heads * self.head_dim
        self.qkv_proj = nn.Linear(cfg.hidden_size, self.q_size + 2 * self.kv_size, bias=bias)
        self.o_proj = nn.Linear(self.q_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv_proj(x).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        q = q.reshape(b, t, -1, self.head_dim).transpose(1, 2)
        k = k.reshape(b, t, -1, self.head_dim).transpose(1, 2)
        v = v.reshape(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        w = torch.matmul(q, k.transpose(2, 3)) * self.head_dim**-0.5 + mask
        w = nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, t, -1).contiguous()
        return self.o_proj(out)


class Mlp(nn.Module):
    def __init__(self, cfg) -> None:
        super().__init__()
        self.inter = cfg.intermediate_size
        self.gate_up_proj = nn.Linear(cfg.hidden_size, 2 * cfg.intermediate_size, bias=False)
        self.down_proj = nn.Linear(cfg.intermediate_size, cfg.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj(x).split([self.inter, self.inter], dim=-1)
        return self.down_proj(nn.functional.silu(gate) * up)


class Layer(nn.Module):
    def __init__(self, cfg, bias: bool) -> None:
        super().__init__()
        self.self_attn = Attention(cfg, bias)
        self.mlp = Mlp(cfg)
        self.input_layernorm = Qwen2RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)
        self.post_attention_layernorm = Qwen2RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, cfg, bias: bool) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(Layer(cfg, bias) for _ in range(cfg.num_hidden_layers))
        self.norm = Qwen2RMSNorm(cfg.hidden_size, eps=cfg.rms_norm_eps)


class FusedCausalLM(nn.Module):
    """Qwen2 (``bias=True``: q/k/v biases) or Llama (``bias=False``) in fused engine layout."""

    def __init__(self, cfg, bias: bool) -> None:
        super().__init__()
        self.model = Body(cfg, bias)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.rotary = Qwen2RotaryEmbedding(cfg)  # no parameters: inv_freq is a non-persistent buffer

    def load_weights(self, weights) -> list[str]:
        """What vLLM's / SGLang's ``load_weights`` does with Hugging Face (name, tensor) pairs:
        stacked parameters get each part copied into its rows (their ``stacked_params_mapping``),
        the rest are copied whole, a tied ``lm_head`` is skipped. Returns the names loaded."""
        params = dict(self.named_parameters(remove_duplicate=False))
        attn = self.model.layers[0].self_attn
        inter = self.model.layers[0].mlp.inter
        stacked = [("qkv_proj", "q_proj", 0, attn.q_size), ("qkv_proj", "k_proj", attn.q_size, attn.kv_size),
                   ("qkv_proj", "v_proj", attn.q_size + attn.kv_size, attn.kv_size),
                   ("gate_up_proj", "gate_proj", 0, inter), ("gate_up_proj", "up_proj", inter, inter)]
        loaded = []
        with torch.no_grad():
            for name, t in weights:
                if name == "lm_head.weight" and self.lm_head.weight is self.model.embed_tokens.weight:
                    continue
                for fused, part, start, size in stacked:
                    if f".{part}." in name:
                        params[name.replace(part, fused)].narrow(0, start, size).copy_(t)
                        break
                else:
                    params[name].copy_(t)
                loaded.append(name)
        return loaded

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.model.embed_tokens(input_ids)
        t = input_ids.shape[1]
        positions = torch.arange(t).unsqueeze(0)
        cos, sin = self.rotary(x, positions)
        mask = torch.full((t, t), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.model.norm(x))
