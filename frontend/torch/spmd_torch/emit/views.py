"""Handlers for identity-like and shape ops: view/reshape/squeeze,
transpose/permute/expand, slice/select/split/unbind, cat/stack and the
backward of slice and select. Values have value semantics: a view is a
reshape, transpose, broadcast or extract_slice of its operand.
"""

from ..builder import UnsupportedOpError, numel
from .core import handles


@handles("detach.default", "clone.default", "alias.default",
         "lift_fresh_copy.default", "contiguous.default")
def _identity(E, node, a):
    return a.self


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


@handles("slice_scatter.default")
def _slice_scatter(E, node, a):
    # self with self[.., start:end:step, ..] (on dim) replaced by src.
    x, src = a.self, a.src
    dim = (a.dim or 0) % x.rank
    step = a.step or 1
    start, count = _slice_params(x.shape[dim], a.start, a.end, step)
    if count != src.shape[dim]:
        raise UnsupportedOpError(
            f"slice_scatter of {src.shape[dim]} rows into a slice of {count}")
    offs = [0] * x.rank
    strides = [1] * x.rank
    offs[dim], strides[dim] = start, step
    return E.b.insert_slice(src, x, offs, list(src.shape), strides)


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


@handles("constant_pad_nd.default")
def _constant_pad_nd(E, node, a):
    # pad = [before, after] pairs from the last dim backwards; a negative
    # amount crops. out = value everywhere, x's (cropped) block inside.
    x = a.self
    pad = list(a.pad)
    r = x.rank
    before, after = [0] * r, [0] * r
    for i in range(len(pad) // 2):
        before[r - 1 - i], after[r - 1 - i] = pad[2 * i], pad[2 * i + 1]
    offs = [max(-b, 0) for b in before]
    sizes = [x.shape[d] - offs[d] - max(-after[d], 0) for d in range(r)]
    if any(s < 0 for s in sizes):
        raise UnsupportedOpError("constant_pad_nd crops more than the tensor")
    if offs != [0] * r or sizes != list(x.shape):
        x = E.b.extract_slice(x, offs, sizes, [1] * r)
    shape, dtype = E.out()
    out = E.b.full(shape, a.get("value", 0), dtype)
    if 0 in sizes:
        return out
    return E.b.insert_slice(x, out, [max(b, 0) for b in before], sizes, [1] * r)


@handles("repeat.default")
def _repeat(E, node, a):
    # torch.repeat tiles: x [s0, s1] repeated [r0, r1] is x broadcast to
    # [r0, s0, r1, s1] (leading 1s for repeats beyond x's rank) and
    # collapsed to [r0*s0, r1*s1] (Bloom's ALiBi slopes).
    x = a.self
    reps = [int(r) for r in a.repeats]
    if len(reps) < x.rank:
        raise UnsupportedOpError("repeat with fewer repeats than dims")
    sizes = [1] * (len(reps) - x.rank) + list(x.shape)
    shape, _ = E.out()
    if 0 in reps or 0 in sizes:
        return E.b.empty(shape, x.dtype)
    inter = [d for s in sizes for d in (1, s)]
    tiled = [d for r, s in zip(reps, sizes) for d in (r, s)]
    v = E.b.broadcast_to(E.b.reshape(x, inter), tiled)
    return E.b.reshape(v, shape)


@handles("flip.default")
def _flip(E, node, a):
    # out[.., i, ..] = x[.., n-1-i, ..]: the input map reverses the flipped
    # loops (their sharding rule then keeps them whole). cumsum's gradient.
    x = a.self
    dims = {d % x.rank for d in a.dims} if x.rank else set()
    m = [f"-d{k} + {x.shape[k] - 1}" if k in dims and x.shape[k] > 1
         else f"d{k}" for k in range(x.rank)]
    return E.b.generic([(x, m)], x.shape, x.dtype, lambda b, i, o: i[0])
