"""Prints the GLOBAL annotated MLP training step (test/e2e/Inputs/mlp_train.mlir:
forward, hand-written backward, SGD) on a given mesh with given layouts.

  global_mlp.py MESH W1 W2 X T [BATCH]

MESH is like 'tp=4' or 'dp=2,tp=2'; each layout is a ';'-separated placement
list, one per mesh axis ('S(1)', 'R;S(0)', 'S(0);S(0)'). The weight results
keep the weights' layouts. BATCH (default 4) is the global batch size.
"""
import os
import sys

mesh, w1, w2, x, t = sys.argv[1:6]
batch = int(sys.argv[6]) if len(sys.argv) > 6 else 4
src = open(os.path.join(os.path.dirname(__file__), "mlp_train.mlir")).read()
body = src[src.index("#id"):].replace("tensor<4x", f"tensor<{batch}x")
axes = ", ".join('"%s"=%s' % tuple(a.split("=")) for a in mesh.split(","))


def lay(p):
    return "{spmd.layout = #spmd.layout<@mesh, [%s]>}" % ", ".join(p.split(";"))


old = """func.func @train_step(%w1: tensor<16x32xf32>, %w2: tensor<32x8xf32>,
                      %x: tensor<BATCHx16xf32>, %t: tensor<BATCHx8xf32>)
    -> (tensor<16x32xf32>, tensor<32x8xf32>) {""".replace("BATCH", str(batch))
new = f"""func.func @train_step(%w1: tensor<16x32xf32> {lay(w1)},
    %w2: tensor<32x8xf32> {lay(w2)},
    %x: tensor<{batch}x16xf32> {lay(x)}, %t: tensor<{batch}x8xf32> {lay(t)})
    -> (tensor<16x32xf32> {lay(w1)}, tensor<32x8xf32> {lay(w2)}) {{"""
assert old in body
print(f"spmd.mesh @mesh [{axes}]")
print(body.replace(old, new))
