#!/usr/bin/env python3
"""Generate a chain of `layers` matmul+add layers on global tensors, annotated
either for spmd (`--dialect spmd`) or for upstream MLIR's `shard` dialect
(`--dialect shard`), with data-parallel (`dp`: activations and biases sharded
on the batch dim, weights replicated) or Megatron tensor-parallel (`tp`: weights
alternately column- and row-split) annotations on a 1-D mesh of 4.

Both forms compute the same thing; only the annotation syntax differs.
"""
import argparse

B, D = 16, 32  # batch and model width: small, compile time is what we time


def layer_body(i, x, w, bias, t):
    return [
        f"  %e{i} = tensor.empty() : {t}",
        f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t}) -> {t}",
        f"  %m{i} = linalg.matmul ins({x}, {w} : {t}, tensor<{D}x{D}xf32>)"
        f" outs(%f{i} : {t}) -> {t}",
        f"  %a{i} = linalg.add ins(%m{i}, {bias} : {t}, {t})"
        f" outs(%e{i} : {t}) -> {t}",
    ]


def generate(layers, dialect, mode):
    t = f"tensor<{B}x{D}xf32>"
    wt = f"tensor<{D}x{D}xf32>"
    lines = []
    if dialect == "spmd":
        lines.append('spmd.mesh @mesh ["x"=4]')

        def lay(p):
            return f'{{spmd.layout = #spmd.layout<@mesh, [{p}]>}}'
        x_l = lay("S(0)" if mode == "dp" else "R")
        args = [f"%x: {t} {x_l}"]
        b_l = f" {x_l}" if mode == "dp" else ""
        args += [f"%b{i}: {t}{b_l}" for i in range(layers)]
        for i in range(layers):
            p = "R" if mode == "dp" else ("S(1)" if i % 2 == 0 else "S(0)")
            args.append(f"%w{i}: {wt} {lay(p)}")
        res = f"({t} {x_l})"
    else:
        lines.append("shard.grid @mesh(shape = 4)")
        args = [f"%x: {t}"] + [f"%b{i}: {t}" for i in range(layers)]
        args += [f"%w{i}: {wt}" for i in range(layers)]
        res = t
    lines.append(f"func.func @chain({', '.join(args)}) -> {res} {{")
    lines.append("  %zero = arith.constant 0.0 : f32")
    x = "%x"
    if dialect == "shard":
        if mode == "dp":
            lines.append("  %sdp = shard.sharding @mesh split_axes = [[0]] : !shard.sharding")
            lines.append(f"  %xs = shard.shard %x to %sdp : {t}")
            x = "%xs"
            for i in range(layers):
                lines.append(f"  %bs{i} = shard.shard %b{i} to %sdp : {t}")
        else:
            lines.append("  %scol = shard.sharding @mesh split_axes = [[], [0]] : !shard.sharding")
            lines.append("  %srow = shard.sharding @mesh split_axes = [[0]] : !shard.sharding")
    for i in range(layers):
        w = f"%w{i}"
        if dialect == "shard" and mode == "tp":
            s = "%scol" if i % 2 == 0 else "%srow"
            lines.append(f"  %ws{i} = shard.shard %w{i} to {s} annotate_for_users : {wt}")
            w = f"%ws{i}"
        bias = f"%bs{i}" if dialect == "shard" and mode == "dp" else f"%b{i}"
        lines += layer_body(i, x, w, bias, t)
        x = f"%a{i}"
    lines.append(f"  return {x} : {t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--dialect", choices=["spmd", "shard"], required=True)
    ap.add_argument("--mode", choices=["dp", "tp"], required=True)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    with open(a.output, "w") as f:
        f.write(generate(a.layers, a.dialect, a.mode))


if __name__ == "__main__":
    main()
