"""Tensor + sequence parallelism for Hugging Face's GPT2LMHeadModel:
the token embedding's output and the layer norms sequence-sharded (the
position embedding is added to sequence shards), attention and MLP inputs
gathered, their Conv1D output projections reduce-scattered back to
sequence shards, the vocabulary split on the tied LM head."""
from spmd_torch import (ColwiseParallel, PrepareModuleInput, Replicate,
                        RowwiseParallel, SequenceParallel, Shard)

plan = {
    "transformer.wte": RowwiseParallel(input_layouts=Replicate(),
                                       output_layouts=Shard(1)),
    "transformer.h.*.ln_1": SequenceParallel(),
    "transformer.h.*.attn": PrepareModuleInput(input_layouts=(Shard(1),),
                                               desired_input_layouts=(Replicate(),)),
    "transformer.h.*.attn.c_attn": ColwiseParallel(),
    "transformer.h.*.attn.c_proj": RowwiseParallel(output_layouts=Shard(1)),
    "transformer.h.*.ln_2": SequenceParallel(),
    "transformer.h.*.mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                              desired_input_layouts=(Replicate(),)),
    "transformer.h.*.mlp.c_fc": ColwiseParallel(),
    "transformer.h.*.mlp.c_proj": RowwiseParallel(output_layouts=Shard(1)),
    "transformer.ln_f": SequenceParallel(),
    "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
}
