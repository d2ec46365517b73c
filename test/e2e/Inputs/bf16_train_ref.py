"""PyTorch reference for the bf16 MLP training step (Inputs/mlp_train.mlir in
bf16, learning rate 0.02): the same ops in torch.bfloat16 (GEMMs accumulate
in f32 and round once, elementwise ops round after each op, as spmd's
kernels do).

  bf16_train_ref.py gen DIR           arg0..arg3.npy (w1, w2, x, t) as f32
  bf16_train_ref.py check IN OUT K    OUT/result{0,1}.npy vs K torch steps
"""
import sys

import numpy as np
import torch

LR = 0.02


def step(w1, w2, x, t):
    lr = torch.tensor(LR, dtype=torch.bfloat16)
    h = x @ w1
    r = torch.relu(h)
    y = r @ w2
    dy = y - t
    dw2 = r.T @ dy
    dr = dy @ w2.T
    dh = torch.where(h > 0, dr, torch.zeros_like(dr))
    dw1 = x.T @ dh
    return w1 - dw1 * lr, w2 - dw2 * lr


if sys.argv[1] == "gen":
    rng = np.random.default_rng(3)
    for i, s in enumerate([(16, 32), (32, 8), (4, 16), (4, 8)]):
        np.save(f"{sys.argv[2]}/arg{i}.npy",
                rng.uniform(-1, 1, size=s).astype(np.float32))
    sys.exit(0)
w1, w2, x, t = (torch.from_numpy(np.load(f"{sys.argv[2]}/arg{i}.npy"))
                .to(torch.bfloat16) for i in range(4))
for _ in range(int(sys.argv[4])):
    w1, w2 = step(w1, w2, x, t)
ok = True
for i, want in enumerate((w1, w2)):
    got = np.load(f"{sys.argv[3]}/result{i}.npy")
    want = want.float().numpy()
    # A few bf16 ulps (2^-8 relative) of the weights' magnitude; one step
    # more or less is off by > 1.5e-2 here.
    err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
    good = got.dtype == np.float32 and got.shape == want.shape and err <= 1e-2
    print(f"result{i}: {got.dtype} {got.shape} max err {err:.3g} "
          f"{'ok' if good else 'MISMATCH'}")
    ok &= good
sys.exit(0 if ok else 1)
