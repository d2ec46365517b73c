#!/usr/bin/env python3
"""The `cpu` profile's compute terms against simulated ranks, per category.

For each plan of run.py's table (exported the same way), spmd-auto-shard's
estimate splits its compute into memory-bound ops (elementwise, norms,
reductions: the runtime's fused kernels) and the rest (contractions: its
GEMMs); `spmd-run --profile` measures rank 0's time per step in GEMMs,
kernels and collectives. Per category, measured over estimated (summed over
the plans) is the factor the profile's rate is off by: the fit.

    .venv/bin/python bench/autoshard/fit_cpu.py [--meshes 2x2] [--steps 3]

Prints a markdown table per mesh and the fitted rates.
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as bench  # noqa: E402  (run.py beside this file)


def estimate(mlir, device, tmp):
    r = bench.parse_report(bench.estimate(mlir, device, tmp)[2])
    return dict(gemm=r["compute"] - r["memory"], kernel=r["memory"],
                comm=r["comm"], mib=r["mib"])


def profile(mlir, steps):
    r = bench.run([bench.tool("spmd-run"), mlir, "--steps", str(steps),
                   "--profile"])
    out = r.stderr + r.stdout
    got = {"step": float(re.search(r"([0-9.]+) ms/step", out).group(1))}
    for kind in ("collective", "gemm", "kernel"):
        m = re.search(rf"^\s+{kind}\s+(\d+) steps\s+([0-9.]+) ms", out, re.M)
        got[kind] = float(m.group(2)) / steps if m else 0.0
        got[kind + "_n"] = int(m.group(1)) / steps if m else 0
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--meshes", default="2x2")
    ap.add_argument("--models", default="GPT")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--keep", help="write the exported plans to this folder")
    a = ap.parse_args()
    sums = {"gemm": [0, 0], "kernel": [0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        if a.keep:
            os.makedirs(a.keep, exist_ok=True)
        for model in a.models.split(","):
            for mesh in a.meshes.split(","):
                print(f"\n### {model}, mesh {mesh}, device {a.device}: "
                      "ms per step (rank 0), estimated / measured\n")
                print("| plan | GEMMs | kernels | comm. (collectives) | "
                      "est. MiB | step |")
                print("|---|---|---|---|---|---|")
                for pi, (name, mesh_arg, flags) in enumerate(bench.PLANS[mesh]):
                    out = os.path.join(a.keep or tmp,
                                       f"{model}-{mesh}-{pi}.mlir")
                    bench.export(model, bench.SIZES[model], mesh_arg, flags,
                                 a.device, out, os.path.join(tmp, "auto.txt"))
                    e = estimate(out, a.device, tmp)
                    m = profile(out, a.steps)
                    for k in sums:
                        sums[k][0] += e[k]
                        sums[k][1] += m[k]
                    print(f"| {name} | {e['gemm']:.1f} / {m['gemm']:.1f} | "
                          f"{e['kernel']:.1f} / {m['kernel']:.1f} | "
                          f"{e['comm']:.1f} / {m['collective']:.1f} "
                          f"({m['collective_n']:.0f}) | {e['mib']:.1f} | "
                          f"{e['gemm'] + e['kernel'] + e['comm']:.1f} / "
                          f"{m['step']:.1f} |", flush=True)
    print()
    for k, what in (("gemm", "flop rate"), ("kernel", "memory bandwidth")):
        est, meas = sums[k]
        if meas > 0:
            print(f"* {k}: estimated {est:.1f} ms, measured {meas:.1f} ms: "
                  f"the profile's {what} x {est / meas:.2f}")


if __name__ == "__main__":
    main()
