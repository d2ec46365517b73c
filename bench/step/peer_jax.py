"""JAX side of bench/step/gpt_step.py: one training step (forward, mean
cross-entropy, backward, Adam) of models.GPT or models.Llama written in
JAX, from the same initial values and batch as the PyTorch model (an .npz
of its state_dict plus `tokens` and `targets`, written by gpt_step.py),
jitted on 4 host CPU devices with the parameters laid out as the plan lays
them out (NamedSharding), or on one device unpartitioned. Timed step by
step after warm-up.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 \\
        bench/peers/.venv-jax/bin/python peer_jax.py --model gpt \\
        --model-args '{...}' --plan TP --npz init.npz --warmup 2 --iters 5
                                                        -> one JSON line

The GPT's forward and the TP specs come from bench/peers/jax_peer.py (the
same plans as tp_plan.py / sp_plan.py: Megatron column/row-parallel
projections, vocabulary-parallel embedding and output layer; TP+SP also
constrains the residual stream to sequence shards between the blocks). The
Llama forward (RMSNorm, SwiGLU, no biases, no positions) is written here,
with w3 column-parallel like w1 (llama3_tp_plan.py / llama_sp_plan.py).
Adam is torch.optim.Adam's (no weight decay, bias-corrected by the step
count, which is an argument so that every step is the same program).
"""
import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "peers"))
import jax_peer  # noqa: E402  (the GPT forward and its TP specs)


def gpt_params(sd, layers):
    """jax_peer's parameter tree from models.GPT's state_dict."""
    p = {"tok": sd["tok_embeddings.weight"], "pos": sd["pos"],
         "norm_w": sd["norm.weight"], "norm_b": sd["norm.bias"],
         "out": sd["output.weight"], "layers": []}
    for i in range(layers):
        pre = f"layers.{i}."
        p["layers"].append({
            "ln1_w": sd[pre + "attention_norm.weight"],
            "ln1_b": sd[pre + "attention_norm.bias"],
            "wq": sd[pre + "attention.wq.weight"],
            "wk": sd[pre + "attention.wk.weight"],
            "wv": sd[pre + "attention.wv.weight"],
            "wo": sd[pre + "attention.wo.weight"],
            "ln2_w": sd[pre + "ffn_norm.weight"],
            "ln2_b": sd[pre + "ffn_norm.bias"],
            "w1": sd[pre + "feed_forward.w1.weight"],
            "b1": sd[pre + "feed_forward.w1.bias"],
            "w2": sd[pre + "feed_forward.w2.weight"],
            "b2": sd[pre + "feed_forward.w2.bias"]})
    return p


def llama_params(sd, layers):
    p = {"tok": sd["tok_embeddings.weight"], "norm_w": sd["norm.weight"],
         "out": sd["output.weight"], "layers": []}
    for i in range(layers):
        pre = f"layers.{i}."
        p["layers"].append({
            "n1": sd[pre + "attention_norm.weight"],
            "wq": sd[pre + "attention.wq.weight"],
            "wk": sd[pre + "attention.wk.weight"],
            "wv": sd[pre + "attention.wv.weight"],
            "wo": sd[pre + "attention.wo.weight"],
            "n2": sd[pre + "ffn_norm.weight"],
            "w1": sd[pre + "feed_forward.w1.weight"],
            "w2": sd[pre + "feed_forward.w2.weight"],
            "w3": sd[pre + "feed_forward.w3.weight"]})
    return p


def rms_norm(x, w, eps=1e-6):
    return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + eps) * w


def llama_forward(params, tokens, heads, constrain):
    b, t = tokens.shape
    x = constrain(params["tok"][tokens], "residual")
    mask = jnp.tril(jnp.ones((t, t), bool))
    for p in params["layers"]:
        y = constrain(rms_norm(x, p["n1"]), "residual")
        y = constrain(y, "block_input")
        q = (y @ p["wq"].T).reshape(b, t, heads, -1).transpose(0, 2, 1, 3)
        k = (y @ p["wk"].T).reshape(b, t, heads, -1).transpose(0, 2, 1, 3)
        v = (y @ p["wv"].T).reshape(b, t, heads, -1).transpose(0, 2, 1, 3)
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
        att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, -1) @ p["wo"].T
        x = constrain(x + constrain(y, "residual"), "residual")
        y = constrain(rms_norm(x, p["n2"]), "residual")
        y = constrain(y, "block_input")
        y = (jax.nn.silu(y @ p["w1"].T) * (y @ p["w3"].T)) @ p["w2"].T
        x = constrain(x + constrain(y, "residual"), "residual")
    y = constrain(rms_norm(x, params["norm_w"]), "residual")
    return constrain(y @ params["out"].T, "logits")


def cross_entropy(logits, targets):
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, targets[..., None], -1).mean()


