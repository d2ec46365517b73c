"""spmd-run benchmarks on this machine (CPU, simulated ranks).

  /usr/bin/python3 bench/plan/run_bench.py BUILD_DIR > bench/plan/RESULTS.md

1. Runtime overhead per executed op: 10,000 tiny unfusable steps (5,000
   4x4 GEMMs + 5,000 relu kernels); step time / 10,000.
2. GEMM throughput inside spmd-run (1024^3 f32) against the same BLAS called
   directly through numpy (np.matmul on float32).
3. MLP training step (forward, backward, SGD; B=64, D=1024, H=4096, O=1024)
   as Megatron TP on 4 simulated ranks against PyTorch eager running the
   unpartitioned step in this process.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

build = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
opt, run = f"{build}/bin/spmd-opt", f"{build}/bin/spmd-run"


def ms_per_step(args):
    out = subprocess.run([run] + args, capture_output=True, text=True, check=True)
    return float(re.search(r"([0-9.]+) ms/step", out.stderr).group(1))


tmp = tempfile.mkdtemp()
print("# spmd-run benchmarks\n")
print(f"Command: `/usr/bin/python3 bench/plan/run_bench.py build > bench/plan/RESULTS.md`"
      f" ({os.cpu_count()} CPUs, numpy {np.__version__})\n")

# 1. Per-op overhead.
with open(f"{tmp}/chain.mlir", "w") as f:
    subprocess.run(["/usr/bin/python3", f"{here}/gen_chain.py", "10000"], stdout=f, check=True)
t0 = time.time()
subprocess.run([opt, f"{tmp}/chain.mlir", "--spmd-compile", "-o", f"{tmp}/chain.plan"], check=True)
compile_s = time.time() - t0
ms = ms_per_step([f"{tmp}/chain.plan", "--seed", "1", "--steps", "50"])
print("## Runtime overhead per executed op\n")
print(f"10,000 steps (4x4 GEMM + relu kernel pairs): {ms:.3f} ms per program step, "
      f"**{ms * 1e3 / 10000:.3f} us per op** (DTensor eager: about 300 us per op). "
      f"spmd-compile took {compile_s:.1f} s (one-shot bufferization dominates); "
      f"identical kernels are JIT-compiled once.\n")

# 2. GEMM throughput.
n = 1024
flop = 2 * n ** 3
ms = ms_per_step([f"{here}/gemm.mlir", "--seed", "1", "--steps", "20"])
a = np.random.rand(n, n).astype(np.float32)
b = np.random.rand(n, n).astype(np.float32)
np.matmul(a, b)
t0 = time.perf_counter()
for _ in range(20):
    np.matmul(a, b)
direct = (time.perf_counter() - t0) / 20 * 1e3
print("## GEMM throughput (1024^3 f32)\n")
print("| path | ms | GFLOP/s |\n|---|---|---|")
print(f"| spmd-run plan_gemm | {ms:.2f} | {flop / ms / 1e6:.1f} |")
print(f"| BLAS via numpy | {direct:.2f} | {flop / direct / 1e6:.1f} |")
print(f"\nRatio spmd-run / direct: {ms / direct:.2f}\n")

# 3. TP MLP step vs PyTorch eager.
B, D, H, O = 64, 1024, 4096, 1024
with open(f"{tmp}/tp.mlir", "w") as f:
    subprocess.run(["/usr/bin/python3", f"{root}/test/e2e/Inputs/gen_local.py", "train",
                    "1", "4", str(B), str(D), str(H), str(O)], stdout=f, check=True)
os.makedirs(f"{tmp}/in", exist_ok=True)
rng = np.random.default_rng(0)
shapes = [(D, H), (H, O), (B, D), (B, O)]
for i, s in enumerate(shapes):
    np.save(f"{tmp}/in/arg{i}.npy", (rng.uniform(-1, 1, size=s) * 0.05).astype(np.float32))
steps = 10
ms = ms_per_step([f"{tmp}/tp.mlir", "--input-dir", f"{tmp}/in", "--steps", str(steps)])
import torch

w1, w2, x, t = (torch.tensor(np.load(f"{tmp}/in/arg{i}.npy")) for i in range(4))
w1.requires_grad_(True)
w2.requires_grad_(True)


def torch_step():
    y = torch.relu(x @ w1) @ w2
    loss = 0.5 * ((y - t) ** 2).sum()
    g1, g2 = torch.autograd.grad(loss, [w1, w2])
    with torch.no_grad():
        w1.sub_(0.05 * g1)
        w2.sub_(0.05 * g2)


torch_step()
t0 = time.perf_counter()
for _ in range(steps):
    torch_step()
eager = (time.perf_counter() - t0) / steps * 1e3
print(f"## MLP training step (B={B}, D={D}, H={H}, O={O}, f32)\n")
print("| run | ms/step |\n|---|---|")
print(f"| spmd-run, Megatron TP on 4 simulated ranks | {ms:.2f} |")
print(f"| PyTorch {torch.__version__} eager, unpartitioned, {torch.get_num_threads()} threads | {eager:.2f} |")
print(f"\nRatio spmd-run / eager: {ms / eager:.2f} (simulation overhead: 4 ranks share "
      f"{os.cpu_count()} cores; each rank's BLAS may start its own threads).")
