"""spmd_torch: PyTorch frontend of spmd.

Traces training steps (forward, backward, optimizer) or forward passes with
make_fx and prints them as spmd global programs, with DTensor-style parallel
plans mapped to `spmd.layout` annotations; `compile` runs them on simulated
ranks in this process (spmd's runtime module).
"""

from .builder import UnsupportedOpError
from .compile import CompiledModule, CompiledStep, compile
from .export import ExportedProgram, TensorInfo, export_forward, export_train_step
from .optim import SGD, Adam, AdamW
from .placements import Layout, Mesh, Partial, Replicate, Shard
from .plans import (ColwiseParallel, ParallelStyle, PrepareModuleInput,
                    PrepareModuleOutput, RowwiseParallel, SequenceParallel)

__all__ = [
    "UnsupportedOpError", "compile", "CompiledStep", "CompiledModule", "ExportedProgram", "TensorInfo", "export_forward",
    "export_train_step", "SGD", "Adam", "AdamW", "Layout", "Mesh", "Partial",
    "Replicate", "Shard", "ColwiseParallel", "ParallelStyle",
    "PrepareModuleInput", "PrepareModuleOutput", "RowwiseParallel",
    "SequenceParallel",
]
