"""Translate a make_fx aten graph into one MLIR func.func on global tensors.

Each supported aten overload has a handler below; an overload without one is
an UnsupportedOpError naming the op and the graph node. No decomposition
table is needed for the ops PyTorch 1.13 produces for MLPs and transformers:
the composite ones (native_layer_norm[_backward], softmax backward,
nll_loss, embedding backward, gelu backward ...) are written out here in
terms of linalg named ops, linalg.generic and linalg.reduce.
"""

import math
import operator

import torch

from .builder import (Builder, UnsupportedOpError, Value, broadcast_shapes,
                      is_float, numel, tensor_type)

_HANDLERS = {}


def handles(*names):
    def deco(fn):
        for n in names:
            _HANDLERS["aten." + n] = fn
        return fn
    return deco


class Args:
    """Named arguments of one node, bound against the op's schema."""

    def __init__(self, op, args, kwargs):
        self._values = {}
        schema = op._schema
        for i, a in enumerate(schema.arguments):
            if i < len(args) and not a.kwarg_only:
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            self._values[a.name] = v
        self.positional = list(args)

    def __getattr__(self, name):
        # Overloads of one op differ in their arguments (sum.default has no
        # dim): an argument the overload lacks reads as None.
        if name.startswith("__"):
            raise AttributeError(name)
        return self._values.get(name)

    def get(self, name, default=None):
        v = self._values.get(name, default)
        return default if v is None else v


class _Meta:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _from_val(v):
    if isinstance(v, torch.Tensor):
        return _Meta(v.shape, v.dtype)
    if isinstance(v, (list, tuple)):
        return tuple(_from_val(x) for x in v)
    return None


def _meta(node):
    m = node.meta.get("tensor_meta")
    if m is None and "val" in node.meta:  # fake-tensor tracing
        m = _from_val(node.meta["val"])
    if m is None:
        raise UnsupportedOpError(
            f"graph node '{node.name}' ({node.target}) has no tensor metadata")
    return m


def _shape_dtype(node, index=None):
    m = _meta(node)
    if index is not None:
        m = m[index]
    return tuple(m.shape), m.dtype


def _result_dtype(*operands):
    """torch's type promotion for tensors (by rank category) and scalars."""
    dummies = [torch.empty((0,) * o.rank, dtype=o.dtype) if isinstance(o, Value)
               else o for o in operands]
    if len(dummies) == 1:
        d = dummies[0]
        return d.dtype if isinstance(d, torch.Tensor) else torch.tensor(d).dtype
    return torch.result_type(dummies[0], dummies[1])


