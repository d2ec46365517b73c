"""Command line: python3 -m spmd_torch export model.py:Model [options] -o step.mlir

The model file names a class (built with --model-args JSON keyword
arguments) or a factory function. It may also define

  example_batch(model, batch_shape) -> tuple of tensors (inputs..., target)
  loss_fn(output, target) -> scalar loss

otherwise the batch is random: --input-shape/--input-dtype (with --input-high
for integer ids) and, in train mode, --target-shape/--target-dtype/
--target-high, with --loss cross_entropy|mse|none (none: the model returns
the loss itself).

The plan file defines `plan` (a dict {module pattern: style}, or a function
model -> dict); the styles are importable from spmd_torch.
"""

import argparse
import importlib.util
import json
import logging
import os
import sys
import traceback

import torch
import torch.nn.functional as F


class _UsageError(Exception):
    """A mistake in the command line or the files it names."""


# What export() is doing, for the error line: a failure deep in PyTorch or
# in the user's model code is reported with the stage it happened in.
_stage = ["starting"]
_user_files = []


def _set_stage(text):
    _stage[0] = text


def _load_file(path, name):
    if not os.path.isfile(path):
        raise _UsageError(f"no such file '{path}'")
    _user_files.append(os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise _UsageError(f"cannot load '{path}'")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(mod)
    return mod


def _shape(text):
    if text is None:
        return None
    return tuple(int(x) for x in text.split(",") if x.strip())


def _dtype(name):
    d = getattr(torch, name, None)
    if not isinstance(d, torch.dtype):
        raise _UsageError(f"unknown dtype '{name}'")
    return d


def _random(shape, dtype, high):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    return torch.randint(0, high, shape, dtype=dtype)


def build_parser():
    p = argparse.ArgumentParser(prog="python3 -m spmd_torch")
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="trace a model and write an spmd program")
    e.add_argument("model", help="file.py:Name (a class or a factory function)")
    e.add_argument("-o", "--output", required=True, help="output .mlir file")
    e.add_argument("--model-args", default="{}", help="JSON keyword arguments")
    e.add_argument("--mode", choices=["train", "infer"], default="train")
    e.add_argument("--mesh", help="mesh axes, e.g. dp=2,tp=2")
    e.add_argument("--plan", help="plan file defining `plan`, or `hf`: the "
                   "Hugging Face model's own tensor-parallel plan (its "
                   "config's base_model_tp_plan)")
    e.add_argument("--auto-plan", action="store_true",
                   help="let spmd choose the plan (spmd-auto-shard): "
                        "layouts of parameters, optimizer state, batch and "
                        "activations for the least estimated step time "
                        "(train mode); with --plan/--dp/--fsdp, their "
                        "parameter, state and batch layouts (the storage) "
                        "are kept and the rest chosen: FSDP's parameters "
                        "are then gathered only where that is cheapest")
    e.add_argument("--memory-budget", default="",
                   help="with --auto-plan: bytes per device (64MiB, 1.5GB)")
    e.add_argument("--device", default="h100", choices=["h100", "cpu"],
                   help="with --auto-plan: the cost model's device profile")
    e.add_argument("--auto-options", default="",
                   help="with --auto-plan: more spmd-auto-shard options, "
                        "e.g. 'time-limit=60 tie-rounds=-1'")
    e.add_argument("--write-plan",
                   help="with --auto-plan: write the chosen layouts as a plan "
                        "file (`layouts = {argument: layout}`) that --plan "
                        "takes back, to edit and re-use")
    e.add_argument("--auto-report",
                   help="with --auto-plan: write the chosen plan's report "
                        "here (default: print it)")
    e.add_argument("--dp", dest="data_parallel", action="store_true", default=None,
                   help="shard the batch on the dp axis (default: if the mesh has dp)")
    e.add_argument("--no-dp", dest="data_parallel", action="store_false")
    e.add_argument("--fsdp", action="store_true",
                   help="also shard parameters and optimizer state on dp")
    e.add_argument("--dp-axis", default="dp")
    e.add_argument("--tp-axis", default="tp")
    e.add_argument("--batch-shape", default="8", help="passed to example_batch")
    e.add_argument("--input-shape")
    e.add_argument("--input-dtype", default="float32")
    e.add_argument("--input-high", type=int, default=2)
    e.add_argument("--target-shape")
    e.add_argument("--target-dtype", default="int64")
    e.add_argument("--target-high", type=int, default=2)
    e.add_argument("--loss", choices=["cross_entropy", "mse", "none"],
                   default=None)
    e.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], default="sgd")
    e.add_argument("--lr", type=float, default=0.01)
    e.add_argument("--momentum", type=float, default=0.0)
    e.add_argument("--weight-decay", type=float, default=None)
    e.add_argument("--betas", default="0.9,0.999")
    e.add_argument("--eps", type=float, default=1e-8)
    e.add_argument("--dtype", default="float32",
                   help="parameter dtype (float32, float16, bfloat16)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--return-grads", action="store_true")
    e.add_argument("--constrain-grads", action="store_true",
                   help="also pin gradients at planned module boundaries")
    e.add_argument("--embedding", choices=["onehot", "extract"], default="onehot",
                   help="embedding lookups and x[idx] gathers as one-hot "
                        "reductions over the indexed dims (default) or "
                        "tensor.extract from the table")
    e.add_argument("--metadata", help="write argument/result metadata (JSON)")
    e.add_argument("--save-inputs",
                   help="directory to write the example inputs as arg<i>.npy")
    e.add_argument("--check", action="store_true",
                   help="run the program on the CPU through MLIR (spmd-opt + "
                        "mlir-runner) and compare with PyTorch's results")
    e.add_argument("--check-tolerance", type=float, default=1e-4,
                   help="largest allowed |mlir - torch| / (1 + |torch|)")
    e.add_argument("--save-outputs",
                   help="directory to write PyTorch's results on those inputs "
                        "as res<i>.npy, in the program's result order: in train "
                        "mode eager PyTorch's own training (the model and a "
                        "torch.optim optimizer) after --steps steps, else the "
                        "traced function's outputs")
    e.add_argument("--steps", default="1",
                   help="training steps PyTorch runs on the same batch for "
                        "--save-outputs (the loss saved is the last step's), "
                        "to compare with spmd-run --steps K on a program "
                        "exported with --feedback-order; a list such as 1,3 "
                        "writes the results after each into DIR/step<k>/")
    e.add_argument("--capture", choices=["export", "make_fx"], default="export",
                   help="how the step is captured: torch.export of the "
                        "forward and loss, backward by autograd over the "
                        "exported graph (default), or make_fx of the whole "
                        "step; both decompose to core ATen")
    e.add_argument("--feedback-order", action="store_true",
                   help="order the results like the arguments they update "
                        "(result i is the new argument i, what spmd-run "
                        "--steps feeds back), then the loss, then gradients")
    return p


