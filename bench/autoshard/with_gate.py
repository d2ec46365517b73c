"""The tests' TP / TP+SP plans (test/frontend/Inputs), plus SwiGLU's gate
(w3) column-split where the model has one: the hand plans of run.py for
models.GPT and models.Llama."""
import os
import runpy

from spmd_torch import ColwiseParallel

HERE = os.path.dirname(os.path.abspath(__file__))


def extend(test_plan):
    base = runpy.run_path(os.path.join(HERE, "..", "..", "test", "frontend",
                                       "Inputs", test_plan))["plan"]

    def plan(model):
        out = dict(base)
        if any(n.endswith("feed_forward.w3") for n, _ in model.named_modules()):
            out["layers.*.feed_forward.w3"] = ColwiseParallel()
        return out
    return plan
