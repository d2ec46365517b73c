"""Trace a whole training step (or a forward pass) and emit an spmd program.

The step is a pure function

    (params, buffers, optimizer state, [step], batch)
        -> (loss, new params, new state, [step + 1], [grads])

traced by make_fx into one aten graph (forward, autograd backward and the
functional optimizer update), then printed as one func.func on global
tensors. With a mesh, arguments and results carry `spmd.layout` from the data
parallel / FSDP settings and the tensor-parallel plan; module boundaries the
plan pins become `spmd.constrain` ops.
"""

import json
import math
import sys
from dataclasses import asdict, dataclass, field
from typing import List, Optional

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.func import functional_call
from torch.utils import _pytree as pytree

from . import optim as foptim
from .builder import UnsupportedOpError
from .emit import Emitter, tensor_meta
from .placements import Layout, Mesh, Placement, Replicate, Shard, layout_attr
from .plans import resolve_plan

# -- the marker op: an identity that survives torch.export ------------------
# A custom op with a registered autograd formula: torch.export keeps it in
# the forward graph and the joint (forward + backward) graph gets its
# backward as a mark with tag -tag - 1, so a plan can pin gradients too.
@torch.library.custom_op("spmd::mark", mutates_args=())
def _mark(x: torch.Tensor, tag: int) -> torch.Tensor:
    return x.clone()


@_mark.register_fake
def _mark_fake(x, tag):
    return torch.empty_like(x)


def _mark_setup(ctx, inputs, output):
    ctx.tag = inputs[1]


def _mark_backward(ctx, g):
    return _mark(g, -ctx.tag - 1), None


_mark.register_autograd(_mark_backward, setup_context=_mark_setup)


@dataclass
class TensorInfo:
    name: str
    kind: str  # param | buffer | state | step | batch | loss | output | grad
    shape: List[int]
    dtype: str
    layout: Optional[str] = None
    # For arguments: the result index holding the updated value, if any.
    updated_by: Optional[int] = None


@dataclass
class ExportedProgram:
    text: str
    func_name: str
    mode: str
    mesh: Optional[Mesh]
    args: List[TensorInfo]
    results: List[TensorInfo]
    # Example argument values in order (what the trace used).
    inputs: List[torch.Tensor] = field(repr=False, default_factory=list)
    graph: object = field(repr=False, default=None)
    # The unannotated function (no mesh, no layouts, no constrain).
    plain_text: str = field(repr=False, default="")

    def metadata(self):
        return {
            "func": self.func_name,
            "mode": self.mode,
            "mesh": dict(self.mesh.axes) if self.mesh else None,
            "args": [asdict(a) for a in self.args],
            "results": [asdict(r) for r in self.results],
        }

    def metadata_json(self):
        return json.dumps(self.metadata(), indent=1)


class _Layouts:
    """Turns data-parallel / FSDP settings and tp placements into layouts."""

    def __init__(self, mesh, data_parallel, fsdp, dp_axis, tp_axis):
        self.mesh = mesh
        self.dp = (data_parallel or fsdp) and mesh is not None and \
            mesh.has_axis(dp_axis)
        self.fsdp = fsdp
        self.dp_axis, self.tp_axis = dp_axis, tp_axis
        if mesh is not None and (data_parallel or fsdp) and not mesh.has_axis(dp_axis):
            raise ValueError(f"data parallel/FSDP needs a mesh axis '{dp_axis}'")

    def full(self, rank, tp=None, dp=None):
        """Placements on all axes: tp on the tp axis, dp on the dp axis."""
        if isinstance(tp, Layout):
            return list(tp.placements)
        out = []
        for axis in self.mesh.axis_names:
            if axis == self.tp_axis and tp is not None:
                out.append(tp)
            elif axis == self.dp_axis and dp is not None:
                out.append(dp)
            else:
                out.append(Replicate())
        if rank == 0:
            out = [Replicate() if p.is_shard() else p for p in out]
        return out

    def activation(self, rank, tp):
        return self.full(rank, tp, Shard(0) if self.dp and rank else None)

    def param(self, rank, tp):
        return self.full(rank, tp, self.fsdp_shard(rank, tp))

    def fsdp_shard(self, rank, tp):
        """FSDP's dp placement of a parameter: dim 0, or dim 1 where tp
        already shards dim 0 (a colwise weight). Two axes on one dim nest
        dp-major, so the tp shard would no longer be a dp-gather away (FSDP2
        nests them the other way, as a strided shard). A vector tp already
        shards (a colwise bias) stays whole on dp: its gradient is
        all-reduced."""
        if not self.fsdp or not rank:
            return None
        if isinstance(tp, Placement) and tp.is_shard() and \
                tp.normalized(rank).dim == 0:
            return Shard(1) if rank >= 2 else None
        return Shard(0)

    def batch(self, rank):
        return self.full(rank, None, Shard(0) if self.dp and rank else None)

    def attr(self, placements, rank):
        return layout_attr(self.mesh, placements, rank)


