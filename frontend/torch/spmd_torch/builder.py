"""A small text builder for global MLIR programs on tensors.

Values are SSA names with a static shape and a torch dtype. Compute is linalg
(named ops where they fit, linalg.generic otherwise), tensor, arith and math.
Everything is printed as text in the custom assembly format that
spmd-opt/mlir-opt parse.
"""

import math
import struct

import numpy as np
import torch


class UnsupportedOpError(RuntimeError):
    """An aten op or an argument combination the importer cannot translate."""


_MLIR_TYPES = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "i8",
    torch.bool: "i1",
}


def elem_type(dtype):
    try:
        return _MLIR_TYPES[dtype]
    except KeyError:
        raise UnsupportedOpError(f"element type {dtype} is not supported")


def is_float(dtype):
    return dtype.is_floating_point


def tensor_type(shape, dtype):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{elem_type(dtype)}>"


def float_literal(value, dtype):
    """Exact bit-pattern literal of a Python float in the given float type."""
    if dtype == torch.float32:
        return "0x%08X" % struct.unpack("<I", struct.pack("<f", value))[0]
    if dtype == torch.float64:
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if dtype == torch.float16:
        return "0x%04X" % int(np.array(value, np.float16).view(np.uint16))
    if dtype == torch.bfloat16:
        bits = torch.tensor(value, dtype=torch.bfloat16).view(torch.int16)
        return "0x%04X" % (int(bits) & 0xFFFF)
    raise UnsupportedOpError(f"not a float type: {dtype}")


class Value:
    __slots__ = ("name", "shape", "dtype")

    def __init__(self, name, shape, dtype):
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    @property
    def rank(self):
        return len(self.shape)

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)

    def __repr__(self):
        return f"Value({self.name}: {self.type})"


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def broadcast_shapes(*shapes):
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for k, d in enumerate(s):
            j = rank - len(s) + k
            if d != 1:
                if out[j] != 1 and out[j] != d:
                    raise UnsupportedOpError(f"shapes {shapes} do not broadcast")
                out[j] = d
    return tuple(out)


