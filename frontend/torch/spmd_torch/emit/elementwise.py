"""Handlers for pointwise ops: dtype casts, arithmetic and math functions,
clamp and pow, comparisons and logic, where/masked_fill/tril/triu,
addcmul/addcdiv/lerp, and the activations (gelu, silu, relu via max,
sigmoid, tanh) with their backward ops.
"""

import math

import torch

from ..builder import UnsupportedOpError, Value, broadcast_shapes, is_float
from .core import handles


# -- casts --------------------------------------------------------------------

@handles("_to_copy.default")
def _to_copy(E, node, a):
    _, dtype = E.out()
    return E.b.cast(a.self, dtype)


# -- arithmetic and math ------------------------------------------------------

def _binary(fn):
    def handler(E, node, a):
        other = a.other
        alpha = a.get("alpha", 1)
        _, dtype = E.out()

        def body(b, x):
            y = x[1]
            if alpha != 1:
                y = b.mul(y, b.const(alpha, dtype), dtype)
            return fn(b, x[0], y, dtype)
        return E.ew([a.self, other], body)
    return handler


handles("add.Tensor", "add.Scalar")(_binary(lambda b, x, y, t: b.add(x, y, t)))
handles("sub.Tensor", "sub.Scalar")(_binary(lambda b, x, y, t: b.sub(x, y, t)))
handles("mul.Tensor", "mul.Scalar")(_binary(lambda b, x, y, t: b.mul(x, y, t)))
handles("maximum.default")(_binary(lambda b, x, y, t: b.max(x, y, t)))
handles("minimum.default")(_binary(lambda b, x, y, t: b.min(x, y, t)))


@handles("div.Tensor", "div.Scalar")
def _div(E, node, a):
    _, dtype = E.out()
    return E.ew([a.self, a.other], lambda b, x: b.div(x[0], x[1], dtype))


@handles("div.Tensor_mode", "div.Scalar_mode", "floor_divide.default",
         "floor_divide.Scalar")
def _div_mode(E, node, a):
    # rounding_mode "trunc" or "floor" (Llama 4's chunked attention: position
    # // chunk); None is true division.
    _, dtype = E.out()
    mode = "floor" if "floor_divide" in str(node.target) else a.rounding_mode

    def body(b, x):
        q = b.div(x[0], x[1], dtype)
        if mode is None:
            return q
        if is_float(dtype):
            return b.unary_math("floor" if mode == "floor" else "trunc", q,
                                dtype)
        if mode == "trunc":
            return q
        # floor: one less where the division was inexact and signs differ.
        zero = b.const(0, dtype)
        rem = b.binop(None, "arith.remsi", x[0], x[1], dtype)
        inexact = b.cmp("ne", rem, zero, dtype)
        neg = b.emit(f"arith.xori {b.cmp('lt', x[0], zero, dtype)}, "
                     f"{b.cmp('lt', x[1], zero, dtype)}", "i1")
        fix = b.emit(f"arith.andi {inexact}, {neg}", "i1")
        return b.select(fix, b.sub(q, b.const(1, dtype), dtype), q, dtype)
    return E.ew([a.self, a.other], body)


@handles("rsub.Scalar", "rsub.Tensor")
def _rsub(E, node, a):
    _, dtype = E.out()
    alpha = a.get("alpha", 1)

    def body(b, x):
        y = x[0] if alpha == 1 else b.mul(x[0], b.const(alpha, dtype), dtype)
        return b.sub(x[1], y, dtype)
    return E.ew([a.self, a.other], body)


def _unary(fn):
    def handler(E, node, a):
        _, dtype = E.out()
        return E.ew([a.self], lambda b, x: fn(b, x[0], dtype))
    return handler


handles("neg.default")(_unary(lambda b, x, t: b.neg(x, t)))
handles("exp.default")(_unary(lambda b, x, t: b.exp(x, t)))
handles("log.default")(_unary(lambda b, x, t: b.log(x, t)))
handles("log1p.default")(
    _unary(lambda b, x, t: b.unary_math("log1p", x, t)))
handles("expm1.default")(
    _unary(lambda b, x, t: b.unary_math("expm1", x, t)))
