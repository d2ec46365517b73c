"""Toy models for the frontend tests (and the CLI: models.py:MLP etc.)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Two linear layers; hidden=30 makes sizes that do not divide 4."""

    def __init__(self, dim=16, hidden=32, out=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        # -1 for the heads: under tensor parallelism a rank sees a part.
        q = self.wq(x).view(b, t, self.heads, -1).transpose(1, 2)
        k = self.wk(x).view(b, t, self.heads, -1).transpose(1, 2)
        v = self.wv(x).view(b, t, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, -1)
        return self.wo(y)


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w1 = nn.Linear(dim, 4 * dim)
        self.w2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.attention_norm = nn.LayerNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn_norm = nn.LayerNorm(dim)
        self.feed_forward = FeedForward(dim)

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class GPT(nn.Module):
    """GPT-style: learned positions, LayerNorm, GELU MLP with biases."""

    def __init__(self, vocab=128, dim=64, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq, dim) * 0.02)
        self.layers = nn.ModuleList([Block(dim, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.output(self.norm(x))


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = SwiGLU(dim, hidden)

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """Llama-style: RMSNorm, SwiGLU, no biases (no rotary embedding)."""

    def __init__(self, vocab=128, dim=64, heads=4, layers=2, hidden=96):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(
            [LlamaBlock(dim, heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.tok_embeddings(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.output(self.norm(x))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def example_batch(model, batch_shape):
    """For the CLI: token ids for the language models, features for MLP."""
    if isinstance(model, MLP):
        n = batch_shape[0]
        return (torch.randn(n, model.fc1.in_features),
                torch.randint(0, model.fc2.out_features, (n,)))
    vocab = model.tok_embeddings.num_embeddings
    return (torch.randint(0, vocab, tuple(batch_shape)),
            torch.randint(0, vocab, tuple(batch_shape)))


def loss_fn(output, target):
    if output.dim() == 3:
        return lm_loss(output, target)
    return F.cross_entropy(output, target)
