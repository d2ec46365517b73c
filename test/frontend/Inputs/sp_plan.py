"""Tensor + sequence parallelism (Megatron-SP) for models.GPT, as in the
DTensor tutorials: norms sequence-sharded, attention/ffn inputs gathered."""
from spmd_torch import (ColwiseParallel, PrepareModuleInput, Replicate,
                        RowwiseParallel, SequenceParallel, Shard)

plan = {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate(),
                                      output_layouts=Shard(1)),
    "layers.*.attention_norm": SequenceParallel(),
    "layers.*.attention": PrepareModuleInput(input_layouts=(Shard(1),),
                                             desired_input_layouts=(Replicate(),)),
    "layers.*.attention.wq": ColwiseParallel(),
    "layers.*.attention.wk": ColwiseParallel(),
    "layers.*.attention.wv": ColwiseParallel(),
    "layers.*.attention.wo": RowwiseParallel(output_layouts=Shard(1)),
    "layers.*.ffn_norm": SequenceParallel(),
    "layers.*.feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                                desired_input_layouts=(Replicate(),)),
    "layers.*.feed_forward.w1": ColwiseParallel(),
    "layers.*.feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
    "norm": SequenceParallel(),
    "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
}