class Emitter:
    def __init__(self, gm, mark_handler=None, gather_form="onehot"):
        # gather_form: how embedding lookups are written, "onehot" (a
        # reduction generic over the vocabulary, table as an operand) or
        # "extract" (tensor.extract from the table inside the generic).
        if gather_form not in ("onehot", "extract"):
            raise ValueError(f"unknown gather form '{gather_form}'")
        self.gather_form = gather_form
        self.gm = gm
        self.b = Builder()
        self.env = {}
        self.mark_handler = mark_handler
        self.node = None

    # -- helpers used by handlers ------------------------------------------
    def out(self, index=None):
        return _shape_dtype(self.node, index)

    def ew(self, operands, fn, out_dtype=None, compute=None):
        shape, dtype = self.out()
        out_dtype = out_dtype or dtype
        v = self.b.elementwise(operands, out_dtype, fn, compute_dtype=compute)
        if v.shape != shape:
            v = self.b.broadcast_to(v, shape)
        return v

    def as_value(self, x, dtype):
        if isinstance(x, Value):
            return x
        return self.b.full((), x, dtype)

    # -- driver --------------------------------------------------------------
    def resolve(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.resolve(x) for x in a)
        return a

    def run(self, func_name, arg_attrs=None, result_attrs=None, visibility="",
            arg_constrains=None):
        # arg_constrains: {argument index: (layout, loc)}: the argument is
        # used through a spmd.constrain to that layout (FSDP: parameters are
        # stored sharded and gathered before use).
        nodes = list(self.gm.graph.nodes)
        params = []
        for node in nodes:
            if node.op == "placeholder":
                shape, dtype = _shape_dtype(node)
                v = Value(f"%arg{len(params)}", shape, dtype)
                self.env[node] = v
                if arg_constrains and len(params) in arg_constrains:
                    layout, loc = arg_constrains[len(params)]
                    self.b.loc = loc
                    self.env[node] = self.b.constrain(v, layout)
                params.append(v)
        outputs = None
        for node in nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                t = getattr(self.gm, node.target)
                self.env[node] = self.b.dense(t.detach(), t.dtype)
                continue
            if node.op == "output":
                outputs = self.resolve(node.args[0])
                continue
            self.b.loc = node.name
            if node.op != "call_function":
                raise UnsupportedOpError(
                    f"graph node '{node.name}' of kind {node.op} is not supported")
            self.env[node] = self.call(node)
        flat = _flatten(outputs)
        for o in flat:
            if not isinstance(o, Value):
                raise UnsupportedOpError(
                    f"the traced function returns a non-tensor value {o!r}")
        arg_attrs = arg_attrs or [None] * len(params)
        result_attrs = result_attrs or [None] * len(flat)
        if len(arg_attrs) != len(params) or len(result_attrs) != len(flat):
            raise ValueError("argument/result attribute count mismatch")

        def attr(a):
            return f" {{{a}}}" if a else ""

        sig = ", ".join(f"{p.name}: {p.type}{attr(a)}" for p, a in zip(params, arg_attrs))
        res = ", ".join(f"{o.type}{attr(a)}" for o, a in zip(flat, result_attrs))
        vis = f"{visibility} " if visibility else ""
        lines = [f"func.func {vis}@{func_name}({sig}) -> ({res}) {{"]
        for l in self.b.lines:
            lines.append("  " + l)
        if flat:
            lines.append(f"  return {', '.join(o.name for o in flat)} : "
                         f"{', '.join(o.type for o in flat)}")
        else:
            lines.append("  return")
        lines.append("}")
        return "\n".join(lines), params, flat

    def call(self, node):
        target = node.target
        args = self.resolve(node.args)
        kwargs = self.resolve(node.kwargs)
        if target is operator.getitem:
            return args[0][args[1]]
        name = str(target)
        if name.startswith("spmd.mark"):
            x, tag = args[0], args[1]
            if not self.mark_handler:
                return x
            return self.mark_handler(self.b, x, tag)
        handler = _HANDLERS.get(name)
        inplace = handler is None and _inplace_base(name) in _HANDLERS
        if inplace:
            self._check_inplace(node, name)
            handler = _HANDLERS[_inplace_base(name)]
        if handler is None:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' at graph node "
                f"'{node.name}' ({node.format_node()})")
        try:
            a = Args(target, args, kwargs)
            result = handler(self, node, a)
        except UnsupportedOpError as e:
            if f"'{node.name}'" in str(e):
                raise
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' at graph node "
                f"'{node.name}': {e}") from e
        self._check(node, result)
        if inplace:
            # Later users of the mutated tensor see the new value.
            self.env[node.args[0]] = result
        return result

    def _check_inplace(self, node, name):
        base = node.args[0]
        why = None
        if not isinstance(base, torch.fx.Node):
            why = "its operand is not a graph value"
        elif base.op == "placeholder":
            why = "it mutates a function argument"
        elif base.op == "call_function" and _is_view_op(base.target):
            why = f"it mutates a view ('{base.name}')"
        if why:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate in-place op '{name}' at graph "
                f"node '{node.name}': {why}")

    def _check(self, node, result):
        try:
            meta = _meta(node)
        except UnsupportedOpError:
            return
        if isinstance(result, Value):
            metas, results = [meta], [result]
        else:
            metas, results = list(meta), list(result)
        for m, r in zip(metas, results):
            if r is None or m is None:
                continue
            if tuple(m.shape) != r.shape or m.dtype != r.dtype:
                raise UnsupportedOpError(
                    f"internal error: node '{node.name}' ({node.target}) gives "
                    f"{r.type}, PyTorch says {tensor_type(tuple(m.shape), m.dtype)}")


_VIEW_OPS = {"view", "_unsafe_view", "_reshape_alias", "reshape", "t",
             "transpose", "permute", "expand", "slice", "select", "alias",
             "detach", "unsqueeze", "squeeze", "as_strided", "split",
             "split_with_sizes", "unbind", "diagonal", "narrow", "flatten"}


def _is_view_op(target):
    name = str(target)
    if not name.startswith("aten."):
        return name == "<built-in function getitem>"
    return name.split(".")[1] in _VIEW_OPS


def _inplace_base(name):
    """aten.add_.Tensor -> aten.add.Tensor (None if not in-place)."""
    parts = name.split(".")
    if len(parts) != 3 or not parts[1].endswith("_") or parts[1].startswith("_"):
        return None
    return f"{parts[0]}.{parts[1][:-1]}.{parts[2]}"


def _flatten(x):
    if isinstance(x, (list, tuple)):
        out = []
        for y in x:
            out.extend(_flatten(y))
        return out
    return [x]


def _dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(rank))
    return [d % rank if rank else 0 for d in dims]


