#!/bin/bash
# One GPU session, planned to finish inside a 10-minute command: unpacks the
# bundle of bench/cuda/bundle.sh, then runs in order of importance, each
# stage under its own time cap so that a slow or hung stage cannot eat the
# others: the GPU unit tests (CudaGpu.*), the cuda-gpu lit tests, the kernel,
# GEMM and NCCL benchmarks, and the one-GPU training step against PyTorch
# eager and torch.compile. Logs and results go to $OUT (default ./gpu-out).
#
# Usage (repository root, on the GPU machine):
#   bench/cuda/gpu_session.sh [bundle=.gpu/spmd-gpu.tar.xz]
# STAGES picks stages (default "gtest lit bench step compile profile"; "ncclprobe"
# runs the NCCL benchmark with NCCL_DEBUG=WARN against each libnccl found).
# Stage caps (seconds) can be changed with CAP_TESTS, CAP_LIT, CAP_BENCH,
# CAP_STEP, CAP_COMPILE, CAP_PROFILE, CAP_PROBE; STEP_ARGS replaces step.py's size, precision and
# repetition arguments.
set -u
bundle=${1:-.gpu/spmd-gpu.tar.xz}
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
root=$PWD
t0=$(date +%s)
log="$out/session.log"
say() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$log"; }
want() { case " ${STAGES:-gtest lit bench step compile profile} " in *" $1 "*) return 0 ;; esac; return 1; }
stage() { # cap name command...: runs under timeout, output to $out/name.log
  local cap=$1 name=$2
  shift 2
  say "== $name (cap $cap s): $*"
  timeout -k 10 "$cap" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  say "== $name: rc $rc$([ $rc = 124 ] && echo ' (timed out)')"
  tail -n 15 "$out/$name.log" >> "$log"
}

# --- unpack and find the target's CUDA libraries --------------------------
dest=/tmp/spmd-gpu
rm -rf "$dest" && mkdir -p "$dest"
if command -v xz > /dev/null; then
  xz -dc "$bundle" | tar -C "$dest" -xf -
else
  python3 -c "import tarfile, sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
    "$bundle" "$dest"
fi
cudalibs=""
for l in libnvrtc.so.13 libcublasLt.so.13 libnccl.so.2 libcuda.so.1; do
  p=$( (ldconfig -p | awk -v l="$l" '$1 == l {print $NF}' | head -1
        find /usr/local/cuda* /usr/local/nvidia /usr/lib /opt -name "$l" 2>/dev/null) |
       head -1)
  say "$l: ${p:-NOT FOUND}"
  [ -n "$p" ] && cudalibs="$cudalibs:$(dirname "$p")"
done
export LD_LIBRARY_PATH="$dest/lib$cudalibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$dest/bin:$dest/llvm-bin:$PATH"
export SPMD_NVRTC_CACHE=/tmp/spmd-nvrtc-cache
mkdir -p "$SPMD_NVRTC_CACHE"
{
  nvidia-smi
  uname -a
  python3 -c "import torch, numpy; print('torch', torch.__version__, torch.cuda.get_device_name(0), 'numpy', numpy.__version__)"
  for b in "$dest"/bin/spmd-run "$dest"/bin/spmd-cuda-runtime-tests; do
    ldd "$b" | grep 'not found' | sed "s|^|$(basename "$b"): |"
  done
} >> "$log" 2>&1
# The unit tests load a fake driver from the build folder they were built in.
if [ -f "$dest/fake/path" ]; then
  mkdir -p "$(dirname "$(cat "$dest/fake/path")")" &&
    cp "$dest/fake/libspmd-fake-libcuda.so" "$(cat "$dest/fake/path")"
fi
say "unpacked; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

want ncclprobe && stage "${CAP_PROBE:-60}" ncclprobe sh -c '
  for l in $(find / -name "libnccl.so.2*" -not -path "/proc/*" 2>/dev/null); do
    echo "### $l"; ls -la "$l"
    NCCL_DEBUG=WARN LD_PRELOAD="$l" '"$dest"'/bin/spmd-cuda-nccl-bench 1 65536 2>&1 | head -40
    echo "### $l, SPMD_NCCL_SELF_GROUPS=1"
    SPMD_NCCL_SELF_GROUPS=1 NCCL_DEBUG=WARN LD_PRELOAD="$l" '"$dest"'/bin/spmd-cuda-nccl-bench 1 65536 2>&1 | head -40
  done'

