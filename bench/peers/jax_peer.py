"""JAX side of bench/peers: the same training steps written in JAX (the GPT:
models.GPT's learned positions, LayerNorm, GELU MLP with biases, causal
attention, mean cross-entropy; the MLP: models.MLP's fc1, ReLU, fc2 and
cross-entropy over its classes; AdamW), jitted on 4 host CPU devices with the
parameters laid out as each plan lays them out, partitioned by GSPMD or
Shardy; the collectives are counted in the compiled HLO, with bytes per
rank under the ring formulas spmd-comm-report uses.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 \\
        python jax_peer.py --model gpt --plan TP --partitioner shardy
                                                        -> one JSON object
"""
import argparse
import json
import math
import os
import re

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from cases import PLANS, SIZES  # noqa: E402


def init(key, s):
    """Parameters in torch's layout (Linear weights [out, in])."""
    d, v = s["dim"], s["vocab"]
    keys = iter(jax.random.split(key, 64))

    def w(*shape):
        return jax.random.normal(next(keys), shape, jnp.float32) * 0.02

    params = {"tok": w(v, d), "pos": w(s["seq"], d),
              "norm_w": jnp.ones(d), "norm_b": jnp.zeros(d), "out": w(v, d),
              "layers": []}
    for _ in range(s["layers"]):
        params["layers"].append({
            "ln1_w": jnp.ones(d), "ln1_b": jnp.zeros(d),
            "wq": w(d, d), "wk": w(d, d), "wv": w(d, d), "wo": w(d, d),
            "ln2_w": jnp.ones(d), "ln2_b": jnp.zeros(d),
            "w1": w(4 * d, d), "b1": jnp.zeros(4 * d),
            "w2": w(d, 4 * d), "b2": jnp.zeros(d)})
    return params


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + 1e-5) * w + b


def forward(params, tokens, s, constrain):
    b, t = tokens.shape
    h = s["heads"]
    x = params["tok"][tokens] + params["pos"][:t]
    x = constrain(x, "residual")
    mask = jnp.tril(jnp.ones((t, t), bool))
    for p in params["layers"]:
        y = constrain(layer_norm(x, p["ln1_w"], p["ln1_b"]), "residual")
        y = constrain(y, "block_input")
        q = (y @ p["wq"].T).reshape(b, t, h, -1).transpose(0, 2, 1, 3)
        k = (y @ p["wk"].T).reshape(b, t, h, -1).transpose(0, 2, 1, 3)
        v = (y @ p["wv"].T).reshape(b, t, h, -1).transpose(0, 2, 1, 3)
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
        att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), axis=-1)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, -1) @ p["wo"].T
        x = constrain(x + constrain(y, "residual"), "residual")
        y = constrain(layer_norm(x, p["ln2_w"], p["ln2_b"]), "residual")
        y = constrain(y, "block_input")
        y = jax.nn.gelu(y @ p["w1"].T + p["b1"], approximate=False)
        y = y @ p["w2"].T + p["b2"]
        x = constrain(x + constrain(y, "residual"), "residual")
    y = constrain(layer_norm(x, params["norm_w"], params["norm_b"]),
                  "residual")
    return constrain(y @ params["out"].T, "logits")


def loss_fn(params, tokens, targets, s, constrain):
    logits = forward(params, tokens, s, constrain)
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, targets[..., None], -1).mean()


def mlp_init(key, s):
    """models.MLP's parameters in torch's layout."""
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (s["hidden"], s["dim"])) * 0.02,
            "b1": jnp.zeros(s["hidden"]),
            "w2": jax.random.normal(k2, (s["out"], s["hidden"])) * 0.02,
            "b2": jnp.zeros(s["out"])}


def mlp_loss_fn(params, x, targets, s, constrain):
    x = constrain(x, "rows")
    y = constrain(x, "block_input")
    h = jax.nn.relu(y @ params["w1"].T + params["b1"])
    out = constrain(h @ params["w2"].T + params["b2"], "rows")
    logp = jax.nn.log_softmax(out, -1)
    return -jnp.take_along_axis(logp, targets[..., None], -1).mean()


