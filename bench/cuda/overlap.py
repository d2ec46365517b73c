#!/usr/bin/env python3
"""How much compute the GPU executor can overlap with communication.

For the toy GPT training step (test/frontend/Inputs/models.py:GPT) under
TP, TP+SP, DP, FSDP and 2-D dp x tp on 4 ranks, compiles each exported step
to a plan twice, with and without spmd-schedule-collectives (the peer), and
runs one step of each through the GPU step executor on the emulated GPU
(spmd-run --backend cuda-emu --check). The executor reports, for rank 0,
how many collectives had compute issued behind them before the compute
stream had to wait for them, and how many compute steps were issued while a
collective was in flight; --print-plan gives the arena size, the memory the
earlier collectives cost.

    /usr/bin/python3 bench/cuda/overlap.py --bin build/bin > bench/cuda/OVERLAP.md
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")

# (name, mesh, export options)
CASES = [
    ("TP", "tp=4", ["--plan", INPUTS + "/tp_plan.py", "--optimizer", "adamw"]),
    ("TP+SP", "tp=4", ["--plan", INPUTS + "/sp_plan.py", "--optimizer", "adam"]),
    ("DP", "dp=4", ["--optimizer", "adamw"]),
    ("FSDP", "dp=4", ["--fsdp", "--optimizer", "adamw"]),
    ("2-D dp x tp (SP)", "dp=2,tp=2",
     ["--plan", INPUTS + "/sp_plan.py", "--optimizer", "sgd"]),
]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--work", help="keep the programs here")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="spmd-overlap-")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend", "torch"))
    rows = []
    for name, mesh, options in CASES:
        d = os.path.join(work, re.sub(r"[^a-z0-9]+", "-", name.lower()))
        os.makedirs(d, exist_ok=True)
        step = os.path.join(d, "step.mlir")
        export = [sys.executable, "-m", "spmd_torch", "export",
                  INPUTS + "/models.py:GPT", "--mesh", mesh] + options + [
                  # Adam's eps 1e-4 as in the frontend tests: with 1e-8 a
                  # near-zero gradient's sign decides an update.
                  "--lr", "0.001", "--eps", "1e-4",
                  "--batch-shape", "8,16", "--feedback-order", "-o", step,
                  "--save-inputs", os.path.join(d, "in")]
        run(export, env=env)
        cells = []
        for sched in ("true", "false"):
            planfile = os.path.join(d, "plan-%s.mlir" % sched)
            run([os.path.join(args.bin, "spmd-opt"), step,
                 "--pass-pipeline=builtin.module(spmd-compile{"
                 "schedule-collectives=%s})" % sched, "-o", planfile])
            out = run([os.path.join(args.bin, "spmd-run"), planfile,
                       "--reference", step, "--check", "--print-plan",
                       "--input-dir", os.path.join(d, "in"),
                       "--backend", "cuda-emu"])
            m = re.search(r"(\d+) collective\(s\), (\d+) with compute issued "
                          r"behind them; (\d+) of (\d+) compute steps", out)
            arena = re.search(r"arena (\d+) bytes", out)
            if not m or not arena or "check passed" not in out:
                sys.exit("unexpected spmd-run output for %s:\n%s" % (planfile, out))
            cells.append((int(m.group(1)), int(m.group(2)), int(m.group(3)),
                          int(m.group(4)), int(arena.group(1))))
        rows.append((name, mesh, cells))
    print("# Overlap the plan allows on the GPU executor\n")
    print("Toy GPT training step (2 layers, dim 64, seq 16, batch 8), 4 ranks; "
          "rank 0's step on the emulated GPU (`--backend cuda-emu --check`, "
          "every run checked against the unpartitioned program). "
          "*Overlapped*: collectives with at least one compute step issued "
          "behind them before compute waited for them; *compute in flight*: "
          "compute steps issued while some collective was pending. Peer: the "
          "same step compiled with `spmd-compile{schedule-collectives=false}` "
          "(collectives where spmd-partition put them, right before their "
          "first use).\n")
    print("Command: `/usr/bin/python3 bench/cuda/overlap.py --bin build/bin`\n")
    print("| plan | mesh | collectives | overlapped (scheduled / peer) "
          "| compute in flight (scheduled / peer) | arena bytes (scheduled / peer) |")
    print("|---|---|---|---|---|---|")
    for name, mesh, (s, p) in rows:
        print("| %s | %s | %d | %d / %d | %d of %d / %d of %d | %d / %d (%.2fx) |"
              % (name, mesh, s[0], s[1], p[1], s[2], s[3], p[2], p[3], s[4],
                 p[4], s[4] / max(p[4], 1)))


if __name__ == "__main__":
    main()