def _param_tp_placements(model, resolved):
    out = {}
    for name, mod, style in resolved:
        for pname, pl in style.param_placements(name, mod).items():
            if getattr(mod, pname, None) is None:
                continue
            full = f"{name}.{pname}" if name else pname
            out[full] = pl
    return out


def _install_marks(resolved, registry):
    handles = []

    def wrap(x, chain, what):
        if not chain or not isinstance(x, torch.Tensor):
            return x
        registry.append((chain, what))
        return _mark(x, len(registry) - 1)

    for name, mod, style in resolved:
        in_chains = style.input_chains(mod)
        kw_chains = style.input_kwarg_chains(mod)
        out_chains = style.output_chains(mod)
        what = f"{name or '<root>'}: {type(style).__name__}"
        if any(in_chains) or kw_chains:
            def pre(m, inputs, kwargs, chains=in_chains, kw=kw_chains, what=what):
                inputs = tuple(wrap(x, chains[i], f"{what} input {i}")
                               if i < len(chains) else x
                               for i, x in enumerate(inputs))
                kwargs = {k: wrap(v, kw[k], f"{what} input {k}") if k in kw else v
                          for k, v in kwargs.items()}
                return inputs, kwargs
            handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
        if any(out_chains):
            def post(m, inputs, output, chains=out_chains, what=what):
                if isinstance(output, torch.Tensor):
                    return wrap(output, chains[0], f"{what} output 0")
                return type(output)(wrap(x, chains[i], f"{what} output {i}")
                                    if i < len(chains) else x
                                    for i, x in enumerate(output))
            handles.append(mod.register_forward_hook(post))
    return handles


class _Restore:
    def __init__(self, fn):
        self.remove = fn


def _static_experts(model):
    """Hugging Face MoE models (transformers 5) compute their experts by
    default with "grouped_mm": tokens sorted by expert into groups whose
    sizes depend on the routing (aten.sort, histc, _grouped_mm), which a
    program of static shapes cannot express; "eager" loops over the experts
    a token picked, equally data-dependent. "batched_mm" computes the same
    experts from the same weights with static shapes (each token's expert
    weights gathered by index and applied by bmm): use it while tracing and
    say so. Returns handles whose remove() restores the model's choice."""
    from transformers import PreTrainedModel  # only for models that have it
    handles = []
    for m in model.modules():
        # (models without the experts switch report "eager" too)
        can_set = getattr(type(m), "_can_set_experts_implementation", None)
        if not isinstance(m, PreTrainedModel) or not callable(can_set) or \
                not can_set():
            continue
        current = m.get_experts_implementation()
        if not current or all(v in (None, "batched_mm") for v in current.values()):
            continue
        wanted = {k: "batched_mm" for k in current}
        try:
            m.set_experts_implementation(wanted)
        except Exception:  # the model has no batched_mm experts
            continue
        print(f"spmd_torch: note: {type(m).__name__}'s experts are traced as "
              f"transformers' 'batched_mm' instead of "
              f"'{current.get('', next(iter(current.values())))}' (the same "
              "math with static shapes)", file=sys.stderr)
        handles.append(_Restore(
            lambda m=m, current=current: m.set_experts_implementation(current)))
    return handles


def _trace_hooks(resolved, registry, model):
    """The plan's marks and the static experts, undone by remove()."""
    handles = _install_marks(resolved, registry)
    if "transformers" in sys.modules:
        handles += _static_experts(model)
    return handles


def _aliases(model, named):
    """{canonical name: every name of that tensor} (tied weights share one
    argument; functional_call must replace each of its names)."""
    canon = {id(t): n for n, t in named}
    out = {n: [] for n, _ in named}
    for mname, mod in model.named_modules(remove_duplicate=False):
        for kind in (mod._parameters, mod._buffers):
            for n, t in kind.items():
                if t is not None and id(t) in canon:
                    full = f"{mname}.{n}" if mname else n
                    if full not in out[canon[id(t)]]:
                        out[canon[id(t)]].append(full)
    return out


def _bind(aliases, names, values):
    d = {}
    for n, v in zip(names, values):
        for a in aliases.get(n) or [n]:
            d[a] = v
    return d


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _info(name, kind, t, layout=None):
    return TensorInfo(name, kind, list(t.shape), _dtype_name(t.dtype), layout)


def _fsdp_gathers(lay, named_params, tp_of):
    """FSDP: every parameter sharded on dp for storage is gathered on dp
    before use (what FSDP's pre-forward all_gather does); the computation is
    data parallel. {argument index: (layout, loc)}."""
    if lay is None or not lay.fsdp:
        return {}
    out = {}
    for i, (n, p) in enumerate(named_params):
        stored = lay.param(p.dim(), tp_of.get(n))
        used = lay.full(p.dim(), tp_of.get(n), None)
        if stored != used:
            out[i] = (lay.attr(used, p.dim()), f"FSDP: gather {n} before use")
    return out


