"""Issue #17's mid-size GPT training step: spmd-run against PyTorch eager in
the same run.

    .venv/bin/python bench/step/gpt_step.py [--bin build/bin] [--steps 3]

The toy GPT of test/frontend/Inputs/models.py at vocab 2048, dim 512, 8
heads, 4 layers, seq 128, batch 8, Adam: exported once per plan with
spmd_torch (unpartitioned; TP and TP+SP on tp=4 with the Megatron plans of
the frontend tests; DP on dp=4), each run by spmd-run for --steps steps
(its own ms/step: the mean, after compiling), and the same step in PyTorch
eager (this process, torch's default threads; median of 5 steps after one
warm-up). Prints a table of ms/step and the ratio to eager.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
inputs = os.path.join(root, "test", "frontend", "Inputs")
sys.path.insert(0, inputs)

MODEL_ARGS = '{"vocab": 2048, "dim": 512, "heads": 8, "layers": 4, "seq": 128}'
PLANS = [
    ("unpartitioned, 1 rank", []),
    ("TP, tp=4", ["--plan", f"{inputs}/tp_plan.py", "--mesh", "tp=4"]),
    ("TP+SP, tp=4", ["--plan", f"{inputs}/sp_plan.py", "--mesh", "tp=4"]),
    ("DP, dp=4", ["--mesh", "dp=4"]),
]


def eager_ms():
    import torch
    from models import GPT, lm_loss
    torch.manual_seed(0)
    model = GPT(vocab=2048, dim=512, heads=8, layers=4, seq=128)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randint(0, 2048, (8, 128))
    y = torch.randint(0, 2048, (8, 128))

    def step():
        loss = lm_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    step()
    times = []
    for _ in range(5):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return sorted(times)[2] * 1e3, torch.get_num_threads()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(root, "build", "bin"))
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="spmd_gpt_step_")
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "frontend", "torch"))
    rows = []
    for name, plan in PLANS:
        prog = os.path.join(work, re.sub(r"\W+", "_", name) + ".mlir")
        subprocess.run([sys.executable, "-m", "spmd_torch", "export",
                        f"{inputs}/models.py:GPT", "--model-args", MODEL_ARGS,
                        "--batch-shape", "8,128", "--optimizer", "adam",
                        "--feedback-order", "-o", prog, *plan,
                        "--save-inputs", os.path.join(work, "in")],
                       check=True, env=env, capture_output=True)
        out = subprocess.run([os.path.join(args.bin, "spmd-run"), prog,
                              "--input-dir", os.path.join(work, "in"),
                              "--steps", str(args.steps)],
                             check=True, capture_output=True, text=True).stderr
        rows.append((name, float(re.search(r"([0-9.]+) ms/step", out).group(1))))
    eager, threads = eager_ms()
    print(f"| plan | spmd-run ms/step | / PyTorch eager ({threads} threads, "
          f"{eager:.0f} ms) |")
    print("|---|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.0f} | {ms / eager:.2f} |")


if __name__ == "__main__":
    main()
