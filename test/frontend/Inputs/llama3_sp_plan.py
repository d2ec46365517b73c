"""Tensor + sequence parallelism for llama3.Llama3, as torchtitan writes it:
norms sequence-sharded, attention and feed-forward inputs gathered, their
outputs reduce-scattered back to sequence shards."""
from spmd_torch import (ColwiseParallel, PrepareModuleInput, Replicate,
                        RowwiseParallel, SequenceParallel, Shard)

plan = {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate(),
                                      output_layouts=Shard(1)),
    "layers.*.attention_norm": SequenceParallel(),
    "layers.*.attention": PrepareModuleInput(
        input_layouts=(Shard(1), None, None),
        desired_input_layouts=(Replicate(), None, None)),
    "layers.*.attention.w[qkv]": ColwiseParallel(),
    "layers.*.attention.wo": RowwiseParallel(output_layouts=Shard(1)),
    "layers.*.ffn_norm": SequenceParallel(),
    "layers.*.feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                                desired_input_layouts=(Replicate(),)),
    "layers.*.feed_forward.w[13]": ColwiseParallel(),
    "layers.*.feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
    "norm": SequenceParallel(),
    "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
}
