"""Train a language model from Python with spmd_torch.compile on simulated
ranks, next to PyTorch's own training of the same model, and resume from a
checkpoint half way.

    .venv/bin/python examples/train_gpt.py                 # toy GPT, dp=2 x tp=2
    .venv/bin/python examples/train_gpt.py --model llama   # Hugging Face Llama
    .venv/bin/python examples/train_gpt.py --trace /tmp/gpt.json  # Perfetto

(PYTHONPATH is set by the script itself; the runtime module comes from
build/python, or SPMD_BUILD_DIR.) Prints the two loss curves every tenth
step, the largest difference, whether the resumed run repeats the losses
bit for bit, and where the time of a step went. Exits 1 when the curves
differ beyond float tolerance or the resumed run differs at all.
"""
import argparse
import copy
import os
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
sys.path.insert(0, os.path.join(root, "frontend", "torch"))
# The models of the frontend's tests: the toy GPT, and small Hugging Face
# configs with random weights (nothing is downloaded).
sys.path.insert(0, os.path.join(root, "test", "frontend", "Inputs"))

import torch  # noqa: E402

import spmd_torch  # noqa: E402
from spmd_torch import ColwiseParallel, RowwiseParallel  # noqa: E402

GPT_PLAN = {f"layers.*.attention.{w}": ColwiseParallel()
            for w in ("wq", "wk", "wv")}
GPT_PLAN.update({"layers.*.attention.wo": RowwiseParallel(),
                 "layers.*.feed_forward.w1": ColwiseParallel(),
                 "layers.*.feed_forward.w2": RowwiseParallel()})


def gpt_step(model, optimizer, tokens, targets):
    from models import lm_loss
    loss = lm_loss(model(tokens), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def hf_step(model, optimizer, input_ids, labels):
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


def build(kind, seed):
    torch.manual_seed(seed)
    if kind == "gpt":
        from models import GPT
        return GPT(vocab=97, dim=64, heads=4, layers=2, seq=16), 97, 16
    import hf_models
    return hf_models.llama(), hf_models.VOCAB, 16


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["gpt", "llama"], default="gpt")
    ap.add_argument("--mesh", default="dp=2,tp=2")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--resume-at", type=int, default=50)
    ap.add_argument("--batch", type=int, default=6)
    ap.add_argument("--trace", help="write a Chrome trace of every step here")
    args = ap.parse_args()

    model, vocab, seq = build(args.model, 0)
    ref = copy.deepcopy(model)
    plan = GPT_PLAN if args.model == "gpt" else "hf"
    if plan == "hf":
        plan = spmd_torch.plans.hf_tp_plan(model)
    step_fn = gpt_step if args.model == "gpt" else hf_step

    def adamw(m):
        return torch.optim.AdamW(m.parameters(), lr=3e-3, weight_decay=0.1)
    opt, ref_opt = adamw(model), adamw(ref)
    g = torch.Generator().manual_seed(1)
    # A small corpus: the model can learn it, so the curve goes down.
    corpus = torch.randint(0, vocab, (4 * args.batch, seq + 1), generator=g)
    batches = []
    for s in range(args.steps):
        rows = corpus[torch.randint(0, len(corpus), (args.batch,), generator=g)]
        batches.append((rows[:, :-1].contiguous(), rows[:, 1:].contiguous()))

    train = spmd_torch.compile(step_fn, mesh=args.mesh, plan=plan,
                               trace=bool(args.trace))
    ckpt = tempfile.mkdtemp(prefix="spmd_ckpt_")
    losses, ref_losses = [], []
    t_spmd = t_torch = 0.0
    for s, (x, y) in enumerate(batches):
        t = time.perf_counter()
        losses.append(float(train(model, opt, x, y)))
        t_spmd += time.perf_counter() - t if s else 0.0  # not the compile
        t = time.perf_counter()
        ref_losses.append(step_fn(ref, ref_opt, x, y).item())
        t_torch += time.perf_counter() - t if s else 0.0
        if s + 1 == args.resume_at:
            train.save(ckpt)
    print(f"{args.model} on {args.mesh}: {len(losses)} steps, AdamW")
    print("  step   spmd_torch.compile   PyTorch")
    for s in range(0, args.steps, 10):
        print(f"  {s:4d}   {losses[s]:18.6f}   {ref_losses[s]:.6f}")
    diff = max(abs(a - b) / max(1.0, abs(b))
               for a, b in zip(losses, ref_losses))
    print(f"largest relative difference: {diff:.2e}")
    print(f"time per step after the first: spmd {t_spmd / (args.steps - 1) * 1e3:.1f} ms,"
          f" PyTorch eager {t_torch / (args.steps - 1) * 1e3:.1f} ms")
    ok = diff <= 1e-3

    # Resume: a fresh model and optimizer, the checkpoint, the same batches.
    model2, _, _ = build(args.model, 7)
    resumed = spmd_torch.compile(step_fn, mesh=args.mesh, plan=plan)
    resumed.load(ckpt)
    opt2 = adamw(model2)
    again = [float(resumed(model2, opt2, x, y))
             for x, y in batches[args.resume_at:]]
    same = again == losses[args.resume_at:]
    print(f"resumed at step {args.resume_at}: "
          + ("identical losses" if same else "DIFFERENT losses"))
    ok = ok and same

    if args.trace:
        train.write_trace(args.trace)
        print(f"trace of {args.steps} steps on {len(train.memory())} ranks: "
              f"{args.trace}")
        print(train.profile())
    mem = train.memory()[0]
    print(f"rank 0 holds {mem['argument_bytes'] / 1024:.0f} KiB of state and "
          f"batch, {mem['arena_bytes'] / 1024:.0f} KiB of intermediates")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
