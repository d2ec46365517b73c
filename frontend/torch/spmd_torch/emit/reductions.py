"""Handlers for reductions: sum, mean, amax/amin, var/var_mean,
argmax/argmin, and softmax/log_softmax with their backward ops.
"""

import math

import torch

from ..builder import UnsupportedOpError, is_float, numel
from .core import handles


def _dims(dims, rank):
    if dims is None:
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    if len(dims) == 0:
        return list(range(rank))
    return [d % rank if rank else 0 for d in dims]


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


def _first_index(E, x, ext, dim, taken=None):
    """The first index along `dim` where x equals `ext` (x's shape with `dim`
    dropped) and `taken` (int32 like x, if given) is 0: the position of a
    max/min, or dim's size where none is."""
    r = x.rank
    out_shape = tuple(d for k, d in enumerate(x.shape) if k != dim)
    big = x.shape[dim]
    out_map = [f"d{k}" for k in range(r) if k != dim]
    full = [f"d{k}" for k in range(r)]

    def body(b, i, o):
        k = b.index_to(b.index(dim), torch.int64)
        hit = b.cmp("eq", i[0], i[1], x.dtype)
        if taken is not None:
            free = b.cmp("eq", i[2], b.const(0, torch.int32), torch.int32)
            hit = b.emit(f"arith.andi {hit}, {free}", "i1")
        cand = b.select(hit, k, b.const(big, torch.int64), torch.int64)
        return b.min(o, cand, torch.int64)
    iters = ["reduction" if k == dim else "parallel" for k in range(r)]
    ins = [(x, full), (ext, out_map)] + ([(taken, full)] if taken else [])
    return E.b.generic(ins, out_shape, torch.int64, body, iterators=iters,
                       out_map=out_map,
                       init=E.b.full(out_shape, big, torch.int64))


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
    ext = E.b.reduce(x, [dim], "max" if is_max else "min", False)
    res = _first_index(E, x, ext, dim)
    return E.b.reshape(res, shape) if keep or a.dim is None else res


@handles("max.dim", "min.dim")
def _max_dim(E, node, a):
    # (values, indices): the extreme value and the first index holding it.
    x = a.self
    is_max = str(node.target).startswith("aten.max")
    if x.rank == 0:
        return x, E.b.zeros((), torch.int64)
    dim, keep = a.dim % x.rank, bool(a.keepdim)
    ext = E.b.reduce(x, [dim], "max" if is_max else "min", False)
    pos = _first_index(E, x, ext, dim)
    if keep:
        kept = tuple(1 if d == dim else s for d, s in enumerate(x.shape))
        ext, pos = E.b.reshape(ext, kept), E.b.reshape(pos, kept)
    return ext, pos


# Larger k would unroll into as many passes over the input.
_TOPK_MAX_K = 64


@handles("topk.default")
def _topk(E, node, a):
    # k passes, each taking the extreme value and the first index holding
    # it, then marking that position taken (MoE routing: top 2 of 8
    # experts, 8 of 64). Ties go to the lower index; values come sorted
    # (largest first); taken positions read as -inf (+inf for the smallest)
    # and never match again, so infinite inputs keep distinct indices.
    (vshape, _), (ishape, _) = E.out(0), E.out(1)
    x, k = a.self, int(a.k)
    largest = a.get("largest", True)
    if x.rank == 0:
        return x, E.b.zeros((), torch.int64)
    dim = a.get("dim", -1) % x.rank
    if k > _TOPK_MAX_K:
        raise UnsupportedOpError(
            f"topk with k = {k} (at most {_TOPK_MAX_K}: it unrolls k passes)")
    kind = "max" if largest else "min"
    t = x.dtype
    mask = (-math.inf if largest else math.inf) if is_float(t) else \
        (torch.iinfo(t).min if largest else torch.iinfo(t).max)
    r = x.rank
    full = [f"d{q}" for q in range(r)]
    pos_map = [f"d{q}" for q in range(r) if q != dim]
    kept = tuple(1 if d == dim else s for d, s in enumerate(x.shape))
    vals, idxs, cur, taken = [], [], x, None
    for j in range(k):
        ext = E.b.reduce(cur, [dim], kind, False)
        pos = _first_index(E, cur, ext, dim, taken)
        vals.append(E.b.reshape(ext, kept))
        idxs.append(E.b.reshape(pos, kept))
        if j + 1 == k:
            break
        prev = taken

        def mark(b, i, o):
            here = b.cmp("eq", b.index_to(b.index(dim), torch.int64), i[0],
                         torch.int64)
            one = b.select(here, b.const(1, torch.int32),
                           b.const(0, torch.int32), torch.int32)
            return one if prev is None else b.max(one, i[1], torch.int32)
        taken = E.b.generic([(pos, pos_map)] + ([(prev, full)] if prev else []),
                            x.shape, torch.int32, mark)

        def masked(b, i, o):
            on = b.cmp("ne", i[1], b.const(0, torch.int32), torch.int32)
            return b.select(on, b.const(mask, t), i[0], t)
        cur = E.b.generic([(x, full), (taken, full)], x.shape, t, masked)
    values, indices = E.b.concat(vals, dim), E.b.concat(idxs, dim)
    assert values.shape == vshape and indices.shape == ishape
    return values, indices


@handles("any.dim", "any.dims", "any.default", "all.dim", "all.dims",
         "all.default")
def _any_all(E, node, a):
    # On 0/1 integers: any = max, all = min; then back to bool.
    x = E.b.cast(a.self, torch.bool)
    kind = "max" if str(node.target).startswith("aten.any") else "min"
    r = E.b.reduce(E.b.cast(x, torch.int32), _dims(a.dim, x.rank), kind,
                   bool(a.keepdim))
    return E.b.cast(r, torch.bool)


@handles("cumsum.default")
def _cumsum(E, node, a):
    # out[.., i, ..] = sum over j <= i of x[.., j, ..]: a reduction loop j
    # beside the output's loops, masked by the two indices (OPT's position
    # ids from the attention mask). Quadratic in the scanned dim, which
    # stays whole: the sharding rules give a loop linalg.index reads none.
    shape, dtype = E.out()
    x = E.b.cast(a.self, dtype)
    r = x.rank
    if r == 0:
        return x
    d = a.dim % r
    m = [f"d{k}" for k in range(r)]
    m[d] = f"d{r}"

    def body(b, ins, out):
        i = b.index_to(b.index(d), torch.int64)
        j = b.index_to(b.index(r), torch.int64)
        keep = b.cmp("le", j, i, torch.int64)
        term = b.select(keep, ins[0], b.const(0, dtype), dtype)
        return b.add(out, term, dtype)
    return E.b.generic([(x, m)], shape, dtype, body,
                       iterators=["parallel"] * r + ["reduction"],
                       init=E.b.zeros(shape, dtype))
