"""PyTorch side of bench/step/gpt_step.py: one training step (forward, mean
cross-entropy, backward, torch.optim.Adam) of models.GPT or models.Llama,
timed step by step after warm-up.

    peer_torch.py --model gpt --model-args '{...}' --batch 8 --seq 128 \\
        --plan unpartitioned|TP|TP+SP|DP [--plan-file F] --warmup 2 --iters 5
                                                        -> one JSON line

unpartitioned: eager PyTorch in this process. TP, TP+SP: DTensor
(torch.distributed.tensor.parallel's parallelize_module with the plan file
the spmd frontend reads, mapped style by style by
bench/peers/dtensor_peer.py; TP with the vocabulary-parallel loss) on 4
gloo processes; DP: DistributedDataParallel on 4 gloo processes, each with
a quarter of the batch. Every process builds the model as
`spmd_torch export` does (torch.manual_seed(0), the constructor, then
models.example_batch), so every implementation starts from the same
values. Threads: torch.set_num_threads(OMP_NUM_THREADS) in every process.
The times are rank 0's, each step after a barrier.
"""
import argparse
import contextlib
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")
sys.path.insert(0, INPUTS)
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import models  # noqa: E402


def build(args):
    """The model and its batch, as spmd_torch export makes them."""
    torch.manual_seed(0)
    cls = {"gpt": models.GPT, "llama": models.Llama}[args.model]
    model = cls(**json.loads(args.model_args))
    x, y = models.example_batch(model, (args.batch, args.seq))
    return model, x, y


def threads():
    n = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(n)
    return n


def train(model, x, y, args, loss_ctx=contextlib.nullcontext,
          reduce_loss=False):
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses, times = [], []
    for s in range(args.warmup + args.iters):
        if dist.is_initialized():
            dist.barrier()
        t0 = time.perf_counter()
        with loss_ctx():
            out = model(x)
            loss = F.cross_entropy(out.flatten(0, -2), y.flatten())
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t1 = time.perf_counter()
        value = loss.detach()
        if hasattr(value, "full_tensor"):
            value = value.full_tensor()
        if reduce_loss:  # DDP: each rank's loss is its rows' mean
            dist.all_reduce(value, op=dist.ReduceOp.AVG)
        losses.append(value.item())
        if s >= args.warmup:
            times.append((t1 - t0) * 1e3)
    return losses, times


def worker(rank, world, store, args, out):
    n = threads()
    dist.init_process_group("gloo", init_method=f"file://{store}",
                            rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    model, x, y = build(args)
    loss_ctx, reduce_loss = contextlib.nullcontext, False
    if args.plan == "DP":
        from torch.nn.parallel import DistributedDataParallel as DDP
        rows = args.batch // world
        x, y = x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]
        model = DDP(model)
        reduce_loss = True
    else:
        import dtensor_peer
        from torch.distributed.tensor.parallel import (loss_parallel,
                                                       parallelize_module)
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
        styles = dtensor_peer.dtensor_styles(args.plan_file, model)
        if args.plan == "TP":
            # Vocabulary-parallel cross-entropy on the sharded logits.
            styles["output"].use_local_output = False
            loss_ctx = loss_parallel
        else:
            dtensor_peer.sequence_parallel_embedding(styles)
            if hasattr(model, "pos"):
                dtensor_peer.replicate_positions(model, mesh)
        parallelize_module(model, mesh, styles)
        # The attention's view(b, t, heads, -1) sees a rank's columns of
        # q, k, v: its heads are the rank's share (as torchtitan sets
        # them), or it would split every head into `world` heads.
        for layer in model.layers:
            layer.attention.heads //= world
    losses, times = train(model, x, y, args, loss_ctx, reduce_loss)
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"losses": losses, "times_ms": times, "threads": n}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, choices=["gpt", "llama"])
    ap.add_argument("--model-args", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--plan", required=True,
                    choices=["unpartitioned", "TP", "TP+SP", "DP"])
    ap.add_argument("--plan-file")
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    if args.plan == "unpartitioned":
        n = threads()
        model, x, y = build(args)
        losses, times = train(model, x, y, args)
        print(json.dumps({"impl": "eager", "torch": torch.__version__,
                          "losses": losses, "times_ms": times,
                          "threads": n}))
        return
    tmp = tempfile.mkdtemp(prefix="peer_torch_")
    store, out = os.path.join(tmp, "store"), os.path.join(tmp, "out.json")
    ctx = torch.multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args.world, store, args, out))
             for r in range(args.world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit(f"peer_torch.py: a gloo rank failed: "
                 f"{[p.exitcode for p in procs]}")
    res = json.load(open(f"{out}.0"))
    res.update(impl="ddp" if args.plan == "DP" else "dtensor",
               torch=torch.__version__, processes=args.world)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
