"""Parallel plans in DTensor's vocabulary (torch.distributed.tensor.parallel).

A plan maps module names (fnmatch wildcards per dotted atom, as in DTensor's
parallelize_module: "layers.*.attention.wq") to styles. A style says

* the tensor-parallel placement of the module's parameters (the `tp` axis),
* how the module's inputs and outputs are laid out: a chain of layouts per
  tensor. The importer pins them with `spmd.constrain` on the traced values
  (the first entry is what the value is declared to be, the next ones are
  redistributions, as DTensor's input_layouts -> desired_input_layouts).

Layouts in a style are one Placement (for the tp axis; the other mesh axes
get their data-parallel placement) or a full Layout(p0, p1, ...) with one
Placement per mesh axis.
"""

import fnmatch

import torch.nn as nn

from .placements import Layout, Partial, Placement, Replicate, Shard  # noqa: F401


def _is_conv1d(module):
    """transformers' Conv1D (GPT-2): a linear layer with weight [in, out]."""
    return type(module).__name__ == "Conv1D" and hasattr(module, "nf")


def _tuple(x):
    if x is None:
        return None
    if isinstance(x, (Placement, Layout)):
        return (x,)
    return tuple(x)


class ParallelStyle:
    def param_placements(self, name, module):
        """{param short name: tp Placement} for the module's own params."""
        return {}

    def input_chains(self, module):
        """Per positional input: list of layouts (or None to leave it)."""
        return []

    def input_kwarg_chains(self, module):
        """{keyword input name: list of layouts}."""
        return {}

    def output_chains(self, module):
        return []

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _chain(*layouts):
    out = []
    for l in layouts:
        if l is None:
            continue
        if not out or out[-1] != l:
            out.append(l)
    return out or None


class ColwiseParallel(ParallelStyle):
    """Linear: weight [out, in] S(0), bias S(0); Embedding: weight S(1).

    Input declared `input_layouts` (default R) and redistributed to R;
    output `output_layouts` (default S(-1))."""

    def __init__(self, input_layouts=None, output_layouts=None,
                 use_local_output=True):
        self.input_layouts = input_layouts or Replicate()
        self.output_layouts = output_layouts or Shard(-1)
        self.use_local_output = use_local_output

    def param_placements(self, name, module):
        if isinstance(module, nn.Linear):
            return {"weight": Shard(0), "bias": Shard(0)}
        if _is_conv1d(module):  # weight [in, out]
            return {"weight": Shard(1), "bias": Shard(0)}
        if isinstance(module, nn.Embedding):
            return {"weight": Shard(1)}
        raise ValueError(f"ColwiseParallel on '{name}': only nn.Linear, "
                         f"transformers' Conv1D and nn.Embedding are supported, not {type(module).__name__}")

    def input_chains(self, module):
        return [_chain(self.input_layouts, Replicate())]

    def output_chains(self, module):
        return [_chain(self.output_layouts)]


class RowwiseParallel(ParallelStyle):
    """Linear: weight [out, in] S(1), bias R; Embedding: weight S(0).

    Linear input declared `input_layouts` (default S(-1)); Embedding input R.
    Output redistributed to `output_layouts` (default R: the pending sum is
    reduced at the module boundary)."""

    def __init__(self, input_layouts=None, output_layouts=None,
                 use_local_output=True):
        self.input_layouts = input_layouts
        self.output_layouts = output_layouts or Replicate()
        self.use_local_output = use_local_output

    def param_placements(self, name, module):
        if isinstance(module, nn.Linear):
            return {"weight": Shard(1), "bias": Replicate()}
        if _is_conv1d(module):
            return {"weight": Shard(0), "bias": Replicate()}
        if isinstance(module, nn.Embedding):
            return {"weight": Shard(0)}
        raise ValueError(f"RowwiseParallel on '{name}': only nn.Linear, "
                         f"transformers' Conv1D and nn.Embedding are supported, not {type(module).__name__}")

    def input_chains(self, module):
        if isinstance(module, nn.Embedding):
            return [_chain(self.input_layouts or Replicate(), Replicate())]
        return [_chain(self.input_layouts or Shard(-1), Shard(-1))]

    def output_chains(self, module):
        return [_chain(self.output_layouts)]


