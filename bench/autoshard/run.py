#!/usr/bin/env python3
"""spmd-auto-shard against the hand plans, and its solve time.

For each model and mesh: export the training step (Adam) under every hand
plan (DTensor styles, DP, FSDP, their 2-D combinations) and with
--auto-plan, then record per plan

  * est. ms: the step time spmd-auto-shard's model estimates (compute +
    communication, `device` profile) of the program as partitioning runs
    it: spmd-propagate lays out what the plan leaves open (as the
    partition pipeline does), then spmd-auto-shard, with nothing left to
    choose, reports its estimate;
  * KiB/rank: bytes each rank sends, by spmd-comm-report of the partitioned
    program (default pipeline, bucketing on);
  * ms/step: spmd-run on simulated ranks (steady state of --steps 1+N),
    the median of --rounds rounds that take the plans in turn;
  * check: spmd-run --check (every rank's results against the
    unpartitioned program).

Then the solve time of a 32-layer GPT. Prints markdown; --json writes the
rows. Run with the venv's python (PyTorch 2.x):

  .venv/bin/python bench/autoshard/run.py [--quick] [--json out.json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(ROOT, "test", "frontend", "Inputs", "models.py")
PY = sys.executable

SIZES = {
    "GPT": dict(vocab=2048, dim=512, heads=8, layers=4, seq=128),
    "Llama": dict(vocab=2048, dim=512, heads=8, layers=4, hidden=1536),
}
QUICK = {
    "GPT": dict(vocab=126, dim=64, heads=4, layers=2, seq=16),
    "Llama": dict(vocab=126, dim=64, heads=4, layers=2, hidden=96),
}

# mesh -> [(plan name, mesh argument, export flags)]
PLANS = {
    "4": [("TP", "tp=4", ["--plan", f"{HERE}/tp_plan.py"]),
          ("TP+SP", "tp=4", ["--plan", f"{HERE}/sp_plan.py"]),
          ("DP", "dp=4", []),
          ("FSDP", "dp=4", ["--fsdp"]),
          ("auto", "x=4", ["--auto-plan"])],
    # The 1-D plans over all the mesh's devices (TP, TP+SP, DP, FSDP on 4 or
    # 8 ranks) are hand plans for a 2-D mesh too.
    "2x2": [("TP", "tp=4", ["--plan", f"{HERE}/tp_plan.py"]),
            ("TP+SP", "tp=4", ["--plan", f"{HERE}/sp_plan.py"]),
            ("DP", "dp=4", []),
            ("FSDP", "dp=4", ["--fsdp"]),
            ("DP x TP", "dp=2,tp=2", ["--plan", f"{HERE}/tp_plan.py"]),
            ("DP x TP+SP", "dp=2,tp=2", ["--plan", f"{HERE}/sp_plan.py"]),
            ("FSDP x TP+SP", "dp=2,tp=2",
             ["--plan", f"{HERE}/sp_plan.py", "--fsdp"]),
            ("auto", "x=2,y=2", ["--auto-plan"])],
    "2x4": [("TP", "tp=8", ["--plan", f"{HERE}/tp_plan.py"]),
            ("TP+SP", "tp=8", ["--plan", f"{HERE}/sp_plan.py"]),
            ("DP", "dp=8", []),
            ("FSDP", "dp=8", ["--fsdp"]),
            ("DP x TP", "dp=2,tp=4", ["--plan", f"{HERE}/tp_plan.py"]),
            ("DP x TP+SP", "dp=2,tp=4", ["--plan", f"{HERE}/sp_plan.py"]),
            ("FSDP x TP+SP", "dp=2,tp=4",
             ["--plan", f"{HERE}/sp_plan.py", "--fsdp"]),
            ("auto", "x=2,y=4", ["--auto-plan"])],
}


def tool(name):
    build = os.environ.get("SPMD_BUILD_DIR", os.path.join(ROOT, "build"))
    return os.path.join(build, "bin", name)


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{r.stdout[-1000:]}{r.stderr[-2000:]}")
    return r


def parse_report(text):
    """The figures of an spmd-auto-shard report: compute, memory-bound and
    communication ms, MiB sent per rank, solve seconds."""
    m = re.search(r"estimated compute ([0-9.]+) ms \(([0-9.]+) ms memory-bound\), "
                  r"communication ([0-9.]+) ms \(([0-9.]+) (\w+) per rank\)", text)
    scale = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(5)]
    return dict(compute=float(m.group(1)), memory=float(m.group(2)),
                comm=float(m.group(3)), mib=float(m.group(4)) * scale,
                solve=float(re.search(r"solved in ([0-9.]+) s", text).group(1)))


def estimate(mlir, device, tmp):
    """spmd-auto-shard's estimate of a program as the partition pipeline
    lays it out (a hand plan's activations: spmd-propagate's choices)."""
    report = os.path.join(tmp, "est.txt")
    pipe = ("builtin.module(spmd-expand-random, func.func(spmd-defer-scales, "
            "spmd-fold-reshapes), spmd-propagate, "
            f"spmd-auto-shard{{device={device} report={report}}})")
    run([tool("spmd-opt"), mlir, f"--pass-pipeline={pipe}", "-o", os.devnull])
    text = open(report).read()
    r = parse_report(text)
    return r["compute"] + r["comm"], r["solve"], text


def comm_bytes(mlir):
    local = run([tool("spmd-opt"), mlir, "--spmd-partition-pipeline"]).stdout
    rep = json.loads(run([tool("spmd-opt"), "--spmd-comm-report", "-o",
                          os.devnull], input=local).stdout)
    total = 0
    for f in rep["functions"]:
        for k, v in f["totals"]["by_kind"].items():
            if k not in ("shard", "partial_from_replicated"):
                # Uneven shards: rank-dependent sizes, the upper bound.
                b = v["bytes"]
                total += b if b is not None else v["bytes_upper_bound"]
    return total


def step_ms(mlir, steps):
    def once(n):
        r = run([tool("spmd-run"), mlir, "--steps", str(n)])
        return float(re.search(r"([0-9.]+) ms/step", r.stderr + r.stdout).group(1))
    t1 = once(1)
    tn = once(1 + steps)
    return (tn * (1 + steps) - t1) / steps


def export(model, cfg, mesh, flags, device, out, report):
    batch = "2,16" if cfg.get("vocab", 0) < 1000 else "8,128"
    args = dict(cfg)
    cmd = [PY, "-m", "spmd_torch", "export", f"{MODELS}:{model}",
           "--model-args", json.dumps(args), "--batch-shape", batch,
           "--mesh", mesh, "--optimizer", "adam", "--feedback-order",
           "-o", out] + flags
    if "--auto-plan" in flags:
        cmd += ["--device", device, "--auto-report", report]
    t0 = time.time()
    run(cmd, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend",
                                                          "torch")))
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--device", default="cpu", help="cost model profile")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1,
                    help="step-time rounds, the plans interleaved; the "
                         "median is reported")
    ap.add_argument("--meshes", default="4,2x2,2x4")
    ap.add_argument("--models", default="GPT,Llama")
    ap.add_argument("--no-run", action="store_true", help="skip step times")
    ap.add_argument("--deep", type=int, default=32,
                    help="layers of the solve-time model (0: skip)")
    ap.add_argument("--plans", help="only these plans (comma-separated "
                    "names, e.g. auto)")
    ap.add_argument("--auto-options", default="",
                    help="more spmd-auto-shard options for the auto plan, "
                         "e.g. 'comm-slack=0'")
    ap.add_argument("--json")
    ap.add_argument("--pytorch-check", action="store_true",
                    help="export the auto plan with --check as well: its "
                         "program against PyTorch (then spmd-run --check "
                         "ties every rank to that program)")
    a = ap.parse_args()
    sizes = QUICK if a.quick else SIZES
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            for mesh in a.meshes.split(","):
                print(f"\n### {model} {sizes[model]}, mesh {mesh}, "
                      f"device {a.device}\n")
                print("| plan | est. ms | KiB/rank | ms/step | check |")
                print("|---|---|---|---|---|")
                notes = []
                done = []  # (name, program, est, solve, kib, check)
                for pi, (name, mesh_arg, flags) in enumerate(PLANS[mesh]):
                    if a.plans and name not in a.plans.split(","):
                        continue
                    if name == "auto" and a.auto_options:
                        flags = flags + ["--auto-options", a.auto_options]
                    pt = name == "auto" and a.pytorch_check
                    if pt:
                        flags = flags + ["--check", "--check-tolerance", "1e-3"]
                    out = os.path.join(tmp, f"p{pi}.mlir")
                    rep = os.path.join(tmp, "auto.txt")
                    try:
                        export(model, sizes[model], mesh_arg, flags, a.device,
                               out, rep)
                    except RuntimeError as err:
                        if not pt:
                            raise
                        print(f"| {name} | PyTorch check FAILED: {err} |")
                        continue
                    est, solve, _ = estimate(out, a.device, tmp)
                    if name == "auto":
                        solve = parse_report(open(rep).read())["solve"]
                        # What comm-slack changed, printed under the table.
                        notes += [l.strip() for l in open(rep)
                                  if "comm-slack" in l]
                    kib = comm_bytes(out) / 1024
                    ok = None
                    if not a.no_run:
                        r = subprocess.run([tool("spmd-run"), out, "--check",
                                            "--atol", "1e-3", "--rtol", "1e-3"],
                                           capture_output=True, text=True)
                        ok = r.returncode == 0
                    if pt and ok is not False:
                        ok = "ok, = PyTorch" if ok else "= PyTorch"
                    done.append((name, out, est, solve, kib, ok))
                # Step times in interleaved rounds, so that the machine's
                # slow minutes fall on every plan alike; the median is kept.
                times = {d[0]: [] for d in done}
                for _ in range(0 if a.no_run else a.rounds):
                    for name, out, *_ in done:
                        times[name].append(step_ms(out, a.steps))
                for name, out, est, solve, kib, ok in done:
                    ms = statistics.median(times[name]) if times[name] else None
                    rows.append(dict(model=model, mesh=mesh, plan=name,
                                     est_ms=est, kib=kib, ms=ms, check=ok,
                                     ms_rounds=times[name] or None,
                                     solve_s=solve if name == "auto" else None))
                    msr = "-" if ms is None else f"{ms:.{0 if ms >= 100 else 2}f}"
                    chk = ("-" if ok is None else ok if isinstance(ok, str)
                           else "ok" if ok else "FAILED")
                    label = f"auto (solved in {solve:.1f} s)" if name == "auto" else name
                    print(f"| {label} | {est:.3f} | {kib:.0f} | {msr} | {chk} |",
                          flush=True)
                if notes:
                    print("\n" + "\n".join(f"* auto, {n}" for n in notes))
        if a.deep:
            cfg = dict(vocab=2048, dim=256, heads=8, layers=a.deep, seq=128)
            print(f"\n### Solve time: GPT {cfg}, device {a.device}\n")
            print("| mesh | export s | solve s | classes | est. ms |")
            print("|---|---|---|---|---|")
            for mesh in ("x=4", "x=2,y=4"):
                out = os.path.join(tmp, "deep.mlir")
                rep = os.path.join(tmp, "deep.txt")
                flags = ["--auto-plan"]
                if a.auto_options:
                    flags += ["--auto-options", a.auto_options]
                t = export("GPT", cfg, mesh, flags, a.device, out, rep)
                text = open(rep).read()
                classes = re.search(r"(\d+) ops and arguments in (\d+) classes",
                                    text)
                r = parse_report(text)
                solve, est = r["solve"], r["compute"] + r["comm"]
                rows.append(dict(model=f"GPT-{a.deep}", mesh=mesh, plan="auto",
                                 solve_s=solve, est_ms=est))
                print(f"| {mesh} | {t:.0f} | {solve:.2f} | "
                      f"{classes.group(1)} ops in {classes.group(2)} | {est:.2f} |",
                      flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
