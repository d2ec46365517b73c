"""Handlers for tensor creation ops: ones/zeros/empty/full (and their
_like/new_ variants), scalar_tensor and arange.
"""

import torch

from ..builder import is_float
from .core import handles


@handles("ones.default", "ones_like.default", "new_ones.default")
def _ones(E, node, a):
    shape, dtype = E.out()
    return E.b.full(shape, 1, dtype)


@handles("zeros.default", "zeros_like.default", "new_zeros.default",
         "empty_like.default", "new_empty.default", "empty.memory_format")
def _zeros(E, node, a):
    shape, dtype = E.out()
    return E.b.zeros(shape, dtype)


@handles("full.default", "new_full.default")
def _full(E, node, a):
    shape, dtype = E.out()
    return E.b.full(shape, a.fill_value, dtype)


@handles("full_like.default", "fill.Scalar")
def _full_like(E, node, a):
    shape, dtype = E.out()
    v = a.get("fill_value", a.get("value"))
    return E.b.full(shape, v, dtype)


@handles("scalar_tensor.default")
def _scalar_tensor(E, node, a):
    shape, dtype = E.out()
    return E.b.full(shape, a.s, dtype)


@handles("arange.default", "arange.start", "arange.start_step")
def _arange(E, node, a):
    shape, dtype = E.out()
    start = a.get("start", 0) if a.end is not None else 0
    step = a.get("step", 1)

    def body(b, ins, out):
        # The index in the result's integer type (int32 for Bloom's ALiBi
        # powers), or int64 then converted to the float type.
        i = b.index_to(b.index(0), torch.int64 if is_float(dtype) else dtype)
        if is_float(dtype):
            i = b.cast(i, torch.int64, dtype)
        return b.add(b.const(start, dtype), b.mul(i, b.const(step, dtype), dtype), dtype)
    return E.b.generic([], shape, dtype, body)