class SequenceParallel(ParallelStyle):
    """Parameters replicated; activations sharded on the sequence dim (norms,
    dropout)."""

    def __init__(self, sequence_dim=1, use_local_output=False):
        self.sequence_dim = sequence_dim
        self.use_local_output = use_local_output

    def param_placements(self, name, module):
        return {n: Replicate() for n, _ in module.named_parameters(recurse=False)}

    def input_chains(self, module):
        return [_chain(Shard(self.sequence_dim))]

    def output_chains(self, module):
        return [_chain(Shard(self.sequence_dim))]


class PrepareModuleInput(ParallelStyle):
    def __init__(self, input_layouts=None, desired_input_layouts=None,
                 input_kwarg_layouts=None, desired_input_kwarg_layouts=None,
                 use_local_output=False):
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        if set(self.desired_input_kwarg_layouts) - set(self.input_kwarg_layouts):
            raise ValueError("PrepareModuleInput: desired_input_kwarg_layouts "
                             "names an input without input_kwarg_layouts")
        self.input_layouts = _tuple(input_layouts) or ()
        self.desired_input_layouts = _tuple(desired_input_layouts) or ()
        if self.desired_input_layouts and \
                len(self.desired_input_layouts) != len(self.input_layouts):
            raise ValueError("PrepareModuleInput: input_layouts and "
                             "desired_input_layouts differ in length")
        self.use_local_output = use_local_output

    def input_chains(self, module):
        out = []
        for i, l in enumerate(self.input_layouts):
            d = self.desired_input_layouts[i] if self.desired_input_layouts else None
            out.append(_chain(l, d))
        return out

    def input_kwarg_chains(self, module):
        # Hugging Face layers call their attention with keyword arguments
        # (hidden_states=...), so a plan pins those by name.
        return {k: _chain(l, self.desired_input_kwarg_layouts.get(k))
                for k, l in self.input_kwarg_layouts.items()}


class PrepareModuleOutput(ParallelStyle):
    def __init__(self, output_layouts=None, desired_output_layouts=None,
                 use_local_output=True):
        self.output_layouts = _tuple(output_layouts) or ()
        self.desired_output_layouts = _tuple(desired_output_layouts) or ()
        if self.desired_output_layouts and \
                len(self.desired_output_layouts) != len(self.output_layouts):
            raise ValueError("PrepareModuleOutput: output_layouts and "
                             "desired_output_layouts differ in length")
        self.use_local_output = use_local_output

    def output_chains(self, module):
        out = []
        for i, l in enumerate(self.output_layouts):
            d = self.desired_output_layouts[i] if self.desired_output_layouts else None
            out.append(_chain(l, d))
        return out


def match_module_name(pattern, name):
    """DTensor's matching: same number of dotted atoms, fnmatch per atom."""
    if pattern == name:
        return True
    p_atoms, n_atoms = pattern.split("."), name.split(".")
    if len(p_atoms) != len(n_atoms):
        return False
    return all(fnmatch.fnmatchcase(n, p) for p, n in zip(p_atoms, n_atoms))


def resolve_plan(model, plan):
    """[(module name, module, style)] in module order; every key must match."""
    if plan is None:
        return []
    if callable(plan) and not isinstance(plan, dict):
        plan = plan(model)
    if isinstance(plan, ParallelStyle):
        plan = {"": plan}
    if not isinstance(plan, dict):
        raise ValueError("a parallel plan is a dict {module name pattern: style}")
    modules = list(model.named_modules())
    out = []
    used = set()
    for name, mod in modules:
        for key, style in plan.items():
            if not isinstance(style, ParallelStyle):
                raise ValueError(f"plan entry '{key}' is not a ParallelStyle: {style!r}")
            if match_module_name(key, name):
                out.append((name, mod, style))
                used.add(key)
    unused = [k for k in plan if k not in used]
    if unused:
        raise ValueError(f"parallel plan keys match no module: {unused}")
    return out


