"""Handlers for data-dependent indexing: gather and index_select (a
linalg.generic reading its source with tensor.extract), scatter,
scatter_add and index_add (a reduction linalg.generic over the scattered
positions).
"""

import torch

from ..builder import UnsupportedOpError, Value, numel
from .core import handles


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


@handles("scatter_add.default", "scatter.src", "scatter.value")
def _scatter(E, node, a):
    # out[.., k, ..] = self[.., k, ..] + sum_p (index[.., p, ..] == k) src[.., p, ..]
    # (scatter_add); scatter writes instead, the last write of a position
    # winning (PyTorch leaves duplicates unspecified): topk's gradient.
    x, idx = a.self, a.index
    dim = a.dim % x.rank
    t, tt = x.dtype, idx.dtype
    add = str(node.target).startswith("aten.scatter_add")
    src = a.src
    if not isinstance(src, Value):
        src = E.b.full(tuple(idx.shape), a.value, t)
    for k in range(x.rank):
        if k != dim and (idx.shape[k] != x.shape[k] or src.shape[k] != x.shape[k]):
            raise UnsupportedOpError(f"{str(node.target)[5:]} with an index "
                                     "smaller than the output outside the "
                                     "scatter dim")
    r = x.rank
    p = f"d{r}"
    m_in = [f"d{k}" if k != dim else p for k in range(r)]
    src_in = E.b.cast(src, t)
    if src.shape[dim] != idx.shape[dim]:
        offs = [0] * r
        src_in = E.b.extract_slice(src_in, offs, list(idx.shape), [1] * r)

    def body(b, i, o):
        k = b.index_to(b.index(dim), tt)
        hit = b.cmp("eq", _wrapped(b, i[0], x.shape[dim], tt), k, tt)
        if add:
            return b.add(o, b.select(hit, i[1], b.const(0, t), t), t)
        return b.select(hit, i[1], o, t)
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


def _wrapped(b, i, n, t):
    """A torch index into a dim of `n`: negative ones count from the end."""
    neg = b.cmp("lt", i, b.const(0, t), t)
    return b.select(neg, b.add(i, b.const(n, t), t), i, t)


def _advanced(indices, what):
    """(leading Nones, the index tensors) of an indices list whose index
    tensors are adjacent and of one shape, after leading Nones."""
    idxs = list(indices)
    while idxs and idxs[-1] is None:
        idxs.pop()
    lead = 0
    while lead < len(idxs) and idxs[lead] is None:
        lead += 1
    idxs = idxs[lead:]
    if not idxs or any(i is None for i in idxs) or \
            len({i.shape for i in idxs}) != 1:
        raise UnsupportedOpError(
            f"{what} with adjacent index tensors of one shape only")
    if any(i.dtype == torch.bool for i in idxs):
        raise UnsupportedOpError(f"{what} with a boolean mask")
    return lead, idxs


def _static_index(E, x, lead, idxs):
    """(offset, count, stride) of x's dim `lead` when the one index tensor is
    a known constant whose indices step evenly forward (Falcon's
    fused_qkv[..., [-2]]), else None."""
    if len(idxs) != 1 or idxs[0].name not in E.b.known:
        return None
    n = x.shape[lead]
    raw = [int(v) for v in E.b.known[idxs[0].name].flatten()]
    if not raw or any(not -n <= v < n for v in raw):
        return None
    vals = [v % n for v in raw]
    step = vals[1] - vals[0] if len(vals) > 1 else 1
    if step < 1 or any(b - a != step for a, b in zip(vals, vals[1:])):
        return None
    return vals[0], len(vals), step


def _slice_at(x, dim, offset, count, stride):
    offs, sizes, strides = [0] * x.rank, list(x.shape), [1] * x.rank
    offs[dim], sizes[dim], strides[dim] = offset, count, stride
    return offs, sizes, strides