# ---------------------------------------------------------------------------
# Identity-like and shape ops.

@handles("detach.default", "clone.default", "alias.default",
         "lift_fresh_copy.default", "contiguous.default")
def _identity(E, node, a):
    return a.self


@handles("_to_copy.default")
def _to_copy(E, node, a):
    _, dtype = E.out()
    return E.b.cast(a.self, dtype)


@handles("view.default", "_unsafe_view.default", "_reshape_alias.default",
         "reshape.default", "unsqueeze.default", "squeeze.dim",
         "squeeze.default", "squeeze.dims", "flatten.using_ints",
         "view.dtype")
def _view(E, node, a):
    shape, dtype = E.out()
    if dtype != a.self.dtype:
        raise UnsupportedOpError("view as another dtype")
    return E.b.reshape(a.self, shape)


@handles("t.default")
def _t(E, node, a):
    x = a.self
    return E.b.transpose(x, [1, 0]) if x.rank == 2 else x


@handles("transpose.int")
def _transpose(E, node, a):
    x = a.self
    perm = list(range(x.rank))
    if x.rank:
        d0, d1 = a.dim0 % x.rank, a.dim1 % x.rank
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return E.b.transpose(x, perm)


@handles("permute.default")
def _permute(E, node, a):
    return E.b.transpose(a.self, list(a.dims))


@handles("expand.default")
def _expand(E, node, a):
    shape, _ = E.out()
    return E.b.broadcast_to(a.self, shape)


def _slice_params(size, start, end, step):
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    count = (end - start + step - 1) // step
    return start, count


@handles("slice.Tensor")
def _slice(E, node, a):
    x = a.self
    dim = a.dim % x.rank
    step = a.step or 1
    start, count = _slice_params(x.shape[dim], a.start, a.end, step)
    if start == 0 and count == x.shape[dim] and step == 1:
        return x
    offs = [0] * x.rank
    sizes = list(x.shape)
    strides = [1] * x.rank
    offs[dim], sizes[dim], strides[dim] = start, count, step
    return E.b.extract_slice(x, offs, sizes, strides)


@handles("select.int")
def _select(E, node, a):
    x = a.self
    dim = a.dim % x.rank
    idx = a.index % x.shape[dim]
    offs = [0] * x.rank
    sizes = list(x.shape)
    offs[dim], sizes[dim] = idx, 1
    shape = [d for i, d in enumerate(x.shape) if i != dim]
    return E.b.extract_slice(x, offs, sizes, [1] * x.rank, shape)


def _split(E, x, sizes, dim):
    dim = dim % x.rank
    outs, off = [], 0
    for s in sizes:
        o = [0] * x.rank
        sz = list(x.shape)
        o[dim], sz[dim] = off, s
        outs.append(E.b.extract_slice(x, o, sz, [1] * x.rank))
        off += s
    return tuple(outs)


@handles("split.Tensor")
def _split_tensor(E, node, a):
    x = a.self
    n = x.shape[a.dim % x.rank]
    s = a.split_size
    sizes = [min(s, n - i) for i in range(0, n, s)] if n else [0]
    return _split(E, x, sizes, a.dim)


@handles("split_with_sizes.default")
def _split_sizes(E, node, a):
    return _split(E, a.self, list(a.split_sizes), a.dim)


@handles("unbind.int")
def _unbind(E, node, a):
    x = a.self
    dim = a.dim % x.rank
    parts = _split(E, x, [1] * x.shape[dim], dim)
    shape = [d for i, d in enumerate(x.shape) if i != dim]
    return tuple(E.b.reshape(p, shape) for p in parts)


@handles("cat.default")
def _cat(E, node, a):
    shape, dtype = E.out()
    vals = [E.b.cast(v, dtype) for v in a.tensors if numel(v.shape) or v.rank > 1]
    if not vals:
        return E.b.zeros(shape, dtype)
    return E.b.concat(vals, a.dim)


@handles("stack.default")
def _stack(E, node, a):
    shape, dtype = E.out()
    dim = a.dim % len(shape)
    vals = []
    for v in a.tensors:
        s = list(v.shape)
        s.insert(dim, 1)
        vals.append(E.b.reshape(E.b.cast(v, dtype), s))
    return E.b.concat(vals, dim)


@handles("slice_backward.default")
def _slice_backward(E, node, a):
    g = a.grad_output
    shape = tuple(a.input_sizes)
    dim = a.dim % len(shape)
    step = a.step or 1
    start, count = _slice_params(shape[dim], a.start, a.end, step)
    z = E.b.zeros(shape, g.dtype)
    offs = [0] * len(shape)
    strides = [1] * len(shape)
    offs[dim], strides[dim] = start, step
    return E.b.insert_slice(g, z, offs, list(g.shape), strides)


