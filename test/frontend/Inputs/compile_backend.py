"""spmd_torch.compile on another backend: the toy GPT's training step (TP
plan on dp=2 x tp=2, uneven batch of 5) for 3 steps, against PyTorch's.

  compile_backend.py BACKEND
"""
import copy
import os
import sys

import torch

import spmd_torch
from spmd_torch import ColwiseParallel, RowwiseParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import GPT, lm_loss  # noqa: E402

backend = sys.argv[1]
PLAN = {"layers.*.attention.wq": ColwiseParallel(),
        "layers.*.attention.wk": ColwiseParallel(),
        "layers.*.attention.wv": ColwiseParallel(),
        "layers.*.attention.wo": RowwiseParallel()}


def step(model, optimizer, tokens, targets):
    loss = lm_loss(model(tokens), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


torch.manual_seed(0)
model = GPT(vocab=29, dim=16, heads=4, layers=1, seq=6)
ref = copy.deepcopy(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
train = spmd_torch.compile(step, mesh="dp=2,tp=2", plan=PLAN, backend=backend,
                           trace=True)
g = torch.Generator().manual_seed(1)
for s in range(3):
    x = torch.randint(0, 29, (5, 6), generator=g)
    y = torch.randint(0, 29, (5, 6), generator=g)
    a, b = float(train(model, opt, x, y)), step(ref, ref_opt, x, y).item()
    assert abs(a - b) <= 2e-4 * max(1.0, abs(b)), (s, a, b)
sd = train.state_dict()
err = max((sd[n] - t).abs().max().item() for n, t in ref.state_dict().items())
assert err < 1e-3, err
print(f"{backend}: 3 steps equal PyTorch's, state_dict max abs err {err:.1e}")
# The GPU executor's timeline: a track per stream per rank.
path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"trace_{os.getpid()}.json")
train.write_trace(path)
import json  # noqa: E402
with open(path) as f:
    events = json.load(f)["traceEvents"]
os.remove(path)
names = sorted(e["args"]["name"] for e in events if e["ph"] == "M")
print(f"{backend}: trace tracks {names[:2]}, {len(names)} in all")