class Body:
    """Scalar code inside a linalg region: arith/math on one element type."""

    def __init__(self, builder):
        self.b = builder
        self.lines = []

    def emit(self, text, ty=None):
        name = self.b.fresh("s")
        self.lines.append(f"{name} = {text}" + (f" : {ty}" if ty else ""))
        return name

    # Constants and casts.
    def const(self, value, dtype):
        if is_float(dtype):
            if isinstance(value, bool):
                value = float(value)
            return self.emit(
                f"arith.constant {float_literal(float(value), dtype)} : "
                f"{elem_type(dtype)}")
        if dtype == torch.bool:
            return self.emit(f"arith.constant {'true' if value else 'false'}")
        if isinstance(value, float):
            if not value.is_integer():
                raise UnsupportedOpError(
                    f"float scalar {value} used with integer type {dtype}")
            value = int(value)
        return self.emit(f"arith.constant {int(value)} : {elem_type(dtype)}")

    def cast(self, x, src, dst):
        if src == dst or elem_type(src) == elem_type(dst) and src != torch.bool:
            return x
        ts, td = elem_type(src), elem_type(dst)
        if is_float(src) and is_float(dst):
            if {src, dst} == {torch.float16, torch.bfloat16}:
                x = self.emit(f"arith.extf {x} : {ts} to f32")
                return self.emit(f"arith.truncf {x} : f32 to {td}")
            wider = torch.finfo(dst).bits > torch.finfo(src).bits
            op = "arith.extf" if wider else "arith.truncf"
            return self.emit(f"{op} {x} : {ts} to {td}")
        if src == torch.bool and is_float(dst):
            return self.emit(f"arith.uitofp {x} : i1 to {td}")
        if is_float(dst):
            return self.emit(f"arith.sitofp {x} : {ts} to {td}")
        if dst == torch.bool:
            zero = self.const(0.0 if is_float(src) else 0, src)
            pred = "une" if is_float(src) else "ne"
            op = "arith.cmpf" if is_float(src) else "arith.cmpi"
            return self.emit(f"{op} {pred}, {x}, {zero} : {ts}")
        if is_float(src):
            return self.emit(f"arith.fptosi {x} : {ts} to {td}")
        if src == torch.bool:
            return self.emit(f"arith.extui {x} : i1 to {td}")
        sb, db = torch.iinfo(src).bits, torch.iinfo(dst).bits
        op = "arith.extsi" if db > sb else "arith.trunci"
        return self.emit(f"{op} {x} : {ts} to {td}")

    # Arithmetic on one type `t` (a torch dtype).
    def binop(self, fop, iop, x, y, t):
        op = fop if is_float(t) else iop
        if op is None:
            raise UnsupportedOpError(f"{fop} has no integer form for {t}")
        return self.emit(f"{op} {x}, {y}", elem_type(t))

    def add(self, x, y, t):
        return self.binop("arith.addf", "arith.addi", x, y, t)

    def sub(self, x, y, t):
        return self.binop("arith.subf", "arith.subi", x, y, t)

    def mul(self, x, y, t):
        return self.binop("arith.mulf", "arith.muli", x, y, t)

    def div(self, x, y, t):
        return self.binop("arith.divf", "arith.divsi", x, y, t)

    def max(self, x, y, t):
        return self.binop("arith.maximumf", "arith.maxsi", x, y, t)

    def min(self, x, y, t):
        return self.binop("arith.minimumf", "arith.minsi", x, y, t)

    def neg(self, x, t):
        if is_float(t):
            return self.emit(f"arith.negf {x}", elem_type(t))
        return self.sub(self.const(0, t), x, t)

    def unary_math(self, op, x, t):
        if not is_float(t):
            raise UnsupportedOpError(f"math.{op} on integer type {t}")
        return self.emit(f"math.{op} {x}", elem_type(t))

    def exp(self, x, t):
        return self.unary_math("exp", x, t)

    def log(self, x, t):
        return self.unary_math("log", x, t)

    def tanh(self, x, t):
        return self.unary_math("tanh", x, t)

    def erf(self, x, t):
        return self.unary_math("erf", x, t)

    def sqrt(self, x, t):
        return self.unary_math("sqrt", x, t)

    def rsqrt(self, x, t):
        return self.unary_math("rsqrt", x, t)

    def abs(self, x, t):
        if is_float(t):
            return self.unary_math("absf", x, t)
        return self.emit(f"math.absi {x}", elem_type(t))

    def sigmoid(self, x, t):
        one = self.const(1.0, t)
        e = self.exp(self.neg(x, t), t)
        return self.div(one, self.add(one, e, t), t)

    def powf(self, x, y, t):
        return self.emit(f"math.powf {x}, {y}", elem_type(t))

    def cmp(self, pred, x, y, t):
        if is_float(t):
            fpred = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole",
                     "gt": "ogt", "ge": "oge"}[pred]
            return self.emit(f"arith.cmpf {fpred}, {x}, {y} : {elem_type(t)}")
        ipred = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle",
                 "gt": "sgt", "ge": "sge"}[pred]
        return self.emit(f"arith.cmpi {ipred}, {x}, {y} : {elem_type(t)}")

    def select(self, c, x, y, t):
        return self.emit(f"arith.select {c}, {x}, {y}", elem_type(t))

    def index(self, dim):
        return self.emit(f"linalg.index {dim} : index")

    def index_cast(self, x, t):
        return self.emit(f"arith.index_cast {x} : {elem_type(t)} to index")

    def index_to(self, x, t):
        return self.emit(f"arith.index_cast {x} : index to {elem_type(t)}")


