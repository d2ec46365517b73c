"""Parallel plans (DTensor vocabulary) become spmd.layout annotations on the
step function's arguments/results and spmd.constrain ops at planned module
boundaries; every program parses and verifies with spmd-opt."""
import re
import unittest

from common import signature_layouts, verify

import torch
import torch.nn.functional as F

import models
import mlp_plan
import sp_plan
import tp_plan
import spmd_torch as st
from spmd_torch.plans import hf_tp_plan, match_module_name, resolve_plan


def constrains(text):
    return re.findall(r"spmd\.constrain %\S+ to #spmd\.layout<@mesh, (\[.*?\])> : (tensor<[^>]*>)",
                      text)


def gpt():
    torch.manual_seed(0)
    return models.GPT(vocab=128, dim=64, heads=4, layers=2, seq=16)


def gpt_batch():
    return (torch.randint(0, 128, (8, 16)), torch.randint(0, 128, (8, 16)))


class PlanTest(unittest.TestCase):
    def layouts(self, prog):
        verify(self, prog.text)
        args, results = signature_layouts(prog.text)
        self.assertEqual(len(args), len(prog.args))
        self.assertEqual(len(results), len(prog.results))
        # Metadata says the same as the text.
        self.assertEqual(args, [a.layout for a in prog.args])
        self.assertEqual(results, [r.layout for r in prog.results])
        # Updated values keep their argument's layout.
        for i, a in enumerate(prog.args):
            if a.updated_by is not None:
                self.assertEqual(results[a.updated_by], args[i], a.name)
        return {a.name: l for a, l in zip(prog.args, args)}

    def same_ops_as_plain(self, prog):
        # The same compute; reshapes may differ (a constrain between two
        # reshapes keeps them from cancelling).
        def ops(t):
            return sorted(o for o in re.findall(r"= ((?:linalg|tensor|arith|math)\.\w+)", t)
                          if not o.endswith("_shape"))
        self.assertEqual(ops(prog.text), ops(prog.plain_text))
        self.assertIsNone(re.search(r"spmd\.|#spmd", prog.plain_text),
                          "the plain program has spmd ops or attributes")

    # -- MLP ----------------------------------------------------------------
    def test_mlp_tp_uneven(self):
        # hidden 30 and 6 outputs on tp=4: torch.chunk sizes 8,8,8,6 / 2,2,2,0.
        torch.manual_seed(0)
        m = models.MLP(dim=16, hidden=30, out=6)
        batch = (torch.randn(5, 16), torch.randint(0, 6, (5,)))
        prog = st.export_train_step(m, batch, F.cross_entropy, mesh={"tp": 4},
                                    plan=mlp_plan.plan,
                                    optimizer=st.SGD(lr=0.1, momentum=0.9))
        L = self.layouts(prog)
        self.assertEqual(L["fc1.weight"], "[S(0)]")
        self.assertEqual(L["fc1.bias"], "[S(0)]")
        self.assertEqual(L["fc2.weight"], "[S(1)]")
        self.assertEqual(L["fc2.bias"], "[R]")
        self.assertEqual(L["fc1.weight.momentum_buffer"], "[S(0)]")
        self.assertEqual(L["fc2.weight.momentum_buffer"], "[S(1)]")
        self.assertEqual(L["batch.0"], "[R]")
        self.assertEqual(prog.results[0].layout, "[R]")
        # fc1 input -> R, fc1 output S(-1) = S(1), fc2 input S(1), fc2 output R.
        self.assertEqual(constrains(prog.text), [
            ("[R]", "tensor<5x16xf32>"), ("[S(1)]", "tensor<5x30xf32>"),
            ("[S(1)]", "tensor<5x30xf32>"), ("[R]", "tensor<5x6xf32>")])
        self.same_ops_as_plain(prog)
        self.assertIn('spmd.mesh @mesh ["tp"=4]', prog.text)

    def test_mlp_dp(self):
        m = models.MLP()
        batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
        prog = st.export_train_step(m, batch, F.cross_entropy, mesh="dp=4",
                                    optimizer=torch.optim.Adam(m.parameters()))
        L = self.layouts(prog)
        for a in prog.args:
            want = "[S(0)]" if a.kind == "batch" else "[R]"
            self.assertEqual(L[a.name], want, a.name)
        self.assertEqual(constrains(prog.text), [])

    def test_mlp_fsdp(self):
        m = models.MLP()
        batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
        prog = st.export_train_step(m, batch, F.cross_entropy, mesh="dp=4",
                                    fsdp=True,
                                    optimizer=torch.optim.AdamW(m.parameters()))
        L = self.layouts(prog)
        for a in prog.args:
            want = "[R]" if a.kind == "step" else "[S(0)]"
            self.assertEqual(L[a.name], want, a.name)

    def test_mlp_2d_dp_tp(self):
        m = models.MLP()
        batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
        prog = st.export_train_step(m, batch, F.cross_entropy, mesh="dp=2,tp=2",
                                    plan=mlp_plan.plan,
                                    optimizer=torch.optim.SGD(m.parameters(), lr=0.1,
                                                              momentum=0.9))
        L = self.layouts(prog)
        self.assertEqual(L["fc1.weight"], "[R, S(0)]")
        self.assertEqual(L["fc2.weight.momentum_buffer"], "[R, S(1)]")
        self.assertEqual(L["fc2.bias"], "[R, R]")
        self.assertEqual(L["batch.0"], "[S(0), R]")
        self.assertEqual(L["batch.1"], "[S(0), R]")
        self.assertEqual([l for l, _ in constrains(prog.text)],
                         ["[S(0), R]", "[S(0), S(1)]", "[S(0), S(1)]", "[S(0), R]"])

    # -- transformer -----------------------------------------------------------
    def test_gpt_tp_sp_1d(self):
        prog = st.export_train_step(gpt(), gpt_batch(), models.lm_loss,
                                    mesh={"tp": 4}, plan=sp_plan.plan)
        L = self.layouts(prog)
        self.assertEqual(L["batch.0"], "[R]")
        self.assertEqual(L["layers.0.attention_norm.weight"], "[R]")
        self.assertEqual(L["tok_embeddings.weight"], "[S(0)]")
        c = constrains(prog.text)
        self.assertEqual(sum(1 for l, t in c if l == "[S(1)]"), 2 * 8 + 4)
        # The output projection: declared S(1), gathered to R, logits R.
        self.assertEqual(c[-3:], [("[S(1)]", "tensor<8x16x64xf32>"),
                                  ("[R]", "tensor<8x16x64xf32>"),
                                  ("[R]", "tensor<8x16x128xf32>")])

    def test_gpt_tp(self):
        prog = st.export_train_step(gpt(), gpt_batch(), models.lm_loss,
                                    mesh={"tp": 4}, plan=tp_plan.plan,
                                    optimizer=st.Adam(lr=1e-3))
        L = self.layouts(prog)
        for i in range(2):
            p = f"layers.{i}."
            for w in ("wq", "wk", "wv"):
                self.assertEqual(L[p + f"attention.{w}.weight"], "[S(0)]")
                self.assertEqual(L[p + f"attention.{w}.weight.exp_avg"], "[S(0)]")
                self.assertEqual(L[p + f"attention.{w}.weight.exp_avg_sq"], "[S(0)]")
            self.assertEqual(L[p + "attention.wo.weight"], "[S(1)]")
            self.assertEqual(L[p + "feed_forward.w1.weight"], "[S(0)]")
            self.assertEqual(L[p + "feed_forward.w1.bias"], "[S(0)]")
            self.assertEqual(L[p + "feed_forward.w2.weight"], "[S(1)]")
            self.assertEqual(L[p + "feed_forward.w2.bias"], "[R]")
            self.assertEqual(L[p + "attention_norm.weight"], "[R]")
        self.assertEqual(L["tok_embeddings.weight"], "[S(0)]")
        self.assertEqual(L["output.weight"], "[S(0)]")
        self.assertEqual(L["pos"], "[R]")
        self.assertEqual(L["step"], "[R]")
        self.assertEqual(L["batch.0"], "[R]")
        c = constrains(prog.text)
        # Per layer: attention inputs R (3 column-parallel linears), q/k/v
        # outputs S(2), wo input S(2) and output R; w1 in R, out S(2), w2 in
        # S(2), out R. Plus embedding in/out and the output projection.
        self.assertEqual(len(c), 2 * 12 + 4)
        self.assertEqual(sum(1 for l, t in c if l == "[S(2)]"), 2 * 6 + 1)
        self.same_ops_as_plain(prog)

    def test_gpt_tp_sp_2d(self):
        prog = st.export_train_step(gpt(), gpt_batch(), models.lm_loss,
                                    mesh="dp=2,tp=2", plan=sp_plan.plan,
                                    optimizer=st.AdamW(lr=1e-3))
        L = self.layouts(prog)
        self.assertEqual(L["batch.0"], "[S(0), R]")
        self.assertEqual(L["batch.1"], "[S(0), R]")
        self.assertEqual(L["layers.0.attention.wq.weight"], "[R, S(0)]")
        self.assertEqual(L["layers.1.attention.wo.weight"], "[R, S(1)]")
        self.assertEqual(L["layers.1.ffn_norm.weight"], "[R, R]")
        self.assertEqual(L["tok_embeddings.weight"], "[R, S(0)]")
        c = constrains(prog.text)
        # Sequence-sharded activations [b, s, d] on (dp, tp): [S(0), S(1)].
        seq = [t for l, t in c if l == "[S(0), S(1)]"]
        self.assertIn("tensor<8x16x64xf32>", seq)
        # Norm inputs and outputs (2 per layer and 2 for the final norm)
        # plus the attention/ffn input declarations and the embedding and
        # wo/w2 outputs: 2*(2+2+2+2) + 2 + 1 + 1.
        self.assertEqual(len(seq), 2 * 8 + 4)
        # The attention and ffn inputs are gathered to R on tp.
        self.assertGreaterEqual(sum(1 for l, _ in c if l == "[S(0), R]"), 2 * 2)
        self.same_ops_as_plain(prog)

    def test_gpt_dp(self):
        prog = st.export_train_step(gpt(), gpt_batch(), models.lm_loss,
                                    mesh={"dp": 4})
        L = self.layouts(prog)
        self.assertTrue(all(L[a.name] == ("[S(0)]" if a.kind == "batch" else "[R]")
                            for a in prog.args))
        self.assertEqual(constrains(prog.text), [])

    def test_gpt_fsdp_tp_2d(self):
        prog = st.export_train_step(gpt(), gpt_batch(), models.lm_loss,
                                    mesh="dp=2,tp=2", plan=tp_plan.plan, fsdp=True,
                                    optimizer=st.Adam())
        L = self.layouts(prog)
        # FSDP shards the dim TP leaves whole, so a gradient partial on dp
        # and sharded on tp is reduce-scattered in place; a TP-sharded vector
        # stays whole on dp.
        self.assertEqual(L["layers.0.attention.wq.weight"], "[S(1), S(0)]")
        self.assertEqual(L["layers.0.attention.wq.weight.exp_avg"], "[S(1), S(0)]")
        self.assertEqual(L["layers.0.attention.wo.weight"], "[S(0), S(1)]")
        self.assertEqual(L["layers.0.feed_forward.w1.bias"], "[R, S(0)]")
        self.assertEqual(L["layers.0.feed_forward.w2.bias"], "[S(0), R]")
        self.assertEqual(L["layers.0.attention_norm.weight"], "[S(0), R]")
        self.assertEqual(L["step"], "[R, R]")
        self.assertEqual(L["batch.0"], "[S(0), R]")

    def test_llama_fsdp(self):
        torch.manual_seed(0)
        m = models.Llama(vocab=64, dim=32, heads=4, layers=1, hidden=40)
        batch = (torch.randint(0, 64, (3, 8)), torch.randint(0, 64, (3, 8)))
        prog = st.export_train_step(m, batch, models.lm_loss, mesh={"dp": 2},
                                    fsdp=True, optimizer=st.AdamW())
        L = self.layouts(prog)
        self.assertEqual(L["layers.0.feed_forward.w3.weight"], "[S(0)]")
        self.assertEqual(L["norm.weight"], "[S(0)]")

    def test_constrain_grads(self):
        m = models.MLP()
        batch = (torch.randn(4, 16), torch.randint(0, 8, (4,)))
        base = st.export_train_step(m, batch, F.cross_entropy, mesh={"tp": 2},
                                    plan=mlp_plan.plan)
        pinned = st.export_train_step(m, batch, F.cross_entropy, mesh={"tp": 2},
                                      plan=mlp_plan.plan, constrain_grads=True)
        verify(self, pinned.text)
        # Each pinned forward value whose gradient flows gets one more pin
        # (the model input needs no gradient).
        self.assertEqual(len(constrains(pinned.text)), len(constrains(base.text)) + 3)

    def test_forward_with_plan(self):
        m = models.MLP()
        prog = st.export_forward(m, (torch.randn(4, 16),), mesh="dp=2,tp=2",
                                 plan=mlp_plan.plan)
        L = self.layouts(prog)
        self.assertEqual(L["fc1.weight"], "[R, S(0)]")
        self.assertEqual(prog.results[0].layout, "[S(0), R]")

    def test_prepare_module_output_full_layout(self):
        m = models.MLP()
        plan = {"fc2": st.PrepareModuleOutput(
            output_layouts=st.Layout(st.Shard(0), st.Partial()),
            desired_output_layouts=st.Layout(st.Shard(0), st.Replicate()))}
        prog = st.export_forward(m, (torch.randn(4, 16),), mesh="dp=2,tp=2",
                                 plan=plan)
        verify(self, prog.text)
        self.assertEqual([l for l, _ in constrains(prog.text)],
                         ["[S(0), P(sum)]", "[S(0), R]"])

    def test_hf_moe_experts_traced_static(self):
        # transformers' default MoE experts ("grouped_mm": tokens sorted into
        # data-dependent groups) are traced as "batched_mm", with a note,
        # and the model's own choice is restored after the export.
        import contextlib
        import io
        import hf_models
        torch.manual_seed(0)
        m = hf_models.mixtral()
        self.assertEqual(m.get_experts_implementation(), {"": "grouped_mm"})
        ids = torch.randint(0, hf_models.VOCAB, (2, 8))
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            prog = st.export_train_step(
                m, (ids,), mesh={"dp": 2},
                step_fn=lambda model, x: model(input_ids=x, labels=x).loss)
        self.assertIn("MixtralForCausalLM's experts are traced as "
                      "transformers' 'batched_mm' instead of 'grouped_mm'",
                      err.getvalue())
        self.assertEqual(m.get_experts_implementation(), {"": "grouped_mm"})
        # A model without MoE experts is left alone, silently.
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            st.export_train_step(
                hf_models.llama(), (ids,), mesh={"dp": 2},
                step_fn=lambda model, x: model(input_ids=x, labels=x).loss)
        self.assertNotIn("experts", err.getvalue())