handles("tanh.default")(_unary(lambda b, x, t: b.tanh(x, t)))
handles("erf.default")(_unary(lambda b, x, t: b.erf(x, t)))
handles("sqrt.default")(_unary(lambda b, x, t: b.sqrt(x, t)))
handles("rsqrt.default")(_unary(lambda b, x, t: b.rsqrt(x, t)))
handles("abs.default")(_unary(lambda b, x, t: b.abs(x, t)))
handles("sin.default")(_unary(lambda b, x, t: b.unary_math("sin", x, t)))
handles("cos.default")(_unary(lambda b, x, t: b.unary_math("cos", x, t)))
handles("sigmoid.default")(_unary(lambda b, x, t: b.sigmoid(x, t)))
handles("reciprocal.default")(
    _unary(lambda b, x, t: b.div(b.const(1.0, t), x, t)))
handles("relu.default")(
    _unary(lambda b, x, t: b.max(x, b.const(0, t), t)))
handles("silu.default")(
    _unary(lambda b, x, t: b.mul(x, b.sigmoid(x, t), t)))


@handles("clamp_min.default")
def _clamp_min(E, node, a):
    _, dtype = E.out()
    return E.ew([a.self, a.min], lambda b, x: b.max(x[0], x[1], dtype))


@handles("clamp_max.default")
def _clamp_max(E, node, a):
    _, dtype = E.out()
    return E.ew([a.self, a.max], lambda b, x: b.min(x[0], x[1], dtype))


@handles("clamp.default", "clamp.Tensor")
def _clamp(E, node, a):
    _, dtype = E.out()
    ops = [a.self]
    lo, hi = a.min, a.max
    if lo is not None:
        ops.append(lo)
    if hi is not None:
        ops.append(hi)

    def body(b, x):
        r = x[0]
        k = 1
        if lo is not None:
            r = b.max(r, x[k], dtype)
            k += 1
        if hi is not None:
            r = b.min(r, x[k], dtype)
        return r
    return E.ew(ops, body)


def _pow_scalar_exp(b, x, e, t):
    if e == 1:
        return x
    if e == 2:
        return b.mul(x, x, t)
    if e == 3:
        return b.mul(b.mul(x, x, t), x, t)
    if e == 0.5:
        return b.sqrt(x, t)
    if e == -0.5:
        return b.rsqrt(x, t)
    if e == -1:
        return b.div(b.const(1.0, t), x, t)
    if e == 0:
        return b.const(1, t)
    if not is_float(t):
        raise UnsupportedOpError(f"integer pow with exponent {e}")
    return b.powf(x, b.const(e, t), t)


@handles("pow.Tensor_Scalar")
def _pow_ts(E, node, a):
    _, dtype = E.out()
    e = a.exponent
    return E.ew([a.self], lambda b, x: _pow_scalar_exp(b, x[0], e, dtype))


@handles("pow.Tensor_Tensor", "pow.Scalar")
def _pow_tt(E, node, a):
    _, dtype = E.out()
    if not is_float(dtype):
        raise UnsupportedOpError("integer pow")
    return E.ew([a.self, a.exponent], lambda b, x: b.powf(x[0], x[1], dtype))


# -- comparisons and logic ----------------------------------------------------

def _result_dtype(*operands):
    """torch's type promotion for tensors (by rank category) and scalars."""
    dummies = [torch.empty((0,) * o.rank, dtype=o.dtype) if isinstance(o, Value)
               else o for o in operands]
    if len(dummies) == 1:
        d = dummies[0]
        return d.dtype if isinstance(d, torch.Tensor) else torch.tensor(d).dtype
    return torch.result_type(dummies[0], dummies[1])


def _compare(pred):
    def handler(E, node, a):
        compute = _result_dtype(a.self, a.other)
        return E.ew([a.self, a.other],
                    lambda b, x: b.cmp(pred, x[0], x[1], compute),
                    compute=compute)
    return handler


for _p in ("eq", "ne", "lt", "le", "gt", "ge"):
    handles(f"{_p}.Tensor", f"{_p}.Scalar")(_compare(_p))


@handles("bitwise_not.default", "logical_not.default")
def _not(E, node, a):
    _, dtype = E.out()
    if dtype != torch.bool:
        raise UnsupportedOpError(f"bitwise/logical not on {dtype}")
    x = E.b.cast(a.self, torch.bool)
    return E.ew([x], lambda b, v: b.emit(
        f"arith.xori {v[0]}, {b.const(True, torch.bool)}", "i1"), compute=torch.bool)


