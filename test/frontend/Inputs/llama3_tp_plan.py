"""Megatron tensor parallelism for llama3.Llama3 (torchtitan's plan without
sequence parallelism): attention and SwiGLU projections column-wise, their
outputs row-wise, the vocabulary split on the output projection."""
from spmd_torch import ColwiseParallel, RowwiseParallel



def plan(model):
    fused = hasattr(model.layers[0].attention, "wqkv")
    p = {
        "tok_embeddings": RowwiseParallel(),
        # A fused qkv projection split with .split: its column shards do not
        # line up with the q/k/v pieces (spmd reshards where they differ).
        "layers.*.attention." + ("wqkv" if fused else "w[qkv]"): ColwiseParallel(),
        "layers.*.attention.wo": RowwiseParallel(),
        "layers.*.feed_forward.w1": ColwiseParallel(),
        "layers.*.feed_forward.w2": RowwiseParallel(),
        "output": ColwiseParallel(output_layouts=None),
    }
    if hasattr(model.layers[0].feed_forward, "w3"):
        p["layers.*.feed_forward.w3"] = ColwiseParallel()
    if model.output.weight is model.tok_embeddings.weight:
        # Tied embeddings: one table, sharded once (on the vocabulary).
        del p["tok_embeddings"]
    return p
