"""Finds spmd's runtime module, _spmd_runtime (built by CMake into
<build>/python: SPMD_BUILD_DIR, else the repository's build/)."""

import importlib
import os
import sys

_module = None


def _preload_mpi():
    """Open MPI loads its components with dlopen and resolves them against
    libmpi's symbols, which a Python extension's RTLD_LOCAL load hides:
    libmpi is loaded RTLD_GLOBAL first (as mpi4py does)."""
    import ctypes
    import ctypes.util
    name = ctypes.util.find_library("mpi")
    if name:
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            pass


def _choose_blas_core():
    """OpenBLAS picks its kernels from the CPU model when it loads and falls
    back to Prescott's SSE3 ones for a model it does not know (virtual CPUs
    with AVX-512 among them); OPENBLAS_CORETYPE is read only then, so it is
    set, from the CPU's features, before the runtime module loads OpenBLAS
    (spmd-run re-executes itself for the same reason). The user's own
    setting stands."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                          if line.startswith("flags")), [])
    except OSError:
        return
    flags = set(flags)
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


def runtime():
    global _module
    if _module is not None:
        return _module
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    build = os.environ.get("SPMD_BUILD_DIR") or os.path.join(repo, "build")
    path = os.path.join(build, "python")
    if os.path.isdir(path) and path not in sys.path:
        sys.path.insert(0, path)
    if any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                     "PMIX_RANK")):
        _preload_mpi()
    _choose_blas_core()
    try:
        _module = importlib.import_module("_spmd_runtime")
    except ImportError as e:
        raise ImportError(
            f"spmd_torch: cannot load spmd's runtime module _spmd_runtime from "
            f"{path} ({e}); ./setup.sh builds it (SPMD_BUILD_DIR names "
            "another build folder)") from e
    return _module
