"""spmd_torch.compile under `mpirun -np 4`: each process runs its rank of
the toy GPT's training step (dp=2 x tp=2, TP plan, a batch of 5: uneven on
dp) over MPI; every process passes the same global batch. Checks the
losses against PyTorch's own training (computed in every process), the
gathered state_dict, a checkpoint written by the process of rank 0 and
read back by all, and the per-process trace files.

  mpirun -np 4 python compile_mpi.py WORKDIR STEPS [fail]

With `fail`, the process of rank 2 passes a batch of the wrong shape on
the second call: its error must stop the whole job with its message.
"""
import copy
import os
import sys

import torch

import spmd_torch
from spmd_torch import ColwiseParallel, RowwiseParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import worst_vs_exact  # noqa: E402
from models import GPT, lm_loss  # noqa: E402

work, steps = sys.argv[1], int(sys.argv[2])
fail = len(sys.argv) > 3 and sys.argv[3] == "fail"
me = int(os.environ["OMPI_COMM_WORLD_RANK"])
VOCAB, SEQ, BATCH = 61, 8, 5
PLAN = {f"layers.*.attention.{w}": ColwiseParallel() for w in ("wq", "wk", "wv")}
PLAN.update({"layers.*.attention.wo": RowwiseParallel(),
             "layers.*.feed_forward.w1": ColwiseParallel(),
             "layers.*.feed_forward.w2": RowwiseParallel()})


def step(model, optimizer, tokens, targets):
    loss = lm_loss(model(tokens), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def say(text):
    if me == 0:
        print(text, flush=True)


torch.manual_seed(0)
model = GPT(vocab=VOCAB, dim=32, heads=4, layers=2, seq=SEQ)
ref = copy.deepcopy(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2)
ref64 = copy.deepcopy(model).double()
ref64_opt = torch.optim.AdamW(ref64.parameters(), lr=1e-2)
train = spmd_torch.compile(step, mesh="dp=2,tp=2", plan=PLAN, trace=True,
                           timeout=20)
g = torch.Generator().manual_seed(1)
for s in range(steps):
    x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    y = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
    if fail and s == 1 and me == 2:
        raise ValueError("rank 2 fails before its second step")
    loss = float(train(model, opt, x, y))
    want = step(ref, ref_opt, x, y).item()
    step(ref64, ref64_opt, x, y)
    if abs(loss - want) > 2e-4 * max(1.0, abs(want)):
        raise AssertionError(f"step {s}: loss {loss}, PyTorch {want}")
say(f"mpi: losses equal PyTorch's for {steps} steps on "
    f"{len(train.memory())} rank per process")
sd = train.state_dict()
ratio, name, err, torch_err = worst_vs_exact(sd, ref.state_dict(),
                                             ref64.state_dict())
assert ratio <= 1, (name, err, torch_err)
say(f"mpi: gathered state_dict equals PyTorch's (max abs err {err:.1e} "
    f"from float64)")
train.save(os.path.join(work, "ckpt"))
resumed = spmd_torch.compile(step, mesh="dp=2,tp=2", plan=PLAN)
resumed.load(os.path.join(work, "ckpt"))
x = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
y = torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)
a = float(train(model, opt, x, y))
model2 = GPT(vocab=VOCAB, dim=32, heads=4, layers=2, seq=SEQ)
opt2 = torch.optim.AdamW(model2.parameters(), lr=1e-2)
b = float(resumed(model2, opt2, x, y))
assert a == b, (a, b)
say("mpi: checkpoint written by rank 0's process, resumed by all: same loss")
train.write_trace(os.path.join(work, "trace.json"))
say(f"mpi: rank {me} trace written")
