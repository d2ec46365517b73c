#!/usr/bin/env python3
"""Long straight-line programs for timing the whole `spmd-opt --spmd-compile`
pipeline, annotated for a 1-D mesh of 4 so that partitioning inserts
collectives:

* `ew N`: N elementwise ops (add, mul, sub, a relu every 7th) on a 64x64 f32
  activation split on rows; every 64th op adds a replicated operand read
  through a transpose (a gather on every such op).
* `mm N`: N ops in layers of fill + matmul + relu (4 ops with the
  tensor.empty) alternating a column-split and a row-split weight (Megatron
  tensor parallelism: an all_reduce every second matmul).

  python3 bench/compile_time/gen_compile.py ew 10000 > ew.mlir
"""
import sys

mode, n = sys.argv[1], int(sys.argv[2])
mesh = 'spmd.mesh @mesh ["x"=4]'


def lay(p):
    return f"{{spmd.layout = #spmd.layout<@mesh, [{p}]>}}"


out = [mesh]
if mode == "ew":
    t = "tensor<64x64xf32>"
    out.append(f"func.func @ew(%x: {t} {lay('S(0)')}, %y: {t} {lay('S(0)')},"
               f" %r: {t} {lay('R')}) -> ({t} {lay('S(0)')}) {{")
    out.append("  %zero = arith.constant 0.0 : f32")
    m = "affine_map<(d0, d1) -> (d0, d1)>"
    mt = "affine_map<(d0, d1) -> (d1, d0)>"
    prev = "%x"
    for i in range(n):
        v = f"%v{i}"
        if i % 64 == 63:
            out.append(f"  %e{i} = tensor.empty() : {t}")
            out.append(
                f"  {v} = linalg.generic {{indexing_maps = [{m}, {mt}, {m}], "
                f"iterator_types = [\"parallel\", \"parallel\"]}} "
                f"ins({prev}, %r : {t}, {t}) outs(%e{i} : {t}) {{\n"
                f"  ^bb0(%a: f32, %b: f32, %o: f32):\n"
                f"    %s = arith.addf %a, %b : f32\n    linalg.yield %s : f32\n"
                f"  }} -> {t}")
        elif i % 7 == 6:
            out.append(f"  %e{i} = tensor.empty() : {t}")
            out.append(
                f"  {v} = linalg.generic {{indexing_maps = [{m}, {m}], "
                f"iterator_types = [\"parallel\", \"parallel\"]}} "
                f"ins({prev} : {t}) outs(%e{i} : {t}) {{\n"
                f"  ^bb0(%a: f32, %o: f32):\n"
                f"    %s = arith.maximumf %a, %zero : f32\n"
                f"    linalg.yield %s : f32\n  }} -> {t}")
        else:
            op = ["arith.addf", "arith.mulf", "arith.subf"][i % 3]
            out.append(f"  {v} = {op} {prev}, %y : {t}")
        prev = v
    out.append(f"  return {prev} : {t}\n}}")
elif mode == "mm":
    t = "tensor<16x32xf32>"
    wt = "tensor<32x32xf32>"
    m = "affine_map<(d0, d1) -> (d0, d1)>"
    out.append(f"func.func @mm(%x: {t} {lay('R')}, %w0: {wt} {lay('S(1)')},"
               f" %w1: {wt} {lay('S(0)')}) -> ({t} {lay('R')}) {{")
    out.append("  %zero = arith.constant 0.0 : f32")
    prev = "%x"
    for i in range(n // 4):
        w = "%w0" if i % 2 == 0 else "%w1"
        out.append(f"  %e{i} = tensor.empty() : {t}")
        out.append(f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t})"
                   f" -> {t}")
        out.append(f"  %h{i} = linalg.matmul ins({prev}, {w} : {t}, {wt})"
                   f" outs(%f{i} : {t}) -> {t}")
        out.append(
            f"  %r{i} = linalg.generic {{indexing_maps = [{m}, {m}], "
            f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%h{i} : {t}) "
            f"outs(%e{i} : {t}) {{\n  ^bb0(%a: f32, %o: f32):\n"
            f"    %s = arith.maximumf %a, %zero : f32\n"
            f"    linalg.yield %s : f32\n  }} -> {t}")
        prev = f"%r{i}"
    out.append(f"  return {prev} : {t}\n}}")
else:
    sys.exit(f"unknown mode {mode} (ew or mm)")
print("\n".join(out))
