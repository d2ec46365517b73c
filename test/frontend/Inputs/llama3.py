"""A Llama-3 style transformer written as users write one (the Meta
reference / torchtitan way), with each construct selectable so that one file
covers the common variants:

  rope: "strided"     x[..., ::2] / x[..., 1::2], torch.stack(...).flatten(-2)
        "rotate_half" Hugging Face's cat-based rotate_half
        "complex"     torch.view_as_complex / torch.polar (torchtitan)
  gqa:  "repeat_interleave" | "expand" (expand + reshape)
  attn: "sdpa" (F.scaled_dot_product_attention, is_causal) |
        "sdpa_mask" (with a boolean mask buffer made by torch.tril) |
        "manual" (triu + masked_fill + softmax)
  qkv:  "separate" | "fused" (one projection split with .split)
  norm: "rms" | "layer"; act: "swiglu" | "gelu_tanh"
  tied: output projection shares the embedding table

RoPE tables are non-persistent buffers, the causal mask a persistent one.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x32 = x.float()
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


def _rope_tables(head_dim, seq, theta=500000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(seq).float(), freqs)  # [seq, hd/2]
    return angles


def rope_strided(x, cos, sin):
    # x: [b, t, h, hd]; cos/sin: [t, hd/2]
    x1, x2 = x[..., ::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    out = torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)
    return out.flatten(-2).type_as(x)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_rotate_half(x, cos, sin):
    c = torch.cat((cos, cos), dim=-1)[None, :, None, :]
    s = torch.cat((sin, sin), dim=-1)[None, :, None, :]
    return (x * c + rotate_half(x) * s).type_as(x)


def rope_complex(x, freqs_cis):
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    fc = freqs_cis[None, :, None, :]
    return torch.view_as_real(xc * fc).flatten(3).type_as(x)


class Attention(nn.Module):
    def __init__(self, dim, heads, kv_heads, gqa, attn, qkv):
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        self.head_dim = dim // heads
        self.gqa, self.attn, self.qkv = gqa, attn, qkv
        kv_dim = kv_heads * self.head_dim
        if qkv == "fused":
            self.wqkv = nn.Linear(dim, dim + 2 * kv_dim, bias=False)
        else:
            self.wq = nn.Linear(dim, dim, bias=False)
            self.wk = nn.Linear(dim, kv_dim, bias=False)
            self.wv = nn.Linear(dim, kv_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def _repeat_kv(self, x):
        n_rep = self.heads // self.kv_heads
        if n_rep == 1:
            return x
        if self.gqa == "repeat_interleave":
            return torch.repeat_interleave(x, n_rep, dim=2)
        b, t, kvh, hd = x.shape
        return x[:, :, :, None, :].expand(b, t, kvh, n_rep, hd).reshape(
            b, t, kvh * n_rep, hd)

    def forward(self, x, rope, mask):
        b, t, _ = x.shape
        if self.qkv == "fused":
            kv_dim = self.kv_heads * self.head_dim
            q, k, v = self.wqkv(x).split([x.shape[-1], kv_dim, kv_dim], dim=-1)
        else:
            q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q = q.view(b, t, -1, self.head_dim)
        k = k.view(b, t, -1, self.head_dim)
        v = v.view(b, t, -1, self.head_dim)
        q, k = rope(q), rope(k)
        k, v = self._repeat_kv(k), self._repeat_kv(v)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if self.attn == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.attn == "sdpa_mask":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:t, :t])
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
            causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
            scores = scores + causal
            y = F.softmax(scores.float(), dim=-1).type_as(q) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, -1)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, act):
        super().__init__()
        self.act = act
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        if act == "swiglu":
            self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        if self.act == "swiglu":
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.gelu(self.w1(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, norm, **kw):
        super().__init__()
        Norm = RMSNorm if norm == "rms" else nn.LayerNorm
        self.attention_norm = Norm(dim)
        self.attention = Attention(dim, heads, kv_heads, kw["gqa"], kw["attn"],
                                   kw["qkv"])
        self.ffn_norm = Norm(dim)
        self.feed_forward = FeedForward(dim, hidden, kw["act"])

    def forward(self, x, rope, mask):
        h = x + self.attention(self.attention_norm(x), rope, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama3(nn.Module):
    def __init__(self, vocab=128, dim=64, heads=4, kv_heads=2, layers=2,
                 hidden=None, seq=16, rope="strided", gqa="repeat_interleave",
                 attn="sdpa", qkv="separate", norm="rms", act="swiglu",
                 tied=False):
        super().__init__()
        hidden = hidden or 4 * dim * 2 // 3
        self.rope_kind = rope
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            Block(dim, heads, kv_heads, hidden, norm, gqa=gqa, attn=attn,
                  qkv=qkv, act=act) for _ in range(layers))
        self.norm = RMSNorm(dim) if norm == "rms" else nn.LayerNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        if tied:
            self.output.weight = self.tok_embeddings.weight
        angles = _rope_tables(dim // heads, seq)
        if rope == "complex":
            # torch.polar makes the complex table; the buffer keeps it as
            # (real, imag) pairs and forward rebuilds the complex view.
            self.register_buffer(
                "freqs_cis", torch.view_as_real(
                    torch.polar(torch.ones_like(angles), angles)),
                persistent=False)
        else:
            self.register_buffer("cos", angles.cos(), persistent=False)
            self.register_buffer("sin", angles.sin(), persistent=False)
        self.register_buffer("mask", torch.ones(seq, seq, dtype=torch.bool).tril())

    def _rope(self, t):
        if self.rope_kind == "complex":
            fc = torch.view_as_complex(self.freqs_cis[:t])
            return lambda x: rope_complex(x, fc)
        cos, sin = self.cos[:t], self.sin[:t]
        if self.rope_kind == "strided":
            return lambda x: rope_strided(x, cos, sin)
        return lambda x: rope_rotate_half(x, cos, sin)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        rope = self._rope(tokens.shape[1])
        for layer in self.layers:
            h = layer(h, rope, self.mask)
        return self.output(self.norm(h))


def example_batch(model, batch_shape):
    b, t = batch_shape if batch_shape else (4, 16)
    vocab = model.tok_embeddings.num_embeddings
    tokens = torch.randint(0, vocab, (b, t))
    targets = torch.randint(0, vocab, (b, t))
    targets[0, :3] = -100  # padding: ignored by the loss
    return tokens, targets


def loss_fn(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1),
                           ignore_index=-100, label_smoothing=0.1)
