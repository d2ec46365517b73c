"""Tensor + sequence parallelism for the Hugging Face Llama family (Llama,
Qwen2, Mistral share the module names), as torchtitan writes it for its
Llama: norms sequence-sharded, attention and MLP inputs gathered, their
outputs reduce-scattered back to sequence shards. The decoder layer calls
its attention with keyword arguments, so that input is pinned by name."""
from spmd_torch import (ColwiseParallel, PrepareModuleInput, Replicate,
                        RowwiseParallel, SequenceParallel, Shard)

plan = {
    "model.embed_tokens": RowwiseParallel(input_layouts=Replicate(),
                                          output_layouts=Shard(1)),
    "model.layers.*.input_layernorm": SequenceParallel(),
    "model.layers.*.self_attn": PrepareModuleInput(
        input_kwarg_layouts={"hidden_states": Shard(1)},
        desired_input_kwarg_layouts={"hidden_states": Replicate()}),
    "model.layers.*.self_attn.[qkv]_proj": ColwiseParallel(),
    "model.layers.*.self_attn.o_proj": RowwiseParallel(output_layouts=Shard(1)),
    "model.layers.*.post_attention_layernorm": SequenceParallel(),
    "model.layers.*.mlp": PrepareModuleInput(input_layouts=(Shard(1),),
                                             desired_input_layouts=(Replicate(),)),
    "model.layers.*.mlp.gate_proj": ColwiseParallel(),
    "model.layers.*.mlp.up_proj": ColwiseParallel(),
    "model.layers.*.mlp.down_proj": RowwiseParallel(output_layouts=Shard(1)),
    "model.norm": SequenceParallel(),
    "lm_head": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
}
