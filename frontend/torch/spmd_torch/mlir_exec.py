"""Run an unannotated global program on the CPU through MLIR's own path.

This checks the *translation* numerically, without the spmd runtime: the
function is called from a generated entry function whose arguments are
dense constants holding the exact input bytes; its results are bit-cast to
integers and printed with the runner utils' printMemrefI32/I64 (so they come
back exactly). The module is lowered with upstream passes by spmd-opt
(one-shot bufferization, linalg to loops, LLVM dialect) and JIT-run by
mlir-runner.
"""

import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import torch

from .builder import Builder, elem_type, tensor_type

LLVM_BIN = "/usr/lib/llvm-22/bin"
LLVM_LIB = "/usr/lib/llvm-22/lib"

LOWERING = [
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map",
    "--convert-linalg-to-loops",
    "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--convert-math-to-llvm",
    "--convert-math-to-libm",
    "--finalize-memref-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-index-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]


class ExecutionError(RuntimeError):
    pass


def find_spmd_opt():
    cand = os.environ.get("SPMD_OPT")
    if cand and os.path.exists(cand):
        return cand
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    for p in (os.path.join(root, "build", "bin", "spmd-opt"),
              shutil.which("spmd-opt")):
        if p and os.path.exists(p):
            return p
    raise ExecutionError("spmd-opt not found (set SPMD_OPT)")


def _printable(b, v, name):
    """Emit ops turning result `v` into an integer tensor; return (value, fn)."""
    dt = v.dtype
    if dt == torch.int64:
        return v, "printMemrefI64", "i64"
    if dt in (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.bool):
        def body(bb, x):
            s = x[0]
            if dt in (torch.float16, torch.bfloat16):
                s = bb.emit(f"arith.extf {s} : {elem_type(dt)} to f32")
            if dt.is_floating_point:
                return bb.emit(f"arith.bitcast {s} : f32 to i32")
            if dt == torch.bool:
                return bb.emit(f"arith.extui {s} : i1 to i32")
            return s
        return b.elementwise([v], torch.int32, body, compute_dtype=dt), \
            "printMemrefI32", "i32"
    if dt == torch.float64:
        def body64(bb, x):
            return bb.emit(f"arith.bitcast {x[0]} : f64 to i64")
        return b.elementwise([v], torch.int64, body64, compute_dtype=dt), \
            "printMemrefI64", "i64"
    raise ExecutionError(f"cannot print results of type {dt}")


def build_runner_module(func_text, func_name, arg_values, result_types):
    """func_text: one func.func (no spmd ops). result_types: [(shape, dtype)]."""
    from .builder import Value
    b = Builder()
    b.counter = 10 ** 6  # keep names apart from the function's
    args = [b.dense(t.detach().cpu(), t.dtype) for t in arg_values]
    res_names = []
    n = len(result_types)
    call = f"call @{func_name}({', '.join(a.name for a in args)}) : " \
           f"({', '.join(a.type for a in args)}) -> " \
           f"({', '.join(tensor_type(s, d) for s, d in result_types)})"
    rname = b.fresh("r")
    b.lines.append(f"{rname}:{n} = {call}" if n > 1 else f"{rname} = {call}")
    for i, (shape, dtype) in enumerate(result_types):
        res_names.append(Value(f"{rname}#{i}" if n > 1 else rname, shape, dtype))
    for v in res_names:
        pv, fn, et = _printable(b, v, None)
        mt = "memref<" + "".join(f"{d}x" for d in pv.shape) + et + ">"
        buf = b.fresh("m")
        b.lines.append(f"{buf} = bufferization.to_buffer {pv.name} : {pv.type} to {mt}")
        u = b.fresh("u")
        b.lines.append(f"{u} = memref.cast {buf} : {mt} to memref<*x{et}>")
        b.lines.append(f"call @{fn}({u}) : (memref<*x{et}>) -> ()")
    body = "\n".join("  " + l for l in b.lines)
    return (f"{func_text}\n"
            "func.func private @printMemrefI32(memref<*xi32>) attributes {llvm.emit_c_interface}\n"
            "func.func private @printMemrefI64(memref<*xi64>) attributes {llvm.emit_c_interface}\n"
            f"func.func @__spmd_run() {{\n{body}\n  return\n}}\n")


_NUM = re.compile(r"-?\d+")


def _parse_prints(text, result_types):
    chunks = text.split("Unranked Memref")[1:]
    if len(chunks) != len(result_types):
        raise ExecutionError(
            f"expected {len(result_types)} printed results, got {len(chunks)}:\n"
            + text[:2000])
    out = []
    for chunk, (shape, dtype) in zip(chunks, result_types):
        data = chunk.split("data =", 1)[1]
        ints = [int(x) for x in _NUM.findall(data)]
        n = int(np.prod(shape)) if shape else 1
        if len(ints) != n:
            raise ExecutionError(f"result of shape {shape}: got {len(ints)} values")
        if dtype == torch.int64:
            arr = np.array(ints, dtype=np.int64)
            t = torch.from_numpy(arr)
        elif dtype == torch.float64:
            t = torch.from_numpy(np.array(ints, dtype=np.int64).view(np.float64))
        elif dtype.is_floating_point:
            f = np.array(ints, dtype=np.int64).astype(np.uint32).view(np.float32)
            t = torch.from_numpy(f.copy()).to(dtype)
        elif dtype == torch.bool:
            t = torch.tensor(ints, dtype=torch.bool)
        else:
            t = torch.tensor(ints, dtype=dtype)
        out.append(t.reshape(shape))
    return out


def run(func_text, func_name, arg_values, result_types, keep_dir=None,
        timeout=600):
    """Execute `func_name` on `arg_values`; returns a list of torch tensors."""
    module = build_runner_module(func_text, func_name, arg_values, result_types)
    tmp = keep_dir or tempfile.mkdtemp(prefix="spmd_exec_")
    os.makedirs(tmp, exist_ok=True)
    try:
        src = os.path.join(tmp, "run.mlir")
        low = os.path.join(tmp, "run.llvm.mlir")
        with open(src, "w") as f:
            f.write(module)
        p = subprocess.run([find_spmd_opt(), src, *LOWERING, "-o", low],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise ExecutionError(f"lowering failed:\n{p.stderr[:4000]}")
        # -O0: LLVM's optimizer on the one big generated function costs far
        # more (minutes for a transformer step) than it saves at run time.
        libs = ",".join(os.path.join(LLVM_LIB, l) for l in (
            "libmlir_c_runner_utils.so", "libmlir_runner_utils.so"))
        p = subprocess.run([os.path.join(LLVM_BIN, "mlir-runner"), low, "-e",
                            "__spmd_run", "-entry-point-result=void", "-O0",
                            f"-shared-libs={libs}"],
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise ExecutionError(f"mlir-runner failed:\n{p.stderr[:4000]}")
        return _parse_prints(p.stdout, result_types)
    finally:
        if keep_dir is None:
            shutil.rmtree(tmp, ignore_errors=True)


def run_program(prog, inputs=None, **kw):
    """Run an ExportedProgram's plain (unannotated) function."""
    text = prog.plain_text
    inputs = prog.inputs if inputs is None else inputs
    types = [(tuple(r.shape), getattr(torch, r.dtype)) for r in prog.results]
    return run(text, prog.func_name, inputs, types, **kw)
