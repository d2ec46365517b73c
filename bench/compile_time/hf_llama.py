"""Export + compile time and peak memory of a Hugging Face Llama training
step (transformers' LlamaForCausalLM, random weights from a config), with
JAX's lower + compile of a same-size Llama step on host CPU devices as the
peer when `jax` is installed.

For each (layers, dim, mesh):
  export   `python -m spmd_torch export` with its own plan (--plan hf) and
           data parallelism on `dp` (fake tensors: no forward on the CPU)
  compile  `spmd-opt --spmd-compile` (propagation, partitioning, collective
           passes, fusion, bufferization, outlining, memory plan) of that
           program to a plan, wall time and peak RSS
  jax      jax.jit(step).lower(...).compile() of a Llama step of the same
           shape (embedding, RMSNorm, attention with RoPE, SwiGLU, AdamW),
           sharded with NamedSharding on a dp x tp mesh of host devices

  .venv/bin/python bench/compile_time/hf_llama.py --bin build/bin \
      [--configs 2x768,12x768,32x1024] [--meshes 2x4,4x2] [--jax]

Prints a Markdown table; the README records results with the command.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL = '''
import torch, transformers
def llama(layers=2, dim=768, vocab=8192, seq=256):
    heads = dim // 64
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=dim,
        intermediate_size=int(dim * 8 / 3) // 64 * 64, num_attention_heads=heads,
        num_key_value_heads=max(heads // 4, 1), num_hidden_layers=layers,
        max_position_embeddings=seq)
    return transformers.LlamaForCausalLM(cfg)
def example_batch(model, shape):
    b, t = shape
    ids = torch.randint(0, model.config.vocab_size, (b, t))
    return ids, ids.clone()
def loss_fn(out, labels):
    return transformers.loss.loss_utils.ForCausalLMLoss(
        out.logits, labels, vocab_size=out.logits.shape[-1])
'''


def timed(cmd, env=None):
    """(seconds, peak RSS MB of the child) of a command; raises on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.time() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{r.stderr[-2000:]}")
    # ru_maxrss of children is the max over all children so far: measure
    # each tool in a fresh python (see main) so the number is its own.
    return dt, max(peak, before) / 1024.0


