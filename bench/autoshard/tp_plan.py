"""Megatron TP for models.GPT and models.Llama: the tests' plan, plus
SwiGLU's gate (w3) column-split where the model has one."""
import os
import runpy

from spmd_torch import ColwiseParallel

_BASE = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "test", "frontend", "Inputs",
                                    "tp_plan.py"))["plan"]


def plan(model):
    out = dict(_BASE)
    if any(n.endswith("feed_forward.w3") for n, _ in model.named_modules()):
        out["layers.*.feed_forward.w3"] = ColwiseParallel()
    return out