def onehot_gather(E, x, idxs, lead, shape, wrap=True):
    """x[pre, idx0, .., post] as a contraction with x as an operand (the
    embedding's form): out[pre, p.., post] = sum_e.. (idx0[p..] == e0 and
    ..) x[pre, e.., post]. x's dims outside the index split with the
    output's loops (the expert weights MoE picks per token, tensor-parallel;
    an embedding's columns), an indexed dim split leaves a pending sum
    (Megatron's vocab-parallel embedding), with no special rule; it costs
    x's indexed sizes in flops per output element. `wrap`: negative indices
    count from the end."""
    k, q = len(idxs), idxs[0].rank
    ps = [f"d{lead + j}" for j in range(q)]
    post = x.rank - lead - k
    n = lead + q + post
    es = [f"d{n + j}" for j in range(k)]
    xm = [f"d{d}" for d in range(lead)] + es + \
        [f"d{lead + q + d}" for d in range(post)]
    t = x.dtype

    def onehot(b, i, o):
        hit = None
        for j, idx in enumerate(idxs):
            tt = idx.dtype
            v = _wrapped(b, i[j], x.shape[lead + j], tt) if wrap else i[j]
            c = b.cmp("eq", v, b.index_to(b.index(n + j), tt), tt)
            hit = c if hit is None else b.emit(f"arith.andi {hit}, {c}", "i1")
        return b.add(o, b.select(hit, i[k], b.const(0, t), t), t)
    return E.b.generic([(i, ps) for i in idxs] + [(x, xm)], shape, t,
                       onehot, iterators=["parallel"] * n + ["reduction"] * k,
                       out_map=[f"d{d}" for d in range(n)],
                       init=E.b.zeros(shape, t))


@handles("index.Tensor")
def _index(E, node, a):
    # x[:, idx] and x[idx0, idx1]: out[pre, p.., post] = x[pre, idx0[p..],
    # idx1[p..], .., post] (Falcon's split of its fused qkv); a negative
    # index counts from the end.
    x = a.self
    lead, idxs = _advanced(a.indices, "index")
    k, q = len(idxs), idxs[0].rank
    shape, _ = E.out()
    static = _static_index(E, x, lead, idxs)
    if static is not None:
        return E.b.reshape(E.b.extract_slice(x, *_slice_at(x, lead, *static)),
                           shape)
    if E.gather_form == "onehot":
        return onehot_gather(E, x, idxs, lead, shape)
    ps = [f"d{lead + j}" for j in range(q)]

    def body(b, i, o):
        coords = [b.index(d) for d in range(lead)]
        for j, idx in enumerate(idxs):
            v = _wrapped(b, i[j], x.shape[lead + j], idx.dtype)
            coords.append(b.index_cast(v, idx.dtype))
        coords += [b.index(lead + q + d) for d in range(x.rank - lead - k)]
        return _extract(b, x, coords)
    return E.b.generic([(i, ps) for i in idxs], shape, x.dtype, body)


@handles("index_put.default")
def _index_put(E, node, a):
    # self[idx0[p], .., idxk-1[p], rest] = values[p, rest] (accumulate: +=),
    # for leading index tensors of one shape: the form core ATen gives
    # embedding and gather backward. Without accumulate the last write of a
    # position wins (PyTorch leaves duplicates unspecified).
    # Leading Nones (x[:, idx] += v, the gradient of x[:, idx]) skip dims.
    x, vals = a.self, a.values
    lead, idxs = _advanced(a.indices, "index_put")
    k, ishape = len(idxs), idxs[0].shape
    r, q = x.rank, len(ishape)
    t = x.dtype
    vshape = tuple(x.shape[:lead]) + tuple(ishape) + tuple(x.shape[lead + k:])
    if vals.shape != vshape:
        vals = E.b.broadcast_to(vals, vshape)
    static = _static_index(E, x, lead, idxs)
    if static is not None:
        # Distinct positions of a strided slice: insert (or add) in place.
        where = _slice_at(x, lead, *static)
        vals = E.b.reshape(vals, tuple(where[1]))
        if a.accumulate:
            part = E.b.extract_slice(x, *where)
            vals = E.b.elementwise([part, vals], t,
                                   lambda b, v: b.add(v[0], v[1], t))
        return E.b.insert_slice(vals, x, *where)
    # loops: x's dims d0..d{r-1} (parallel), then the index dims (reduction)
    ps = [f"d{r + j}" for j in range(q)]
    ins = [(i, ps) for i in idxs] + [
        (vals, [f"d{j}" for j in range(lead)] + ps +
         [f"d{j}" for j in range(lead + k, r)])]

    def body(b, i, o):
        hit = None
        for j in range(k):
            tt = idxs[j].dtype
            c = b.cmp("eq", _wrapped(b, i[j], x.shape[lead + j], tt),
                      b.index_to(b.index(lead + j), tt), tt)
            hit = c if hit is None else b.emit(f"arith.andi {hit}, {c}", "i1")
        if a.accumulate:
            return b.add(o, b.select(hit, i[k], b.const(0, t), t), t)
        return b.select(hit, i[k], o, t)
    return E.b.generic(ins, x.shape, t, body,
                       iterators=["parallel"] * r + ["reduction"] * q,
                       out_map=[f"d{j}" for j in range(r)], init=x)
