"""Independent numpy reference for Inputs/mlp_train.mlir and the Megatron /
data-parallel local programs (same math, global tensors).

  mlp_ref.py gen DIR [SEED]        write arg0..arg3.npy (w1, w2, x, t)
  mlp_ref.py check IN OUT STEPS    compare OUT/result{0,1}.npy with STEPS
                                   SGD steps computed in float64
  mlp_ref.py genfwd DIR [ROWS]     write arg0..arg2.npy (x ROWSx16, w1, w2)
  mlp_ref.py checkfwd IN OUT       compare OUT/result{0,1,2,3}.npy with
                                   (y, y, x, x), y = relu(x w1) w2
"""
import sys

import numpy as np

LR = 0.05


def step(w1, w2, x, t):
    h = x @ w1
    r = np.maximum(h, 0)
    y = r @ w2
    dy = y - t
    dw2 = r.T @ dy
    dr = dy @ w2.T
    dh = dr * (h > 0)
    dw1 = x.T @ dh
    return w1 - LR * dw1, w2 - LR * dw2


def main():
    if sys.argv[1] == "gen":
        out = sys.argv[2]
        rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
        shapes = [(16, 32), (32, 8), (4, 16), (4, 8)]
        for i, s in enumerate(shapes):
            a = rng.uniform(-1, 1, size=s).astype(np.float32)
            np.save(f"{out}/arg{i}.npy", a)
        return 0
    if sys.argv[1] == "genfwd":
        rng = np.random.default_rng(1)
        rows = int(sys.argv[3]) if len(sys.argv) > 3 else 4
        for i, s in enumerate([(rows, 16), (16, 32), (32, 8)]):
            np.save(f"{sys.argv[2]}/arg{i}.npy", rng.uniform(-1, 1, size=s).astype(np.float32))
        return 0
    if sys.argv[1] == "checkfwd":
        x, w1, w2 = (np.load(f"{sys.argv[2]}/arg{i}.npy").astype(np.float64) for i in range(3))
        y = np.maximum(x @ w1, 0) @ w2
        ok = True
        for i, want in enumerate((y, y, x, x)):
            got = np.load(f"{sys.argv[3]}/result{i}.npy")
            err = np.max(np.abs(got - want)) if got.shape == want.shape else float("inf")
            print(f"result{i}: shape {got.shape} max abs err {err:.3g}")
            ok = ok and got.shape == want.shape and np.allclose(got, want, atol=1e-4, rtol=1e-4)
        return 0 if ok else 1
    ind, outd, steps = sys.argv[2], sys.argv[3], int(sys.argv[4])
    w1, w2, x, t = (np.load(f"{ind}/arg{i}.npy").astype(np.float64) for i in range(4))
    for _ in range(steps):
        w1, w2 = step(w1, w2, x, t)
    ok = True
    for i, want in enumerate((w1, w2)):
        got = np.load(f"{outd}/result{i}.npy")
        assert got.dtype == np.float32, got.dtype
        assert got.shape == want.shape, (got.shape, want.shape)
        err = np.max(np.abs(got - want))
        print(f"result{i}: shape {got.shape} max abs err {err:.3g}")
        if not np.allclose(got, want, atol=1e-4, rtol=1e-4):
            print(f"result{i}: MISMATCH")
            ok = False
    # The step must have changed the weights (the test can fail).
    w1_0 = np.load(f"{ind}/arg0.npy")
    assert np.max(np.abs(np.load(f"{outd}/result0.npy") - w1_0)) > 1e-3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