@handles("select_backward.default")
def _select_backward(E, node, a):
    g = a.grad_output
    shape = tuple(a.input_sizes)
    dim = a.dim % len(shape)
    idx = a.index % shape[dim]
    z = E.b.zeros(shape, g.dtype)
    offs = [0] * len(shape)
    sizes = list(shape)
    offs[dim], sizes[dim] = idx, 1
    return E.b.op(
        f"tensor.insert_slice {g.name} into {z.name}[{', '.join(map(str, offs))}] "
        f"[{', '.join(map(str, sizes))}] [{', '.join(['1'] * len(shape))}] : "
        f"{g.type} into {z.type}", shape, g.dtype)


# ---------------------------------------------------------------------------
# Creation ops.

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
        i = b.index_to(b.index(0), torch.int64)
        if is_float(dtype):
            i = b.cast(i, torch.int64, dtype)
        return b.add(b.const(start, dtype), b.mul(i, b.const(step, dtype), dtype), dtype)
    return E.b.generic([], shape, dtype, body)


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


# ---------------------------------------------------------------------------
# Pointwise math.

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


@handles("clamp.default")
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


# -- activations and their backward ------------------------------------------

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


@handles("threshold_backward.default")
def _threshold_backward(E, node, a):
    _, t = E.out()
    thr = a.threshold

    def body(b, v):
        g, x = v
        keep = b.cmp("gt", x, b.const(thr, t), t)
        return b.select(keep, g, b.const(0, t), t)
    return E.ew([a.grad_output, a.self], body)


# ---------------------------------------------------------------------------
# Reductions.

@handles("sum.default", "sum.dim_IntList")
def _sum(E, node, a):
    shape, dtype = E.out()
    x = a.self
    dims = _dims(a.dim, x.rank)
    return E.b.reduce(x, dims, "sum", bool(a.keepdim), dtype=dtype)


@handles("mean.default", "mean.dim")
def _mean(E, node, a):
    shape, dtype = E.out()
    x = a.self
    dims = _dims(a.dim, x.rank)
    s = E.b.reduce(x, dims, "sum", bool(a.keepdim), dtype=dtype)
    n = numel([x.shape[d] for d in dims]) if x.rank else 1
    return E.b.elementwise([s], dtype, lambda b, v: b.div(v[0], b.const(float(n), dtype), dtype))


@handles("amax.default")
def _amax(E, node, a):
    x = a.self
    return E.b.reduce(x, _dims(a.dim, x.rank), "max", bool(a.keepdim))


@handles("amin.default")
def _amin(E, node, a):
    x = a.self
    return E.b.reduce(x, _dims(a.dim, x.rank), "min", bool(a.keepdim))


def _var(E, x, dims, correction, keepdim):
    """(var, mean) with torch's correction, keepdim variants."""
    t = x.dtype
    n = numel([x.shape[d] for d in dims])
    s = E.b.reduce(x, dims, "sum", True)
    mean = E.b.elementwise([s], t, lambda b, v: b.div(v[0], b.const(float(n), t), t))
    sq = E.b.elementwise([x, mean], t, lambda b, v: b.mul(
        b.sub(v[0], v[1], t), b.sub(v[0], v[1], t), t))
    ss = E.b.reduce(sq, dims, "sum", keepdim)
    var = E.b.elementwise([ss], t, lambda b, v: b.div(
        v[0], b.const(float(max(n - correction, 0)), t), t))
    if not keepdim:
        mean = E.b.reshape(mean, var.shape)
    return var, mean


@handles("var.correction", "var.dim")
def _var_h(E, node, a):
    x = a.self
    dims = _dims(a.dim, x.rank)
    corr = a.get("correction", None)
    if corr is None:
        corr = 1 if a.get("unbiased", True) else 0
    return _var(E, x, dims, corr, bool(a.keepdim))[0]


@handles("var_mean.correction")
def _var_mean(E, node, a):
    x = a.self
    dims = _dims(a.dim, x.rank)
    corr = a.get("correction", 1)
    return _var(E, x, dims, corr, bool(a.keepdim))


# ---------------------------------------------------------------------------
# Linear algebra.

@handles("mm.default")
def _mm(E, node, a):
    return E.b.matmul(a.self, a.mat2)


@handles("bmm.default")
def _bmm(E, node, a):
    return E.b.batch_matmul(a.self, a.mat2)


@handles("addmm.default")
def _addmm(E, node, a):
    _, t = E.out()
    m = E.b.matmul(a.mat1, a.mat2)
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)

    def body(b, v):
        x, y = v[0], v[1]
        if alpha != 1:
            y = b.mul(y, b.const(alpha, t), t)
        if beta != 1:
            x = b.mul(x, b.const(beta, t), t)
        return b.add(y, x, t)
    return E.ew([a.self, m], body)


