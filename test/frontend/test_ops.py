"""Op-level translation checks: small functions traced with make_fx, emitted,
run on the CPU through MLIR (spmd-opt lowering + mlir-runner) and compared
with PyTorch; plus the error paths."""
import unittest

from common import verify

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import models
import spmd_torch as st
from spmd_torch import mlir_exec
from spmd_torch.emitter import Emitter


def run_traced(fn, *inputs, gather_form="onehot"):
    gm = make_fx(fn)(*inputs)
    text, _, results = Emitter(gm, gather_form=gather_form).run("f")
    outs = mlir_exec.run(text, "f", list(inputs),
                         [(r.shape, r.dtype) for r in results])
    return text, outs


class OpNumerics(unittest.TestCase):
    def compare(self, fn, *inputs, atol=1e-5, rtol=1e-4, gather_form="onehot"):
        text, outs = run_traced(fn, *inputs, gather_form=gather_form)
        verify(self, text)
        want = fn(*inputs)
        self.assertEqual(len(outs), len(want))
        for i, (o, w) in enumerate(zip(outs, want)):
            torch.testing.assert_close(o, w.detach(), atol=atol, rtol=rtol,
                                       msg=lambda m: f"output {i}: {m}")
        return text

    def test_pointwise(self):
        def f(x, y, m):
            a = x.abs() + 1
            return [F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x),
                    torch.sigmoid(x), torch.tanh(x), torch.exp(x), torch.log(a),
                    torch.rsqrt(a), torch.sqrt(a), x.pow(3), a.pow(2.5), x / y,
                    x - 2 * y, -x, torch.relu(x), torch.where(x > 0, x, y),
                    x.masked_fill(m, -1e4), x.clamp(-0.5, 0.5),
                    torch.maximum(x, y), 1 - x, torch.pow(0.9, a), x * 3 + 1,
                    (x < y).float(), (x != 0) & m, torch.erf(x), 1.0 / a,
                    torch.log1p(a), torch.expm1(x), F.softplus(x),
                    F.softplus(8 * x, beta=2, threshold=5)]
        torch.manual_seed(0)
        x, y = torch.randn(4, 6), torch.randn(6) + 3
        m = torch.rand(4, 1) > 0.5
        text = self.compare(f, x, y, m)
        self.assertIn("linalg.generic", text)

    def test_backward_ops(self):
        def f(x, w, b, emb, idx, tgt):
            h = F.layer_norm(x, (8,), w, b)
            h = F.gelu(h) + F.gelu(h, approximate="tanh") + F.silu(h) + \
                torch.sigmoid(h) * torch.tanh(h) + \
                F.softplus(h, beta=2, threshold=1)
            s = torch.softmax(h, dim=0) + torch.log_softmax(h, dim=-1)
            s = s[:, ::2]
            s = torch.cat([s, s[:, 1:2].expand(-1, 3), h[:, 0].unsqueeze(1)], dim=1)
            e = F.embedding(idx, emb, padding_idx=1)
            r = F.rms_norm(e, (8,)) if hasattr(F, "rms_norm") else \
                e * torch.rsqrt(e.pow(2).mean(-1, keepdim=True) + 1e-6)
            z = s.sum() + r.sum(0).permute(1, 0).mean(dim=1).sum() + \
                F.cross_entropy(h, tgt, ignore_index=2) + \
                F.nll_loss(torch.log_softmax(h, 1), tgt, reduction="sum") * 0.1 + \
                torch.split(h, 3, dim=1)[1].pow(2).sum()
            return list(torch.autograd.grad(z, [x, w, b, emb]))
        torch.manual_seed(1)
        x = torch.randn(5, 8, requires_grad=True)
        w = torch.randn(8, requires_grad=True)
        b = torch.randn(8, requires_grad=True)
        emb = torch.randn(10, 8, requires_grad=True)
        idx = torch.tensor([[1, 2, 3], [3, 3, 9]])
        tgt = torch.tensor([0, 2, 7, 2, 5])
        text = self.compare(f, x, w, b, emb, idx, tgt, atol=2e-5)
        self.assertIn("tensor.insert_slice", text)
        self.assertIn("tensor.concat", text)

    def test_empty_slices(self):
        # Phi-3's partial rotary with the rotary dim the whole head:
        # x[..., 4:] of a dim of 4 is empty, concatenated back; and its
        # gradient, an empty slice scattered back.
        def f(x):
            rot, rest = x[..., :4], x[..., 4:]
            y = torch.cat([rot * 2, rest], dim=-1)
            z = (y * y).sum() + x[:, 2:2].sum()
            return [y] + list(torch.autograd.grad(z, [x]))
        torch.manual_seed(2)
        x = torch.randn(3, 4, requires_grad=True)
        self.compare(f, x)

    def test_scan_flip_tile(self):
        # cumsum (OPT's position ids from the mask, integer), its gradient
        # (flip, cumsum, flip), flip on two dims, repeat with a new dim
        # (Bloom's ALiBi).
        def f(x, m):
            pos = torch.cumsum(m, dim=1) * m - 1
            y = torch.cumsum(x, 1)
            z = (y * y).sum() + (x.flip(0) * torch.arange(3.0).view(3, 1)).sum()
            return [y, torch.cumsum(x, 0), pos, x.flip(0, 1), x.repeat(2, 3),
                    x[0].repeat(3, 1, 2)] + list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(3, 5, requires_grad=True)
        m = torch.tensor([[1, 1, 0, 1], [0, 1, 1, 1]])
        self.compare(f, x, m)

    def test_topk(self):
        # MoE routing (Mixtral): the top 2 of softmax probabilities, their
        # renormalized values and gradient (a scatter of the values'
        # gradient); smallest-k on another dim; a tie goes to the lower
        # index; integer input.
        def f(x, n):
            p = torch.softmax(x, -1)
            v, i = torch.topk(p, 2, dim=-1)
            v = v / v.sum(-1, keepdim=True)
            lo, j = torch.topk(x, 3, dim=0, largest=False)
            z = (v * v).sum() + (lo * lo).sum()
            inf = torch.tensor([[1.0, -float("inf"), 2.0, -float("inf")]])
            # (PyTorch orders tied -inf entries as it likes: count hits.)
            vi, ii = torch.topk(inf, 4)
            hits = torch.zeros(1, 4).scatter_add(1, ii, torch.ones(1, 4))
            return [v, i, lo, j, torch.topk(n, 2).indices, vi, hits] + \
                list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(5, 6, requires_grad=True)
        self.compare(f, x, torch.tensor([[3, 7, 7, 1], [2, 2, 9, 9]]))

    def test_max_dim_and_rounding_div(self):
        # max/min over a dim with indices (Phi-MoE's and GPT-OSS's routers)
        # and their gradient; division rounding toward -inf and toward 0
        # (Llama 4's chunked attention), float and integer, negative
        # operands included.
        def f(x, n, m):
            v, i = x.max(dim=-1, keepdim=True)
            w, j = torch.min(x, 0)
            z = (v * v).sum() + (w * w).sum()
            return [v, i, w, j,
                    torch.div(x, 0.3, rounding_mode="floor"),
                    torch.div(x, 0.3, rounding_mode="trunc"),
                    torch.div(n, m, rounding_mode="floor"),
                    torch.div(n, m, rounding_mode="trunc"), n // 4] + \
                list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(4, 5, requires_grad=True)
        n = torch.tensor([[7, -7, 8, -8, 0], [5, -6, 9, -1, 3]])
        m = torch.tensor([[2, 2, -3, -3, 5], [5, 4, -2, 7, -1]])
        self.compare(f, x, n, m)

    def test_clamp_tensor_and_polar(self):
        # clamp by tensor bounds (Phi-MoE's router), its gradient; torch.polar
        # (Llama 4's rotary table) applied as torchtitan does.
        def f(x, lo, hi, th):
            y = torch.clamp(x, lo, hi) + torch.clamp(x, min=lo)
            rot = torch.polar(torch.ones_like(th), th)
            q = torch.view_as_complex(x.view(4, 3, 2)) * rot
            z = (y * y).sum() + torch.view_as_real(q).pow(2).sum()
            return [y, torch.view_as_real(rot), torch.view_as_real(q)] + \
                list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(4, 6, requires_grad=True)
        self.compare(f, x, torch.full((4, 6), -0.5), torch.rand(4, 1),
                     torch.randn(4, 3))

    def test_advanced_index(self):
        # x[:, :, idx] (Falcon's split of its fused qkv), a 2-D index, two
        # adjacent index tensors, negative indices; the gradients are
        # index_put with leading Nones (a negative index was dropped there).
        i2d = torch.tensor([[0, 3], [2, 2]])

        def f(x, i, j, r):
            y = x[:, :, i] * 2 + x[:, :, j.flip(0)]
            z = (y * y).sum() + x[r].sum() + x[:, i2d].sum()
            return [y, x[:, i2d], x[r, j[:3]]] + \
                list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(3, 4, 5, requires_grad=True)
        args = (x, torch.tensor([4, 0, 2, 2]), torch.tensor([1, -1, 3, 0]),
                torch.tensor([2, 0, -1]))
        # One-hot contractions (the default) and tensor.extract gathers.
        self.assertIn("arith.select", self.compare(f, *args))
        self.assertIn("tensor.extract",
                      self.compare(f, *args, gather_form="extract"))

    def test_constant_index(self):
        # Indexing by a constant that steps evenly (Falcon's
        # fused_qkv[..., [-2]]) is a strided extract_slice and its gradient
        # an insert_slice, not a gather. A slice of the constant is no
        # constant any more: that one stays a gather (a one-hot reduction).
        cidx, cidx2 = torch.tensor([-2]), torch.tensor([0, 2, 4])

        def f(x):
            y = x[:, :, cidx] * 3 + x[:, cidx2[:2]].sum(1, keepdim=True)
            z = (y * y).sum() + x[:, :, cidx2].pow(2).sum()
            return [y, x[:, :, cidx2]] + list(torch.autograd.grad(z, [x]))
        torch.manual_seed(3)
        x = torch.randn(3, 4, 5, requires_grad=True)
        text = self.compare(f, x, gather_form="extract")
        self.assertEqual(text.count("tensor.extract %"), 1)
        self.assertIn("[1, 1, 2]", text)  # the stride of x[:, :, [0, 2, 4]]

    def test_shapes_and_creation(self):
        def f(x, s):
            t = x.view(2, 1, 3, 4).transpose(0, 2).reshape(12, 2)
            u = x.unsqueeze(0).squeeze(0).flatten()
            st_ = torch.stack([x, x * 2], dim=1)
            mask = torch.ones(4, 4, dtype=torch.bool).tril()
            up = torch.triu(torch.full((4, 4), 2.0), diagonal=1)
            ar = torch.arange(6) * 2
            ar32 = torch.arange(1, 9, 2, dtype=torch.int32)  # Bloom's ALiBi
            sc = s.reshape(1, 1).expand(3, 2) + s
            return [t, u, st_, mask, up, ar, ar32, sc, x.t().contiguous(),
                    torch.bmm(x.view(2, 3, 4), x.view(2, 4, 3)),
                    torch.addmm(s, x, x.t()), x.sum(0, keepdim=True), x.mean(),
                    x.amax(1), torch.var(x, 1)]
        torch.manual_seed(2)
        text = self.compare(f, torch.randn(6, 4), torch.randn(()))
        for op in ("linalg.matmul", "linalg.batch_matmul", "linalg.transpose",
                   "linalg.broadcast", "linalg.reduce", "linalg.fill",
                   "tensor.expand_shape", "tensor.collapse_shape"):
            self.assertIn(op, text)


    def test_gather_scatter_losses(self):
        def f(x, w, i, j):
            y = x @ w
            l = F.mse_loss(y, x) + torch.gather(y, 1, i).pow(2).sum() + \
                torch.index_select(y, 0, j).sum() * 0.5 + \
                torch.baddbmm(y.unsqueeze(0), y.unsqueeze(0), w.unsqueeze(0),
                              beta=0.5, alpha=2.0).sum() + \
                F.mse_loss(y, x, reduction="sum") * 0.1
            return [l, y.argmax(-1), y.argmin(0), y.argmax()] + \
                list(torch.autograd.grad(l, [w]))
        torch.manual_seed(3)
        x, w = torch.randn(4, 4), torch.randn(4, 4, requires_grad=True)
        i = torch.randint(0, 4, (4, 2))
        j = torch.tensor([3, 0, 3])
        text = self.compare(f, x, w, i, j)
        self.assertIn("tensor.extract", text)


    def test_embedding_forms(self):
        def f(w, idx):
            return [F.embedding(idx, w) * 2]
        torch.manual_seed(4)
        w, idx = torch.randn(7, 3), torch.tensor([[6, 0, 2], [2, 2, 5]])
        gm = make_fx(f)(w, idx)
        for form in ("onehot", "extract"):
            text, _, results = Emitter(gm, gather_form=form).run("f")
            verify(self, text)
            out = mlir_exec.run(text, "f", [w, idx], [(r.shape, r.dtype) for r in results])
            torch.testing.assert_close(out[0], f(w, idx)[0])
            if form == "onehot":
                # The table is an operand read through (v, d); v is reduced.
                self.assertIn("ins(%arg1, %arg0 : tensor<2x3xi64>, tensor<7x3xf32>)", text)
                self.assertIn('"parallel", "parallel", "parallel", "reduction"', text)
                self.assertNotIn("tensor.extract", text)
            else:
                self.assertIn("tensor.extract %arg0", text)


class ErrorPaths(unittest.TestCase):
    def test_unsupported_op_names_op_and_node(self):
        gm = make_fx(lambda x: torch.cummax(x, 0).values * 2)(torch.randn(4))
        with self.assertRaises(st.UnsupportedOpError) as cm:
            Emitter(gm).run("f")
        msg = str(cm.exception)
        self.assertIn("aten.cummax.default", msg)
        self.assertIn("graph node 'cummax'", msg)

    def test_boolean_mask_index_is_refused(self):
        # x.index_put((mask,), v): a boolean index is no position; the
        # translation refuses it rather than comparing i1 with positions.
        def f(x, m):
            return torch.index_put(x, (m,), torch.tensor(0.0))
        gm = make_fx(f)(torch.randn(4, 3), torch.rand(4, 3) > 0.5)
        with self.assertRaises(st.UnsupportedOpError) as cm:
            Emitter(gm).run("f")
        self.assertIn("boolean mask", str(cm.exception))

    def test_topk_with_large_k_is_refused(self):
        # topk unrolls k passes: past 64 it is refused by name, not emitted.
        gm = make_fx(lambda x: torch.topk(x, 65).values)(torch.randn(2, 80))
        with self.assertRaises(st.UnsupportedOpError) as cm:
            Emitter(gm).run("f")
        self.assertIn("topk with k = 65", str(cm.exception))

    def test_exponential_rate_must_be_positive(self):
        # PyTorch refuses lambd <= 0 when tracing; a graph that has one
        # anyway (written by hand here) is refused by name, not emitted.
        gm = make_fx(lambda x: torch.ops.aten.exponential.default(x, 2.0))(
            torch.randn(4))
        node = next(n for n in gm.graph.nodes if n.op == "call_function")
        node.args = (node.args[0], -1.0)
        gm.recompile()
        with self.assertRaises(st.UnsupportedOpError) as cm:
            Emitter(gm).run("f")
        self.assertIn("exponential with rate -1.0 (must be > 0)",
                      str(cm.exception))

    def test_unsupported_op_in_train_step(self):
        class Bad(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(4, 4)

            def forward(self, x):
                return torch.sort(self.fc(x), dim=-1).values

        with self.assertRaisesRegex(st.UnsupportedOpError, r"aten\.sort"):
            st.export_train_step(Bad(), (torch.randn(2, 4), torch.randn(2, 4)),
                                 F.mse_loss)

    def test_inplace_on_argument(self):
        def f(x):
            x.add_(1)
            return x * 2
        gm = make_fx(f)(torch.randn(3))
        with self.assertRaisesRegex(st.UnsupportedOpError,
                                    r"in-place op 'aten.add_.Tensor'.*mutates a function argument"):
            Emitter(gm).run("f")

    def test_half_types_pass_through(self):
        for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
            m = models.MLP().to(dtype)
            batch = (torch.randn(4, 16, dtype=dtype), torch.randint(0, 8, (4,)))
            prog = st.export_train_step(m, batch, F.cross_entropy, mesh={"dp": 2},
                                        optimizer=st.AdamW())
            verify(self, prog.text)
            self.assertIn(f"tensor<32x16x{name}>", prog.text)
            self.assertEqual(prog.args[0].dtype, str(dtype).split(".")[1])

    def test_half_types_run(self):
        # The forward pass in bf16/f16 through the CPU path, against f32.
        torch.manual_seed(9)
        for dtype, tol in ((torch.bfloat16, 3e-2), (torch.float16, 3e-3)):
            m = models.MLP()
            x = torch.randn(4, 16)
            prog = st.export_forward(m.to(dtype), (x.to(dtype),))
            out = mlir_exec.run_program(prog)[0]
            self.assertEqual(out.dtype, dtype)
            with torch.no_grad():
                ref = m.float()(x.to(dtype).float())
            torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)


if __name__ == "__main__":
    unittest.main(verbosity=2)
