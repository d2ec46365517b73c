"""Writes one_hot.mlir's inputs (token ids with repeats, a table, a
gradient) and, after spmd-run, checks its results against NumPy's gather
and scatter-add: an independent reference for the CPU target's rewrite of
one-hot contractions (--check's reference runs through the same target).

  one_hot_ref.py write DIR  |  one_hot_ref.py check DIR OUTDIR
"""
import sys

import numpy as np

mode, d = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
idx = rng.integers(0, 7, (5, 3)).astype(np.int64)
idx[0, 0] = idx[4, 2] = 6  # a repeated row, in the second rank's shard
table = rng.standard_normal((7, 4)).astype(np.float32)
g = rng.standard_normal((5, 3, 4)).astype(np.float32)
if mode == "write":
    for i, a in enumerate((idx, table, g)):
        np.save(f"{d}/arg{i}.npy", a)
    sys.exit(0)
emb, grad = (np.load(f"{sys.argv[3]}/result{i}.npy") for i in range(2))
want_grad = np.zeros_like(table)
np.add.at(want_grad, idx.reshape(-1), g.reshape(-1, 4))
e1 = np.abs(emb - table[idx]).max()
e2 = np.abs(grad - want_grad).max()
assert e1 < 1e-6 and e2 < 1e-5, (e1, e2)
print(f"gather and scatter-add equal NumPy's (max abs err {e1:.1e}, {e2:.1e})")