# ---------------------------------------------------------------------------
# Softmax, normalization, losses, embedding.

def _keep_shape(x, dim):
    return tuple(1 if i == dim else d for i, d in enumerate(x.shape))


@handles("_softmax.default")
def _softmax(E, node, a):
    _, t = E.out()
    x = E.b.cast(a.self, t)
    dim = a.dim % x.rank
    m = E.b.reduce(x, [dim], "max", True)
    e = E.b.elementwise([x, m], t, lambda b, v: b.exp(b.sub(v[0], v[1], t), t))
    s = E.b.reduce(e, [dim], "sum", True)
    return E.b.elementwise([e, s], t, lambda b, v: b.div(v[0], v[1], t))


@handles("_log_softmax.default")
def _log_softmax(E, node, a):
    _, t = E.out()
    x = E.b.cast(a.self, t)
    dim = a.dim % x.rank
    m = E.b.reduce(x, [dim], "max", True)
    sh = E.b.elementwise([x, m], t, lambda b, v: b.sub(v[0], v[1], t))
    e = E.b.elementwise([sh], t, lambda b, v: b.exp(v[0], t))
    s = E.b.reduce(e, [dim], "sum", True)
    return E.b.elementwise([sh, s], t, lambda b, v: b.sub(v[0], b.log(v[1], t), t))


@handles("_softmax_backward_data.default")
def _softmax_backward(E, node, a):
    _, t = E.out()
    g, y = a.grad_output, a.output
    dim = a.dim % g.rank
    gy = E.b.elementwise([g, y], t, lambda b, v: b.mul(v[0], v[1], t))
    s = E.b.reduce(gy, [dim], "sum", True)
    return E.b.elementwise([y, g, s], t, lambda b, v: b.mul(
        v[0], b.sub(v[1], v[2], t), t))


@handles("_log_softmax_backward_data.default")
def _log_softmax_backward(E, node, a):
    _, t = E.out()
    g, y = a.grad_output, a.output
    dim = a.dim % g.rank
    s = E.b.reduce(g, [dim], "sum", True)
    return E.b.elementwise([g, y, s], t, lambda b, v: b.sub(
        v[0], b.mul(b.exp(v[1], t), v[2], t), t))


def _norm_dims(x, normalized_shape):
    k = len(normalized_shape)
    return list(range(x.rank - k, x.rank))


@handles("native_layer_norm.default")
def _native_layer_norm(E, node, a):
    x = a.input
    t = x.dtype
    dims = _norm_dims(x, a.normalized_shape)
    n = float(numel([x.shape[d] for d in dims]))
    eps = a.eps
    s = E.b.reduce(x, dims, "sum", True)
    mean = E.b.elementwise([s], t, lambda b, v: b.div(v[0], b.const(n, t), t))
    xc = E.b.elementwise([x, mean], t, lambda b, v: b.sub(v[0], v[1], t))
    sq = E.b.elementwise([xc], t, lambda b, v: b.mul(v[0], v[0], t))
    ss = E.b.reduce(sq, dims, "sum", True)
    rstd = E.b.elementwise([ss], t, lambda b, v: b.rsqrt(
        b.add(b.div(v[0], b.const(n, t), t), b.const(eps, t), t), t))
    y = E.b.elementwise([xc, rstd], t, lambda b, v: b.mul(v[0], v[1], t))
    if a.weight is not None:
        y = E.b.elementwise([y, a.weight], t, lambda b, v: b.mul(v[0], v[1], t))
    if a.bias is not None:
        y = E.b.elementwise([y, a.bias], t, lambda b, v: b.add(v[0], v[1], t))
    return (y, mean, rstd)


