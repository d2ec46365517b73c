"""Megatron MLP with sequence parallelism: the input and output rows (the
tokens) sharded on tp, gathered before fc1, reduce-scattered after fc2."""
from spmd_torch import ColwiseParallel, RowwiseParallel, Shard

plan = {"fc1": ColwiseParallel(input_layouts=Shard(0)),
        "fc2": RowwiseParallel(output_layouts=Shard(0))}