def export(args):
    from . import export_forward, export_train_step
    from . import optim as foptim

    torch.manual_seed(args.seed)
    if ":" not in args.model:
        raise _UsageError("model must be file.py:Name")
    path, name = args.model.rsplit(":", 1)
    _set_stage(f"loading model file '{path}'")
    mod = _load_file(path, "spmd_user_model")
    factory = getattr(mod, name, None)
    if factory is None:
        raise _UsageError(f"'{path}' has no '{name}'")
    _set_stage(f"building the model {args.model}")
    try:
        model_args = json.loads(args.model_args)
    except json.JSONDecodeError as e:
        raise _UsageError(f"--model-args is not JSON: {e}")
    model = factory(**model_args)
    model = model.to(_dtype(args.dtype))
    if "transformers" in sys.modules:
        # For the whole run: PyTorch's reference steps (--save-outputs,
        # --check) compute the experts as the exported program does.
        from .export import _static_experts
        _static_experts(model)

    plan = None
    _set_stage("reading the parallel plan")
    if args.plan == "hf":
        from .plans import hf_tp_plan
        plan = hf_tp_plan(model)
    auto_layouts = None
    if args.plan and args.plan != "hf":
        pmod = _load_file(args.plan, "spmd_user_plan")
        if hasattr(pmod, "layouts") and not hasattr(pmod, "plan"):
            # A plan --write-plan wrote: its layouts are given to
            # spmd-auto-shard, which chooses only what they leave free.
            auto_layouts = dict(pmod.layouts)
            args.auto_plan = True
        elif not hasattr(pmod, "plan"):
            raise _UsageError(f"plan file '{args.plan}' defines no `plan` "
                              "(nor `layouts`)")
        else:
            plan = pmod.plan

    # The batch.
    _set_stage("making the example batch")
    if hasattr(mod, "example_batch") and not args.input_shape:
        batch = tuple(mod.example_batch(model, _shape(args.batch_shape)))
        if args.mode == "infer":
            batch = batch[:-1] if len(batch) > 1 else batch
    else:
        if not args.input_shape:
            raise _UsageError("give --input-shape (or define example_batch)")
        batch = (_random(_shape(args.input_shape), _dtype(args.input_dtype),
                         args.input_high),)
        if args.mode == "train" and args.loss != "none":
            if not args.target_shape:
                raise _UsageError("give --target-shape for training")
            batch += (_random(_shape(args.target_shape), _dtype(args.target_dtype),
                              args.target_high),)
    batch = tuple(t.to(_dtype(args.dtype)) if t.is_floating_point() else t
                  for t in batch)

    _set_stage(f"exporting {args.model} ({args.mode} mode) with torch.export")
    if args.mode == "infer":
        prog = export_forward(model, batch, mesh=args.mesh, plan=plan,
                              data_parallel=args.data_parallel,
                              dp_axis=args.dp_axis, tp_axis=args.tp_axis,
                              fsdp=args.fsdp, gather_form=args.embedding,
                              capture=args.capture, rng_seed=args.seed)
    else:
        if args.loss == "none":
            loss_fn = None
        elif args.loss == "mse":
            loss_fn = F.mse_loss
        elif args.loss == "cross_entropy":
            loss_fn = F.cross_entropy
        else:
            loss_fn = getattr(mod, "loss_fn", F.cross_entropy)
        kw = {"lr": args.lr}
        if args.weight_decay is not None:
            kw["weight_decay"] = args.weight_decay
        if args.optimizer == "sgd":
            kw["momentum"] = args.momentum
        else:
            kw["betas"] = tuple(float(b) for b in args.betas.split(","))
            kw["eps"] = args.eps
        opt = foptim.from_name(args.optimizer, **kw)
        if args.auto_plan and not args.mesh:
            raise _UsageError("--auto-plan needs --mesh")
        prog = export_train_step(model, batch, loss_fn, optimizer=opt,
                                 auto_plan=args.auto_plan,
                                 auto_layouts=auto_layouts,
                                 mesh=args.mesh, plan=plan,
                                 data_parallel=args.data_parallel, fsdp=args.fsdp,
                                 dp_axis=args.dp_axis, tp_axis=args.tp_axis,
                                 return_grads=args.return_grads,
                                 constrain_grads=args.constrain_grads,
                                 gather_form=args.embedding,
                                 feedback_order=args.feedback_order,
                                 capture=args.capture, rng_seed=args.seed)
    if args.auto_plan and args.mode != "train":
        raise _UsageError("--auto-plan is for train mode")
    if args.auto_plan:
        _set_stage("choosing the plan (spmd-opt --spmd-auto-shard)")
        _auto_plan(prog, args, model)
    _set_stage(f"writing '{args.output}'")
    with open(args.output, "w") as f:
        f.write(prog.text)
    if args.metadata:
        with open(args.metadata, "w") as f:
            f.write(prog.metadata_json())
    if args.save_inputs:
        _save(args.save_inputs, "arg", prog.inputs)
    try:
        steps = sorted({int(k) for k in args.steps.split(",")})
    except ValueError:
        raise _UsageError(f"bad --steps '{args.steps}'")
    if steps[0] < 1:
        raise _UsageError("--steps must be at least 1")
    if steps != [1] and (args.mode != "train" or not args.save_outputs):
        raise _UsageError("--steps is for --save-outputs in train mode")
    outs = None
    _set_stage("running PyTorch on the example batch for --save-outputs/--check")
    if args.save_outputs or args.check:
        with torch.no_grad():
            outs = prog.graph(*[t.detach() for t in prog.inputs])
    if args.save_outputs:
        if args.mode != "train":
            _save(args.save_outputs, "res", outs)
        else:
            topt = getattr(torch.optim, {"sgd": "SGD", "adam": "Adam",
                                         "adamw": "AdamW"}[args.optimizer])
            snaps = _torch_training(prog, model, batch, loss_fn,
                                    lambda ps: topt(ps, **kw), steps)
            for k, saved in snaps.items():
                folder = args.save_outputs if len(steps) == 1 else \
                    os.path.join(args.save_outputs, f"step{k}")
                _save(folder, "res", saved)
    if args.check:
        return _check(prog, outs, args.check_tolerance)
    return 0


