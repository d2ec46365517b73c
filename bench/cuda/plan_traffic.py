#!/usr/bin/env python3
"""Kernel launches and operand bytes per step of a compiled plan.

    spmd-opt step.mlir --spmd-compile -o plan.mlir
    python3 bench/cuda/plan_traffic.py plan.mlir [--top N]

Every spmd.plan_kernel call counts its operand buffers once each (what the
kernel reads and writes, at least): a GPU-free proxy for the memory traffic
of a step's generated kernels, which are bandwidth-bound. GEMMs
(spmd.plan_gemm) are not counted.
"""
import argparse
import collections
import re

ELEMENT_BYTES = {"f64": 8, "i64": 8, "f32": 4, "i32": 4, "bf16": 2,
                 "f16": 2, "i16": 2, "i8": 1, "i1": 1}


def memref_bytes(spec):
    parts = spec.split(",")[0].split("x")
    size = ELEMENT_BYTES.get(parts[-1].strip())
    if size is None:
        raise SystemExit(f"plan_traffic: unknown element type in memref<{spec}>")
    for d in parts[:-1]:
        if not d.isdigit():
            raise SystemExit(f"plan_traffic: dynamic memref<{spec}>")
        size *= int(d)
    return size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plan")
    ap.add_argument("--top", type=int, default=0,
                    help="also list the N kernels that move the most")
    a = ap.parse_args()
    text = open(a.plan).read()
    per_kernel = collections.Counter()
    calls = collections.Counter()
    # One call per statement; long operand lists wrap over several lines.
    for m in re.finditer(r"spmd\.plan_kernel @(\w+)\(([^)]*)\)\s*:\s*([^\n]*)",
                         text):
        name, types = m.group(1), m.group(3)
        per_kernel[name] += sum(memref_bytes(t)
                                for t in re.findall(r"memref<([^>]*)>", types))
        calls[name] += 1
    total = sum(per_kernel.values())
    print(f"{sum(calls.values())} kernel launches, {total} bytes "
          f"({total / 2**30:.2f} GiB) of kernel operands per step")
    for name, b in per_kernel.most_common(a.top):
        print(f"  {name}: {calls[name]} launches, {b} bytes "
              f"({100 * b / total:.1f}%)")


if __name__ == "__main__":
    main()
