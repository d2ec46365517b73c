"""Compares spmd-run's result<i>.npy in GOT with PyTorch's res<i>.npy in WANT
(written by `spmd_torch export --save-outputs`): same count, shapes and
values within |got - want| <= TOL * (1 + |want|). Prints one line per result.

  compare_npy.py GOT WANT [TOL]
"""
import glob
import os
import sys

import numpy as np

got_dir, want_dir = sys.argv[1], sys.argv[2]
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
want = sorted(glob.glob(os.path.join(want_dir, "res*.npy")),
              key=lambda p: int(os.path.basename(p)[3:-4]))
got = glob.glob(os.path.join(got_dir, "result*.npy"))
if not want or len(got) != len(want):
    sys.exit(f"compare_npy: {len(got)} results from spmd-run, {len(want)} from PyTorch")
ok = True
for i in range(len(want)):
    w = np.load(os.path.join(want_dir, f"res{i}.npy")).astype(np.float64)
    g = np.load(os.path.join(got_dir, f"result{i}.npy")).astype(np.float64)
    if g.shape != w.shape:
        print(f"result{i}: shape {g.shape}, PyTorch {w.shape}: MISMATCH")
        ok = False
        continue
    err = float(np.max(np.abs(g - w) / (1 + np.abs(w)))) if w.size else 0.0
    good = err <= tol
    ok &= good
    print(f"result{i}: shape {tuple(w.shape)} vs PyTorch max err {err:.2e} {'ok' if good else 'MISMATCH'}")
print("torch comparison passed" if ok else "torch comparison FAILED")
sys.exit(0 if ok else 1)