def _logic(op):
    def handler(E, node, a):
        _, dtype = E.out()
        if dtype != torch.bool:
            raise UnsupportedOpError(f"bitwise {op} on {dtype}")
        return E.ew([a.self, a.other],
                    lambda b, x: b.emit(f"arith.{op} {x[0]}, {x[1]}", "i1"),
                    compute=torch.bool)
    return handler


handles("bitwise_and.Tensor", "logical_and.default")(_logic("andi"))
handles("bitwise_or.Tensor", "logical_or.default")(_logic("ori"))


# -- selects and masks --------------------------------------------------------

@handles("where.self")
def _where(E, node, a):
    _, dtype = E.out()
    return _where_impl(E, a, dtype)


def _where_impl(E, a, dtype):
    cond = a.condition
    if cond.dtype != torch.bool:
        cond = E.b.cast(cond, torch.bool)
    x = a.self if isinstance(a.self, Value) else E.b.full((), a.self, dtype)
    y = a.other if isinstance(a.other, Value) else E.b.full((), a.other, dtype)
    x, y = E.b.cast(x, dtype), E.b.cast(y, dtype)
    shape = broadcast_shapes(cond.shape, x.shape, y.shape)
    return E.b.generic(E.b.broadcast_inputs([cond, x, y], shape), shape, dtype,
                       lambda b, i, o: b.select(i[0], i[1], i[2], dtype))


@handles("masked_fill.Scalar", "masked_fill.Tensor")
def _masked_fill(E, node, a):
    shape, dtype = E.out()
    val = a.value
    tensors = [a.mask, a.self]
    if isinstance(val, Value):
        tensors.append(E.b.cast(val, dtype))

    def body(b, i, o):
        fill = i[2] if len(i) > 2 else b.const(val, dtype)
        return b.select(i[0], fill, i[1], dtype)
    return E.b.generic(E.b.broadcast_inputs(tensors, shape), shape, dtype, body)


def _tri(E, x, diagonal, lower):
    def body(b, ins, out):
        i = b.index_to(b.index(x.rank - 2), torch.int64)
        j = b.index_to(b.index(x.rank - 1), torch.int64)
        lim = b.add(i, b.const(diagonal, torch.int64), torch.int64)
        keep = b.cmp("le" if lower else "ge", j, lim, torch.int64)
        return b.select(keep, ins[0], b.const(0, x.dtype), x.dtype)
    m = [f"d{i}" for i in range(x.rank)]
    return E.b.generic([(x, m)], x.shape, x.dtype, body)


@handles("tril.default")
def _tril(E, node, a):
    return _tri(E, a.self, a.diagonal or 0, True)


@handles("triu.default")
def _triu(E, node, a):
    return _tri(E, a.self, a.diagonal or 0, False)


# -- fused pointwise ----------------------------------------------------------

@handles("addcmul.default")
def _addcmul(E, node, a):
    _, dtype = E.out()
    v = a.get("value", 1)
    return E.ew([a.self, a.tensor1, a.tensor2], lambda b, x: b.add(
        x[0], b.mul(b.const(v, dtype), b.mul(x[1], x[2], dtype), dtype), dtype))


@handles("addcdiv.default")
def _addcdiv(E, node, a):
    _, dtype = E.out()
    v = a.get("value", 1)
    return E.ew([a.self, a.tensor1, a.tensor2], lambda b, x: b.add(
        x[0], b.mul(b.const(v, dtype), b.div(x[1], x[2], dtype), dtype), dtype))


@handles("lerp.Scalar", "lerp.Tensor")
def _lerp(E, node, a):
    _, dtype = E.out()
    return E.ew([a.self, a.end, a.weight], lambda b, x: b.add(
        x[0], b.mul(x[2], b.sub(x[1], x[0], dtype), dtype), dtype))


# -- activations and their backward -------------------------------------------

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_scalar(b, x, t, approximate):
    half, one = b.const(0.5, t), b.const(1.0, t)
    if approximate == "tanh":
        x3 = b.mul(b.mul(x, x, t), x, t)
        inner = b.mul(b.const(_SQRT_2_PI, t),
                      b.add(x, b.mul(b.const(0.044715, t), x3, t), t), t)
        return b.mul(b.mul(half, x, t), b.add(one, b.tanh(inner, t), t), t)
    cdf = b.mul(half, b.add(one, b.erf(b.mul(x, b.const(_SQRT1_2, t), t), t), t), t)
    return b.mul(x, cdf, t)