def mlp_tp_specs(params, axis):
    """Megatron: fc1 column-parallel (with its bias), fc2 row-parallel."""
    return {"w1": P(axis, None), "b1": P(axis), "w2": P(None, axis),
            "b2": P()}


def adamw(params, grads, m, v, step, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8,
          wd=0.01):
    def one(p, g, m, v):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mh = m / (1 - b1 ** step)
        vh = v / (1 - b2 ** step)
        p = p * (1 - lr * wd) - lr * mh / (jnp.sqrt(vh) + eps)
        return p, m, v
    out = jax.tree.map(one, params, grads, m, v)
    pick = lambda i: jax.tree.map(lambda o: o[i], out,  # noqa: E731
                                  is_leaf=lambda o: isinstance(o, tuple))
    return pick(0), pick(1), pick(2)


# Torch-layout ([out, in]) specs of the Megatron plans: Colwise shards the
# output dim (0), Rowwise the input dim (1); the embedding is row-parallel
# (vocabulary), the output layer column-parallel (vocabulary).
def tp_specs(params, axis):
    spec = jax.tree.map(lambda a: P(), params)
    spec["tok"] = P(axis, None)
    spec["out"] = P(axis, None)
    for layer in spec["layers"]:
        for name in ("wq", "wk", "wv", "w1"):
            layer[name] = P(axis, None)
        layer["b1"] = P(axis)
        for name in ("wo", "w2"):
            layer[name] = P(None, axis)
    return spec


def fsdp_specs(params, axis, k, base=None):
    """Each parameter's first dim that divides by k (and that the tp spec
    leaves free) sharded on `axis`; others as they are."""
    base = base or jax.tree.map(lambda a: P(), params)

    def one(a, spec):
        dims = list(spec) + [None] * (a.ndim - len(spec))
        for d in range(a.ndim):
            if dims[d] is None and a.shape[d] % k == 0:
                dims[d] = axis
                return P(*dims)
        return P(*dims)
    return jax.tree.map(one, params, base,
                        is_leaf=lambda x: isinstance(x, P))


def divisible(params, spec, mesh):
    """JAX's jit shardings must divide the dims: a dim that does not (the
    vocabulary of 97 on 4) is left unsharded; returns the new specs and the
    names of the parameters changed."""
    changed = []

    def one(path, a, sp):
        dims = list(sp) + [None] * (a.ndim - len(sp))
        for d, axis in enumerate(dims):
            if axis is None:
                continue
            k = 1
            for name in (axis if isinstance(axis, tuple) else (axis,)):
                k *= mesh.shape[name]
            if a.shape[d] % k:
                dims[d] = None
                changed.append(jax.tree_util.keystr(path))
        return P(*dims)
    out = jax.tree_util.tree_map_with_path(
        one, params, spec, is_leaf=lambda x: isinstance(x, P))
    return out, changed


COLLECTIVE = re.compile(
    r"=\s*(?P<shape>\(.*?\)|\S+)\s+(?P<op>all-reduce|all-gather|"
    r"reduce-scatter|all-to-all|collective-permute)(?:-start)?\(")
SHAPE = re.compile(r"([a-z]+\d*)\[([\d,]*)\]")
BYTES = {"f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2, "pred": 1,
         "s8": 1, "u8": 1, "f64": 8, "s64": 8, "u64": 8}


