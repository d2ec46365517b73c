"""Megatron tensor parallelism for models.Block (q/k/v/w1 colwise, o/w2 rowwise)."""
from spmd_torch import ColwiseParallel, RowwiseParallel

plan = {
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(),
}
