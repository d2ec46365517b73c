"""A chain of N tiny steps that cannot fuse: layers x = relu(x @ w) on 4x4
f32, each one GEMM step and one kernel step (a matmul is a library call, so
the relu after it stays a kernel of its own). Measures the runtime overhead
per executed op: the step time divided by N."""
import sys

n = int(sys.argv[1])
layers = n // 2
t = "tensor<4x4xf32>"
m = "affine_map<(d0, d1) -> (d0, d1)>"
print(f"func.func @chain(%x: {t}, %w: {t}) -> {t} {{")
print("  %zero = arith.constant 0.0 : f32")
prev = "%x"
for i in range(layers):
    print(f"  %e{i} = tensor.empty() : {t}")
    print(f"  %f{i} = linalg.fill ins(%zero : f32) outs(%e{i} : {t}) -> {t}")
    print(f"  %h{i} = linalg.matmul ins({prev}, %w : {t}, {t}) outs(%f{i} : {t}) -> {t}")
    print(f"  %r{i} = linalg.generic {{indexing_maps = [{m}, {m}], "
          f"iterator_types = [\"parallel\", \"parallel\"]}} ins(%h{i} : {t}) "
          f"outs(%e{i} : {t}) {{\n  ^bb0(%a: f32, %o: f32):\n"
          f"    %s = arith.maximumf %a, %zero : f32\n    linalg.yield %s : f32\n"
          f"  }} -> {t}")
    prev = f"%r{i}"
print(f"  return {prev} : {t}\n}}")