# --- correctness ----------------------------------------------------------
want gtest && stage "${CAP_TESTS:-60}" gtest sh -c '
  for t in spmd-cuda-runtime-tests spmd-cuda-nvrtc-tests spmd-device-executor-tests; do
    echo "### $t"; '"$dest"'/bin/$t --gtest_brief=1 || echo "### $t FAILED rc $?"
  done'

# lit: a site config pointing at the unpacked tools and this checkout.
obj="$dest/obj"
mkdir -p "$obj/test" "$obj/targets/cuda"
: > "$obj/targets/cuda/libSPMDCudaNvrtc.a" # the "nvrtc" feature's marker
cat > "$obj/test/lit.site.cfg.py" << EOF
config.llvm_tools_dir = "$dest/llvm-bin"
config.spmd_src_root = "$root"
config.spmd_obj_root = "$obj"
config.spmd_tools_dir = "$dest/bin"
config.spmd_python = "$(command -v python3)"
import lit.llvm
lit.llvm.initialize(lit_config, config)
lit_config.load_config(config, "$root/lit.cfg.py")
EOF
want lit && stage "${CAP_LIT:-100}" lit env PYTHONPATH="$dest:$root/frontend/torch" \
  python3 -c 'from lit.main import main; main()' -v -j 3 "$obj/test" --filter 'gpu\.test|cuda-gpu\.test'

# --- benchmarks -----------------------------------------------------------
want bench && stage "${CAP_BENCH:-120}" bench sh -c '
  b='"$dest"'/bin
  echo "\$ spmd-cuda-kernel-bench"; $b/spmd-cuda-kernel-bench
  echo "\$ spmd-cuda-kernel-bench 4096 1000"; $b/spmd-cuda-kernel-bench 4096 1000
  echo "\$ spmd-cuda-gemm-bench"; $b/spmd-cuda-gemm-bench
  echo "\$ spmd-cuda-nccl-bench 1 268435456"; $b/spmd-cuda-nccl-bench 1 268435456
  python3 test/e2e/Inputs/gen_local.py train 3 1 > /tmp/bench-dp3.mlir
  echo "\$ spmd-cuda-check bench-dp3.mlir --gpu --bench 50 --dim-size 2097152"
  $b/spmd-cuda-check /tmp/bench-dp3.mlir --gpu --bench 50 --dim-size 2097152'

# --- the training step on one GPU ------------------------------------------
work=/tmp/spmd-step
want step && stage "${CAP_STEP:-180}" step env PYTHONUNBUFFERED=1 python3 bench/cuda/step.py \
  --bin "$dest/bin" --gpus 1 --work "$work" --keep-inputs \
  --out "$out/results-step.md" ${STEP_ARGS:---precisions bf16 --reps 1 --steps 5}
# Per precision: torch.compile on the same step, and where the spmd step's
# time goes (rank 0's profile and a Chrome trace).
for d in "$work"/*-single1; do
  [ -d "$d/in" ] || continue
  prec=$(basename "$d" | cut -d- -f1)
  torch_flags="--dtype float32" spmd_flags=""
  [ "$prec" = bf16 ] && torch_flags="--dtype bfloat16"
  [ "$prec" = tf32 ] && torch_flags="--dtype float32 --tf32" spmd_flags="--tf32"
  want compile && stage "${CAP_COMPILE:-90}" "compile-$prec" python3 \
    bench/cuda/step_torch.py single 1 "$d" --warmup 3 --steps 5 --compile $torch_flags
  want profile && stage "${CAP_PROFILE:-60}" "profile-$prec" "$dest/bin/spmd-run" \
    "$d/step.mlir" --backend cuda --comm nccl --input-dir "$d/in" --steps 3 \
    --profile $spmd_flags --trace "$out/trace-$prec.json"
done
say "done"
# At most 8 files come back from a device machine: the logs in one archive.
tar -C "$out" -czf "$out/logs.tgz" $(cd "$out" && ls *.log | grep -v session.log) &&
  (cd "$out" && ls *.log | grep -v session.log | xargs rm -f)
