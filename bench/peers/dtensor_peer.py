"""DTensor / DDP / FSDP2 side of bench/peers: one training step of
models.GPT or models.MLP (forward, backward, AdamW) under a parallel plan, on a fake
process group of 4 ranks in this one process (collectives are counted, not
run), with every collective counted per phase (forward, backward,
optimizer) and its bytes per rank under the ring formulas spmd-comm-report
uses.

    python dtensor_peer.py --model gpt --plan TP --size count
                                                        -> one JSON object
"""
import argparse
import contextlib
import importlib.util
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils._python_dispatch import TorchDispatchMode

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")

sys.path.insert(0, HERE)
from cases import PLANS, SIZES  # noqa: E402

# Collective ops as they reach the dispatcher: the functional collectives
# DTensor issues and the c10d ops FSDP2 issues. name -> kind.
KINDS = {
    "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather",
    "_allgather_base_": "all_gather",
    "allgather_": "all_gather",
    "all_reduce": "all_reduce",
    "all_reduce_coalesced": "all_reduce",
    "allreduce_": "all_reduce",
    "allreduce_coalesced_": "all_reduce",
    "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "_reduce_scatter_base_": "reduce_scatter",
    "reduce_scatter_": "reduce_scatter",
    "all_to_all_single": "all_to_all",
    "alltoall_base_": "all_to_all",
}


def _tensors(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)


class Counter(TorchDispatchMode):
    """Counts collectives and their bytes per rank, per phase."""

    def __init__(self, world):
        super().__init__()
        self.world = world
        self.phase = "forward"
        self.counts = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if isinstance(func, torch._ops.HigherOrderOperator):
            return func(*args, **(kwargs or {}))
        # Modes run before tensor subclasses: let DTensor desugar its op
        # first, so the collectives it issues come back through this mode
        # (as torch's CommDebugMode does).
        from torch.distributed.tensor import DTensor
        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented
        kwargs = kwargs or {}
        ns = func.namespace
        name = func._schema.name.split("::")[-1]
        kind = KINDS.get(name) if ns in ("_c10d_functional", "c10d") else None
        if kind:
            k = self._group_size(name, args, kwargs)
            # Local input bytes: the first tensor argument (for the c10d
            # ops taking (output, input), the input).
            tensors = list(_tensors(args[1] if name in (
                "_allgather_base_", "_reduce_scatter_base_",
                "allgather_", "reduce_scatter_") else args[0]))
            size = sum(t.numel() * t.element_size() for t in tensors)
            factor = {"all_gather": k - 1, "all_reduce": 2 * (k - 1) / k,
                      "reduce_scatter": (k - 1) / k,
                      "all_to_all": (k - 1) / k}[kind]
            entry = self.counts.setdefault(self.phase, {}).setdefault(
                kind, {"count": 0, "bytes": 0})
            entry["count"] += 1
            entry["bytes"] += int(round(factor * size))
        return func(*args, **kwargs)

    def _group_size(self, name, args, kwargs):
        # Functional collectives take (..., group_size, group_name); the
        # fake group's size is the world unless a sub-mesh was used.
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, int) and 1 < a <= self.world and name in (
                    "all_gather_into_tensor", "reduce_scatter_tensor",
                    "all_gather_into_tensor_coalesced",
                    "reduce_scatter_tensor_coalesced"):
                return a
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, str):
                try:
                    from torch.distributed.distributed_c10d import \
                        _resolve_process_group
                    return _resolve_process_group(a).size()
                except Exception:
                    pass
            if isinstance(a, dist.ProcessGroup):
                return a.size()
            if hasattr(a, "size") and callable(a.size) and isinstance(
                    getattr(a, "_get_backend_name", None), object) and \
                    type(a).__name__ == "ProcessGroup":
                return a.size()
        return self.world


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def dtensor_styles(plan_file, model):
    """The plan file's styles (spmd_torch's DTensor-named classes) as
    torch.distributed.tensor.parallel styles with the same arguments. An
    embedding's RowwiseParallel gets input_layouts=Replicate() (token ids
    are replicated), as torchtitan writes it; spmd_torch assumes it."""
    import torch.distributed.tensor.parallel as tp
    from torch.distributed.tensor import Replicate, Shard
    sys.path.insert(0, os.path.join(ROOT, "frontend", "torch"))
    plan = load(plan_file, "plan").plan
    if callable(plan):  # a plan file may define plan(model)
        plan = plan(model)
    out = {}
    for key, style in plan.items():
        cls = getattr(tp, type(style).__name__)
        # Only the arguments the plan sets: DTensor's defaults differ in
        # places (an nn.Embedding's RowwiseParallel input is replicated).
        try:
            defaults = vars(type(style)())
        except TypeError:
            defaults = {}
        kw = {}
        for field, value in vars(style).items():
            if field in defaults and repr(defaults[field]) == repr(value):
                continue
            if value is None and field == "output_layouts":
                continue
            kw[field] = _placements(value, Replicate, Shard)
        module = model.get_submodule(key) if "*" not in key else None
        if (isinstance(module, torch.nn.Embedding) and
                cls is tp.RowwiseParallel and "input_layouts" not in kw):
            kw["input_layouts"] = Replicate()
        out[key] = cls(**kw)
    return out


