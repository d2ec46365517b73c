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
        if isinstance(module, nn.Embedding):
            return {"weight": Shard(1)}
        raise ValueError(f"ColwiseParallel on '{name}': only nn.Linear and "
                         f"nn.Embedding are supported, not {type(module).__name__}")

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
        if isinstance(module, nn.Embedding):
            return {"weight": Shard(0)}
        raise ValueError(f"RowwiseParallel on '{name}': only nn.Linear and "
                         f"nn.Embedding are supported, not {type(module).__name__}")

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
        if input_kwarg_layouts or desired_input_kwarg_layouts:
            raise ValueError("PrepareModuleInput: keyword inputs are not supported")
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