@handles("native_layer_norm_backward.default")
def _native_layer_norm_backward(E, node, a):
    g, x, mean, rstd, w = a.grad_out, a.input, a.mean, a.rstd, a.weight
    t = x.dtype
    mask = list(a.output_mask)
    dims = _norm_dims(x, a.normalized_shape)
    lead = list(range(0, x.rank - len(dims)))
    n = float(numel([x.shape[d] for d in dims]))
    xhat = E.b.elementwise([x, mean, rstd], t, lambda b, v: b.mul(
        b.sub(v[0], v[1], t), v[2], t))
    gi = gw = gb = None
    if mask[0]:
        gwx = g if w is None else E.b.elementwise(
            [g, w], t, lambda b, v: b.mul(v[0], v[1], t))
        s1 = E.b.reduce(gwx, dims, "sum", True)
        gx = E.b.elementwise([gwx, xhat], t, lambda b, v: b.mul(v[0], v[1], t))
        s2 = E.b.reduce(gx, dims, "sum", True)
        # rstd / n * (n * g*w - sum(g*w) - xhat * sum(g*w*xhat))
        gi = E.b.elementwise(
            [rstd, gwx, s1, xhat, s2], t, lambda b, v: b.mul(
                b.div(v[0], b.const(n, t), t),
                b.sub(b.sub(b.mul(b.const(n, t), v[1], t), v[2], t),
                      b.mul(v[3], v[4], t), t), t))
    if len(mask) > 1 and mask[1] and w is not None:
        gx = E.b.elementwise([g, xhat], t, lambda b, v: b.mul(v[0], v[1], t))
        gw = E.b.reduce(gx, lead, "sum", False)
    if len(mask) > 2 and mask[2] and a.bias is not None:
        gb = E.b.reduce(g, lead, "sum", False)
    return (gi, gw, gb)


def _reduction_mode(r):
    return {0: "none", 1: "mean", 2: "sum"}[r]


@handles("nll_loss_forward.default")
def _nll_loss_forward(E, node, a):
    x, target = a.self, a.target
    if a.weight is not None:
        raise UnsupportedOpError("nll_loss with class weights")
    mode = _reduction_mode(a.reduction)
    ign = a.ignore_index
    t = x.dtype
    if x.rank == 1:
        x = E.b.reshape(x, (1,) + x.shape)
        target = E.b.reshape(target, (1,))
    if x.rank != 2:
        raise UnsupportedOpError(f"nll_loss on rank-{x.rank} input")
    N, C = x.shape
    tt = target.dtype

    def picked(b, i, o):
        c = b.index_to(b.index(1), tt)
        hit = b.cmp("eq", c, i[1], tt)
        valid = b.cmp("ne", i[1], b.const(ign, tt), tt)
        take = b.emit(f"arith.andi {hit}, {valid}", "i1")
        v = b.select(take, b.neg(i[0], t), b.const(0.0, t), t)
        return b.add(o, v, t)
    init = E.b.zeros((N,), t)
    losses = E.b.generic([(x, ["d0", "d1"]), (target, ["d0"])], (N,), t, picked,
                         iterators=["parallel", "reduction"], out_map=["d0"],
                         init=init)
    valid = E.b.elementwise([target], t, lambda b, v: b.cast(
        b.cmp("ne", v[0], b.const(ign, tt), tt), torch.bool, t), compute_dtype=tt)
    total_weight = E.b.reduce(valid, [0], "sum")
    if mode == "none":
        out = losses if a.self.rank == 2 else E.b.reshape(losses, ())
        return (out, total_weight)
    s = E.b.reduce(losses, [0], "sum")
    if mode == "sum":
        return (s, total_weight)
    return (E.b.elementwise([s, total_weight], t, lambda b, v: b.div(v[0], v[1], t)),
            total_weight)


@handles("nll_loss_backward.default")
def _nll_loss_backward(E, node, a):
    g, x, target, tw = a.grad_output, a.self, a.target, a.total_weight
    if a.weight is not None:
        raise UnsupportedOpError("nll_loss with class weights")
    mode = _reduction_mode(a.reduction)
    ign = a.ignore_index
    t = x.dtype
    orig_shape = x.shape
    if x.rank == 1:
        x = E.b.reshape(x, (1,) + x.shape)
        target = E.b.reshape(target, (1,))
        if g.rank == 1:
            g = E.b.reshape(g, ())
    tt = target.dtype
    N, C = x.shape
    if mode == "mean":
        scale = E.b.elementwise([g, tw], t, lambda b, v: b.div(b.neg(v[0], t), v[1], t))
        gmap = []
    elif mode == "sum":
        scale = E.b.elementwise([g], t, lambda b, v: b.neg(v[0], t))
        gmap = []
    else:
        scale = E.b.elementwise([g], t, lambda b, v: b.neg(v[0], t))
        gmap = ["d0"] if scale.rank == 1 else []

    def body(b, i, o):
        c = b.index_to(b.index(1), tt)
        hit = b.cmp("eq", c, i[0], tt)
        valid = b.cmp("ne", i[0], b.const(ign, tt), tt)
        take = b.emit(f"arith.andi {hit}, {valid}", "i1")
        return b.select(take, i[1], b.const(0.0, t), t)
    r = E.b.generic([(target, ["d0"]), (scale, gmap)], (N, C), t, body)
    return E.b.reshape(r, orig_shape)


