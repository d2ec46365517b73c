"""Complex tensors as real arithmetic (RoPE written with view_as_complex and
torch.polar, as torchtitan does).

A complex64 tensor of shape S is held as a real float32 tensor of shape
S + (2,) (real part, imaginary part: the layout view_as_real gives), marked
by the `CValue` class. view_as_complex and view_as_real only change the
mark; products and conjugates are written on the two parts, taken as slices
of the trailing pair; shape ops act on the leading dims. The trailing pair
is never sharded, so the parts stay local under any layout.
"""

import torch

from ..builder import UnsupportedOpError, Value

_COMPLEX = {}


class CValue(Value):
    """A complex tensor stored as real pairs: `shape` is the storage shape
    (the complex shape + (2,)), `dtype` the real dtype."""
    __slots__ = ()

    @property
    def cshape(self):
        return self.shape[:-1]


def _as_complex(v):
    return CValue(v.name, v.shape, v.dtype)


def _as_real(v):
    return Value(v.name, v.shape, v.dtype)


def complex_handler(*names):
    def deco(fn):
        for n in names:
            _COMPLEX["aten." + n] = fn
        return fn
    return deco


def is_complex_dtype(dtype):
    return dtype in (torch.complex64, torch.complex128, torch.complex32)


def lookup(name):
    return _COMPLEX.get(name)


def _parts(E, c):
    """(real, imag) of complex c, each of c's complex shape."""
    r = c.rank
    sizes = list(c.shape[:-1]) + [1]
    re = E.b.extract_slice(c, [0] * r, sizes, [1] * r, c.cshape)
    im = E.b.extract_slice(c, [0] * (r - 1) + [1], sizes, [1] * r, c.cshape)
    return _as_real(re), _as_real(im)


def _join(E, re, im):
    pair = [E.b.reshape(x, tuple(x.shape) + (1,)) for x in (re, im)]
    return _as_complex(E.b.concat(pair, len(re.shape)))


def _out_cshape(E):
    shape, dtype = E.out()
    if not is_complex_dtype(dtype):
        raise UnsupportedOpError(f"expected a complex result, PyTorch says {dtype}")
    return tuple(shape)


@complex_handler("view_as_complex.default")
def _view_as_complex(E, node, a):
    x = a.self
    if isinstance(x, CValue) or not x.shape or x.shape[-1] != 2:
        raise UnsupportedOpError("view_as_complex of a tensor without a "
                                 "trailing dim of 2")
    return _as_complex(x)


@complex_handler("polar.default")
def _polar(E, node, a):
    # abs * (cos angle + i sin angle): Llama 4's rotary table.
    r, th = a.abs, a.angle
    t = r.dtype
    re = E.b.elementwise([r, th], t, lambda b, v: b.mul(
        v[0], b.unary_math("cos", v[1], t), t))
    im = E.b.elementwise([r, th], t, lambda b, v: b.mul(
        v[0], b.unary_math("sin", v[1], t), t))
    return _join(E, re, im)


@complex_handler("view_as_real.default")
def _view_as_real(E, node, a):
    return _as_real(a.self)


@complex_handler("clone.default", "alias.default", "detach.default",
                 "_conj.default", "conj.default", "conj_physical.default",
                 "resolve_conj.default", "resolve_neg.default")
def _identity_or_conj(E, node, a):
    c = a.self
    name = str(node.target)
    if "conj" in name and "resolve" not in name:
        re, im = _parts(E, c)
        t = c.dtype
        return _join(E, re, E.b.elementwise([im], t, lambda b, v: b.neg(v[0], t)))
    return c


def _real_operand(E, x, crank):
    """A real tensor or scalar operand of a complex op, as pairs (x, 0)."""
    if not isinstance(x, Value):
        return x
    # A real tensor broadcasts against the complex shape; give it the
    # trailing unit dim so it multiplies both parts.
    return E.b.reshape(x, tuple(x.shape) + (1,))


@complex_handler("mul.Tensor", "mul.Scalar")
def _mul(E, node, a):
    x, y = a.self, a.other
    t = torch.float32
    if isinstance(x, CValue) and isinstance(y, CValue):
        xr, xi = _parts(E, x)
        yr, yi = _parts(E, y)
        t = x.dtype
        re = E.b.elementwise([xr, yr, xi, yi], t, lambda b, v: b.sub(
            b.mul(v[0], v[1], t), b.mul(v[2], v[3], t), t))
        im = E.b.elementwise([xr, yi, xi, yr], t, lambda b, v: b.add(
            b.mul(v[0], v[1], t), b.mul(v[2], v[3], t), t))
        return _join(E, re, im)
    c, r = (x, y) if isinstance(x, CValue) else (y, x)
    if isinstance(r, complex):
        raise UnsupportedOpError("a complex Python scalar operand")
    t = c.dtype
    r = _real_operand(E, r, len(c.cshape))
    return _as_complex(E.b.elementwise([c, r], t, lambda b, v: b.mul(v[0], v[1], t)))


@complex_handler("add.Tensor", "sub.Tensor")
def _add_sub(E, node, a):
    x, y = a.self, a.other
    if not (isinstance(x, CValue) and isinstance(y, CValue)):
        raise UnsupportedOpError("complex add/sub with a real operand")
    if a.get("alpha", 1) != 1:
        raise UnsupportedOpError("complex add/sub with alpha")
    t = x.dtype
    sub = str(node.target).startswith("aten.sub")
    return _as_complex(E.b.elementwise(
        [x, y], t, lambda b, v: (b.sub if sub else b.add)(v[0], v[1], t)))


@complex_handler("neg.default")
def _neg(E, node, a):
    t = a.self.dtype
    return _as_complex(E.b.elementwise([a.self], t, lambda b, v: b.neg(v[0], t)))


@complex_handler("view.default", "_unsafe_view.default", "reshape.default",
                 "unsqueeze.default", "squeeze.dim", "squeeze.dims",
                 "squeeze.default", "flatten.using_ints")
def _view(E, node, a):
    return _as_complex(E.b.reshape(a.self, _out_cshape(E) + (2,)))


@complex_handler("expand.default")
def _expand(E, node, a):
    return _as_complex(E.b.broadcast_to(a.self, _out_cshape(E) + (2,)))


@complex_handler("permute.default")
def _permute(E, node, a):
    c = a.self
    r = len(c.cshape)
    perm = [d % r for d in a.dims] + [r]
    return _as_complex(E.b.transpose(c, perm))


@complex_handler("slice.Tensor")
def _slice(E, node, a):
    c = a.self
    r = len(c.cshape)
    dim = (a.dim or 0) % r
    step = a.step or 1
    n = c.shape[dim]
    start = 0 if a.start is None else a.start
    end = n if a.end is None else a.end
    start = min(max(start + n if start < 0 else start, 0), n)
    end = min(max(end + n if end < 0 else end, start), n)
    count = (end - start + step - 1) // step
    offs, sizes, strides = [0] * (r + 1), list(c.shape), [1] * (r + 1)
    offs[dim], sizes[dim], strides[dim] = start, count, step
    return _as_complex(E.b.extract_slice(c, offs, sizes, strides))
