"""The PyTorch side of bench/cuda/step.py: the toy GPT's or Llama's training
step (test/frontend/Inputs/models.py; hparams.json says which) on N processes, one GPU each (NCCL), or on
the CPU with gloo (--device cpu, what the dry run checks), from the same
initial values as the spmd export (DIR/in/arg<i>.npy, DIR/meta.json).

  step_torch.py PARALLELISM N DIR --warmup W --steps K [--device cuda|cpu]
                [--dtype float32|bfloat16] [--tf32]

PARALLELISM:
  single the unwrapped module (N = 1).
  dp    DistributedDataParallel; the batch in DIR (N x the per-GPU batch)
        split on its first dimension.
  fsdp  torch.distributed.fsdp.FullyShardedDataParallel, one unit per
        transformer block plus the root (embedding, output), FULL_SHARD.
  tp    DTensor tensor parallelism (parallelize_module): q/k/v/w1 (and
        Llama's w3) ColwiseParallel, wo/w2 RowwiseParallel, the embedding
        RowwiseParallel (vocabulary-sharded), the output projection
        ColwiseParallel with its logits gathered (Replicate) before the loss.
  sp    tp plus SequenceParallel on the norms (sequence-sharded
        residual stream, PrepareModuleInput gathers the attention and
        feed-forward inputs, wo/w2 reduce-scatter), as in the DTensor
        tutorial and test/frontend/Inputs/sp_plan.py.

Prints one JSON line: {"status": "ok", "ms_per_step", "losses", ...} or
{"status": "skipped", "reason"} when the installed torch lacks the API
(torch 1.13 has no DTensor; its FSDP does not import under Python 3.11).
Step time: rank 0's wall time of K steps after W warm-up steps, with a
device synchronize and a barrier before and after (no synchronize inside),
divided by K.
"""
import argparse
import datetime
import functools
import json
import math
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "frontend", "Inputs"))
import models  # noqa: E402


def attention_forward(self, x):
    """models.Attention.forward with the causal mask made on x's device
    (the original makes it on the CPU, which a CUDA masked_fill rejects);
    under TP `self.heads` is the rank's share of the heads."""
    b, t, _ = x.shape
    q = self.wq(x).view(b, t, self.heads, -1).transpose(1, 2)
    k = self.wk(x).view(b, t, self.heads, -1).transpose(1, 2)
    v = self.wv(x).view(b, t, self.heads, -1).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    att = att.masked_fill(~mask, float("-inf"))
    att = F.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(b, t, -1)
    return self.wo(y)


models.Attention.forward = attention_forward


def sp_gpt_forward(model, rank):
    """models.GPT.forward for sequence parallelism: the embedding's output
    is this rank's sequence shard [b, t/N, d], so it adds the matching rows
    of the positional table (whose gradient step.py's loop all-reduces)."""
    def forward(tokens):
        x = model.tok_embeddings(tokens)
        n = x.shape[1]
        x = x + model.pos[rank * n:(rank + 1) * n]
        for layer in model.layers:
            x = layer(x)
        return model.output(model.norm(x))
    return forward


def version():
    return torch.__version__.split("+")[0]