def _emit(gm, func_name, arg_layouts, res_layouts, registry, lay,
          constrain_grads, gather_form, arg_constrains=None, rng_args=None):
    """Print the function twice: annotated (if a mesh) and plain."""
    def mark_handler(b, x, tag):
        if lay is None:
            return x
        # The constrain ops are located at the plan entry that asked for them.
        node_loc = b.loc
        if tag >= 0:
            chain, what = registry[tag]
            b.loc = what
            for l in chain:
                x = b.constrain(x, lay.attr(lay.activation(x.rank, l), x.rank))
        elif constrain_grads:
            chain, what = registry[-tag - 1]
            b.loc = f"{what} (gradient)"
            x = b.constrain(x, lay.attr(lay.activation(x.rank, chain[0]), x.rank))
        b.loc = node_loc
        return x

    plain, params, results = Emitter(gm, None, gather_form,
                                     rng_args).run(func_name)
    if lay is None:
        return plain, plain
    def attr(a):
        # None: a free argument (spmd-auto-shard chooses its layout);
        # ("updates", i): a free result, the next value of argument i.
        if a is None:
            return None
        if isinstance(a, tuple):
            given = f"spmd.layout = {a[2]}, " if len(a) > 2 and a[2] else ""
            return f"{given}spmd.updates = {a[1]} : i64"
        return f"spmd.layout = {a}"
    arg_attrs = [attr(a) for a in arg_layouts]
    res_attrs = [attr(a) for a in res_layouts]
    text, _, _ = Emitter(gm, mark_handler, gather_form, rng_args).run(
        func_name, arg_attrs, res_attrs, arg_constrains=arg_constrains)
    return lay.mesh.mlir() + "\n\n" + text, plain


def _module_text(body, header):
    return f"// {header}\n{body}\n"


def _as_mesh(mesh):
    if mesh is None or isinstance(mesh, Mesh):
        return mesh
    if isinstance(mesh, str):
        return Mesh.parse(mesh)
    return Mesh(mesh)


def _handled(op):
    from .emit.core import has_handler
    return has_handler(str(op))


def _core_decompositions():
    """PyTorch's core ATen decompositions, less those of the ops spmd_torch
    translates itself: its handlers of composite ops (nll_loss, layer norm
    and softmax backward, embedding backward, ...) write them in forms that
    partition well; everything else is decomposed."""
    from torch._decomp import core_aten_decompositions
    return {op: fn for op, fn in core_aten_decompositions().items()
            if not _handled(op)}


def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0,
               is_causal=False, scale=None, enable_gqa=False):
    """scaled_dot_product_attention as matmuls and a softmax. The result has
    the strides of PyTorch's fused CPU kernel ([b, t, h, d] memory seen as
    [b, h, t, d]): model code such as GPT-2's views the transposed result
    without a copy, which PyTorch's own decomposition (contiguous [b, h, t,
    d]) breaks ("Cannot view a tensor with shape ...")."""
    L, S = query.size(-2), key.size(-2)
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    if enable_gqa and query.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, -3)
        value = value.repeat_interleave(rep, -3)
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        causal = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    probs = torch.softmax(scores, dim=-1)
    if dropout_p:
        # Attention dropout: a random op of the step (spmd.random).
        probs = torch.nn.functional.dropout(probs, p=dropout_p, training=True)
    out = probs @ value
    if out.dim() == 4:
        out = out.transpose(1, 2).contiguous().transpose(1, 2)
    return out


def _export_decompositions():
    table = torch.export.default_decompositions()
    for op in list(table.keys()):
        if _handled(op):
            table.pop(op)
    table[torch.ops.aten.scaled_dot_product_attention.default] = _sdpa_math
    table[torch.ops.aten.copy.default] = _copy_functional
    return table


def _copy_functional(self, src, non_blocking=False):
    """aten.copy (what export makes of `dst[...].copy_(src)`, e.g. DeepSeek-V3
    filling key states from two parts) as src broadcast to self's shape and
    type: the same values, and differentiable (autograd has no derivative
    for aten.copy, which the backward replay needs)."""
    return src.to(dtype=self.dtype).expand(self.shape)


def _export_error(what, model, e):
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    # A construct torch.export cannot trace (rather than an error in the
    # model or its inputs, such as a shape mismatch): make_fx may do.
    hint = ""
    if type(e).__module__.startswith(("torch._dynamo", "torch.export",
                                      "torch.fx.experimental.symbolic")):
        hint = " (try capture='make_fx', --capture make_fx)"
    return UnsupportedOpError(
        f"torch.export could not capture {what} of {type(model).__name__}: "
        f"{first}{hint}")


class _LossModule(torch.nn.Module):
    """model + loss as one module: what torch.export captures."""

    def __init__(self, model, loss_fn, step_fn=None):
        super().__init__()
        self.model = model
        self._loss_fn = [loss_fn]  # a list: a loss Module is no submodule
        self._step_fn = step_fn

    def forward(self, *b):
        if self._step_fn is not None:
            return (self._step_fn(self.model, *b),)
        loss_fn = self._loss_fn[0]
        if loss_fn is None:
            return (_as_loss(self.model(*b)),)
        return (loss_fn(self.model(*b[:-1]), b[-1]),)