class WildcardTest(unittest.TestCase):
    def test_match(self):
        self.assertTrue(match_module_name("layers.*.attention.wq", "layers.0.attention.wq"))
        self.assertTrue(match_module_name("layers.*.attention.w[qk]", "layers.1.attention.wk"))
        self.assertFalse(match_module_name("layers.*.attention.wq", "layers.0.attention.wv"))
        # A '*' is one dotted atom, as in DTensor's parallelize_module.
        self.assertFalse(match_module_name("layers.*", "layers.0.attention"))
        self.assertFalse(match_module_name("*.wq", "layers.0.attention.wq"))

    def test_resolve(self):
        got = [n for n, _, _ in resolve_plan(gpt(), {"layers.*.attention.w?": st.ColwiseParallel()})]
        self.assertEqual(got, [f"layers.{i}.attention.{w}" for i in range(2)
                               for w in ("wq", "wk", "wv", "wo")])

    def test_unmatched_key(self):
        with self.assertRaisesRegex(ValueError, r"match no module: \['layer.\*.wq'\]"):
            resolve_plan(gpt(), {"layer.*.wq": st.ColwiseParallel()})

    def test_bad_style_target(self):
        with self.assertRaisesRegex(ValueError, "ColwiseParallel on 'norm'"):
            st.export_train_step(gpt(), gpt_batch(), models.lm_loss, mesh={"tp": 2},
                                 plan={"norm": st.ColwiseParallel()})

    def test_hf_parameter_entries(self):
        # A Hugging Face plan's entries naming parameters (MoE experts'
        # stacked weights [experts, out, in] and biases [experts, out]):
        # colwise styles split out, rowwise in; a rowwise bias stays whole.
        class Experts(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for n, shape in (("gate_up_proj", (4, 10, 6)),
                                 ("gate_up_proj_bias", (4, 10)),
                                 ("down_proj", (4, 6, 5)),
                                 ("down_proj_bias", (4, 6))):
                    setattr(self, n, torch.nn.Parameter(torch.zeros(shape)))

        class Block(torch.nn.Module):
            _tp_plan = {"mlp.experts.gate_up_proj": "packed_colwise",
                        "mlp.experts.gate_up_proj_bias": "packed_colwise",
                        "mlp.experts.down_proj": "rowwise",
                        "mlp.experts.down_proj_bias": "rowwise",
                        "mlp.experts": "moe_tp_experts",
                        # (matches nothing: dropped, as transformers'
                        # unprefixed duplicates of the base model's keys)
                        "model.mlp.experts.down_proj": "packed_rowwise"}

            def __init__(self):
                super().__init__()
                self.mlp = torch.nn.Module()
                self.mlp.experts = Experts()

        plan = hf_tp_plan(Block())
        self.assertEqual(list(plan), ["mlp.experts"])
        self.assertEqual(plan["mlp.experts"].param_placements("", None),
                         {"gate_up_proj": st.Shard(1),
                          "gate_up_proj_bias": st.Shard(1),
                          "down_proj": st.Shard(2),
                          "down_proj_bias": st.Replicate()})

    def test_plan_needs_tp_axis(self):
        with self.assertRaisesRegex(ValueError, "mesh with axis 'tp'"):
            st.export_train_step(models.MLP(), (torch.randn(2, 16), torch.tensor([0, 1])),
                                 F.cross_entropy, mesh={"dp": 2}, plan=mlp_plan.plan)


if __name__ == "__main__":
    unittest.main(verbosity=2)