@handles("gelu.default")
def _gelu(E, node, a):
    _, dtype = E.out()
    approx = a.get("approximate", "none")
    return E.ew([a.self], lambda b, x: _gelu_scalar(b, x[0], dtype, approx))


@handles("gelu_backward.default")
def _gelu_backward(E, node, a):
    _, t = E.out()
    approx = a.get("approximate", "none")

    def body(b, v):
        g, x = v
        half, one = b.const(0.5, t), b.const(1.0, t)
        if approx == "tanh":
            x2 = b.mul(x, x, t)
            inner = b.mul(b.const(_SQRT_2_PI, t),
                          b.add(x, b.mul(b.const(0.044715, t), b.mul(x2, x, t), t), t), t)
            th = b.tanh(inner, t)
            left = b.mul(half, x, t)
            right = b.add(one, th, t)
            dleft = b.mul(half, right, t)
            dinner = b.mul(b.const(_SQRT_2_PI, t),
                           b.add(one, b.mul(b.const(3 * 0.044715, t), x2, t), t), t)
            dright = b.mul(b.mul(left, b.sub(one, b.mul(th, th, t), t), t), dinner, t)
            return b.mul(g, b.add(dleft, dright, t), t)
        cdf = b.mul(half, b.add(one, b.erf(b.mul(x, b.const(_SQRT1_2, t), t), t), t), t)
        pdf = b.mul(b.exp(b.mul(b.const(-0.5, t), b.mul(x, x, t), t), t),
                    b.const(_INV_SQRT_2PI, t), t)
        return b.mul(g, b.add(cdf, b.mul(x, pdf, t), t), t)
    return E.ew([a.grad_output, a.self], body)


@handles("silu_backward.default")
def _silu_backward(E, node, a):
    _, t = E.out()

    def body(b, v):
        g, x = v
        one = b.const(1.0, t)
        s = b.sigmoid(x, t)
        return b.mul(g, b.mul(s, b.add(one, b.mul(x, b.sub(one, s, t), t), t), t), t)
    return E.ew([a.grad_output, a.self], body)


@handles("sigmoid_backward.default")
def _sigmoid_backward(E, node, a):
    _, t = E.out()
    return E.ew([a.grad_output, a.output], lambda b, v: b.mul(
        v[0], b.mul(v[1], b.sub(b.const(1.0, t), v[1], t), t), t))


@handles("tanh_backward.default")
def _tanh_backward(E, node, a):
    _, t = E.out()
    return E.ew([a.grad_output, a.output], lambda b, v: b.mul(
        v[0], b.sub(b.const(1.0, t), b.mul(v[1], v[1], t), t), t))


@handles("softplus.default")
def _softplus(E, node, a):
    # log1p(exp(beta x)) / beta, linear where beta x exceeds the threshold
    # (as PyTorch, which keeps exp from overflowing there).
    _, t = E.out()
    beta, thr = float(a.beta), float(a.threshold)

    def body(b, v):
        bt = b.const(beta, t)
        z = b.mul(v[0], bt, t)
        soft = b.div(b.unary_math("log1p", b.exp(z, t), t), bt, t)
        return b.select(b.cmp("gt", z, b.const(thr, t), t), v[0], soft, t)
    return E.ew([a.self], body)


@handles("softplus_backward.default")
def _softplus_backward(E, node, a):
    # grad * sigmoid(beta x), grad itself where beta x exceeds the threshold.
    _, t = E.out()
    beta, thr = float(a.beta), float(a.threshold)

    def body(b, v):
        g, x = v
        z = b.mul(x, b.const(beta, t), t)
        return b.select(b.cmp("gt", z, b.const(thr, t), t), g,
                        b.mul(g, b.sigmoid(z, t), t), t)
    return E.ew([a.grad_output, a.self], body)


@handles("threshold_backward.default")
def _threshold_backward(E, node, a):
    _, t = E.out()
    thr = a.threshold

    def body(b, v):
        g, x = v
        keep = b.cmp("gt", x, b.const(thr, t), t)
        return b.select(keep, g, b.const(0, t), t)
    return E.ew([a.grad_output, a.self], body)
