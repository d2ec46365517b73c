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
    try:
        _module = importlib.import_module("_spmd_runtime")
    except ImportError as e:
        raise ImportError(
            f"spmd_torch: cannot load spmd's runtime module _spmd_runtime from "
            f"{path} ({e}); ./setup.sh builds it (SPMD_BUILD_DIR names "
            "another build folder)") from e
    return _module