def _placements(value, Replicate, Shard):
    if isinstance(value, (list, tuple)):
        return type(value)(_placements(v, Replicate, Shard) for v in value)
    name = type(value).__name__
    if name == "Replicate":
        return Replicate()
    if name == "Shard":
        return Shard(value.dim)
    return value


def replicate_positions(model, mesh):
    """The learned positions (in no plan entry) as a replicated DTensor, as
    a DTensor user must write them to add them to a sequence-sharded
    DTensor (and for FSDP2 to shard them on top of tp)."""
    from torch.distributed.tensor import Replicate, distribute_tensor
    model.pos = torch.nn.Parameter(
        distribute_tensor(model.pos.data, mesh, [Replicate()]))


def sequence_parallel_embedding(styles):
    """The sequence-sharded residual stream stays a DTensor (the outputs of
    the embedding, the norms and the row-parallel projections), so adding
    the (replicated) learned positions slices them by sequence, as the
    global program does; with local tensors the model cannot add them."""
    from torch.distributed.tensor import Shard
    import torch.distributed.tensor.parallel as tp
    for key, style in styles.items():
        if isinstance(style, tp.SequenceParallel) or (
                isinstance(style, tp.RowwiseParallel) and
                any(isinstance(p, Shard) for p in style.output_layouts)):
            style.use_local_output = False


