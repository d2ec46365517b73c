"""Translate a make_fx aten graph into one MLIR func.func on global tensors.

Each supported aten overload has a handler, registered with `core.handles`
in the module of its op category; an overload without one is an
UnsupportedOpError naming the op and the graph node. The graph comes
decomposed to PyTorch's core ATen op set, except for the composite ops that
have a handler here (native_layer_norm[_backward], softmax backward,
nll_loss, embedding backward, gelu backward ...): those are written out in
terms of linalg named ops, linalg.generic and linalg.reduce in forms that
partition well (export.py leaves them out of the decomposition table).

    core         registry, argument binding, node metadata, the Emitter
    views        identity-like and shape ops
    creation     ones/zeros/full/arange ...
    elementwise  casts, arithmetic and math, comparisons, where/masked ops,
                 activations and their backward
    reductions   sum/mean/amax/var/argmax, softmax/log_softmax
    linalg       mm/bmm/addmm/baddbmm
    nn           layer norm, losses, embedding
    indexing     gather/index_select/scatter_add/index_add/index_put
    complex      complex tensors as real pairs (view_as_complex RoPE)
    random       dropout, bernoulli, rand/randn/randint as spmd.random
"""

# Importing the category modules registers their handlers.
from . import (complex, creation, elementwise, indexing, linalg,  # noqa: F401
               nn, random, reductions, views)
from .core import Emitter, handles, tensor_meta

__all__ = ["Emitter", "handles", "tensor_meta"]
