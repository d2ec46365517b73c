"""Models with dropout for the RNG tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Masks(nn.Module):
    """Dropout of the input (always on, as in training), then a pointwise
    op: the output shows the mask, exactly, whatever the layout."""

    def __init__(self, p=0.3):
        super().__init__()
        self.p = p
        self.scale = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return F.dropout(x, p=self.p, training=True) * self.scale


class DropMLP(nn.Module):
    """An MLP with nn.Dropout between its layers (train mode)."""

    def __init__(self, dim=16, hidden=30, out=8, p=0.2):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, out)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x))))


class Draws(nn.Module):
    """Every way model code draws random numbers, returned separately:
    in-place initialization (normal_, uniform_), randint, randn_like, rand,
    bernoulli of probabilities, exponential_ (Phi-MoE's router noise)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(()))

    def forward(self, x):
        n = torch.empty(64, 32).normal_(0.0, 0.1) * self.w
        u = torch.empty(64, 32).uniform_(-1.0, 1.0)
        r = torch.randint(2, 7, (64, 32))
        g = torch.randn_like(x)
        f = torch.rand(64, 32)
        b = torch.bernoulli(torch.full((64, 32), 0.25))
        e = torch.empty_like(x).exponential_(2.0)
        return n, u, r, g, f, b, e