def _auto_plan(prog, args, model=None):
    """Runs spmd-auto-shard on the exported program: prog.text gets the
    chosen layouts, its argument metadata their layouts; the report (its
    arguments named) is printed or written to --auto-report."""
    import re
    import subprocess
    import tempfile
    from .mlir_exec import find_spmd_opt
    with tempfile.TemporaryDirectory() as tmp:
        src, report = os.path.join(tmp, "in.mlir"), os.path.join(tmp, "report")
        with open(src, "w") as f:
            f.write(prog.text)
        opts = f"report={report} device={args.device}"
        if args.memory_budget:
            opts += f" memory-budget={args.memory_budget}"
        if args.auto_options:
            opts += " " + args.auto_options
        # The partition pipeline's first passes, so that the search sees
        # what propagation will (attention's head dims as loops of their
        # own, the loss scale deferred).
        pipeline = ("builtin.module(spmd-expand-random, func.func("
                    "spmd-defer-scales, spmd-fold-reshapes), "
                    f"spmd-auto-shard{{{opts}}})")
        r = subprocess.run([find_spmd_opt(), src,
                            "--mlir-print-op-on-diagnostic=false",
                            f"--pass-pipeline={pipeline}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            errors = [l.split("error: ", 1)[1] for l in r.stderr.splitlines()
                      if "error: " in l]
            raise _UsageError("; ".join(errors) or r.stderr.strip() or
                              f"spmd-opt exited with {r.returncode}")
        with open(report) as f:
            text = f.read()
    # The report names a Linear's [out, in] weight dims; DTensor names an
    # Embedding's [num, dim] the other way round.
    embeddings, linears = set(), set()
    for n, m in (model.named_modules() if model else []):
        p = f"{n}." if n else ""
        if isinstance(m, torch.nn.Embedding):
            embeddings.add(p + "weight")
        elif isinstance(m, torch.nn.Linear) or type(m).__name__ == "Conv1D":
            linears.update({p + "weight", p + "bias"})
    def owner(name, names):
        return any(name == e or name.startswith(e + ".") for e in names)
    lines = []
    for line in text.splitlines():
        m = re.match(r"  arg(\d+) \S+ (\[[^\]]*\])", line)
        if m:
            info = prog.args[int(m.group(1))]
            info.layout = m.group(2)
            line = line.replace(f"arg{m.group(1)} ",
                                f"arg{m.group(1)} {info.name} ", 1)
            # Optimizer state names its parameter.
            line = re.sub(r"state of arg(\d+)", lambda s: (
                f"state of arg{s.group(1)} {prog.args[int(s.group(1))].name}"),
                line)
            if owner(info.name, embeddings):
                line = (line.replace("Colwise", "\0").replace("Rowwise", "Colwise")
                        .replace("\0", "Rowwise"))
            elif not owner(info.name, linears) and info.kind != "batch":
                line = (line.replace("Colwise (bias)", "Shard(0)")
                        .replace("Colwise", "Shard(0)")
                        .replace("Rowwise", "Shard(1)"))
        lines.append(line)
    text = "\n".join(lines) + "\n"
    for a in prog.args:
        if a.updated_by is not None:
            prog.results[a.updated_by].layout = a.layout
    prog.text = _header_of(prog.text) + r.stdout
    if args.auto_report:
        with open(args.auto_report, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if args.write_plan:
        with open(args.write_plan, "w") as f:
            f.write(f'"""Layouts spmd-auto-shard chose for {args.model} on mesh '
                    f'{args.mesh} ({args.device} profile). Edit and pass back '
                    f'with --plan: these are given, the rest is chosen."""\n\n'
                    "layouts = {\n")
            for a in prog.args:
                if a.kind in ("param", "state", "batch") and a.layout:
                    f.write(f"    {a.name!r}: {a.layout!r},\n")
            f.write("}\n")


def _header_of(text):
    first = text.splitlines()[0] if text else ""
    return first + "\n" if first.startswith("//") else ""


def _torch_training(prog, model, batch, loss_fn, make_opt, steps):
    """PyTorch's own single-device training on a copy of the model (same batch
    every step): {k: the program's results after k steps} for k in `steps`,
    i.e. step k's loss, the parameters, the optimizer state, the step counter
    and step k's gradients."""
    import copy
    ref = copy.deepcopy(model)
    opt = make_opt(ref.parameters())
    params = dict(ref.named_parameters())
    snaps = {}
    for k in range(1, steps[-1] + 1):
        opt.zero_grad()
        if loss_fn is None:
            loss = ref(*batch)
        else:
            loss = loss_fn(ref(*batch[:-1]), batch[-1])
        loss.backward()
        opt.step()
        if k not in steps:
            continue
        out = []
        for r in prog.results:
            if r.kind == "loss":
                t = loss
            elif r.kind == "param":
                t = params[r.name]
            elif r.kind == "grad":
                t = params[r.name[:-len(".grad")]].grad
            elif r.kind == "state":
                pname, sname = r.name.rsplit(".", 1)
                t = opt.state[params[pname]][sname]
            elif r.kind == "buffer":
                t = dict(ref.named_buffers())[r.name]
            elif r.kind == "rng" and r.name == "rng.seed":
                names = [a.name for a in prog.args]
                t = prog.inputs[names.index("rng.seed")]
            elif r.kind == "rng":  # the steps the generator has taken
                t = torch.tensor(k, dtype=torch.int64)
            elif r.kind == "step":
                t = torch.tensor(float(k), dtype=torch.float32)
            else:
                raise ValueError(f"no PyTorch value for result '{r.name}' ({r.kind})")
            out.append(t.detach().clone().to(_dtype(r.dtype)).reshape(r.shape))
        snaps[k] = out
    return snaps


def _check(prog, want, tol):
    from . import mlir_exec
    got = mlir_exec.run_program(prog)
    worst = 0.0
    for info, g, w in zip(prog.results, got, want):
        g, w = g.double(), w.detach().reshape(g.shape).double()
        err = ((g - w).abs() / (1 + w.abs())).max().item() if g.numel() else 0.0
        worst = max(worst, err)
        print(f"check {info.kind:6} {info.name}: max rel. error {err:.3g}")
    ok = worst <= tol
    print(f"check: {len(got)} results, worst {worst:.3g}, tolerance {tol:g}: "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


def _save(folder, prefix, tensors):
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    for i, t in enumerate(tensors):
        t = t.detach()
        if t.dtype == torch.bfloat16:  # numpy has no bfloat16
            t = t.float()
        np.save(os.path.join(folder, f"{prefix}{i}.npy"), t.numpy())


def _where(exc):
    """' (at file.py:LINE in fn)' for the innermost frame of the user's model
    or plan file in the exception's traceback (or its causes')."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        found = None
        for frame in traceback.extract_tb(exc.__traceback__):
            if os.path.abspath(frame.filename) in _user_files:
                found = frame
        if found:
            return (f" (at {os.path.basename(found.filename)}:{found.lineno} "
                    f"in {found.name})")
        exc = exc.__cause__ or exc.__context__
    return ""


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def main(argv=None):
    from .builder import UnsupportedOpError
    args = build_parser().parse_args(argv)
    # PyTorch logs the tracebacks of failed fake-tensor runs itself; the CLI
    # reports every failure as one error line instead.
    for name in ("torch._subclasses.fake_tensor", "torch.export",
                 "torch._export", "torch.fx.experimental.symbolic_shapes"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        if args.command == "export":
            return export(args)
    except (UnsupportedOpError, ValueError, _UsageError) as e:
        print(f"error: {_first_line(e)}{_where(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as e:  # from the model's code or PyTorch: no traceback
        print(f"error: {_stage[0]}: {type(e).__name__}: {_first_line(e)}"
              f"{_where(e)}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
