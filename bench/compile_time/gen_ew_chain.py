"""A chain of N elementwise ops on 8x8 f32 (add, mul, sub of one operand):
the worst case for fusion, which merges the whole chain into kernels.

  python3 bench/compile_time/gen_ew_chain.py N > chain.mlir
"""
import sys
n = int(sys.argv[1])
t = "tensor<8x8xf32>"
print(f"func.func @ew(%x: {t}, %y: {t}) -> {t} {{")
prev = "%x"
for i in range(n):
    op = ["arith.addf", "arith.mulf", "arith.subf"][i % 3]
    print(f"  %v{i} = {op} {prev}, %y : {t}")
    prev = f"%v{i}"
print(f"  return {prev} : {t}\n}}")
