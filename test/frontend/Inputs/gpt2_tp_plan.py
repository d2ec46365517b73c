"""Megatron tensor parallelism for Hugging Face's GPT2LMHeadModel (whose
config declares no plan): the fused qkv projection and the first MLP layer
column-wise, their output projections row-wise, the vocabulary split on the
tied embedding / LM head. GPT-2's linear layers are transformers' Conv1D
(weight [in, out]); the styles shard the matching dims."""
from spmd_torch import ColwiseParallel, Replicate, RowwiseParallel

plan = {
    "transformer.wte": RowwiseParallel(),
    "transformer.h.*.attn.c_attn": ColwiseParallel(),
    "transformer.h.*.attn.c_proj": RowwiseParallel(),
    "transformer.h.*.mlp.c_fc": ColwiseParallel(),
    "transformer.h.*.mlp.c_proj": RowwiseParallel(),
    "lm_head": ColwiseParallel(output_layouts=Replicate()),
}
