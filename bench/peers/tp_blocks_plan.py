"""Megatron TP of the GPT blocks only: the embedding and the output layer
replicated, the plan JAX runs at the count size (jit cannot shard a
vocabulary of 97 on 4 devices)."""
from spmd_torch import ColwiseParallel, RowwiseParallel
plan = {
    "layers.*.attention.wq": ColwiseParallel(),
    "layers.*.attention.wk": ColwiseParallel(),
    "layers.*.attention.wv": ColwiseParallel(),
    "layers.*.attention.wo": RowwiseParallel(),
    "layers.*.feed_forward.w1": ColwiseParallel(),
    "layers.*.feed_forward.w2": RowwiseParallel(),
}
