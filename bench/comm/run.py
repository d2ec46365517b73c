#!/usr/bin/env python3
"""Communication of the frontend's toy models under each parallel plan.

For every case: export the training step with spmd_torch, run
spmd-partition-pipeline{bucket=false} (propagate, partition, dedup) and
spmd-partition-pipeline (bucketing on, the default), and count the collectives of
spmd-comm-report by kind. Prints a markdown table with the DTensor
reference and the analytic minimum (see README.md for where each comes
from).

usage: bench/comm/run.py [--build build] [--json out.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")
PYTHON = sys.executable  # PyTorch 2.x: run with .venv/bin/python

# name, model, plan (or None), mesh, extra export flags, batch flags
CASES = [
    ("MLP TP", "MLP", "mlp_plan.py", "tp=4", [], ["--batch-shape", "8"]),
    ("MLP TP uneven (hidden 30, batch 6)", "MLP", "mlp_plan.py", "tp=4",
     ["--model-args", '{"hidden": 30}'], ["--batch-shape", "6"]),
    ("MLP DP", "MLP", None, "dp=4", [], ["--batch-shape", "8"]),
    ("MLP FSDP", "MLP", None, "dp=4", ["--fsdp"], ["--batch-shape", "8"]),
    ("MLP 2-D dp x tp", "MLP", "mlp_plan.py", "dp=2,tp=2", [],
     ["--batch-shape", "8"]),
    ("GPT TP", "GPT", "tp_plan.py", "tp=4", [], ["--batch-shape", "8,16"]),
    ("GPT TP+SP", "GPT", "sp_plan.py", "tp=4", [], ["--batch-shape", "8,16"]),
    ("GPT DP", "GPT", None, "dp=4", [], ["--batch-shape", "8,16"]),
    ("GPT FSDP", "GPT", None, "dp=4", ["--fsdp"], ["--batch-shape", "8,16"]),
    ("GPT 2-D dp x tp (TP+SP)", "GPT", "sp_plan.py", "dp=2,tp=2", [],
     ["--batch-shape", "8,16"]),
    # The rest of issue 5's end-to-end matrix (test/frontend/e2e_*.test).
    ("MLP TP+SP", "MLP", "mlp_sp_plan.py", "tp=4", [], ["--batch-shape", "8"]),
    ("MLP FSDP uneven (hidden 13, batch 6)", "MLP", None, "dp=4",
     ["--fsdp", "--model-args", '{"hidden": 13}'], ["--batch-shape", "6"]),
    ("MLP 2-D TP+SP uneven (hidden 13, batch 6)", "MLP", "mlp_sp_plan.py",
     "dp=2,tp=2", ["--model-args", '{"hidden": 13}'], ["--batch-shape", "6"]),
    ("GPT TP uneven (vocab 126)", "GPT", "tp_plan.py", "tp=4",
     ["--model-args", '{"vocab": 126}'], ["--batch-shape", "8,16"]),
    ("GPT DP uneven (batch 6)", "GPT", None, "dp=4", [],
     ["--batch-shape", "6,16"]),
    ("GPT FSDP uneven (vocab 126)", "GPT", None, "dp=4",
     ["--fsdp", "--model-args", '{"vocab": 126}'], ["--batch-shape", "8,16"]),
]

# DTensor reference (issue 5's measured numbers where given, else derived from
# DTensor's/FSDP2's/DDP's documented behaviour; README.md says which) and the
# analytic minimum for the same step. AR all_reduce, AG all_gather, RS
# reduce_scatter; "loss 2 AR": the mean loss's sum and nll_loss's count of
# non-ignored targets, both partial under data parallelism.
REFERENCE = {
    "MLP TP": ("1 AR (derived)", "1 AR"),
    "MLP TP uneven (hidden 30, batch 6)": ("1 AR (derived)", "1 AR"),
    "MLP DP": ("4 AR grads (DDP: 1 bucket) + loss (derived)",
               "4 AR + loss 2 AR; bucketed 1-2"),
    "MLP FSDP": ("4 AG fwd + 4 AG bwd + 4 RS (FSDP2 default, derived)",
                 "4 AG + 4 RS + loss 2 AR"),
    "MLP 2-D dp x tp": ("1 AR tp + 4 AR dp + loss (derived)",
                        "1 AR tp + 4 AR dp + loss 2 AR"),
    "GPT TP": ("fwd 6 AR + 1 AG, bwd 9 AR = 15 AR + 1 AG (measured)",
               "2 AR/layer fwd + 2 bwd = 8 AR, + embedding 1, + final "
               "norm bwd 1, + loss (1 AG or 3 small AR)"),
    "GPT TP+SP": ("Adam 30 AR (norm weights, measured) + ~11 AG + 10 RS "
                  "(derived)", "11 AG + 10 RS + 10 AR norm grads (bucketed 1)"
                  " + loss"),
    "GPT DP": ("29 AR grads (DDP: 1 bucket) + loss (derived)",
               "29 AR + loss 2 AR; bucketed 1-2"),
    "GPT FSDP": ("29 AG fwd + 29 AG bwd + 29 RS (FSDP2 default, derived)",
                 "29 AG + 29 RS + loss 2 AR"),
    "GPT 2-D dp x tp (TP+SP)": ("TP+SP on tp + 29 AR on dp (derived)",
                                "TP+SP on tp + 29 AR dp (bucketed 1) + loss"),
    "MLP TP+SP": ("fwd 1 AG + 1 RS, bwd 1 AG + loss (derived)",
                  "2 AG + 1 RS + loss 2 AR"),
    "MLP FSDP uneven (hidden 13, batch 6)": (
        "4 AG fwd + 4 AG bwd + 4 RS (FSDP2 default, derived)",
        "4 AG + 4 RS + loss 2 AR"),
    "MLP 2-D TP+SP uneven (hidden 13, batch 6)": (
        "MLP TP+SP on tp + 4 AR on dp (derived)",
        "2 AG + 1 RS tp + 4 AR dp + loss 2 AR"),
    "GPT TP uneven (vocab 126)": ("as GPT TP (derived)", "as GPT TP"),
    "GPT DP uneven (batch 6)": ("as GPT DP (derived)", "as GPT DP"),
    "GPT FSDP uneven (vocab 126)": ("as GPT FSDP (derived)", "as GPT FSDP"),
}


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{r.stderr[-2000:]}")
    return r.stdout


def counts(opt, mlir, bucket):
    pipe = ("builtin.module(spmd-partition-pipeline{bucket=true})"
            if bucket else "builtin.module(spmd-partition-pipeline{bucket=false})")
    local = run([opt, mlir, f"--pass-pipeline={pipe}"])
    rep = json.loads(run([opt, "--spmd-comm-report", "-o", os.devnull],
                         input=local))
    total = {}
    for f in rep["functions"]:
        for k, v in f["totals"]["by_kind"].items():
            if k in ("shard", "partial_from_replicated"):
                continue  # local steps, no communication
            total[k] = total.get(k, 0) + v["count"]
    return total


def fmt(c):
    short = {"all_reduce": "AR", "all_gather": "AG", "reduce_scatter": "RS",
             "all_to_all": "A2A"}
    return " + ".join(f"{v} {short.get(k, k)}" for k, v in sorted(c.items())) \
        or "0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--json")
    args = ap.parse_args()
    opt = os.path.join(args.build, "bin", "spmd-opt")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend", "torch"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, plan, mesh, extra, batch in CASES:
            out = os.path.join(tmp, "step.mlir")
            cmd = [PYTHON, "-m", "spmd_torch", "export",
                   os.path.join(INPUTS, "models.py") + ":" + model,
                   "--mesh", mesh, "--optimizer", "adamw", "-o", out]
            cmd += batch + extra
            if plan:
                cmd += ["--plan", os.path.join(INPUTS, plan)]
            try:
                run(cmd, env=env)
                dedup = counts(opt, out, False)
                bucket = counts(opt, out, True)
            except RuntimeError as e:
                print(f"{name}: FAILED\n{e}", file=sys.stderr)
                dedup = bucket = {"FAILED": 1}
            rows.append((name, mesh, dedup, bucket))
    print("| case | mesh | spmd (bucket=false) | spmd (default, bucketed) | DTensor reference "
          "| analytic minimum |")
    print("|---|---|---|---|---|---|")
    for name, mesh, dedup, bucket in rows:
        ref, low = REFERENCE.get(name, ("-", "-"))
        print(f"| {name} | {mesh} | {fmt(dedup)} | {fmt(bucket)} | {ref} "
              f"| {low} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"case": n, "mesh": m, "dedup": d, "bucketed": b}
                       for n, m, d, b in rows], f, indent=1)


if __name__ == "__main__":
    main()
