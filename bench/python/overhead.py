"""The Python path's cost per call over spmd-run's on the same plan.

    .venv/bin/python bench/python/overhead.py [--steps N] [--reps R]

1. The same plan (examples/megatron_mlp_train.mlir: 4 ranks, a Megatron
   MLP training step, 5 GEMMs, 2 all-reduces) run N steps by `spmd-run
   --steps N` (its own ms/step: ranks as threads started once, results fed
   back in place) and N calls of the runtime module's Session.run(feed)
   from Python (the ranks' threads kept by the session, rank 0 on the
   caller's thread). The difference is the Python path's overhead per
   call: the call, releasing the GIL, waking the ranks and waiting for
   them.
2. A compiled training step (spmd_torch.compile of the toy MLP, SGD, on
   dp=2) called from Python: per call, the whole path (batch in, one step,
   loss out as a tensor) against Session.run alone on its program — the
   difference is the copies (the batch scattered to the ranks, the loss
   assembled) and the wrapper's Python.

Medians over R repetitions; the machine is shared, so the ratio and the
difference are what to read.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "frontend", "torch"))
sys.path.insert(0, os.path.join(root, "test", "frontend", "Inputs"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import spmd_torch  # noqa: E402
from spmd_torch._native import runtime  # noqa: E402


def spmd_run_us(plan, steps):
    build = os.environ.get("SPMD_BUILD_DIR") or os.path.join(root, "build")
    out = subprocess.run([os.path.join(build, "bin", "spmd-run"), plan,
                          "--seed", "1", "--steps", str(steps)],
                         capture_output=True, text=True, check=True).stderr
    return float(re.search(r"([0-9.]+) ms/step", out).group(1)) * 1e3


def session_us(session, feed, steps):
    t = time.perf_counter()
    for _ in range(steps):
        session.run(feed)
    return (time.perf_counter() - t) / steps * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rt = runtime()

    plan = os.path.join(root, "examples", "megatron_mlp_train.mlir")
    prog = rt.Program(plan)
    session = rt.Session(prog)
    rng = np.random.default_rng(0)
    for i, a in enumerate(prog.args):
        session.set_arg(i, rng.standard_normal(a["shape"]).astype(np.float32))
    session_us(session, prog.feedable, 100)  # warm up
    cli = [spmd_run_us(plan, args.steps) for _ in range(args.reps)]
    py = [session_us(session, prog.feedable, args.steps)
          for _ in range(args.reps)]
    c, p = statistics.median(cli), statistics.median(py)
    print(f"megatron_mlp_train (4 ranks): spmd-run {c:.1f} us/step, "
          f"Session.run {p:.1f} us/call: overhead {p - c:.1f} us/call "
          f"(ratio {p / c:.2f})")

    from models import MLP
    torch.manual_seed(0)
    model = MLP()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(model, optimizer, x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    train = spmd_torch.compile(step, mesh="dp=2")
    x, y = torch.randn(8, 16), torch.randint(0, 8, (8,))
    train(model, opt, x, y)
    n = args.steps // 2

    def calls():
        t = time.perf_counter()
        for _ in range(n):
            train(model, opt, x, y)
        return (time.perf_counter() - t) / n * 1e6
    full = statistics.median(calls() for _ in range(args.reps))
    s = train.current.session
    bare = statistics.median(session_us(s, train.current.feed, n)
                             for _ in range(args.reps))
    print(f"compiled MLP step (dp=2): {full:.1f} us/call, of which "
          f"Session.run {bare:.1f} us: batch in + loss out + wrapper "
          f"{full - bare:.1f} us/call")


if __name__ == "__main__":
    main()