def count_collectives(hlo):
    counts = {}
    for line in hlo.splitlines():
        m = COLLECTIVE.search(line)
        if not m:
            continue
        kind = m.group("op").replace("-", "_")
        if kind == "collective_permute":
            kind = "collective_permute"
        size = 0
        for dtype, dims in SHAPE.findall(m.group("shape")):
            n = 1
            for d in filter(None, dims.split(",")):
                n *= int(d)
            size += n * BYTES.get(dtype, 4)
        groups = re.search(r"replica_groups=\{\{([\d,]*)\}", line)
        k = len(groups.group(1).split(",")) if groups else 4
        factor = {"all_gather": (k - 1) / k, "all_reduce": 2 * (k - 1) / k,
                  "reduce_scatter": k - 1, "all_to_all": (k - 1) / k,
                  "collective_permute": 1}[kind]
        entry = counts.setdefault(kind, {"count": 0, "bytes": 0})
        entry["count"] += 1
        entry["bytes"] += int(round(factor * size))
    return counts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt", choices=sorted(SIZES))
    ap.add_argument("--plan", required=True, choices=PLANS)
    ap.add_argument("--size", default="count", choices=sorted(SIZES["gpt"]))
    ap.add_argument("--partitioner", default="shardy",
                    choices=["shardy", "gspmd"])
    args = ap.parse_args()
    jax.config.update("jax_use_shardy_partitioner",
                      args.partitioner == "shardy")
    s = SIZES[args.model][args.size]
    devices = jax.devices()[:4]
    mlp = args.model == "mlp"
    params = (mlp_init if mlp else init)(jax.random.PRNGKey(0), s)
    tp_of = mlp_tp_specs if mlp else tp_specs
    # Sequence parallelism: the MLP's rows, the GPT's residual stream
    # sharded between the blocks.
    sp_acts = ({"rows": P("tp")} if mlp else
               {"residual": P(None, "tp", None), "logits": P()})
    sp_acts["block_input"] = P()
    batch_spec = P()
    acts = {}
    if args.plan in ("TP", "TP+SP"):
        mesh = Mesh(devices, ("tp",))
        spec = tp_of(params, "tp")
        if args.plan == "TP+SP":
            acts = sp_acts
    elif args.plan == "DP":
        mesh = Mesh(devices, ("dp",))
        spec = jax.tree.map(lambda a: P(), params)
        batch_spec = P("dp")
    elif args.plan == "FSDP":
        mesh = Mesh(devices, ("dp",))
        spec = fsdp_specs(params, "dp", 4)
        batch_spec = P("dp")
    else:
        import numpy as np
        mesh = Mesh(np.array(devices).reshape(2, 2), ("dp", "tp"))
        spec = fsdp_specs(params, "dp", 2, tp_of(params, "tp"))
        batch_spec = P("dp")
        acts = ({"rows": P(("dp", "tp")), "block_input": P("dp")} if mlp
                else {"residual": P("dp", "tp", None), "block_input": P("dp"),
                      "logits": P("dp")})

    def constrain(x, what):
        if what not in acts:
            return x
        return jax.lax.with_sharding_constraint(
            x, NamedSharding(mesh, acts[what]))

    def step(params, m, v, tokens, targets):
        loss, grads = jax.value_and_grad(mlp_loss_fn if mlp else loss_fn)(
            params, tokens, targets, s, constrain)
        params, m, v = adamw(params, grads, m, v, 1.0)
        return loss, params, m, v

    spec, replicated = divisible(params, spec, mesh)
    shard = jax.tree.map(lambda p: NamedSharding(mesh, p), spec,
                         is_leaf=lambda x: isinstance(x, P))
    data = NamedSharding(mesh, batch_spec)
    if mlp:
        tokens = jax.ShapeDtypeStruct((s["batch"], s["dim"]), jnp.float32)
        targets = jax.ShapeDtypeStruct((s["batch"],), jnp.int32)
    else:
        tokens = jax.ShapeDtypeStruct((s["batch"], s["seq"]), jnp.int32)
        targets = tokens
    shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype),
                          params)
    jitted = jax.jit(step, in_shardings=(shard, shard, shard, data, data),
                     out_shardings=(NamedSharding(mesh, P()), shard, shard,
                                    shard))
    hlo = jitted.lower(shapes, shapes, shapes, tokens, targets) \
        .compile().as_text()
    print(json.dumps({"peer": "jax-" + args.partitioner, "plan": args.plan,
                      "model": args.model, "size": args.size,
                      "jax": jax.__version__,
                      "phases": {"step": count_collectives(hlo)},
                      "note": ("replicated (jit needs dims that divide the "
                               "mesh): " + ", ".join(replicated))
                      if replicated else ""}))


if __name__ == "__main__":
    main()
