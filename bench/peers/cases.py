"""The models and sizes bench/peers compares on, shared by run.py and the
peers (each imports this file from its own directory)."""

# models.GPT: issue 19's count size and the larger one.
GPT_SIZES = {
    "count": dict(vocab=97, dim=48, heads=4, layers=2, seq=12, batch=8),
    "large": dict(vocab=2048, dim=512, heads=8, layers=4, seq=128, batch=8),
    # The count size with a vocabulary that divides 4 ranks: JAX can then
    # shard the embedding and output layer, so TP is the same plan for all.
    "count96": dict(vocab=96, dim=48, heads=4, layers=2, seq=12, batch=8),
}

# models.MLP (fc1, ReLU, fc2; cross-entropy over `out` classes): the size of
# bench/comm and the one of bench/step.
MLP_SIZES = {
    "count": dict(dim=16, hidden=32, out=8, batch=8),
    "large": dict(dim=1024, hidden=4096, out=1024, batch=32),
}

SIZES = {"gpt": GPT_SIZES, "mlp": MLP_SIZES}

PLANS = ["TP", "TP+SP", "DP", "FSDP", "FSDPxTP+SP"]