@handles("embedding.default")
def _embedding(E, node, a):
    w, idx = a.weight, a.indices
    V, D = w.shape
    k = idx.rank
    shape = idx.shape + (D,)
    t, tt = w.dtype, idx.dtype
    if E.gather_form == "extract":
        # torch-mlir's form: read the table captured from above.
        def body(b, i, o):
            row = b.index_cast(i[0], tt)
            return b.emit(f"tensor.extract {w.name}[{row}, {b.index(k)}] : {w.type}")
        return E.b.generic([(idx, [f"d{j}" for j in range(k)])], shape, t, body)
    # One-hot contraction: out[p, d] = sum_v (idx[p] == v) * table[v, d].
    # The table is an operand with a plain indexing map, so sharding its
    # vocabulary makes the result a pending sum (Megatron's vocab-parallel
    # embedding) and sharding its columns shards the result, with no special
    # rule; it costs as many flops as the output projection.
    ps = [f"d{j}" for j in range(k)]
    vd, dd = f"d{k + 1}", f"d{k}"
    init = E.b.zeros(shape, t)

    def onehot(b, i, o):
        v = b.index_to(b.index(k + 1), tt)
        hit = b.cmp("eq", i[0], v, tt)
        return b.add(o, b.select(hit, i[1], b.const(0.0, t), t), t)
    return E.b.generic([(idx, ps), (w, [vd, dd])], shape, t, onehot,
                       iterators=["parallel"] * (k + 1) + ["reduction"],
                       out_map=ps + [dd], init=init)


@handles("embedding_dense_backward.default")
def _embedding_backward(E, node, a):
    g, idx = a.grad_output, a.indices
    if a.scale_grad_by_freq:
        raise UnsupportedOpError("embedding backward with scale_grad_by_freq")
    V = a.num_weights
    D = g.shape[-1]
    t = g.dtype
    tt = idx.dtype
    pad = a.padding_idx
    k = idx.rank
    # out[v, d] = sum_p (idx[p] == v && idx[p] != pad) ? g[p, d] : 0
    # loops: (v, d, p0..pk-1); v, d parallel, p reduction.
    ps = [f"d{2 + i}" for i in range(k)]
    init = E.b.zeros((V, D), t)

    def body(b, i, o):
        v = b.index_to(b.index(0), tt)
        hit = b.cmp("eq", i[0], v, tt)
        if pad is not None and pad >= 0:
            np_ = b.cmp("ne", i[0], b.const(pad, tt), tt)
            hit = b.emit(f"arith.andi {hit}, {np_}", "i1")
        return b.add(o, b.select(hit, i[1], b.const(0.0, t), t), t)
    return E.b.generic([(idx, ps), (g, ps + ["d1"])], (V, D), t, body,
                       iterators=["parallel", "parallel"] + ["reduction"] * k,
                       out_map=["d0", "d1"], init=init)


@handles("mse_loss.default")
def _mse_loss(E, node, a):
    shape, t = E.out()
    sq = E.b.elementwise([a.self, a.target], t, lambda b, v: b.mul(
        b.sub(v[0], v[1], t), b.sub(v[0], v[1], t), t))
    mode = _reduction_mode(a.reduction)
    if mode == "none":
        return sq
    s = E.b.reduce(sq, list(range(sq.rank)), "sum")
    if mode == "sum":
        return s
    n = float(numel(sq.shape))
    return E.b.elementwise([s], t, lambda b, v: b.div(v[0], b.const(n, t), t))


@handles("mse_loss_backward.default")
def _mse_loss_backward(E, node, a):
    shape, t = E.out()
    mode = _reduction_mode(a.reduction)
    scale = 2.0 / numel(shape) if mode == "mean" else 2.0
    return E.ew([a.grad_output, a.self, a.target], lambda b, v: b.mul(
        b.mul(b.const(scale, t), b.sub(v[1], v[2], t), t), v[0], t))


def _extract(b, src, indices):
    return b.emit(f"tensor.extract {src.name}[{', '.join(indices)}] : {src.type}")


@handles("gather.default")
def _gather(E, node, a):
    x, idx = a.self, a.index
    dim = a.dim % x.rank
    shape = idx.shape

    def body(b, i, o):
        coords = [b.index(k) if k != dim else b.index_cast(i[0], idx.dtype)
                  for k in range(x.rank)]
        return _extract(b, x, coords)
    return E.b.generic([(idx, [f"d{k}" for k in range(idx.rank)])], shape,
                       x.dtype, body)


@handles("index_select.default")
def _index_select(E, node, a):
    x, idx = a.self, a.index
    dim = a.dim % x.rank
    shape, _ = E.out()
    if idx.rank != 1:
        idx = E.b.reshape(idx, (numel(idx.shape),))

    def body(b, i, o):
        coords = [b.index(k) if k != dim else b.index_cast(i[0], idx.dtype)
                  for k in range(x.rank)]
        return _extract(b, x, coords)
    return E.b.generic([(idx, [f"d{dim}"])], shape, x.dtype, body)