def local_heads(model, tp, mlp):
    """The attention's view(b, t, heads, -1) sees a rank's columns of q, k,
    v: its heads must be the rank's share (as torchtitan sets them), or
    every head would be split into `tp` heads (another function)."""
    if not mlp:
        for layer in model.layers:
            layer.attention.heads //= tp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="gpt", choices=sorted(SIZES))
    ap.add_argument("--plan", required=True, choices=PLANS)
    ap.add_argument("--size", default="count", choices=sorted(SIZES["gpt"]))
    args = ap.parse_args()
    size = SIZES[args.model][args.size]
    mlp = args.model == "mlp"
    world = 4
    dist.init_process_group("fake", store=FakeStore(), rank=0,
                            world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    models = load(os.path.join(INPUTS, "models.py"), "models")
    torch.manual_seed(0)
    if mlp:
        model = models.MLP(dim=size["dim"], hidden=size["hidden"],
                           out=size["out"])
        tp_plan, sp_plan = "mlp_plan.py", "mlp_sp_plan.py"
        blocks = [model.fc1, model.fc2]
    else:
        model = models.GPT(vocab=size["vocab"], dim=size["dim"],
                           heads=size["heads"], layers=size["layers"],
                           seq=size["seq"])
        tp_plan, sp_plan = "tp_plan.py", "sp_plan.py"
        blocks = list(model.layers)
    batch = size["batch"]
    note = ""
    loss_ctx = contextlib.nullcontext
    # Rows of the batch this rank feeds: data parallelism splits the batch;
    # the MLP's sequence-parallel plan takes its rows sharded on tp too.
    shards = 1
    if args.plan in ("TP", "TP+SP"):
        from torch.distributed.tensor.parallel import (loss_parallel,
                                                       parallelize_module)
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("tp",))
        plan_file = tp_plan if args.plan == "TP" else sp_plan
        styles = dtensor_styles(os.path.join(INPUTS, plan_file), model)
        if args.plan == "TP" and not mlp:
            # Vocabulary-parallel cross-entropy on the sharded logits.
            styles["output"].use_local_output = False
            loss_ctx = loss_parallel
        elif not mlp:
            sequence_parallel_embedding(styles)
            replicate_positions(model, mesh)
        else:
            shards = world if args.plan == "TP+SP" else 1
        parallelize_module(model, mesh, styles)
        local_heads(model, world, mlp)
    elif args.plan == "DP":
        # DDP all_reduces its gradient buckets from its C++ reducer (not
        # through the dispatcher, and the fake group cannot run its hooks):
        # the step runs unwrapped and the buckets are DDP's own assignment.
        shards = world
        note = "DDP: buckets from DDP's bucket assignment (1 MiB first, " \
               "25 MiB cap)"
    elif args.plan == "FSDP":
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
        for block in blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        shards = world
    else:  # FSDP x TP+SP on dp=2 x tp=2
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor.parallel import parallelize_module
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        styles = dtensor_styles(os.path.join(INPUTS, sp_plan), model)
        if not mlp:
            sequence_parallel_embedding(styles)
            replicate_positions(model, mesh["tp"])
        parallelize_module(model, mesh["tp"], styles)
        local_heads(model, 2, mlp)
        for block in blocks:
            fully_shard(block, mesh=mesh["dp"])
        fully_shard(model, mesh=mesh["dp"])
        shards = 4 if mlp else 2
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rows = batch // shards
    if mlp:
        inputs = torch.randn(rows, size["dim"])
        targets = torch.randint(0, size["out"], (rows,))
    else:
        inputs = torch.randint(0, size["vocab"], (rows, size["seq"]))
        targets = torch.randint(0, size["vocab"], (rows, size["seq"]))
    counter = Counter(world)
    with counter:
        counter.phase = "forward"
        with loss_ctx():
            out = model(inputs)
            loss = F.cross_entropy(out.flatten(0, -2) if not mlp else out,
                                   targets.flatten())
            counter.phase = "backward"
            loss.backward()
        counter.phase = "optimizer"
        opt.step()
        if shards > 1:
            # Each rank's loss is its own rows' mean; the step returns the
            # mean over the whole batch (as spmd's and JAX's do): one
            # all_reduce, as a user logging the global loss writes it.
            counter.phase = "loss"
            dist.all_reduce(loss.detach(), op=dist.ReduceOp.AVG)
    counts = counter.counts
    if args.plan == "DP":
        params = [p for p in model.parameters() if p.requires_grad]
        buckets, _ = dist._compute_bucket_assignment_by_size(
            list(reversed(params)),
            [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * 1024 * 1024])
        grads = sum(p.numel() * p.element_size() for p in params)
        counts.setdefault("backward", {})["all_reduce"] = {
            "count": len(buckets),
            "bytes": int(round(2 * (world - 1) / world * grads))}
    print(json.dumps({"peer": "dtensor", "plan": args.plan,
                      "model": args.model, "size": args.size,
                      "torch": torch.__version__, "phases": counts,
                      "note": note}))


if __name__ == "__main__":
    main()
