"""`spmd_torch.emitter.Emitter`: the aten-to-MLIR translator under its
original name; it lives in the `spmd_torch.emit` package."""

from .emit import Emitter

__all__ = ["Emitter"]
