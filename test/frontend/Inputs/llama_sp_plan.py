"""Tensor + sequence parallelism for models.Llama (llama3_sp_plan.py's
torchtitan plan for a model whose attention takes only x): RMSNorms
sequence-sharded, attention and SwiGLU inputs gathered, their outputs
reduce-scattered back to sequence shards, w1 and w3 column-parallel."""
from spmd_torch import (ColwiseParallel, PrepareModuleInput, Replicate,
                        RowwiseParallel, SequenceParallel, Shard)

plan = {
    "tok_embeddings": RowwiseParallel(input_layouts=Replicate(),
                                      output_layouts=Shard(1)),
    "layers.*.attention_norm": SequenceParallel(),
    "layers.*.attention": PrepareModuleInput(input_layouts=(Shard(1),),
                                             desired_input_layouts=(Replicate(),)),
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
