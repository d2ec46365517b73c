# lit configuration for spmd. The generated build/test/lit.site.cfg.py sets
# the paths and loads this file.
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "spmd"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.site.cfg.py.in", "unit", "Inputs"]
config.test_source_root = os.path.join(config.spmd_src_root, "test")
config.test_exec_root = os.path.join(config.spmd_obj_root, "test")

llvm_config.use_default_substitutions()
# Prepended in turn: the project's tools come first, then LLVM's
# (FileCheck, not, count), then the system's.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.spmd_tools_dir, append_path=True)
config.substitutions.append(("%spmd_src", config.spmd_src_root))
# %python is the frontend's Python (PyTorch 2.x), not lit's own that
# use_default_substitutions put first.
config.substitutions = [s for s in config.substitutions if s[0] != "%python"]
config.substitutions.append(("%python", config.spmd_python))
config.substitutions.append(("%spmd_obj", config.spmd_obj_root))
# Tests of the generated CUDA need NVRTC (a build with the CUDA toolkit);
# the --backend cuda error tests also need the fake driver of test/unit.
if os.path.exists(os.path.join(config.spmd_obj_root, "targets", "cuda",
                               "libSPMDCudaNvrtc.a")):
    config.available_features.add("nvrtc")
if os.path.exists(os.path.join(config.spmd_obj_root, "test", "unit",
                               "libspmd-fake-libcuda.so")):
    config.available_features.add("fake-libcuda")
# A CPU with the AVX-512 subsets OpenBLAS's SkylakeX kernels use.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((l.split(":", 1)[1].split() for l in cpuinfo
                      if l.startswith("flags")), [])
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        config.available_features.add("avx512")
except OSError:
    pass
# A machine with an NVIDIA GPU and its driver: the GPU runs of the generated
# kernels (the device nodes exist only where the driver is loaded).
if os.path.exists("/dev/nvidiactl") and os.path.exists("/dev/nvidia0"):
    config.available_features.add("cuda-gpu")
