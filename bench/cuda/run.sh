#!/bin/sh
# Runs the CUDA benchmarks on this machine's GPUs and records the results
# with the commands that produced them: bench/cuda/results-<gpu>.txt.
# Usage (from the repository root, after ./setup.sh build):
#   bench/cuda/run.sh [build-dir]
set -eu
build=${1:-build}
bin=$build/bin
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
      tr ' ' '_' || true)
out=bench/cuda/results-${gpu:-unknown}.txt
: > "$out"
run() {
  echo "\$ $*" | tee -a "$out"
  "$@" 2>&1 | tee -a "$out"
  echo | tee -a "$out"
}
run "$bin/spmd-cuda-kernel-bench"
run "$bin/spmd-cuda-kernel-bench" 4096 1000
run "$bin/spmd-cuda-gemm-bench"
if [ -x "$bin/spmd-cuda-nccl-bench" ]; then
  run "$bin/spmd-cuda-nccl-bench"
fi
# Generated kernels (targets/cuda/CudaEmitter) vs a device copy: the kernels of a
# data-parallel MLP step (uneven batch shards, a dynamic dim) at 2^21 rows.
python3 test/e2e/Inputs/gen_local.py train 3 1 > "$build/bench-dp3.mlir"
run "$bin/spmd-cuda-check" "$build/bench-dp3.mlir" --gpu --bench 50 --dim-size 2097152
echo "results in $out"
