"""Handlers for the composite neural-network ops PyTorch 1.13 produces,
written out with reductions and linalg.generic: native_layer_norm and its
backward, nll_loss forward/backward, embedding (one-hot contraction or
tensor.extract, per the Emitter's gather_form) and its dense backward, and
mse_loss with its backward.
"""

import torch

from ..builder import UnsupportedOpError, numel
from .core import handles
from .indexing import onehot_gather


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
    # One-hot contraction: out[p, d] = sum_v (idx[p] == v) * table[v, d]
    # (indices are never negative).
    return onehot_gather(E, w, [idx], 0, shape, wrap=False)


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
