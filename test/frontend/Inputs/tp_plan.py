"""Megatron tensor parallelism for models.GPT / models.Llama (DTensor style)."""
from spmd_torch import ColwiseParallel, RowwiseParallel

plan = {
    "tok_embeddings": RowwiseParallel(),
    "layers.*.attention.wq": ColwiseParallel(),
    "layers.*.attention.wk": ColwiseParallel(),
    "layers.*.attention.wv": ColwiseParallel(),
    "layers.*.attention.wo": RowwiseParallel(),
    "layers.*.feed_forward.w1": ColwiseParallel(),
    "layers.*.feed_forward.w2": RowwiseParallel(),
    "output": ColwiseParallel(output_layouts=None),
}