def _as_loss(out):
    """A model that returns its loss: a tensor, or (HF style) an output
    object with a `loss` field."""
    if isinstance(out, torch.Tensor):
        return out
    loss = getattr(out, "loss", None)
    if loss is None and isinstance(out, dict):
        loss = out.get("loss")
    if loss is None and isinstance(out, (tuple, list)) and out:
        loss = out[0]
    if not isinstance(loss, torch.Tensor):
        raise ValueError("the model returns no loss tensor; give a loss_fn")
    return loss


class _ForwardModule(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *x):
        return tuple(pytree.tree_leaves(self.model(*x)))


def _capture(module, model, inputs, named_params, named_buffers, what):
    """module(*inputs) (module wraps `model` as `.model`) captured by
    torch.export (non-strict) and decomposed to core ATen: a function of
    (params, buffers, inputs) that replays the exported graph and gives its
    outputs. Replayed under make_fx with parameters that require grad, the
    graph's ops carry autograd, so torch.autograd.grad gives the backward —
    what AOTAutograd does, and it keeps tied weights (two names of one
    argument) and parameters the loss does not reach working."""
    from torch.export.graph_signature import InputKind, OutputKind
    try:
        ep = torch.export.export(module, tuple(inputs), strict=False)
        ep = ep.run_decompositions(_export_decompositions())
    except UnsupportedOpError:
        raise
    except Exception as e:  # PyTorch raises many kinds here
        raise _export_error(what, model, e) from e
    index = _name_index(model, named_params, named_buffers, "model.")
    sources, nin = [], 0
    for spec in ep.graph_signature.input_specs:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            sources.append(index[spec.target])
        elif spec.kind == InputKind.USER_INPUT:
            sources.append(("input", nin))
            nin += 1
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            sources.append(("const", ep.constants[spec.target]))
        else:
            raise UnsupportedOpError(
                f"torch.export gave an input of kind {spec.kind.name} "
                f"('{spec.target}'), which spmd_torch does not support")
    outs = []
    for i, spec in enumerate(ep.graph_signature.output_specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            outs.append(i)
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            raise UnsupportedOpError(
                f"{what} of {type(model).__name__} updates buffer "
                f"'{spec.target[len('model.'):]}' (running statistics?); "
                "spmd_torch supports buffers that are only read")
        else:
            raise UnsupportedOpError(
                f"torch.export gave an output of kind {spec.kind.name}, which "
                "spmd_torch does not support")
    gm = ep.graph_module

    def run(params, buffers, xs):
        src = {"param": params, "buffer": buffers, "input": xs}
        ins = [key if kind == "const" else src[kind][key] for kind, key in sources]
        res = gm(*ins)
        return [res[i] for i in outs]
    run.draws_random = _draws_random(gm.graph)
    return run


def _name_index(model, named_params, named_buffers, prefix):
    """{prefix + every name of a parameter/buffer: ("param"|"buffer", index
    of its argument)}: torch.export names a tied weight by one of its
    names."""
    out = {}
    for kind, named in (("param", named_params), ("buffer", named_buffers)):
        for i, (n, _) in enumerate(named):
            out[prefix + n] = (kind, i)
    for canon, names in _aliases(model, named_params + named_buffers).items():
        if prefix + canon in out:
            for a in names:
                out[prefix + a] = out[prefix + canon]
    return out


def export_train_step(model, example_batch, loss_fn=None, optimizer=None,
                      mesh=None, plan=None, data_parallel=None, fsdp=False,
                      dp_axis="dp", tp_axis="tp", return_grads=False,
                      constrain_grads=False, func_name="train_step",
                      optimizer_state=None, tracing_mode=None,
                      gather_form="onehot", feedback_order=False,
                      capture="export", rng_seed=0, step_fn=None,
                      auto_plan=False, auto_layouts=None):
    """Trace one training step of `model` and emit it as an spmd program.

    example_batch: a tuple of tensors. The model is called on all but the
    last one and `loss_fn(output, last)` gives the loss; without loss_fn the
    model is called on the whole batch and returns the loss.
    optimizer: a torch.optim SGD/Adam/AdamW instance (its hyperparameters and
    current state are used) or an spmd_torch.optim one; default SGD(lr=0.01).
    mesh: {"dp": 2, "tp": 2}, "dp=2,tp=2" or a Mesh. data_parallel (default:
    the mesh has `dp_axis`) shards batch dim 0 on dp; fsdp also shards
    parameters and optimizer state on dim 0 over dp. plan: DTensor-style
    {module pattern: style} applied on `tp_axis`. tracing_mode: make_fx's
    ("real" by default, "fake" when float16 tensors need kernels the CPU
    lacks). gather_form: embedding lookups and x[idx] gathers as one-hot
    reductions over the indexed dims ("onehot", partitionable by indexing
    maps alone) or as tensor.extract from the table ("extract"). feedback_order: results in
    the order of the arguments they update (result i is the new argument i,
    what `spmd-run --steps` feeds back), then the loss, then the gradients;
    the default is loss, parameters, state, step, gradients. step_fn:
    (model, *batch) -> loss, in place of the model call and loss_fn (what
    spmd_torch.compile traces of a user's training step). auto_plan: leave
    parameters, optimizer state and batch without layouts, and mark each
    result that updates an argument (`spmd.updates`), for spmd-auto-shard
    to choose the plan; with a `plan`, dp or fsdp, it keeps their layouts
    of parameters, optimizer state and batch (the storage) and chooses the
    rest; auto_layouts: {argument name: "[S(0), R]"} given to it as
    constraints (a plan it wrote).
    """
    mesh = _as_mesh(mesh)
    # auto_plan with a plan, dp or fsdp: their parameter, state and batch
    # layouts are kept (what each rank stores) and spmd-auto-shard chooses
    # the rest, FSDP's parameters not necessarily gathered before use.
    storage_given = bool(auto_plan and (plan or fsdp or data_parallel))
    if auto_plan:
        if mesh is None:
            raise ValueError("auto_plan needs a mesh")
        if not storage_given:
            data_parallel = False
    if data_parallel is None:
        data_parallel = mesh is not None and mesh.has_axis(dp_axis)
    lay = _Layouts(mesh, data_parallel, fsdp, dp_axis, tp_axis) if mesh else None
    resolved = resolve_plan(model, plan)
    if resolved and (mesh is None or not mesh.has_axis(tp_axis)):
        raise ValueError(f"a parallel plan needs a mesh with axis '{tp_axis}'")
    torch_opt = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
    fopt = foptim.from_torch(optimizer) if optimizer is not None else foptim.SGD(lr=0.01)

    named_params = [(n, p) for n, p in model.named_parameters()]
    named_buffers = [(n, b) for n, b in model.named_buffers()]
    pnames = [n for n, _ in named_params]
    bnames = [n for n, _ in named_buffers]
    if optimizer_state is not None:
        states, step0 = optimizer_state
    else:
        states, step0 = foptim.torch_state(torch_opt, fopt,
                                           [p for _, p in named_params])
    batch = tuple(example_batch) if isinstance(example_batch, (tuple, list)) \
        else (example_batch,)
    aliases = _aliases(model, named_params + named_buffers)
    nP, nB, nS = len(pnames), len(bnames), len(fopt.state_names)
    uses_step = fopt.uses_step

    pass_buffers = feedback_order and nB > 0
    registry = []
    handles = _trace_hooks(resolved, registry, model)
    try:
        run = None
        if capture == "export":
            run = _capture(_LossModule(model, loss_fn, step_fn), model, batch,
                           named_params, named_buffers, "the training step")
        elif capture != "make_fx":
            raise ValueError(f"unknown capture '{capture}' (export or make_fx)")
        # A step that draws random numbers (dropout) takes the generator's
        # seed and step as arguments and returns the next step.
        uses_rng = run.draws_random if run else False
        traced = _trace_step(model, loss_fn, step_fn, fopt, run, aliases,
                             pnames, bnames, nS, uses_step, uses_rng,
                             pass_buffers, return_grads, feedback_order,
                             states, step0,
                             rng_seed, named_params, named_buffers, batch,
                             tracing_mode)
        if run is None and not uses_rng and _draws_random(traced[0].graph):
            traced = _trace_step(model, loss_fn, step_fn, fopt, run, aliases,
                                 pnames, bnames, nS, uses_step, True,
                                 pass_buffers, return_grads, feedback_order,
                                 states, step0,
                                 rng_seed, named_params, named_buffers, batch,
                                 tracing_mode)
            uses_rng = True
        gm, flat, order = traced
    finally:
        for h in handles:
            h.remove()
    rng_index = nP + nB + nP * nS + (1 if uses_step else 0)

    # Argument and result descriptions (and layouts).
    tp_of = _param_tp_placements(model, resolved)
    args, arg_layouts = [], []
    param_pl = []
    for n, p in named_params:
        pl = lay.param(p.dim(), tp_of.get(n)) if lay else None
        param_pl.append(pl)
        args.append(_info(n, "param", p, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, p.dim()) if lay else None)
    for n, b in named_buffers:
        pl = lay.full(b.dim()) if lay else None
        args.append(_info(n, "buffer", b, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, b.dim()) if lay else None)
    for (n, p), pl, row in zip(named_params, param_pl, states):
        for sname, s in zip(fopt.state_names, row):
            args.append(_info(f"{n}.{sname}", "state", s, _pl_str(pl)))
            arg_layouts.append(lay.attr(pl, p.dim()) if lay else None)
    if uses_step:
        pl = lay.full(0) if lay else None
        args.append(TensorInfo("step", "step", [], "float32", _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, 0) if lay else None)
    if uses_rng:
        _add_rng_args(lay, args, arg_layouts)
    for i, t in enumerate(batch):
        pl = lay.batch(t.dim()) if lay else None
        args.append(_info(f"batch.{i}", "batch", t, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, t.dim()) if lay else None)

    results, res_layouts = [], []
    r_loss = lay.full(0) if lay else None
    results.append(TensorInfo("loss", "loss", [], "float32", _pl_str(r_loss)))
    res_layouts.append(lay.attr(r_loss, 0) if lay else None)
    n_param_args = nP
    for i in range(nP):
        args[i].updated_by = len(results)
        results.append(TensorInfo(args[i].name, "param", args[i].shape,
                                  args[i].dtype, args[i].layout))
        res_layouts.append(arg_layouts[i])
    if pass_buffers:
        for i in range(nP, nP + nB):
            args[i].updated_by = len(results)
            results.append(TensorInfo(args[i].name, "buffer", args[i].shape,
                                      args[i].dtype, args[i].layout))
            res_layouts.append(arg_layouts[i])
    k = nP + nB
    for i in range(nP * nS):
        args[k + i].updated_by = len(results)
        results.append(TensorInfo(args[k + i].name, "state", args[k + i].shape,
                                  args[k + i].dtype, args[k + i].layout))
        res_layouts.append(arg_layouts[k + i])
    if uses_step:
        si = nP + nB + nP * nS
        args[si].updated_by = len(results)
        results.append(TensorInfo("step", "step", [], "float32", args[si].layout))
        res_layouts.append(arg_layouts[si])
    if uses_rng:
        for i in (rng_index, rng_index + 1):
            args[i].updated_by = len(results)
            results.append(TensorInfo(args[i].name, "rng", [], "int64",
                                      args[i].layout))
            res_layouts.append(arg_layouts[i])
    if return_grads:
        for i in range(n_param_args):
            results.append(TensorInfo(args[i].name + ".grad", "grad", args[i].shape,
                                      args[i].dtype, args[i].layout))
            res_layouts.append(arg_layouts[i])

    results, res_layouts = _permute(results, order), _permute(res_layouts, order)
    where = {c: j for j, c in enumerate(order)}
    for a in args:
        if a.updated_by is not None:
            a.updated_by = where[a.updated_by]
    for i, a in enumerate(args):
        if a.updated_by is not None:
            # Given a layout too (a hand plan): spmd-auto-shard, when asked
            # to choose the activations, tells the optimizer from them.
            res_layouts[a.updated_by] = ("updates", i) + (
                () if auto_plan else (res_layouts[a.updated_by],))
    if auto_plan:
        given = dict(auto_layouts or {})
        for i, a in enumerate(args):
            if a.name in given:
                text = given.pop(a.name)
                n = len([p for p in text.strip("[] ").split(",") if p.strip()])
                if n != len(mesh.axes):
                    raise ValueError(f"layout {text} of '{a.name}' has {n} "
                                     f"placements for a mesh of "
                                     f"{len(mesh.axes)} axes")
                arg_layouts[i] = f"#spmd.layout<@{mesh.name}, {text}>"
                a.layout = text
            elif a.kind in ("param", "state", "batch") and not storage_given:
                arg_layouts[i] = None
                a.layout = None
        if given:
            raise ValueError("the plan's layouts name no argument: "
                             f"{sorted(given)}")
    text, plain = _emit(gm, func_name, arg_layouts, res_layouts, registry, lay,
                        constrain_grads, gather_form,
                        {} if auto_plan else
                        _fsdp_gathers(lay, named_params, tp_of),
                        (rng_index, rng_index + 1) if uses_rng else None)
    _check_result_types(gm, results)
    header = (f"spmd_torch train step of {type(model).__name__}, optimizer "
              f"{type(fopt).__name__}" + (f", mesh {dict(mesh.axes)}" if mesh else ""))
    return ExportedProgram(_module_text(text, header), func_name, "train", mesh,
                           args, results, flat, gm, _module_text(plain, header))


def _add_rng_args(lay, args, arg_layouts):
    """The random ops' `rng.seed` and `rng.step`: 0-d int64, replicated."""
    pl = lay.full(0) if lay else None
    for name in ("rng.seed", "rng.step"):
        args.append(TensorInfo(name, "rng", [], "int64", _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, 0) if lay else None)


def _draws_random(graph):
    from .emit.random import RANDOM_OPS
    return any(str(n.target) in RANDOM_OPS for n in graph.nodes
               if n.op == "call_function")


def _trace_step(model, loss_fn, step_fn, fopt, run, aliases, pnames, bnames,
                nS, uses_step, uses_rng, pass_buffers, return_grads,
                feedback_order, states, step0, rng_seed, named_params,
                named_buffers, batch, tracing_mode):
    """The whole step traced by make_fx: (graph module, example arguments,
    result order). With `run` (the torch.export capture of model + loss)
    the exported graph is replayed and differentiated; without, the model
    runs under make_fx itself."""
    nP, nB = len(pnames), len(bnames)

    def finish(params, buffers, state, step, rng, loss, grads):
        """The optimizer update and the results in canonical order: loss,
        parameters, [buffers], state, [step], [rng seed, step], [grads]."""
        new_params, new_state = [], []
        for p, g, s in zip(params, grads, state):
            np_, ns = fopt.update(p, g, s, step)
            new_params.append(np_)
            new_state.extend(ns)
        res = [loss.detach()] + [p.detach() for p in new_params]
        if pass_buffers:
            # Unchanged, so that result i is the new argument i.
            res += [b.clone() for b in buffers]
        res += [s.detach() for s in new_state]
        if uses_step:
            res.append(step + 1)
        if uses_rng:
            res += [rng[0].clone(), rng[1] + 1]
        if return_grads:
            res.extend(g.detach() for g in grads)
        return _permute(res, order)

    def split(flat):
        it = iter(flat)
        params = [next(it) for _ in range(nP)]
        buffers = [next(it) for _ in range(nB)]
        state = [[next(it) for _ in range(nS)] for _ in range(nP)]
        step = next(it) if uses_step else None
        rng = (next(it), next(it)) if uses_rng else None
        return params, buffers, state, step, rng, list(it)

    def grads_of(loss, params):
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        return [torch.zeros_like(p) if g is None else g
                for p, g in zip(params, grads)]

    def export_step(*flat):
        params, buffers, state, step, rng, b = split(flat)
        loss = run(params, buffers, b)[0]
        return finish(params, buffers, state, step, rng, loss,
                      grads_of(loss, params))

    def make_fx_step(*flat):
        # The make_fx capture: autograd traced through functional_call.
        params, buffers, state, step, rng, b = split(flat)
        tensors = _bind(aliases, pnames, params)
        tensors.update(_bind(aliases, bnames, buffers))
        if step_fn is not None:
            from torch.nn.utils.stateless import _reparametrize_module
            with _reparametrize_module(model, tensors):
                loss = step_fn(model, *b)
        elif loss_fn is None:
            loss = _as_loss(functional_call(model, tensors, tuple(b)))
        else:
            out = functional_call(model, tensors, tuple(b[:-1]))
            loss = loss_fn(out, b[-1])
        return finish(params, buffers, state, step, rng, loss,
                      grads_of(loss, params))

    # Parameters and optimizer state are only read by the traced step (it is
    # functional), so the example values alias the model's tensors instead
    # of copying them: a 32-layer model's export would otherwise hold every
    # parameter and state tensor twice. Buffers are copied: model code run
    # by make_fx capture could update them in place.
    flat = [p.detach() for _, p in named_params]
    flat += [b.detach().clone() for _, b in named_buffers]
    for row in states:
        flat += [s.detach() for s in row]
    if uses_step:
        flat.append(torch.tensor(float(step0), dtype=torch.float32))
    if uses_rng:
        flat += [torch.tensor(int(rng_seed), dtype=torch.int64),
                 torch.tensor(0, dtype=torch.int64)]
    flat += [t.detach().clone() for t in batch]

    # Result order: canonical index of each result position.
    nPB = nB if pass_buffers else 0
    n_upd = nP + nPB + nP * nS + (1 if uses_step else 0) + (2 if uses_rng else 0)
    n_res = 1 + n_upd + (nP if return_grads else 0)
    order = list(range(n_res))
    if feedback_order:
        order = list(range(1, 1 + n_upd)) + [0] + list(range(1 + n_upd, n_res))

    mode = _tracing_mode(flat, tracing_mode)
    for i in range(nP):
        flat[i].requires_grad_(True)
    try:
        gm = _trace(export_step if run else make_fx_step, mode, flat)
    finally:
        for i in range(nP):
            flat[i] = flat[i].detach()
    return gm, flat, order


def _permute(values, order):
    return [values[c] for c in order]


def _check_result_types(gm, results):
    out = _output_metas(gm)
    for r, m in zip(results, out):
        r.dtype = _dtype_name(m.dtype)
        r.shape = list(m.shape)


def _output_metas(gm):
    for node in gm.graph.nodes:
        if node.op == "output":
            vals = node.args[0]
            flat = []

            def rec(v):
                if isinstance(v, (list, tuple)):
                    for x in v:
                        rec(x)
                else:
                    flat.append(tensor_meta(v))
            rec(vals)
            return flat
    return []


def _trace(fn, mode, flat):
    """make_fx with the core ATen decompositions. Fake tracing lets the
    exported graph's real constants (lifted tensors) in."""
    return make_fx(fn, decomposition_table=_core_decompositions(),
                   tracing_mode=mode,
                   _allow_non_fake_inputs=mode == "fake")(*flat)


def _tracing_mode(tensors, mode):
    """Real tensors unless PyTorch's CPU kernels lack the dtype (float16)."""
    if mode is not None:
        return mode
    return "fake" if any(t.dtype == torch.float16 for t in tensors) else "real"


def _pl_str(pl):
    if pl is None:
        return None
    return "[" + ", ".join(p.mlir() for p in pl) + "]"


def export_forward(model, example_inputs, mesh=None, plan=None,
                   data_parallel=None, dp_axis="dp", tp_axis="tp",
                   func_name="forward", fsdp=False, tracing_mode=None,
                   gather_form="onehot", capture="export", rng_seed=0):
    """Trace model(*example_inputs) (no grad) with params/buffers as args
    (and rng.seed, rng.step after the buffers when it draws random
    numbers)."""
    mesh = _as_mesh(mesh)
    if data_parallel is None:
        data_parallel = mesh is not None and mesh.has_axis(dp_axis)
    lay = _Layouts(mesh, data_parallel, fsdp, dp_axis, tp_axis) if mesh else None
    resolved = resolve_plan(model, plan)
    if resolved and (mesh is None or not mesh.has_axis(tp_axis)):
        raise ValueError(f"a parallel plan needs a mesh with axis '{tp_axis}'")
    named_params = list(model.named_parameters())
    named_buffers = list(model.named_buffers())
    pnames = [n for n, _ in named_params]
    bnames = [n for n, _ in named_buffers]
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) \
        else (example_inputs,)
    nP, nB = len(pnames), len(bnames)
    aliases = _aliases(model, named_params + named_buffers)

    # With random ops (dropout in train mode) the rng seed and step come
    # after the buffers: k = 2 extra arguments the model does not see.
    def make_fx_fwd(k):
        def fwd(*flat):
            tensors = _bind(aliases, pnames, flat[:nP])
            tensors.update(_bind(aliases, bnames, flat[nP:nP + nB]))
            out = functional_call(model, tensors, tuple(flat[nP + nB + k:]))
            return pytree.tree_leaves(out)
        return fwd

    def example(k):
        rng = [torch.tensor(int(rng_seed), dtype=torch.int64),
               torch.tensor(0, dtype=torch.int64)][:k]
        return [p.detach() for _, p in named_params] + \
            [b.detach().clone() for _, b in named_buffers] + rng + \
            [t.detach().clone() for t in inputs]

    registry = []
    handles = _trace_hooks(resolved, registry, model)
    try:
        run = None
        if capture == "export":
            run = _capture(_ForwardModule(model), model, inputs, named_params,
                           named_buffers, "the forward pass")
        elif capture != "make_fx":
            raise ValueError(f"unknown capture '{capture}' (export or make_fx)")
        uses_rng = run.draws_random if run else False

        def trace(k):
            flat = example(k)
            if run:
                def fwd(*flat):
                    return run(flat[:nP], flat[nP:nP + nB], flat[nP + nB + k:])
            else:
                fwd = make_fx_fwd(k)
            with torch.no_grad():
                return _trace(fwd, _tracing_mode(flat, tracing_mode), flat), flat
        gm, flat = trace(2 if uses_rng else 0)
        if run is None and _draws_random(gm.graph):
            uses_rng = True
            gm, flat = trace(2)
    finally:
        for h in handles:
            h.remove()
    tp_of = _param_tp_placements(model, resolved)
    args, arg_layouts = [], []
    for n, p in named_params:
        pl = lay.param(p.dim(), tp_of.get(n)) if lay else None
        args.append(_info(n, "param", p, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, p.dim()) if lay else None)
    for n, b in named_buffers:
        pl = lay.full(b.dim()) if lay else None
        args.append(_info(n, "buffer", b, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, b.dim()) if lay else None)
    if uses_rng:
        _add_rng_args(lay, args, arg_layouts)
    for i, t in enumerate(inputs):
        pl = lay.batch(t.dim()) if lay else None
        args.append(_info(f"batch.{i}", "batch", t, _pl_str(pl)))
        arg_layouts.append(lay.attr(pl, t.dim()) if lay else None)
    results, res_layouts = [], []
    for i, m in enumerate(_output_metas(gm)):
        rank = len(m.shape)
        pl = lay.batch(rank) if lay else None
        results.append(TensorInfo(f"output.{i}", "output", list(m.shape),
                                  _dtype_name(m.dtype), _pl_str(pl)))
        res_layouts.append(lay.attr(pl, rank) if lay else None)
    text, plain = _emit(gm, func_name, arg_layouts, res_layouts, registry, lay,
                        False, gather_form,
                        _fsdp_gathers(lay, named_params, tp_of),
                        (nP + nB, nP + nB + 1) if uses_rng else None)
    header = f"spmd_torch forward of {type(model).__name__}" + (
        f", mesh {dict(mesh.axes)}" if mesh else "")
    return ExportedProgram(_module_text(text, header), func_name, "infer", mesh,
                           args, results, flat, gm, _module_text(plain, header))
