"""Megatron TP for models.GPT and models.Llama (w3: SwiGLU's gate, only
where the model has one)."""
from spmd_torch import ColwiseParallel, RowwiseParallel

_PLAN = {
    "tok_embeddings": RowwiseParallel(),
    "layers.*.attention.wq": ColwiseParallel(),
    "layers.*.attention.wk": ColwiseParallel(),
    "layers.*.attention.wv": ColwiseParallel(),
    "layers.*.attention.wo": RowwiseParallel(),
    "layers.*.feed_forward.w1": ColwiseParallel(),
    "layers.*.feed_forward.w3": ColwiseParallel(),
    "layers.*.feed_forward.w2": RowwiseParallel(),
    "output": ColwiseParallel(output_layouts=None),
}


def plan(model):
    has_w3 = any(n.endswith("feed_forward.w3") for n, _ in model.named_modules())
    return {k: v for k, v in _PLAN.items() if has_w3 or not k.endswith(".w3")}
