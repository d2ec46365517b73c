#!/usr/bin/env python3
"""spmd against its peers on the same training step and the same plans.

For each model (models.GPT and models.MLP of test/frontend/Inputs/models.py),
plan (TP, TP+SP, DP, FSDP, FSDP x TP+SP) and size (cases.py: the count size
of issue 19 and a larger one), one AdamW training step on 4 ranks:
  * DTensor / DDP / FSDP2 (PyTorch 2.x of .venv; dtensor_peer.py: one
    process, a fake process group, every collective counted);
  * JAX with GSPMD and with Shardy on 4 host CPU devices (jax_peer.py;
    counted in the compiled HLO) - from a virtual environment this script
    creates (bench/peers/.venv-jax, jax from PyPI) unless --no-jax;
  * spmd: exported by spmd_torch, `spmd-opt --spmd-partition-pipeline` (the
    default pipeline, bucketing on) and spmd-comm-report.
Prints a markdown table: collectives by kind and bytes per rank (ring
formulas: all_gather (k-1)*in, all_reduce 2(k-1)/k*in, reduce_scatter and
all_to_all (k-1)/k*in).

    .venv/bin/python bench/peers/run.py [--models gpt,mlp]
        [--sizes count,large] [--no-jax]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")
BUILD = os.environ.get("SPMD_BUILD_DIR", os.path.join(ROOT, "build"))
JAX_VENV = os.path.join(HERE, ".venv-jax")
sys.path.insert(0, HERE)
from cases import PLANS, SIZES  # noqa: E402
ABBREV = {"all_gather": "AG", "all_reduce": "AR", "reduce_scatter": "RS",
          "all_to_all": "A2A", "collective_permute": "CP"}

def spmd_args(model, plan):
    """The spmd_torch export options of a plan (the same plan files the
    DTensor peer maps to torch.distributed.tensor.parallel)."""
    tp, sp = (("mlp_plan.py", "mlp_sp_plan.py") if model == "mlp" else
              ("tp_plan.py", "sp_plan.py"))
    return {
        "TP": ["--plan", os.path.join(INPUTS, tp), "--mesh", "tp=4"],
        "TP+SP": ["--plan", os.path.join(INPUTS, sp), "--mesh", "tp=4"],
        "DP": ["--mesh", "dp=4"],
        "FSDP": ["--mesh", "dp=4", "--fsdp"],
        "FSDPxTP+SP": ["--plan", os.path.join(INPUTS, sp), "--mesh",
                       "dp=2,tp=2", "--fsdp"],
    }[plan]


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()[-800:]}")
    return r.stdout


def ensure_jax():
    py = os.path.join(JAX_VENV, "bin", "python")
    if not os.path.exists(py):
        run(["/usr/bin/python3", "-m", "venv", JAX_VENV])
        run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "jax", "numpy"])
    return py


def totals(phases):
    out = {}
    for kinds in phases.values():
        for kind, e in kinds.items():
            t = out.setdefault(kind, {"count": 0, "bytes": 0})
            t["count"] += e["count"]
            t["bytes"] += e["bytes"]
    return out


def peer(cmd, env=None):
    try:
        return json.loads(run(cmd, env=env).strip().splitlines()[-1])
    except Exception as e:  # a peer that cannot run this case
        return {"error": str(e).splitlines()[-1][:200]}


def spmd(model, plan, size, tmp, extra_plan=None, auto=False):
    s = SIZES[model][size]
    mlir = os.path.join(tmp, f"{model}-{plan}-{size}{'-auto' * auto}.mlir")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend", "torch"))
    if model == "mlp":
        keys, cls, batch = ("dim", "hidden", "out"), "MLP", f"{s['batch']}"
    else:
        keys, cls = ("vocab", "dim", "heads", "layers", "seq"), "GPT"
        batch = f"{s['batch']},{s['seq']}"
    args = spmd_args(model, plan)
    if extra_plan:
        args = ["--plan", extra_plan, "--mesh", "tp=4"]
    if auto:
        # The plan's storage (parameter, state and batch layouts) kept,
        # the rest chosen by spmd-auto-shard (h100 profile).
        args = args + ["--auto-plan", "--auto-report", os.devnull]
    try:
        run([sys.executable, "-m", "spmd_torch", "export",
             os.path.join(INPUTS, "models.py") + ":" + cls, *args,
             "--batch-shape", batch, "--optimizer", "adamw", "--model-args",
             json.dumps({k: s[k] for k in keys}), "-o", mlir], env=env)
        opt = os.path.join(BUILD, "bin", "spmd-opt")
        local = run([opt, mlir, "--spmd-partition-pipeline"])
        report = json.loads(run([opt, "--spmd-comm-report", "-o",
                                 "/dev/null"], input=local))
    except Exception as e:
        return {"error": str(e).splitlines()[-1][:200]}
    kinds = {}
    for f in report["functions"]:
        for kind, e in f["totals"]["by_kind"].items():
            if kind in ("shard", "partial_from_replicated"):
                continue
            t = kinds.setdefault(kind, {"count": 0, "bytes": 0})
            t["count"] += e["count"]
            t["bytes"] += e.get("bytes") or e.get("bytes_upper_bound") or 0
    return {"peer": "spmd", "phases": {"step": kinds}}


def fmt(result):
    if "skipped" in result:
        return "skipped (" + result["skipped"] + ")"
    if "error" in result:
        return "fails: " + result["error"]
    t = totals(result["phases"])
    n = sum(e["count"] for e in t.values())
    kinds = " + ".join(f"{t[k]['count']} {ABBREV.get(k, k)}"
                       for k in sorted(t))
    kb = sum(e["bytes"] for e in t.values()) / 1000
    return f"{n} ({kinds or 'none'}), {kb:.1f} KB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="gpt,mlp")
    ap.add_argument("--sizes", default="count,large")
    ap.add_argument("--plans", default=",".join(PLANS))
    ap.add_argument("--no-jax", action="store_true")
    ap.add_argument("--json", help="also write every result to this file")
    args = ap.parse_args()
    jax_py = None if args.no_jax else ensure_jax()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models.split(","):
            for size in args.sizes.split(","):
                if size not in SIZES[model]:  # count96: the GPT's only
                    continue
                for plan in args.plans.split(","):
                    row = {"model": model, "size": size, "plan": plan}
                    common = ["--model", model, "--plan", plan, "--size",
                              size]
                    row["dtensor"] = peer([sys.executable, os.path.join(
                        HERE, "dtensor_peer.py"), *common])
                    for part in ("gspmd", "shardy"):
                        row[part] = peer([jax_py, os.path.join(
                            HERE, "jax_peer.py"), *common, "--partitioner",
                            part]) if jax_py else {"skipped": "--no-jax"}
                    row["spmd"] = spmd(model, plan, size, tmp)
                    # JAX's jit cannot shard the GPT's vocabulary of 97 on
                    # 4 devices and runs TP with the embedding and output
                    # layer replicated: spmd on that plan too.
                    if (jax_py and model == "gpt" and plan == "TP" and
                            "error" not in row["gspmd"] and
                            row["gspmd"].get("note")):
                        row["spmd (JAX's plan)"] = spmd(
                            model, plan, size, tmp,
                            extra_plan=os.path.join(HERE,
                                                    "tp_blocks_plan.py"))
                    # FSDP: the parameters' storage as the peers have it,
                    # spmd-auto-shard choosing where to gather (XLA chooses
                    # too; FSDP2 gathers every parameter before use).
                    if plan.startswith("FSDP"):
                        row["spmd (compute chosen)"] = spmd(model, plan, size,
                                                            tmp, auto=True)
                    results.append(row)
                    print(f"{model} {size} {plan}: done", file=sys.stderr)
    print("| model | size | plan | DTensor / DDP / FSDP2 | JAX GSPMD | "
          "JAX Shardy | spmd |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        spmd_cell = fmt(r["spmd"])
        if "spmd (JAX's plan)" in r:
            spmd_cell += "; on JAX's plan: " + fmt(r["spmd (JAX's plan)"])
        if "spmd (compute chosen)" in r:
            spmd_cell += ("; `--auto-plan`: " +
                          fmt(r["spmd (compute chosen)"]))
        print(f"| {r['model']} | {r['size']} | {r['plan']} | "
              f"{fmt(r['dtensor'])} | {fmt(r['gspmd'])} | "
              f"{fmt(r['shardy'])} | {spmd_cell} |")
    notes = {r[p].get("note") for r in results for p in
             ("dtensor", "gspmd", "shardy") if r[p].get("note")}
    for note in sorted(notes):
        print(f"\n* {note}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