class Builder:
    """Collects the lines of one func.func body."""

    def __init__(self):
        self.counter = 0
        self.lines = []
        self.reshaped_from = {}  # reshape result name -> original Value
        # Small integer constants by value name: indexing by them is static
        # slicing (a gather inside a generic is not partitioned).
        self.known = {}
        # Location of the ops being built: the graph node (or plan entry)
        # they come from, so later errors and reshards can name it.
        self.loc = None

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def op(self, text, shape, dtype):
        v = Value(self.fresh(), shape, dtype)
        loc = f' loc("{self.loc}")' if self.loc else ""
        self.lines.append(f"{v.name} = {text}{loc}")
        return v

    # -- Creation --------------------------------------------------------
    def empty(self, shape, dtype):
        return self.op(f"tensor.empty() : {tensor_type(shape, dtype)}", shape,
                       dtype)

    def scalar_const(self, value, dtype):
        if is_float(dtype):
            lit = float_literal(float(value), dtype)
            name = self.fresh("c")
            self.lines.append(f"{name} = arith.constant {lit} : {elem_type(dtype)}")
            return name
        name = self.fresh("c")
        if dtype == torch.bool:
            self.lines.append(f"{name} = arith.constant {'true' if value else 'false'}")
        else:
            self.lines.append(
                f"{name} = arith.constant {int(value)} : {elem_type(dtype)}")
        return name

    def full(self, shape, value, dtype):
        c = self.scalar_const(value, dtype)
        e = self.empty(shape, dtype)
        t = tensor_type(shape, dtype)
        return self.op(
            f"linalg.fill ins({c} : {elem_type(dtype)}) outs({e.name} : {t}) -> {t}",
            shape, dtype)

    def dense(self, array, dtype):
        """A tensor constant with the exact bytes of `array`."""
        t = torch.as_tensor(array).to(dtype).contiguous()
        shape = tuple(t.shape)
        ty = tensor_type(shape, dtype)
        if dtype == torch.bool:
            flat = t.flatten().tolist()
            if flat and all(x == flat[0] for x in flat):
                body = "true" if flat[0] else "false"
            else:
                body = _nest_bools(t)
            return self.op(f"arith.constant dense<{body}> : {ty}", shape, dtype)
        if dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()
        if len(raw) == 0:
            return self.empty(shape, dtype)
        return self.op(f'arith.constant dense<"0x{raw.hex().upper()}"> : {ty}',
                       shape, dtype)

    # -- linalg.generic --------------------------------------------------
    def generic(self, inputs, out_shape, out_dtype, body_fn, iterators=None,
                out_map=None, init=None):
        """inputs: list of (Value, [affine exprs over d0..dn-1]).

        body_fn(body, in_args, out_arg) returns the yielded scalar name.
        Without `iterators` the loop nest is the output shape, all parallel.
        """
        if iterators is None:
            iterators = ["parallel"] * len(out_shape)
        n = len(iterators)
        dims = ", ".join(f"d{i}" for i in range(n))
        if out_map is None:
            out_map = [f"d{i}" for i in range(len(out_shape))]
        maps = [f"affine_map<({dims}) -> ({', '.join(m)})>"
                for _, m in inputs] + [
                    f"affine_map<({dims}) -> ({', '.join(out_map)})>"]
        if init is None:
            init = self.empty(out_shape, out_dtype)
        body = Body(self)
        in_args = [self.fresh("a") for _ in inputs]
        out_arg = self.fresh("o")
        result = body_fn(body, in_args, out_arg)
        out_t = tensor_type(out_shape, out_dtype)
        head = (f"linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                f"iterator_types = [{', '.join(repr(i).replace(chr(39), chr(34)) for i in iterators)}]}}")
        if inputs:
            head += (f" ins({', '.join(v.name for v, _ in inputs)} : "
                     f"{', '.join(v.type for v, _ in inputs)})")
        head += f" outs({init.name} : {out_t}) {{"
        bb_args = [f"{a}: {elem_type(v.dtype)}" for a, (v, _) in zip(in_args, inputs)]
        bb_args.append(f"{out_arg}: {elem_type(out_dtype)}")
        text = [head, f"^bb0({', '.join(bb_args)}):"]
        text += ["  " + l for l in body.lines]
        text.append(f"  linalg.yield {result} : {elem_type(out_dtype)}")
        text.append(f"}} -> {out_t}")
        return self.op("\n  ".join(text), out_shape, out_dtype)

    def elementwise(self, operands, out_dtype, fn, compute_dtype=None):
        """Broadcasting elementwise op (torch semantics).

        operands: Values or Python scalars. fn(body, [scalars in compute
        dtype]) -> scalar of out_dtype's element type.
        """
        compute = compute_dtype or out_dtype
        tensors = [o for o in operands if isinstance(o, Value)]
        out_shape = broadcast_shapes(*[v.shape for v in tensors])
        inputs = self.broadcast_inputs(tensors, out_shape)

        def body_fn(body, in_args, out_arg):
            args = []
            it = iter(zip(in_args, tensors))
            for o in operands:
                if isinstance(o, Value):
                    a, v = next(it)
                    args.append(body.cast(a, v.dtype, compute))
                else:
                    args.append(body.const(o, compute))
            return fn(body, args)

        return self.generic(inputs, out_shape, out_dtype, body_fn)

    def broadcast_inputs(self, values, out_shape):
        """(value, indexing exprs) with torch broadcasting: dims align at the
        right; a size-1 dim stretched to a larger output is collapsed away."""
        rank = len(out_shape)
        out = []
        for v in values:
            kept, m = [], []
            for k, d in enumerate(v.shape):
                j = rank - v.rank + k
                if d == 1 and out_shape[j] != 1:
                    continue
                kept.append(d)
                m.append(f"d{j}")
            # Drop stretched unit dims so every map is a projected
            # permutation (what linalg fusion and sharding rules expect).
            if len(kept) != v.rank:
                v = self.reshape(v, tuple(kept))
            out.append((v, m))
        return out

    def cast(self, v, dtype):
        if v.dtype == dtype:
            return v
        return self.elementwise([v], dtype,
                                lambda b, a: b.cast(a[0], v.dtype, dtype),
                                compute_dtype=v.dtype)

    # -- Reductions --------------------------------------------------------
    def reduce(self, x, dims, kind="sum", keepdim=False, dtype=None):
        dtype = dtype or x.dtype
        if dtype != x.dtype:
            x = self.cast(x, dtype)
        dims = sorted({d % x.rank for d in dims}) if x.rank else []
        if not dims:
            out = x
        else:
            out_shape = tuple(d for i, d in enumerate(x.shape) if i not in dims)
            if kind == "sum":
                ident = 0.0 if is_float(dtype) else 0
            elif kind == "max":
                ident = -math.inf if is_float(dtype) else torch.iinfo(dtype).min
            elif kind == "min":
                ident = math.inf if is_float(dtype) else torch.iinfo(dtype).max
            else:
                raise UnsupportedOpError(f"reduction kind {kind}")
            init = self.full(out_shape, ident, dtype)
            body = Body(self)
            a_in, a_acc = self.fresh("a"), self.fresh("o")
            r = {"sum": body.add, "max": body.max, "min": body.min}[kind](
                a_in, a_acc, dtype)
            et = elem_type(dtype)
            text = [f"linalg.reduce ins({x.name} : {x.type}) outs({init.name} : "
                    f"{tensor_type(out_shape, dtype)}) dimensions = [{', '.join(map(str, dims))}]",
                    f"  ({a_in}: {et}, {a_acc}: {et}) {{"]
            text += ["    " + l for l in body.lines]
            text += [f"    linalg.yield {r} : {et}", "  }"]
            out = self.op("\n  ".join(text), out_shape, dtype)
        if keepdim:
            kept = tuple(1 if i in dims else d for i, d in enumerate(x.shape))
            out = self.reshape(out, kept)
        return out

    # -- Structured named ops ----------------------------------------------
    def zeros(self, shape, dtype):
        return self.full(shape, 0.0 if is_float(dtype) else 0, dtype)

    def matmul(self, a, b):
        if a.rank != 2 or b.rank != 2 or a.shape[1] != b.shape[0]:
            raise UnsupportedOpError(f"mm of {a.type} and {b.type}")
        shape = (a.shape[0], b.shape[1])
        init = self.zeros(shape, a.dtype)
        t = tensor_type(shape, a.dtype)
        return self.op(
            f"linalg.matmul ins({a.name}, {b.name} : {a.type}, {b.type}) "
            f"outs({init.name} : {t}) -> {t}", shape, a.dtype)

    def batch_matmul(self, a, b):
        if a.rank != 3 or b.rank != 3 or a.shape[2] != b.shape[1] or \
                a.shape[0] != b.shape[0]:
            raise UnsupportedOpError(f"bmm of {a.type} and {b.type}")
        shape = (a.shape[0], a.shape[1], b.shape[2])
        init = self.zeros(shape, a.dtype)
        t = tensor_type(shape, a.dtype)
        return self.op(
            f"linalg.batch_matmul ins({a.name}, {b.name} : {a.type}, {b.type}) "
            f"outs({init.name} : {t}) -> {t}", shape, a.dtype)

    def transpose(self, x, perm):
        perm = [p % x.rank for p in perm]
        if perm == list(range(x.rank)):
            return x
        shape = tuple(x.shape[p] for p in perm)
        e = self.empty(shape, x.dtype)
        return self.op(
            f"linalg.transpose ins({x.name} : {x.type}) outs({e.name} : "
            f"{tensor_type(shape, x.dtype)}) permutation = [{', '.join(map(str, perm))}]",
            shape, x.dtype)

    def broadcast_to(self, x, shape):
        """torch.expand: new leading dims and size-1 dims stretched."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        lead = len(shape) - x.rank
        if lead < 0:
            raise UnsupportedOpError(f"cannot expand {x.type} to {shape}")
        added = list(range(lead))
        kept_shape = []
        for k, d in enumerate(x.shape):
            j = lead + k
            if d == shape[j]:
                kept_shape.append(d)
            elif d == 1:
                added.append(j)
            else:
                raise UnsupportedOpError(f"cannot expand {x.type} to {shape}")
        src = self.reshape(x, tuple(kept_shape))
        e = self.empty(shape, x.dtype)
        return self.op(
            f"linalg.broadcast ins({src.name} : {src.type}) outs({e.name} : "
            f"{tensor_type(shape, x.dtype)}) dimensions = [{', '.join(map(str, added))}]",
            shape, x.dtype)

    def reshape(self, x, shape):
        shape = tuple(int(d) for d in shape)
        if x.shape == shape:
            return x
        if numel(x.shape) != numel(shape):
            raise UnsupportedOpError(f"cannot reshape {x.type} to {shape}")
        # Undo a reshape instead of stacking another one on it (keepdim
        # reductions are expanded and then collapsed by their consumers).
        src = self.reshaped_from.get(x.name)
        if src is not None and src.shape == shape:
            return src
        src_groups, dst_groups = _reassociation(x.shape, shape)
        mid = tuple(numel([x.shape[i] for i in g]) for g in src_groups)
        v = x
        if len(src_groups) != x.rank or mid != x.shape:
            v = self.op(
                f"tensor.collapse_shape {x.name} {_groups_str(src_groups)} : "
                f"{x.type} into {tensor_type(mid, x.dtype)}", mid, x.dtype)
        if len(dst_groups) != len(shape) or mid != shape:
            v = self.op(
                f"tensor.expand_shape {v.name} {_groups_str(dst_groups)} "
                f"output_shape [{', '.join(map(str, shape))}] : {v.type} into "
                f"{tensor_type(shape, x.dtype)}", shape, x.dtype)
        self.reshaped_from[v.name] = self.reshaped_from.get(x.name, x)
        return v

    def extract_slice(self, x, offsets, sizes, strides, result_shape=None):
        result_shape = tuple(sizes) if result_shape is None else tuple(result_shape)
        if 0 in sizes:
            # An empty slice (Phi-3's x[..., rotary_dim:] with the rotary dim
            # the whole head) has no contents; upstream's verifier rejects
            # its offset at the end of the dim (or of an empty dim).
            return self.empty(result_shape, x.dtype)
        return self.op(
            f"tensor.extract_slice {x.name}[{', '.join(map(str, offsets))}] "
            f"[{', '.join(map(str, sizes))}] [{', '.join(map(str, strides))}] : "
            f"{x.type} to {tensor_type(result_shape, x.dtype)}",
            result_shape, x.dtype)

    def insert_slice(self, src, dest, offsets, sizes, strides):
        if 0 in sizes:  # nothing to insert (see extract_slice)
            return dest
        return self.op(
            f"tensor.insert_slice {src.name} into {dest.name}"
            f"[{', '.join(map(str, offsets))}] [{', '.join(map(str, sizes))}] "
            f"[{', '.join(map(str, strides))}] : {src.type} into {dest.type}",
            dest.shape, dest.dtype)

    def concat(self, values, dim):
        dim = dim % values[0].rank
        values = [v for v in values if v.shape[dim] != 0] or values[:1]
        if len(values) == 1:
            return values[0]
        shape = list(values[0].shape)
        shape[dim] = sum(v.shape[dim] for v in values)
        return self.op(
            f"tensor.concat dim({dim}) {', '.join(v.name for v in values)} : "
            f"({', '.join(v.type for v in values)}) -> "
            f"{tensor_type(shape, values[0].dtype)}", shape, values[0].dtype)

    def constrain(self, x, layout):
        return self.op(f"spmd.constrain {x.name} to {layout} : {x.type}",
                       x.shape, x.dtype)


def _groups_str(groups):
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def _reassociation(src, dst):
    """Groups of src dims and dst dims with equal products, in order."""
    n, m = len(src), len(dst)
    if n == 0 or m == 0:
        return [], []
    if 0 in src or 0 in dst:
        return [list(range(n))], [list(range(m))]
    sg, dg = [], []
    i = j = 0
    while i < n and j < m:
        gi, gj = [i], [j]
        ps, pd = src[i], dst[j]
        i += 1
        j += 1
        while ps != pd:
            if ps < pd:
                gi.append(i)
                ps *= src[i]
                i += 1
            else:
                gj.append(j)
                pd *= dst[j]
                j += 1
        sg.append(gi)
        dg.append(gj)
    sg[-1].extend(range(i, n))
    dg[-1].extend(range(j, m))
    return sg, dg


def _nest_bools(t):
    def rec(x):
        if x.dim() == 0:
            return "true" if bool(x) else "false"
        return "[" + ", ".join(rec(y) for y in x) + "]"
    return rec(t)
