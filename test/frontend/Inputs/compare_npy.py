"""Compares spmd-run's result<i>.npy in GOT with PyTorch's res<i>.npy in WANT
(written by `spmd_torch export --save-outputs`): same count, shapes and
values within max|got - want| <= TOL * max|want| per result (relative to the
tensor's scale, so tiny ones such as Adam's exp_avg_sq are held to their own
size, not to 1). Prints one line per result.

  compare_npy.py GOT WANT [TOL] [--meta FILE]

--meta names each result from `spmd_torch export --metadata FILE`.
"""
import glob
import json
import os
import sys

import numpy as np

argv = sys.argv[1:]
names = {}
if "--meta" in argv:
    i = argv.index("--meta")
    with open(argv[i + 1]) as f:
        names = {j: r["name"] for j, r in enumerate(json.load(f)["results"])}
    del argv[i:i + 2]
got_dir, want_dir = argv[0], argv[1]
tol = float(argv[2]) if len(argv) > 2 else 1e-4
want = sorted(glob.glob(os.path.join(want_dir, "res*.npy")),
              key=lambda p: int(os.path.basename(p)[3:-4]))
got = glob.glob(os.path.join(got_dir, "result*.npy"))
if not want or len(got) != len(want):
    sys.exit(f"compare_npy: {len(got)} results from spmd-run, {len(want)} from PyTorch")


def label(i):
    return f" ({names[i]})" if i in names else ""


ok = True
for i in range(len(want)):
    w = np.load(os.path.join(want_dir, f"res{i}.npy")).astype(np.float64)
    g = np.load(os.path.join(got_dir, f"result{i}.npy")).astype(np.float64)
    if g.shape != w.shape:
        print(f"result{i}{label(i)}: shape {g.shape}, PyTorch {w.shape}: MISMATCH")
        ok = False
        continue
    scale = max(float(np.max(np.abs(w))), 1e-12) if w.size else 1.0
    err = float(np.max(np.abs(g - w))) / scale if w.size else 0.0
    if not np.all(np.isfinite(g)):
        err = float("inf")
    good = err <= tol
    ok &= good
    print(f"result{i}{label(i)}: shape {tuple(w.shape)} vs PyTorch max err {err:.2e} {'ok' if good else 'MISMATCH'}")
print("torch comparison passed" if ok else "torch comparison FAILED")
sys.exit(0 if ok else 1)
