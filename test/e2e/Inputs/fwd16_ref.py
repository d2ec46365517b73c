"""Inputs and numpy check for fwd_f16.mlir / fwd_bf16.mlir.

  fwd16_ref.py gen DIR f16|bf16    arg0..2 (x 4x16, w 16x8, b 8); f16 as
                                   float16, bf16 as float32 (no NumPy bf16)
  fwd16_ref.py check IN OUT f16|bf16
"""
import sys

import numpy as np

mode, ty = sys.argv[1], sys.argv[-1]
if mode == "gen":
    rng = np.random.default_rng(0)
    for i, s in enumerate([(4, 16), (16, 8), (8,)]):
        a = rng.uniform(-1, 1, size=s).astype(np.float32)
        np.save(f"{sys.argv[2]}/arg{i}.npy", a.astype(np.float16) if ty == "f16" else a)
    sys.exit(0)
x, w, b = (np.load(f"{sys.argv[2]}/arg{i}.npy").astype(np.float32) for i in range(3))
if ty == "bf16":  # the program sees the inputs rounded to bf16
    def rnd(a):
        u = a.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
        return u.astype(np.uint32).view(np.float32)
    x, w, b = rnd(x), rnd(w), rnd(b)
want = np.tanh(x @ w + b)
got = np.load(f"{sys.argv[3]}/result0.npy")
print(f"dtype {got.dtype} shape {got.shape}")
err = np.abs(got.astype(np.float32) - want).max()
tol = 2e-3 if ty == "f16" else 2e-2
print(f"max abs err {err:.3g} (tolerance {tol})")
sys.exit(0 if err <= tol else 1)