def probe(par):
    """None if this torch has what PARALLELISM needs, else the reason."""
    if par in ("single", "dp"):
        return None
    if par == "fsdp":
        try:
            from torch.distributed.fsdp import FullyShardedDataParallel  # noqa
            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy  # noqa
        except Exception as e:  # torch 1.13 + Python 3.11: a dataclass error
            return (f"torch {version()}: torch.distributed.fsdp does not import "
                    f"({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        return None
    try:
        dtensor_api()
    except Exception as e:
        return (f"torch {version()} has no DTensor tensor parallelism "
                f"({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    return None


def dtensor_api():
    """The DTensor names (torch >= 2.2: init_device_mesh, SequenceParallel
    and PrepareModuleInput with input/desired layouts)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   PrepareModuleInput,
                                                   RowwiseParallel,
                                                   SequenceParallel,
                                                   parallelize_module)
    try:
        from torch.distributed.tensor import DTensor, Replicate, Shard
    except ImportError:  # torch 2.2 - 2.3
        from torch.distributed._tensor import DTensor, Replicate, Shard
    return dict(init_device_mesh=init_device_mesh, ColwiseParallel=ColwiseParallel,
                RowwiseParallel=RowwiseParallel, SequenceParallel=SequenceParallel,
                PrepareModuleInput=PrepareModuleInput,
                parallelize_module=parallelize_module, DTensor=DTensor,
                Replicate=Replicate, Shard=Shard)


def load(folder, dtype):
    meta = json.load(open(os.path.join(folder, "meta.json")))
    hp = json.load(open(os.path.join(folder, "hparams.json")))
    cls = {"gpt": models.GPT, "llama": models.Llama}[hp.get("model", "gpt")]
    model = cls(**hp["model_args"])
    state, batch = {}, []
    for i, a in enumerate(meta["args"]):
        if a["kind"] not in ("param", "batch"):
            continue  # optimizer state: torch's AdamW starts from zeros too
        v = torch.from_numpy(np.load(os.path.join(folder, "in", f"arg{i}.npy")))
        if a["kind"] == "param":
            state[a["name"]] = v
        elif a["kind"] == "batch":
            batch.append(v)
    model.load_state_dict(state, strict=True)
    return hp, model.to(dtype), batch


def tp_plans(api, sp, llama=False):
    C, R = api["ColwiseParallel"], api["RowwiseParallel"]
    Rep, Sh = api["Replicate"], api["Shard"]
    layer = {"attention.wq": C(), "attention.wk": C(), "attention.wv": C(),
             "attention.wo": R(), "feed_forward.w1": C(),
             "feed_forward.w2": R()}
    if llama:  # SwiGLU's gate: split like w1
        layer["feed_forward.w3"] = C()
    top = {"tok_embeddings": R(input_layouts=Rep()),
           "output": C(output_layouts=Rep())}
    if sp:
        P, S = api["PrepareModuleInput"], api["SequenceParallel"]
        layer.update({
            "attention_norm": S(),
            "attention": P(input_layouts=(Sh(1),), desired_input_layouts=(Rep(),)),
            "attention.wo": R(output_layouts=Sh(1)),
            "ffn_norm": S(),
            "feed_forward": P(input_layouts=(Sh(1),), desired_input_layouts=(Rep(),)),
            "feed_forward.w2": R(output_layouts=Sh(1)),
        })
        top = {"tok_embeddings": R(input_layouts=Rep(), output_layouts=Sh(1)),
               "norm": S(),
               "output": C(input_layouts=Sh(1), output_layouts=Rep())}
    return top, layer


def worker(rank, n, par, folder, args, store, out):
    """One rank; a failure leaves its traceback in out.err<rank>."""
    try:
        run_rank(rank, n, par, folder, args, store, out)
    except BaseException:
        with open(f"{out}.err{rank}", "w") as f:
            f.write(traceback.format_exc())
        raise


def run_rank(rank, n, par, folder, args, store, out):
    cuda = args.device == "cuda"
    if not cuda:
        torch.set_num_threads(1)  # N ranks share the CPU
    if cuda:
        torch.cuda.set_device(rank)
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    dev = torch.device("cuda", rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo",
                            init_method=f"file://{store}", rank=rank,
                            world_size=n,
                            timeout=datetime.timedelta(seconds=args.timeout))
    dtype = getattr(torch, args.dtype)
    hp, model, (tokens, targets) = load(folder, dtype)
    model = model.to(dev)
    tokens, targets = tokens.to(dev), targets.to(dev)
    forward = model
    sync_pos = False
    if par in ("dp", "fsdp"):
        # The export's batch is the global one: N x the per-GPU batch.
        tokens = tokens.chunk(n)[rank]
        targets = targets.chunk(n)[rank]
    if par == "dp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        forward = model = DDP(model, device_ids=[rank] if cuda else None)
    elif par == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        policy = functools.partial(transformer_auto_wrap_policy,
                                   transformer_layer_cls={models.Block,
                                                          models.LlamaBlock})
        forward = model = FSDP(model, auto_wrap_policy=policy,
                               device_id=dev)
    elif par in ("tp", "sp"):
        api = dtensor_api()
        mesh = api["init_device_mesh"](dev.type, (n,))
        heads = hp["model_args"].get("heads", 4)
        llama = hp.get("model") == "llama"
        top, layer = tp_plans(api, par == "sp", llama)
        for block in model.layers:
            api["parallelize_module"](block, mesh, layer)
            block.attention.heads = heads // n
        api["parallelize_module"](model, mesh, top)
        if par == "sp" and not llama:  # Llama has no positions to slice
            forward = sp_gpt_forward(model, rank)
            sync_pos = True
    if args.compile:
        forward = torch.compile(forward)
    # DTensor and plain parameters in separate groups (foreach kernels take
    # one kind per list).
    params = [p for p in model.parameters() if p.requires_grad]
    dt = dtensor_api()["DTensor"] if par in ("tp", "sp") else ()
    groups = [{"params": [p for p in params if isinstance(p, dt)]},
              {"params": [p for p in params if not isinstance(p, dt)]}]
    opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=hp["lr"],
                            betas=tuple(hp["betas"]), eps=hp["eps"],
                            weight_decay=hp["weight_decay"])

    def step():
        opt.zero_grad(set_to_none=True)
        loss = models.lm_loss(forward(tokens), targets)
        loss.backward()
        if sync_pos:
            dist.all_reduce(model.pos.grad)
        opt.step()
        return loss.detach()

    def sync():
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()

    losses = [step() for _ in range(args.warmup)]
    sync()
    t0 = time.perf_counter()
    losses += [step() for _ in range(args.steps)]
    sync()
    t1 = time.perf_counter()
    # Under DP/FSDP a rank's loss is its batch shard's: report the mean.
    losses = torch.stack(losses).float()
    if par in ("dp", "fsdp"):
        dist.all_reduce(losses)
        losses /= n
    losses = losses.tolist()
    mem = torch.cuda.max_memory_allocated(dev) if cuda else 0
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"status": "ok", "ms_per_step": (t1 - t0) * 1e3 / args.steps,
                       "losses": losses, "torch": version(),
                       "max_memory_bytes": mem}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("parallelism", choices=["single", "dp", "fsdp", "tp", "sp"])
    ap.add_argument("n", type=int)
    ap.add_argument("dir")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile the model (its default mode); the "
                    "warm-up steps include the compilation")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds a collective may wait (process group timeout)")
    args = ap.parse_args()
    why = probe(args.parallelism)
    if why is None and args.device == "cuda" and torch.cuda.device_count() < args.n:
        why = (f"torch {version()} (CUDA {torch.version.cuda or 'none: a CPU-only build'}) "
               f"sees {torch.cuda.device_count()} GPU(s), {args.n} needed")
    if why is None and args.parallelism in ("tp", "sp"):
        hp = json.load(open(os.path.join(args.dir, "hparams.json")))
        ma, seq = hp["model_args"], hp.get("seq", hp["model_args"].get("seq"))
        if ma["heads"] % args.n or (args.parallelism == "sp" and seq % args.n):
            why = (f"{ma['heads']} heads and sequence {seq}: the heads "
                   f"(and under SP the sequence) must divide among {args.n} ranks")
    if why is not None:
        print(json.dumps({"status": "skipped", "reason": why, "torch": version()}))
        return
    tmp = tempfile.mkdtemp(prefix="spmd-step-torch-")
    store, out = os.path.join(tmp, "store"), os.path.join(tmp, "out.json")
    ctx = torch.multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args.n, args.parallelism,
                                              args.dir, args, store, out))
             for r in range(args.n)]
    for p in procs:
        p.start()
    # A rank that fails leaves the others waiting in a collective: stop them.
    # A rank stuck at the exit once the others finished (seen once with
    # gloo on a loaded machine) is stopped after a grace period.
    deadline = time.monotonic() + args.timeout + 60 * (args.warmup + args.steps)
    first_done = None
    while any(p.is_alive() for p in procs):
        now = time.monotonic()
        failed = any(p.exitcode not in (None, 0) for p in procs)
        if first_done is None and any(p.exitcode == 0 for p in procs):
            first_done = now
        stuck = first_done is not None and now - first_done > 60
        if failed or stuck or now > deadline:
            for p in procs:
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(10)
            if stuck and not failed and os.path.exists(out):
                sys.stderr.write("step_torch.py: ranks "
                                 f"{[r for r, p in enumerate(procs) if p.exitcode]} "
                                 "did not exit 60 s after the others; stopped\n")
                print(open(out).read())
                return
            break
        time.sleep(0.2)
    if any(p.exitcode != 0 for p in procs) or not os.path.exists(out):
        for r in range(args.n):
            if os.path.exists(f"{out}.err{r}"):
                sys.stderr.write(f"rank {r}:\n" + open(f"{out}.err{r}").read())
        print(json.dumps({"status": "failed", "torch": version(),
                          "reason": f"exit codes {[p.exitcode for p in procs]} "
                                    "(the ranks' tracebacks are on stderr)"}))
        sys.exit(1)
    print(open(out).read())


if __name__ == "__main__":
    main()
