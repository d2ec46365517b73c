"""The emitted programs, run on the CPU through MLIR's own lowering, match
PyTorch's single-device results (loss, every updated parameter and every
optimizer state) for MLP and transformer training steps."""
import sys
import unittest

from common import run_steps, torch_reference  # noqa: F401 (sets sys.path)

import torch
import torch.nn.functional as F

import models
import spmd_torch as st
from spmd_torch import mlir_exec


class TrainStepNumerics(unittest.TestCase):
    def check(self, model, batch, loss_fn, make_opt, steps, atol=1e-5, rtol=1e-4,
              state_names=(), **export_kw):
        prog = st.export_train_step(model, batch, loss_fn,
                                    optimizer=make_opt(model.parameters()),
                                    **export_kw)
        outs = run_steps(prog, steps)
        losses, ref, ropt = torch_reference(model, batch, loss_fn, make_opt, steps)
        loss_at = [r.kind for r in prog.results].index("loss")
        torch.testing.assert_close(outs[loss_at], losses[-1], atol=atol, rtol=rtol)
        names = dict(ref.named_parameters())
        checked = 0
        for a in prog.args:
            if a.kind == "param":
                torch.testing.assert_close(
                    outs[a.updated_by], names[a.name].detach(), atol=atol, rtol=rtol,
                    msg=lambda m: f"parameter {a.name}: {m}")
                checked += 1
            elif a.kind == "state":
                pname, sname = a.name.rsplit(".", 1)
                want = ropt.state[names[pname]][sname]
                torch.testing.assert_close(
                    outs[a.updated_by], want, atol=atol, rtol=rtol,
                    msg=lambda m: f"state {a.name}: {m}")
                checked += 1
            elif a.kind == "step":
                self.assertEqual(float(outs[a.updated_by]), float(steps))
        n = len(names) * (1 + len(state_names))
        self.assertEqual(checked, n)
        return prog

    def test_mlp_sgd_momentum_three_steps(self):
        torch.manual_seed(1)
        m = models.MLP()
        batch = (torch.randn(8, 16), torch.randint(0, 8, (8,)))
        self.check(m, batch, F.cross_entropy,
                   lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9,
                                             weight_decay=1e-3),
                   steps=3, state_names=("momentum_buffer",))

    def test_mlp_adamw_feedback_order_three_steps(self):
        # Result i is the new argument i (what spmd-run --steps feeds back),
        # the loss after the updated values.
        torch.manual_seed(3)
        m = models.MLP(hidden=13)
        batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
        prog = self.check(m, batch, F.cross_entropy,
                          lambda p: torch.optim.AdamW(p, lr=1e-3), steps=3,
                          state_names=("exp_avg", "exp_avg_sq"),
                          feedback_order=True, mesh="tp=4")
        updated = [i for i, a in enumerate(prog.args) if a.updated_by is not None]
        self.assertEqual(updated, list(range(4 + 8 + 1)))
        for i in updated:
            self.assertEqual(prog.args[i].updated_by, i)
            self.assertEqual(prog.results[i].name, prog.args[i].name)
            self.assertEqual(prog.results[i].layout, prog.args[i].layout)
        self.assertEqual([r.kind for r in prog.results[13:]], ["loss"])

    def test_feedback_order_passes_buffers_through(self):
        # Buffers (RoPE tables, masks) come back unchanged at their argument
        # positions, so result i is the new argument i for every argument
        # before the batch, and the loss follows.
        m = models.MLP()
        m.register_buffer("scale", torch.ones(8), persistent=False)
        prog = st.export_train_step(
            m, (torch.randn(2, 16), torch.randint(0, 8, (2,))),
            F.cross_entropy, optimizer=torch.optim.Adam(m.parameters()),
            feedback_order=True)
        n_fed = sum(1 for a in prog.args if a.kind != "batch")
        for i in range(n_fed):
            self.assertEqual(prog.args[i].updated_by, i)
            self.assertEqual(prog.results[i].name, prog.args[i].name)
        self.assertEqual(prog.results[n_fed].kind, "loss")
        self.assertIn("buffer", [r.kind for r in prog.results])

    def test_mlp_adam_one_step(self):
        torch.manual_seed(2)
        m = models.MLP(hidden=30)
        batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
        self.check(m, batch, F.cross_entropy,
                   lambda p: torch.optim.Adam(p, lr=1e-3), steps=1,
                   state_names=("exp_avg", "exp_avg_sq"))

    def test_gpt_adam_one_step(self):
        # The toy transformer: dim 64, 4 heads, vocab 128, seq 16,
        # batch 8, two layers.
        torch.manual_seed(3)
        m = models.GPT(vocab=128, dim=64, heads=4, layers=2, seq=16)
        batch = (torch.randint(0, 128, (8, 16)), torch.randint(0, 128, (8, 16)))
        self.check(m, batch, models.lm_loss,
                   lambda p: torch.optim.Adam(p, lr=1e-3), steps=1,
                   atol=2e-5, state_names=("exp_avg", "exp_avg_sq"))

    def test_llama_adamw_three_steps(self):
        torch.manual_seed(4)
        m = models.Llama(vocab=64, dim=32, heads=4, layers=2, hidden=48)
        batch = (torch.randint(0, 64, (4, 8)), torch.randint(0, 64, (4, 8)))
        self.check(m, batch, models.lm_loss,
                   lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.1),
                   steps=3, atol=2e-5, state_names=("exp_avg", "exp_avg_sq"))

    def test_tied_weights(self):
        # The output projection shares the embedding table: one argument,
        # gradient from both uses.
        torch.manual_seed(7)
        m = models.GPT(vocab=32, dim=16, heads=2, layers=1, seq=8)
        m.output.weight = m.tok_embeddings.weight
        batch = (torch.randint(0, 32, (2, 8)), torch.randint(0, 32, (2, 8)))
        prog = self.check(m, batch, models.lm_loss,
                          lambda p: torch.optim.SGD(p, lr=0.5), steps=1)
        self.assertNotIn("output.weight", [a.name for a in prog.args])

    def test_buffers_are_arguments(self):
        class Scaled(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(6, 3)
                self.register_buffer("scale", torch.linspace(0.5, 2.0, 3))

            def forward(self, x):
                return self.fc(x) * self.scale

        torch.manual_seed(8)
        m = Scaled()
        batch = (torch.randn(4, 6), torch.randint(0, 3, (4,)))
        prog = self.check(m, batch, F.cross_entropy,
                          lambda p: torch.optim.SGD(p, lr=0.3, momentum=0.5),
                          steps=2, state_names=("momentum_buffer",))
        buf = [a for a in prog.args if a.kind == "buffer"]
        self.assertEqual([(b.name, b.updated_by) for b in buf], [("scale", None)])
        dp = st.export_train_step(m, batch, F.cross_entropy, mesh={"dp": 2}, fsdp=True)
        self.assertEqual([a.layout for a in dp.args if a.kind == "buffer"], ["[R]"])

    def test_gradients_returned_on_request(self):
        torch.manual_seed(5)
        m = models.MLP()
        batch = (torch.randn(4, 16), torch.randint(0, 8, (4,)))
        prog = st.export_train_step(m, batch, F.cross_entropy, return_grads=True,
                                    optimizer=st.SGD(lr=0.0))
        grads = [r for r in prog.results if r.kind == "grad"]
        self.assertEqual([g.name for g in grads],
                         [n + ".grad" for n, _ in m.named_parameters()])
        outs = mlir_exec.run_program(prog)
        F.cross_entropy(m(batch[0]), batch[1]).backward()
        for i, (n, p) in enumerate(m.named_parameters()):
            torch.testing.assert_close(outs[len(prog.results) - len(grads) + i],
                                       p.grad, atol=1e-6, rtol=1e-5)

    def test_cli_written_program_runs(self):
        # The CLI's file, inputs and PyTorch results agree with each other.
        import json
        import os
        import subprocess
        import tempfile
        import numpy as np
        from common import HERE, ROOT
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend", "torch"))
            subprocess.run(
                [sys.executable, "-m", "spmd_torch", "export",
                 os.path.join(HERE, "Inputs", "models.py") + ":MLP",
                 "--input-shape", "4,16", "--target-shape", "4", "--target-high", "8",
                 "--optimizer", "adam", "--seed", "3", "-o", f"{tmp}/s.mlir",
                 "--metadata", f"{tmp}/s.json", "--save-inputs", f"{tmp}/in",
                 "--save-outputs", f"{tmp}/out"], check=True, env=env)
            meta = json.load(open(f"{tmp}/s.json"))
            text = open(f"{tmp}/s.mlir").read()
            ins = [torch.from_numpy(np.load(f"{tmp}/in/arg{i}.npy"))
                   for i in range(len(meta["args"]))]
            want = [torch.from_numpy(np.load(f"{tmp}/out/res{i}.npy"))
                    for i in range(len(meta["results"]))]
            types = [(tuple(r["shape"]), getattr(torch, r["dtype"]))
                     for r in meta["results"]]
            got = mlir_exec.run(text, meta["func"], ins, types)
            self.assertEqual(len(got), 1 + 4 + 8 + 1)
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w.reshape(g.shape), atol=1e-6, rtol=1e-5)

    def test_gpt_forward(self):
        torch.manual_seed(6)
        m = models.GPT(vocab=64, dim=32, heads=4, layers=1, seq=8)
        x = torch.randint(0, 64, (2, 8))
        prog = st.export_forward(m, (x,))
        self.assertEqual([a.kind for a in prog.args].count("batch"), 1)
        out = mlir_exec.run_program(prog)
        with torch.no_grad():
            torch.testing.assert_close(out[0], m(x), atol=1e-5, rtol=1e-4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
