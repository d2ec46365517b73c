"""Random ops as `spmd.random`: dropout, bernoulli, rand/randn(_like),
randint, in-place normal_/uniform_/exponential_.

Every random op of the step becomes an `spmd.random` keyed by the program's
`rng.seed` and `rng.step` arguments (export.py adds them when the graph
draws random numbers); its element at global index i is Philox4x32-10 of
(seed, step, offset + i), so its values are the same on 1 or N ranks and
under every layout. Matching PyTorch's own stream is not a goal (its CPU
generator is a Mersenne Twister). A dropout mask is computed once in the
forward graph and read again by the backward, so its gradient is exact.
"""

import torch

from ..builder import UnsupportedOpError, is_float, tensor_type
from .core import handles

# The aten overloads that draw random numbers (export.py looks for them).
RANDOM_OPS = {
    "aten.rand.default", "aten.rand_like.default", "aten.randn.default",
    "aten.randn_like.default", "aten.bernoulli.p", "aten.bernoulli.default",
    "aten.native_dropout.default", "aten.randint.default", "aten.randint.low",
    "aten.randint_like.default", "aten.randint_like.low_dtype",
    "aten.uniform.default", "aten.normal.float_float",
    "aten.normal_functional.default", "aten.exponential.default",
}


def _f64(x):
    # repr round-trips a double exactly and always has a '.' or an 'e'.
    return repr(float(x))


def draw(E, shape, dtype, distribution, a=0.0, b=0.0):
    """An spmd.random of `shape` and `dtype`."""
    seed, step = E.rng()
    t = E.b.op(
        f'spmd.random "{distribution}"({_f64(a)}, {_f64(b)}) seed {seed.name} '
        f"step {step.name} : {tensor_type(tuple(shape), dtype)}", tuple(shape),
        dtype)
    return t


def _float_out(E):
    shape, dtype = E.out()
    if not is_float(dtype):
        raise UnsupportedOpError(f"a random float op producing {dtype}")
    return shape, dtype


@handles("rand.default", "rand_like.default", "uniform.default")
def _rand(E, node, a):
    shape, dtype = _float_out(E)
    lo, hi = a.get("from", 0.0), a.get("to", 1.0)
    return draw(E, shape, dtype, "uniform", lo, hi)


@handles("randn.default", "randn_like.default")
def _randn(E, node, a):
    shape, dtype = _float_out(E)
    return draw(E, shape, dtype, "normal", 0.0, 1.0)


@handles("normal.float_float", "normal_functional.default")
def _normal(E, node, a):
    # normal_functional is x.normal_(mean, std) (initialization) once
    # torch.export has functionalized it: x's shape, fresh values.
    shape, dtype = _float_out(E)
    return draw(E, shape, dtype, "normal", a.get("mean", 0.0), a.get("std", 1.0))


@handles("exponential.default")
def _exponential(E, node, a):
    # x.exponential_(lambd) once functionalized: -log(1 - u) / lambd with u
    # uniform in [0, 1), so 1 - u is in (0, 1] and the log finite (routers
    # such as Phi-MoE's sparsemixer draw Gumbel noise this way).
    shape, dtype = _float_out(E)
    lambd = float(a.get("lambd", 1.0))
    if not lambd > 0:
        raise UnsupportedOpError(f"exponential with rate {lambd} (must be > 0)")
    u = draw(E, shape, torch.float32, "uniform", 0.0, 1.0)
    f32 = torch.float32

    def body(b, v):
        one_minus = b.sub(b.const(1.0, f32), v[0], f32)
        log = b.emit(f"math.log {one_minus}", "f32")
        neg = b.sub(b.const(0.0, f32), log, f32)
        return b.cast(b.mul(neg, b.const(1.0 / lambd, f32), f32), f32, dtype)
    return E.b.elementwise([u], dtype, body, compute_dtype=f32)


@handles("bernoulli.p")
def _bernoulli_p(E, node, a):
    shape, dtype = E.out()
    return draw(E, shape, dtype, "bernoulli", a.get("p", 0.5))


@handles("bernoulli.default")
def _bernoulli(E, node, a):
    # Per-element probabilities: 1 where a uniform draw is below them.
    shape, dtype = E.out()
    probs = a.self
    u = draw(E, shape, torch.float32, "uniform", 0.0, 1.0)
    f32 = torch.float32
    # Both operands arrive as f32 (elementwise casts them to compute_dtype).
    return E.b.elementwise(
        [u, probs], dtype, lambda b, v: b.cast(
            b.cmp("lt", v[0], v[1], f32), torch.bool, dtype),
        compute_dtype=f32)


@handles("randint.default", "randint.low", "randint_like.default",
         "randint_like.low_dtype")
def _randint(E, node, a):
    # floor(u * (high - low)) + low, u uniform in [0, 1) (24 bits).
    shape, dtype = E.out()
    low, high = a.get("low", 0), a.high
    if high is None or high <= low:
        raise UnsupportedOpError(f"randint with an empty range [{low}, {high})")
    if high - low > (1 << 24):
        raise UnsupportedOpError(
            f"randint over {high - low} values (at most 2^24: 24 random bits)")
    u = draw(E, shape, torch.float32, "uniform", 0.0, float(high - low))
    f32 = torch.float32

    def body(b, v):
        fl = b.emit(f"math.floor {v[0]}", "f32")
        return b.add(b.cast(fl, f32, dtype), b.const(low, dtype), dtype)
    return E.b.elementwise([u], dtype, body, compute_dtype=f32)


@handles("native_dropout.default")
def _native_dropout(E, node, a):
    # (x * mask / (1 - p), mask): the mask keeps an element with 1 - p.
    x, p, train = a.input, float(a.p), a.train
    (shape, dtype), (_, mdtype) = E.out(0), E.out(1)
    if train is False or p == 0.0:
        ones = E.b.full(shape, True, mdtype)
        return x, ones
    if p >= 1.0:
        return E.b.zeros(shape, dtype), E.b.full(shape, False, mdtype)
    mask = draw(E, shape, mdtype, "bernoulli", 1.0 - p)
    return _scaled(E, x, mask, 1.0 / (1.0 - p), dtype), mask


def _scaled(E, x, mask, scale, dtype):
    # x * mask * scale, as PyTorch computes dropout (the mask, cast to x's
    # type, multiplies: a NaN stays NaN where dropped).
    return E.b.elementwise(
        [x, mask], dtype, lambda b, v: b.mul(
            b.mul(v[0], v[1], dtype), b.const(scale, dtype), dtype))


@handles("native_dropout_backward.default")
def _native_dropout_backward(E, node, a):
    _, dtype = E.out()
    return _scaled(E, a.grad_output, a.mask, float(a.scale), dtype)
