#!/usr/bin/env python3
"""Measures what a collective costs on spmd-run's simulated ranks, against
the `cpu` profile of the cost model (core/CostModel.cpp: 100 us per
collective, 5 GB/s per rank).

For each size, a chain of N all_reduces (sum, 4 ranks) runs for 11 steps
under `spmd-run --profile`; its ms/step divided by N is one collective's
time. The fit: alpha = the time at the smallest size, and the bandwidth per
size = ring bytes per rank (2(k-1)/k * size) / (time - alpha).

With --between N, each all_reduce follows an N x N GEMM instead, and the
chain is timed with and without them: what a collective costs where ranks
compute in between (the profile's alpha is fitted to that).

    .venv/bin/python bench/autoshard/calibrate_cpu.py [--ops 200] [--between 256]
"""
import argparse
import os
import re
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BUILD = os.environ.get("SPMD_BUILD_DIR", os.path.join(ROOT, "build"))


def chain(ops, elements, ranks):
    t = f"tensor<{elements}xf32>"
    lines = [f'spmd.mesh @m ["x"={ranks}]',
             f"func.func @main(%a: {t}) -> {t} {{"]
    value = "%a"
    for i in range(ops):
        lines.append(f'  %r{i} = spmd.all_reduce {value} on @m ["x"] sum : {t}')
        value = f"%r{i}"
    lines += [f"  return {value} : {t}", "}"]
    return "\n".join(lines) + "\n"


def between(ops, n, ranks, reduce):
    """A chain of n x n GEMMs, each result all_reduced when `reduce`: what
    a collective costs where ranks compute between collectives (each wait
    puts a thread to sleep and the last arriver wakes the others)."""
    t = f"tensor<{n}x{n}xf32>"
    lines = [f'spmd.mesh @m ["x"={ranks}]',
             f"func.func @main(%a: {t}, %w: {t}) -> {t} {{",
             "  %zero = arith.constant 0.0 : f32",
             f"  %e = tensor.empty() : {t}",
             f"  %z = linalg.fill ins(%zero : f32) outs(%e : {t}) -> {t}"]
    value = "%a"
    for i in range(ops):
        lines.append(f"  %g{i} = linalg.matmul ins({value}, %w : {t}, {t}) "
                     f"outs(%z : {t}) -> {t}")
        value = f"%g{i}"
        if reduce or i == ops - 1:  # one at least: the program runs on k ranks
            lines.append(f'  %r{i} = spmd.all_reduce {value} on @m ["x"] sum '
                         f": {t}")
            value = f"%r{i}"
    lines += [f"  return {value} : {t}", "}"]
    return "\n".join(lines) + "\n"


def ms_per_step(path):
    out = subprocess.run([os.path.join(BUILD, "bin", "spmd-run"), path,
                          "--steps", "11", "--profile"], capture_output=True,
                         text=True, check=True)
    m = re.search(r"([0-9.]+) ms/step", out.stderr + out.stdout)
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--between", type=int, default=0, metavar="N",
                    help="time all_reduces between N x N GEMMs instead")
    args = ap.parse_args()
    k = args.ranks
    if args.between:
        # In context: the chain with and without the all_reduces.
        n = args.between
        ms = {}
        with tempfile.TemporaryDirectory() as tmp:
            for reduce in (False, True):
                path = os.path.join(tmp, f"between{reduce}.mlir")
                with open(path, "w") as f:
                    f.write(between(args.ops, n, k, reduce))
                ms[reduce] = ms_per_step(path)
        size = n * n * 4
        each = (ms[True] - ms[False]) / (args.ops - 1) * 1e3
        ring = 2 * (k - 1) / k * size / 5e9 * 1e6
        print(f"{n}x{n} GEMMs on {k} simulated ranks, {args.ops} per step: "
              f"{ms[False]:.1f} ms/step alone, {ms[True]:.1f} with an "
              f"all_reduce of each ({size} bytes): {each:.1f} us per "
              f"all_reduce, {each - ring:.1f} us past its bytes at 5 GB/s")
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for elements in (4, 4096, 65536, 262144, 1048576):
            path = os.path.join(tmp, f"chain{elements}.mlir")
            with open(path, "w") as f:
                f.write(chain(args.ops, elements, k))
            rows.append((elements, ms_per_step(path) / args.ops * 1e3))
    alpha = rows[0][1]
    print(f"all_reduce on {k} simulated ranks, {args.ops} per step:")
    print("| bytes | us each | GB/s per rank (ring bytes / (us - alpha)) |")
    print("|---|---|---|")
    for elements, us in rows:
        size = elements * 4
        ring = 2 * (k - 1) / k * size
        bw = ring / ((us - alpha) * 1e-6) / 1e9 if us > alpha else float("nan")
        print(f"| {size} | {us:.1f} | {bw:.1f} |")
    print(f"alpha (the {rows[0][0] * 4}-byte collective): {alpha:.1f} us; "
          "the cpu profile: 100 us, 5 GB/s")


if __name__ == "__main__":
    main()