class ParamParallel(ParallelStyle):
    """Placements for named parameters of one module (a Hugging Face plan's
    entries that name a parameter: MoE experts' stacked weights)."""

    def __init__(self, placements):
        self.placements = dict(placements)

    def param_placements(self, name, module):
        return dict(self.placements)


# Styles of plan entries naming a parameter: which dim from the end they
# shard (transformers' convention: colwise -2, rowwise -1; on Mixtral's
# experts [experts, out, in] that is out and in, Llama 4 stores them
# transposed and names them the other way round). "packed" (gate and up
# stacked in one weight, each half split) is laid out as a plain split: the
# same values, and chunking the result into its halves then moves data.
_HF_PARAM_STYLES = {"colwise": 2, "packed_colwise": 2, "rowwise": 1,
                    "packed_rowwise": 1}


# Hugging Face's tensor-parallel style names (the strings of a model's
# `_tp_plan`, from its config's base_model_tp_plan) in DTensor's terms.
# None: the module stays replicated.
_HF_STYLES = {
    "colwise": lambda: ColwiseParallel(),
    "rowwise": lambda: RowwiseParallel(),
    "colwise_rep": lambda: ColwiseParallel(output_layouts=Replicate()),
    "colwise_gather_output": lambda: ColwiseParallel(output_layouts=Replicate()),
    "rowwise_rep": lambda: RowwiseParallel(input_layouts=Replicate()),
    "rowwise_split_input": lambda: RowwiseParallel(input_layouts=Replicate()),
    "embedding_rowwise": lambda: RowwiseParallel(),
    "embedding_colwise": lambda: ColwiseParallel(output_layouts=Replicate()),
    "sequence_parallel": lambda: SequenceParallel(),
    "replicated_with_grad_allreduce": None,
    # The experts' output sum over the tp ranks: propagation's to place.
    "moe_tp_experts": None,
    "all_reduce": None,
    "local_params": None,
}


def hf_tp_plan(model):
    """The tensor-parallel plan a Hugging Face model declares (its
    `_tp_plan`: the config's base_model_tp_plan under the base model's
    prefix, plus the head's entries), as {pattern: style}. Entries whose
    pattern matches no module here (optional submodules) are dropped."""
    raw = dict(getattr(model, "_tp_plan", None) or {})
    if not raw:
        cfg = getattr(model, "config", None)
        base = dict(getattr(cfg, "base_model_tp_plan", None) or {})
        prefix = getattr(model, "base_model_prefix", "")
        if prefix and hasattr(model, prefix):
            base = {f"{prefix}.{k}": v for k, v in base.items()}
        raw = base
    if not raw:
        raise ValueError(f"{type(model).__name__} declares no tensor-parallel "
                         "plan (no _tp_plan / config.base_model_tp_plan)")
    modules = dict(model.named_modules())
    names = list(modules)
    plan = {}
    for key, style in raw.items():
        owner, _, pname = key.rpartition(".")
        owners = [m for n, m in modules.items()
                  if match_module_name(owner, n) and
                  pname in dict(m.named_parameters(recurse=False))]
        if not owners and not any(match_module_name(key, n) for n in names):
            continue  # (an optional submodule, or a duplicate unprefixed key)
        if owners and style in _HF_PARAM_STYLES:
            # An entry naming a parameter of a module (not a submodule). A
            # bias [.., out] splits with colwise and stays whole with rowwise.
            rank = getattr(owners[0], pname).dim()
            back = _HF_PARAM_STYLES[style]
            if pname.endswith("bias"):
                back = 1 if back == 2 else None
            if back is not None and rank < back:
                raise ValueError(f"Hugging Face plan entry '{key}': style "
                                 f"'{style}' on a parameter of rank {rank}")
            prev = plan.get(owner)
            merged = dict(prev.placements) if isinstance(prev, ParamParallel) else {}
            merged[pname] = Replicate() if back is None else Shard(rank - back)
            plan[owner] = ParamParallel(merged)
            continue
        if style not in _HF_STYLES:
            raise ValueError(f"Hugging Face plan entry '{key}': style '{style}' "
                             "is not supported")
        make = _HF_STYLES[style]
        if make is None:
            continue
        plan[key] = make()
    return plan