def llama_tp_specs(params, axis):
    spec = jax.tree.map(lambda a: P(), params)
    spec["tok"] = P(axis, None)
    spec["out"] = P(axis, None)
    for layer in spec["layers"]:
        for name in ("wq", "wk", "wv", "w1", "w3"):
            layer[name] = P(axis, None)
        for name in ("wo", "w2"):
            layer[name] = P(None, axis)
    return spec


def adam(params, grads, m, v, step, lr, b1=0.9, b2=0.999, eps=1e-8):
    """torch.optim.Adam (weight_decay 0); `step` counts from 1."""
    c1 = 1 - b1 ** step
    c2 = 1 - b2 ** step

    def one(p, g, m, v):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p - (lr / c1) * m / (jnp.sqrt(v) / jnp.sqrt(c2) + eps)
        return p, m, v
    out = jax.tree.map(one, params, grads, m, v)
    pick = lambda i: jax.tree.map(lambda o: o[i], out,  # noqa: E731
                                  is_leaf=lambda o: isinstance(o, tuple))
    return pick(0), pick(1), pick(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=["gpt", "llama"])
    ap.add_argument("--model-args", required=True)
    ap.add_argument("--plan", required=True,
                    choices=["unpartitioned", "TP", "TP+SP", "DP"])
    ap.add_argument("--npz", required=True)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    margs = json.loads(args.model_args)
    data = np.load(args.npz)
    sd = {k: jnp.asarray(data[k]) for k in data.files
          if k not in ("tokens", "targets")}
    tokens = jnp.asarray(data["tokens"].astype(np.int32))
    targets = jnp.asarray(data["targets"].astype(np.int32))
    heads, layers = margs["heads"], margs["layers"]
    if args.model == "gpt":
        params = gpt_params(sd, layers)
        s = {"heads": heads}

        def forward(params, tokens, constrain):
            return jax_peer.forward(params, tokens, s, constrain)
        tp_of = jax_peer.tp_specs
    else:
        params = llama_params(sd, layers)

        def forward(params, tokens, constrain):
            return llama_forward(params, tokens, heads, constrain)
        tp_of = llama_tp_specs

    acts = {}
    if args.plan == "unpartitioned":
        mesh = Mesh(jax.devices()[:1], ("x",))
        spec = jax.tree.map(lambda a: P(), params)
        batch_spec = P()
    elif args.plan in ("TP", "TP+SP"):
        mesh = Mesh(jax.devices()[:4], ("tp",))
        spec = tp_of(params, "tp")
        batch_spec = P()
        if args.plan == "TP+SP":
            acts = {"residual": P(None, "tp", None), "block_input": P(),
                    "logits": P()}
    else:
        mesh = Mesh(jax.devices()[:4], ("dp",))
        spec = jax.tree.map(lambda a: P(), params)
        batch_spec = P("dp")
    spec, replicated = jax_peer.divisible(params, spec, mesh)

    def constrain(x, what):
        if what not in acts:
            return x
        return jax.lax.with_sharding_constraint(
            x, NamedSharding(mesh, acts[what]))

    def loss_fn(params, tokens, targets):
        return cross_entropy(forward(params, tokens, constrain), targets)

    def step(params, m, v, count, tokens, targets):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens, targets)
        params, m, v = adam(params, grads, m, v, count, args.lr)
        return loss, params, m, v

    shard = jax.tree.map(lambda p: NamedSharding(mesh, p), spec,
                         is_leaf=lambda x: isinstance(x, P))
    rep = NamedSharding(mesh, P())
    bat = NamedSharding(mesh, batch_spec)
    jitted = jax.jit(step, in_shardings=(shard, shard, shard, rep, bat, bat),
                     out_shardings=(rep, shard, shard, shard),
                     donate_argnums=(0, 1, 2))
    params = jax.device_put(params, shard)
    zeros = jax.tree.map(jnp.zeros_like, params)
    m = jax.device_put(zeros, shard)
    v = jax.device_put(jax.tree.map(jnp.zeros_like, params), shard)
    tokens, targets = jax.device_put(tokens, bat), jax.device_put(targets, bat)
    t0 = time.perf_counter()
    compiled = jitted.lower(params, m, v, jnp.float32(1), tokens,
                            targets).compile()
    compile_s = time.perf_counter() - t0
    losses, times = [], []
    for i in range(args.warmup + args.iters):
        t0 = time.perf_counter()
        loss, params, m, v = compiled(params, m, v, jnp.float32(i + 1),
                                      tokens, targets)
        jax.block_until_ready((loss, params, m, v))
        t1 = time.perf_counter()
        losses.append(float(loss))
        if i >= args.warmup:
            times.append((t1 - t0) * 1e3)
    print(json.dumps({"impl": "jax", "jax": jax.__version__,
                      "devices": len(mesh.devices.flat),
                      "losses": losses, "times_ms": times,
                      "compile_s": compile_s,
                      "xla_flags": os.environ.get("XLA_FLAGS", ""),
                      "note": ("replicated (dims that do not divide the "
                               "mesh): " + ", ".join(replicated))
                      if replicated else ""}))


if __name__ == "__main__":
    main()