def one(args):
    """Runs one measurement in this process (a child of main)."""
    work = tempfile.mkdtemp(prefix="spmd_ct_")
    try:
        return measure_one(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_one(args, work):
    model_file = os.path.join(work, "model.py")
    with open(model_file, "w") as f:
        f.write(MODEL)
    layers, dim = map(int, args.config.split("x"))
    dp, tp = map(int, args.mesh.split("x"))
    out = os.path.join(work, "step.mlir")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend", "torch"))
    if args.tool == "export":
        cmd = [sys.executable, os.path.join(ROOT, "bench", "cuda", "export_fake.py"),
               "export", f"{model_file}:llama", "--model-args",
               json.dumps({"layers": layers, "dim": dim}), "--mesh",
               f"dp={dp},tp={tp}", "--plan", "hf", "--batch-shape",
               f"{2 * dp},256", "--optimizer", "adamw", "-o", args.out]
        dt, mb = timed(cmd, env)
    elif args.tool == "compile":
        dt, mb = timed([os.path.join(args.bin, "spmd-opt"), args.program,
                        "--spmd-compile", "-o", os.devnull])
    else:
        dt, mb = jax_compile(layers, dim, dp, tp)
    print(json.dumps({"s": dt, "mb": mb}))


def jax_compile(layers, dim, dp, tp):
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={dp * tp}"
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    vocab, seq, batch = 8192, 256, 2 * dp
    heads = dim // 64
    kv = max(heads // 4, 1)
    hidden = int(dim * 8 / 3) // 64 * 64
    hd = dim // heads
    import numpy as np
    mesh = Mesh(np.array(jax.devices()).reshape(dp, tp), ("dp", "tp"))

    def sh(*spec):
        return NamedSharding(mesh, P(*spec))

    def layer_params():
        return {"wq": (dim, heads * hd), "wk": (dim, kv * hd), "wv": (dim, kv * hd),
                "wo": (heads * hd, dim), "w1": (dim, hidden), "w3": (dim, hidden),
                "w2": (hidden, dim), "n1": (dim,), "n2": (dim,)}

    specs = {"wq": (None, "tp"), "wk": (None, "tp"), "wv": (None, "tp"),
             "wo": ("tp", None), "w1": (None, "tp"), "w3": (None, "tp"),
             "w2": ("tp", None), "n1": (None,), "n2": (None,)}
    params = {"emb": jax.ShapeDtypeStruct((vocab, dim), jnp.float32, sharding=sh("tp", None)),
              "out": jax.ShapeDtypeStruct((dim, vocab), jnp.float32, sharding=sh(None, "tp")),
              "norm": jax.ShapeDtypeStruct((dim,), jnp.float32, sharding=sh(None)),
              "layers": [{k: jax.ShapeDtypeStruct(s, jnp.float32, sharding=sh(*specs[k]))
                          for k, s in layer_params().items()} for _ in range(layers)]}

    def rms(x, w):
        return x * jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w

    def rope(x):
        pos = jnp.arange(seq)[:, None]
        freq = 1.0 / (500000.0 ** (jnp.arange(0, hd, 2) / hd))
        ang = pos * freq
        c, s = jnp.cos(ang)[None, :, None], jnp.sin(ang)[None, :, None]
        x1, x2 = x[..., ::2], x[..., 1::2]
        return jnp.stack([x1 * c - x2 * s, x1 * s + x2 * c], -1).reshape(x.shape)

    def loss(p, ids):
        h = p["emb"][ids]
        mask = jnp.tril(jnp.ones((seq, seq), bool))
        for l in p["layers"]:
            x = rms(h, l["n1"])
            q = rope((x @ l["wq"]).reshape(batch, seq, heads, hd))
            k = rope((x @ l["wk"]).reshape(batch, seq, kv, hd))
            v = (x @ l["wv"]).reshape(batch, seq, kv, hd)
            k = jnp.repeat(k, heads // kv, 2)
            v = jnp.repeat(v, heads // kv, 2)
            a = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(hd)
            a = jax.nn.softmax(jnp.where(mask, a, -jnp.inf), -1)
            h = h + jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(batch, seq, dim) @ l["wo"]
            x = rms(h, l["n2"])
            h = h + (jax.nn.silu(x @ l["w1"]) * (x @ l["w3"])) @ l["w2"]
        logits = rms(h, p["norm"]) @ p["out"]
        lp = jax.nn.log_softmax(logits[:, :-1], -1)
        return -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()

    def step(p, m, v, ids):
        l, g = jax.value_and_grad(loss)(p, ids)
        m = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g, m, g)
        v = jax.tree.map(lambda v, g: 0.999 * v + 0.001 * g * g, v, g)
        p = jax.tree.map(lambda p, m, v: p - 1e-3 * (m / (jnp.sqrt(v) + 1e-8) + 0.01 * p),
                         p, m, v)
        return l, p, m, v

    ids = jax.ShapeDtypeStruct((batch, seq), jnp.int32, sharding=sh("dp", None))
    t = time.time()
    jax.jit(step).lower(params, params, params, ids).compile()
    dt = time.time() - t
    return dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(argv):
    r = subprocess.run([sys.executable, __file__, "--one", *argv],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--configs", default="2x768,12x768,32x1024")
    ap.add_argument("--meshes", default="2x4,4x2")
    ap.add_argument("--jax", action="store_true")
    ap.add_argument("--one", action="store_true")
    ap.add_argument("--tool")
    ap.add_argument("--config")
    ap.add_argument("--mesh")
    ap.add_argument("--out")
    ap.add_argument("--program")
    args = ap.parse_args()
    if args.one:
        return one(args)
    print("| layers x dim | mesh dp x tp | export s | export MB | spmd compile s "
          "| spmd compile MB | JAX lower+compile s | JAX MB |")
    print("|---|---|---|---|---|---|---|---|")
    work = tempfile.mkdtemp(prefix="spmd_ct_")
    try:
        table(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(args, work):
    for config in args.configs.split(","):
        for mesh in args.meshes.split(","):
            prog = os.path.join(work, f"{config}_{mesh}.mlir")
            e, err = measure(["--tool", "export", "--config", config, "--mesh", mesh,
                              "--out", prog, "--bin", args.bin])
            c = j = None
            if e:
                c, err = measure(["--tool", "compile", "--config", config, "--mesh",
                                  mesh, "--program", prog, "--bin", args.bin])
            if args.jax:
                j, _ = measure(["--tool", "jax", "--config", config, "--mesh", mesh])

            def f(x, k):
                return f"{x[k]:.1f}" if x else "—"
            print(f"| {config} | {mesh} | {f(e, 's')} | {f(e, 'mb')} | {f(c, 's')} | "
                  f"{f(c, 'mb')} | {f(j, 's')} | {f(j, 'mb')} |" +
                  (f" {err}" if err else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
