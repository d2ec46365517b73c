"""spmd_torch.compile end to end, against PyTorch's own training.

  compile_train.py WORKDIR MESH STEPS

Trains the toy GPT (TP plan on the mesh's tp axis, data parallel on dp; a
batch of 5 sequences, uneven on dp=2) with `@spmd_torch.compile` for STEPS
steps and the same model with PyTorch for STEPS steps; checks every loss and
the final parameters (state_dict). Then checks: a checkpoint saved at step
STEPS/2 and loaded into a fresh model resumes with the same losses, bit for
bit; sync() gives the model and the torch optimizer the ranks' state, from
which eager training goes on; a call with a shorter sequence recompiles and
carries the state; the trace of every step is valid; the module's forward
(CompiledModule) equals PyTorch's. Prints one line per check, exits 1 on the
first failure.
"""
import copy
import json
import os
import subprocess
import sys

import torch

import spmd_torch
from spmd_torch import ColwiseParallel, RowwiseParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from accuracy import worst_vs_exact  # noqa: E402
from models import GPT, lm_loss  # noqa: E402

work, mesh, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(work, exist_ok=True)
torch.manual_seed(0)
VOCAB, SEQ, BATCH = 61, 8, 5
PLAN = {f"layers.*.attention.{w}": ColwiseParallel() for w in ("wq", "wk", "wv")}
PLAN.update({"layers.*.attention.wo": RowwiseParallel(),
             "layers.*.feed_forward.w1": ColwiseParallel(),
             "layers.*.feed_forward.w2": RowwiseParallel()})


def fresh(seed):
    torch.manual_seed(seed)
    model = GPT(vocab=VOCAB, dim=32, heads=4, layers=2, seq=SEQ)
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2,
                                    weight_decay=0.1)


def batches(n, seq=SEQ):
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, VOCAB, (BATCH, seq), generator=g),
             torch.randint(0, VOCAB, (BATCH, seq), generator=g))
            for _ in range(n)]


def step(model, optimizer, tokens, targets):
    loss = lm_loss(model(tokens), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def compiled(**kw):
    return spmd_torch.compile(step, mesh=mesh, plan=PLAN, **kw)


def close(a, b, tol=2e-4):
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


def fail(msg):
    print("FAILED:", msg)
    sys.exit(1)


data = batches(steps)

# 1. compiled vs PyTorch, loss by loss.
model, opt = fresh(0)
ref, ref_opt = copy.deepcopy(model), None
ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.1)
# The same training in float64: the exact answer both are judged against.
ref64 = copy.deepcopy(model).double()
ref64_opt = torch.optim.AdamW(ref64.parameters(), lr=1e-2, weight_decay=0.1)
train = compiled(trace=True)
losses, ref_losses = [], []
for i, (x, y) in enumerate(data):
    losses.append(float(train(model, opt, x, y)))
    ref_losses.append(float(step(ref, ref_opt, x, y)))
    step(ref64, ref64_opt, x, y)
    if i == steps // 2 - 1:
        train.save(os.path.join(work, "ckpt"))
bad = [i for i, (a, b) in enumerate(zip(losses, ref_losses)) if not close(a, b)]
if bad:
    fail(f"losses differ from PyTorch at steps {bad}: {losses} vs {ref_losses}")
print(f"losses equal PyTorch's for {steps} steps "
      f"({losses[0]:.4f} -> {losses[-1]:.4f})")
sd = train.state_dict()
if set(sd) != set(ref.state_dict()):
    fail(f"state_dict names {sorted(set(sd) ^ set(ref.state_dict()))}")
ratio, name, err, torch_err = worst_vs_exact(sd, ref.state_dict(),
                                             ref64.state_dict())
if ratio > 1:
    fail(f"{name} is {err:.2e} from float64 training, PyTorch's float32 "
         f"{torch_err:.2e}")
print(f"state_dict equals PyTorch's parameters (worst {name}: {err:.1e} "
      f"from float64, PyTorch {torch_err:.1e})")

# 2. the trace: every rank, every step of every call.
train.write_trace(os.path.join(work, "trace.json"))
with open(os.path.join(work, "plan.txt"), "w") as f:
    f.write(train.plan())
ranks = len(train.memory())
checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "tools", "spmd-run", "Inputs", "check_trace.py")
r = subprocess.run([sys.executable, checker, os.path.join(work, "trace.json"),
                    str(ranks), os.path.join(work, "plan.txt"), str(steps)],
                   capture_output=True, text=True)
if r.returncode != 0:
    fail("trace: " + r.stdout + r.stderr)
print(r.stdout.strip())
if "top kernel" not in train.profile():
    fail("profile names no kernel:\n" + train.profile())
print("profile names the top kernels")
mem = train.memory()
if not all(m["arena_bytes"] > 0 and m["argument_bytes"] > 0 for m in mem):
    fail(f"memory {mem}")
print(f"memory: {len(mem)} ranks, arena {mem[0]['arena_bytes']} B")

# 3. resume from the checkpoint in a fresh process state: same losses.
with open(os.path.join(work, "ckpt", "manifest.json")) as f:
    manifest = json.load(f)
names = {t["name"] for t in manifest["tensors"]}
if "step" not in names or "output.weight.exp_avg" not in names:
    fail(f"checkpoint lacks optimizer state: {sorted(names)[:8]}")
model2, opt2 = fresh(123)  # other weights: the checkpoint must replace them
resumed = compiled()
resumed.load(os.path.join(work, "ckpt"))
again = [float(resumed(model2, opt2, x, y)) for x, y in data[steps // 2:]]
if again != losses[steps // 2:]:
    fail(f"resumed losses {again} != {losses[steps // 2:]}")
print(f"resumed at step {steps // 2} from the checkpoint: identical losses")

# 4. sync(): the model and the torch optimizer take the ranks' state, and
#    eager training goes on from it as the compiled step would.
train.sync()
x, y = batches(steps + 1)[-1]
eager = float(step(model, opt, x, y))
ref_next = float(step(ref, ref_opt, x, y))
if not close(eager, ref_next):
    fail(f"eager step after sync() gives {eager}, PyTorch {ref_next}")
print("sync(): eager training goes on from the ranks' state")

# 5. a shorter sequence recompiles; the state moves to the new program.
short = batches(2, seq=SEQ - 3)
for x, y in short:
    a = float(resumed(model2, opt2, x, y))
    b = float(step(ref, ref_opt, x, y))
    # `resumed` is at PyTorch's state after `steps` steps; ref one ahead.
if len(resumed.programs) != 2:
    fail(f"{len(resumed.programs)} programs after a new shape")
m3, o3 = fresh(0)
r3 = copy.deepcopy(m3)
o3r = torch.optim.AdamW(r3.parameters(), lr=1e-2, weight_decay=0.1)
t3 = compiled()
for x, y in data[:2] + short + data[:1]:
    a, b = float(t3(m3, o3, x, y)), float(step(r3, o3r, x, y))
    if not close(a, b):
        fail(f"after recompiling: {a} vs PyTorch {b}")
print(f"new shapes recompile ({len(t3.programs)} programs), losses equal "
      "PyTorch's")

# 6. a module's forward.
m4, _ = fresh(0)
m4.eval()
fwd = spmd_torch.compile(m4, mesh=mesh, plan=PLAN)
x = data[0][0]
out, want = fwd(x), m4(x)
err = (out - want).abs().max().item()
if out.shape != want.shape or err > 1e-4:
    fail(f"forward differs: {out.shape} vs {want.shape}, {err}")
print(f"compiled forward equals PyTorch's (max abs err {err:.1e})")