@handles("scatter_add.default")
def _scatter_add(E, node, a):
    # out[.., k, ..] = self[.., k, ..] + sum_p (index[.., p, ..] == k) src[.., p, ..]
    x, idx, src = a.self, a.index, a.src
    dim = a.dim % x.rank
    t, tt = x.dtype, idx.dtype
    for k in range(x.rank):
        if k != dim and (idx.shape[k] != x.shape[k] or src.shape[k] != x.shape[k]):
            raise UnsupportedOpError("scatter_add with an index smaller than "
                                     "the output outside the scatter dim")
    r = x.rank
    p = f"d{r}"
    m_in = [f"d{k}" if k != dim else p for k in range(r)]
    src_in = src
    if src.shape[dim] != idx.shape[dim]:
        offs = [0] * r
        src_in = E.b.extract_slice(src, offs, list(idx.shape), [1] * r)

    def body(b, i, o):
        k = b.index_to(b.index(dim), tt)
        hit = b.cmp("eq", i[0], k, tt)
        return b.add(o, b.select(hit, i[1], b.const(0, t), t), t)
    return E.b.generic([(idx, m_in), (src_in, m_in)], x.shape, t, body,
                       iterators=["parallel"] * r + ["reduction"],
                       out_map=[f"d{k}" for k in range(r)], init=x)


@handles("index_add.default")
def _index_add(E, node, a):
    # out[.., k, ..] = self[.., k, ..] + alpha * sum_p (index[p] == k) source[.., p, ..]
    x, idx, src = a.self, a.index, a.source
    dim = a.dim % x.rank
    alpha = a.get("alpha", 1)
    t, tt = x.dtype, idx.dtype
    r = x.rank
    p = f"d{r}"
    m_src = [f"d{k}" if k != dim else p for k in range(r)]

    def body(b, i, o):
        k = b.index_to(b.index(dim), tt)
        hit = b.cmp("eq", i[0], k, tt)
        v = i[1] if alpha == 1 else b.mul(i[1], b.const(alpha, t), t)
        return b.add(o, b.select(hit, v, b.const(0, t), t), t)
    return E.b.generic([(idx, [p]), (src, m_src)], x.shape, t, body,
                       iterators=["parallel"] * r + ["reduction"],
                       out_map=[f"d{k}" for k in range(r)], init=x)


@handles("baddbmm.default")
def _baddbmm(E, node, a):
    _, t = E.out()
    m = E.b.batch_matmul(a.batch1, a.batch2)
    beta, alpha = a.get("beta", 1), a.get("alpha", 1)

    def body(b, v):
        x, y = v[0], v[1]
        if alpha != 1:
            y = b.mul(y, b.const(alpha, t), t)
        if beta == 0:
            return y
        if beta != 1:
            x = b.mul(x, b.const(beta, t), t)
        return b.add(y, x, t)
    return E.ew([a.self, m], body)


@handles("argmax.default", "argmin.default")
def _argmax(E, node, a):
    shape, _ = E.out()
    x = a.self
    is_max = "argmax" in str(node.target)
    if a.dim is None:
        x = E.b.reshape(x, (numel(x.shape),))
        dim, keep = 0, False
    else:
        dim, keep = a.dim % max(x.rank, 1), bool(a.keepdim)
    if x.rank == 0:
        return E.b.zeros(shape, torch.int64)
    ext = E.b.reduce(x, [dim], "max" if is_max else "min", True)
    # The first index holding the extreme value (NaN-free inputs).
    r = x.rank
    out_shape = tuple(d for k, d in enumerate(x.shape) if k != dim)
    big = x.shape[dim]
    init = E.b.full(out_shape, big, torch.int64)
    out_map = [f"d{k}" for k in range(r) if k != dim]
    ext = E.b.reshape(ext, out_shape)
    ext_map = out_map

    def body(b, i, o):
        k = b.index_to(b.index(dim), torch.int64)
        hit = b.cmp("eq", i[0], i[1], x.dtype)
        cand = b.select(hit, k, b.const(big, torch.int64), torch.int64)
        return b.min(o, cand, torch.int64)
    iters = ["reduction" if k == dim else "parallel" for k in range(r)]
    res = E.b.generic([(x, [f"d{k}" for k in range(r)]), (ext, ext_map)],
                      out_shape, torch.int64, body, iterators=iters,
                      out_map=out_map, init=init)
    return E.b.reshape(res, shape) if keep or a.dim is None else res
