"""The PyTorch side of bench/step/run.py: the same training step as the
exported spmd program, from the same initial values (the export's
arg<i>.npy and metadata), timed step by step.

  torch_step.py eager DIR MODEL WARMUP STEPS        (one process)
  torch_step.py gloo  DIR MODEL WARMUP STEPS [TP]   (TP processes, gloo)

MODEL is `mlp` (models.MLP) or `block` (models.Block). `eager` runs the
unpartitioned module; `gloo` runs hand-written Megatron tensor parallelism
(column-parallel q/k/v/fc1, row-parallel o/fc2, an explicit all_reduce after
each row-parallel layer and its conjugate in the backward) on TP processes
initialised through a FileStore on this machine. Both use
torch.optim.AdamW(foreach=False) with the export's hyper-parameters (read
from DIR/hparams.json) and F.mse_loss. Prints one JSON line: the loss of
every step, the wall time (ms) of every timed step (rank 0's for gloo) and
its CPU time (process time, summed over the ranks for gloo).
Thread counts come from the environment (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS; torch.set_num_threads follows OMP_NUM_THREADS).
"""
import json
import math
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "frontend", "Inputs"))
import models  # noqa: E402  (the frontend test models: MLP, Block)


def load(folder):
    meta = json.load(open(os.path.join(folder, "meta.json")))
    hp = json.load(open(os.path.join(folder, "hparams.json")))
    values = {}
    for i, a in enumerate(meta["args"]):
        values[a["name"]] = torch.from_numpy(
            np.load(os.path.join(folder, "in", f"arg{i}.npy")))
    return hp, values


def build_eager(hp, values):
    if hp["model"] == "mlp":
        m = models.MLP(**hp["model_args"])
    else:
        m = models.Block(**hp["model_args"])
    names = set(m.state_dict())
    m.load_state_dict({k: v for k, v in values.items() if k in names},
                      strict=True)
    return m


# Megatron's f and g (Shoeybi et al. 2019): f is the identity forward and an
# all_reduce of the input gradient backward; g the converse.
class CopyToTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g)
        return g


class ReduceFromTP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x = x.contiguous().clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def shard(t, dim, rank, tp):
    return nn.Parameter(t.chunk(tp, dim)[rank].contiguous().clone())


class TPMLP(nn.Module):
    """models.MLP: fc1 column-parallel (weight rows, bias), fc2 row-parallel."""

    def __init__(self, v, rank, tp):
        super().__init__()
        self.w1 = shard(v["fc1.weight"], 0, rank, tp)
        self.b1 = shard(v["fc1.bias"], 0, rank, tp)
        self.w2 = shard(v["fc2.weight"], 1, rank, tp)
        self.b2 = nn.Parameter(v["fc2.bias"].clone())

    def forward(self, x):
        h = torch.relu(F.linear(CopyToTP.apply(x), self.w1, self.b1))
        return ReduceFromTP.apply(F.linear(h, self.w2)) + self.b2


class TPBlock(nn.Module):
    """models.Block: LayerNorms replicated, q/k/v and w1 column-parallel
    (heads / hidden units split), wo and w2 row-parallel."""

    def __init__(self, v, heads, rank, tp):
        super().__init__()
        dim = v["attention.wq.weight"].shape[1]
        self.local_heads = heads // tp
        self.n1 = nn.LayerNorm(dim)
        self.n2 = nn.LayerNorm(dim)
        with torch.no_grad():
            self.n1.weight.copy_(v["attention_norm.weight"])
            self.n1.bias.copy_(v["attention_norm.bias"])
            self.n2.weight.copy_(v["ffn_norm.weight"])
            self.n2.bias.copy_(v["ffn_norm.bias"])
        self.wq = shard(v["attention.wq.weight"], 0, rank, tp)
        self.wk = shard(v["attention.wk.weight"], 0, rank, tp)
        self.wv = shard(v["attention.wv.weight"], 0, rank, tp)
        self.wo = shard(v["attention.wo.weight"], 1, rank, tp)
        self.w1 = shard(v["feed_forward.w1.weight"], 0, rank, tp)
        self.b1 = shard(v["feed_forward.w1.bias"], 0, rank, tp)
        self.w2 = shard(v["feed_forward.w2.weight"], 1, rank, tp)
        self.b2 = nn.Parameter(v["feed_forward.w2.bias"].clone())

    def attention(self, x):
        b, t, _ = x.shape
        x = CopyToTP.apply(x)
        q = F.linear(x, self.wq).view(b, t, self.local_heads, -1).transpose(1, 2)
        k = F.linear(x, self.wk).view(b, t, self.local_heads, -1).transpose(1, 2)
        v = F.linear(x, self.wv).view(b, t, self.local_heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, -1)
        return ReduceFromTP.apply(F.linear(y, self.wo))

    def ffn(self, x):
        h = F.gelu(F.linear(CopyToTP.apply(x), self.w1, self.b1))
        return ReduceFromTP.apply(F.linear(h, self.w2)) + self.b2

    def forward(self, x):
        x = x + self.attention(self.n1(x))
        return x + self.ffn(self.n2(x))


def train(model, x, target, hp, warmup, steps):
    opt = torch.optim.AdamW(model.parameters(), lr=hp["lr"],
                            betas=tuple(hp["betas"]), eps=hp["eps"],
                            weight_decay=hp["weight_decay"], foreach=False)
    losses, times, cpu = [], [], []
    for s in range(warmup + steps):
        if dist.is_initialized():
            dist.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        t1, c1 = time.perf_counter(), time.process_time()
        losses.append(loss.item())
        if s >= warmup:
            times.append((t1 - t0) * 1e3)
            cpu.append((c1 - c0) * 1e3)
    return losses, times, cpu


def gloo_worker(rank, tp, store_path, folder, warmup, steps, out_path):
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    dist.init_process_group("gloo", init_method=f"file://{store_path}",
                            rank=rank, world_size=tp)
    hp, v = load(folder)
    if hp["model"] == "mlp":
        model = TPMLP(v, rank, tp)
    else:
        model = TPBlock(v, hp["model_args"]["heads"], rank, tp)
    losses, times, cpu = train(model, v["batch.0"], v["batch.1"], hp, warmup,
                               steps)
    with open(f"{out_path}.{rank}", "w") as f:
        json.dump({"losses": losses, "times_ms": times, "cpu_ms": cpu,
                   "threads": torch.get_num_threads()}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    mode, folder, model_name = sys.argv[1], sys.argv[2], sys.argv[3]
    warmup, steps = int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if mode == "eager":
        hp, v = load(folder)
        assert hp["model"] == model_name
        model = build_eager(hp, v)
        losses, times, cpu = train(model, v["batch.0"], v["batch.1"], hp,
                                   warmup, steps)
        print(json.dumps({"losses": losses, "times_ms": times, "cpu_ms": cpu,
                          "threads": torch.get_num_threads()}))
        return
    tp = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    tmp = tempfile.mkdtemp()
    store, out = os.path.join(tmp, "store"), os.path.join(tmp, "out.json")
    ctx = torch.multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=gloo_worker,
                         args=(r, tp, store, folder, warmup, steps, out))
             for r in range(tp)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit(f"torch_step.py: a gloo rank failed: "
                 f"{[p.exitcode for p in procs]}")
    # Rank 0's losses and step times; CPU time summed over the ranks.
    ranks = [json.load(open(f"{out}.{r}")) for r in range(tp)]
    res = ranks[0]
    res["cpu_ms"] = [sum(c) for c in zip(*(r["cpu_ms"] for r in ranks))]
    print(json.dumps(res))


if __name__ == "__main__":
    main()
