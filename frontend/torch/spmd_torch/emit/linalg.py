"""Handlers for linear algebra: mm, bmm, addmm and baddbmm (linalg.matmul
and linalg.batch_matmul, plus a pointwise epilogue for the bias terms).
"""

from .core import handles


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
