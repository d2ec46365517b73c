"""spmd_torch.compile: a training step or a module compiled by spmd and run
on simulated ranks (threads) in this process.

    @spmd_torch.compile(mesh="tp=4", plan=plan)
    def train_step(model, optimizer, tokens, targets):
        loss = loss_fn(model(tokens), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    for batch in data:
        loss = train_step(model, optimizer, *batch)

On the first call (and on a call whose tensors have new shapes or dtypes)
the step is traced: torch.export of the step function up to the tensor it
calls backward() on, autograd's backward of that, and the optimizer's
update in its functional form (SGD, Adam, AdamW with the hyperparameters and
state of the torch optimizer given); then partitioned and compiled by spmd
in this process. Every call runs one step on the ranks and returns the loss.
Parameters, buffers, optimizer state and the random stream stay sharded in
the ranks between calls: the model's own tensors are not updated (use
state_dict(), sync() or save()). The step's Python code between backward()
and its return runs only while it is traced.
"""

import json
import os
import sys
import tempfile

import numpy as np
import torch
from torch.utils import _pytree as pytree

from ._native import runtime
from .builder import UnsupportedOpError
from .export import _aliases, export_forward, export_train_step
from .optim import from_torch

_CHECKPOINT_FORMAT = "spmd_torch checkpoint"


def compile(fn=None, *, mesh=None, plan=None, backend="cpu", ranks=None,
            data_parallel=None, fsdp=False, dp_axis="dp", tp_axis="tp",
            trace=False, timeout=60.0, capture="export", rng_seed=0,
            workdir=None, comm="auto"):
    """Compiles a training step `fn(model, optimizer, *batch) -> loss`
    (as a decorator, with or without arguments), or a module's forward
    when `fn` is an nn.Module.

    mesh, plan, data_parallel, fsdp, dp_axis, tp_axis: as for
    export_train_step (the mesh as {"dp": 2, "tp": 2}, "dp=2,tp=2" or a
    Mesh; the plan as DTensor-style {module pattern: style}). ranks: checked
    against the mesh's device count. backend: "cpu" (the ranks' kernels
    JIT-compiled for this machine), "cuda" (a GPU per rank: the kernels as
    CUDA C++ through NVRTC, GEMMs through cuBLASLt) or "cuda-emu" (the same
    CUDA kernels and GPU executor emulated on the CPU). trace: record every
    step of every rank (write_trace(), profile(); on a GPU backend a track
    per stream, device-timed). timeout: seconds a collective may wait.
    workdir: where the traced programs are written (a temporary folder by
    default). comm: "inproc" (every rank a thread of this process), "mpi"
    (in an `mpirun -np N` job: this process runs its own rank; every
    process calls with the same global batch, and reading state —
    state_dict, save, the loss — is collective), or "auto" (mpi when
    mpirun started this process)."""
    options = dict(mesh=mesh, plan=plan, backend=backend, ranks=ranks,
                   data_parallel=data_parallel, fsdp=fsdp, dp_axis=dp_axis,
                   tp_axis=tp_axis, trace=trace, timeout=timeout,
                   capture=capture, rng_seed=rng_seed, workdir=workdir,
                   comm=_choose_comm(comm))
    if backend not in ("cpu", "cuda", "cuda-emu"):
        raise ValueError(f"spmd_torch.compile: backend must be cpu, cuda or "
                         f"cuda-emu, not '{backend}'")
    if fn is None:
        return lambda f: compile(f, **options)
    if isinstance(fn, torch.nn.Module):
        return CompiledModule(fn, options)
    if not callable(fn):
        raise TypeError("spmd_torch.compile: expected a step function or an "
                        f"nn.Module, not {type(fn).__name__}")
    return CompiledStep(fn, options)


class _BackwardCapture:
    """While a step is traced: `t.backward()` (or torch.autograd.backward)
    records `t` as the loss instead of running autograd, whose backward is
    traced afterwards from the recorded loss."""

    def __enter__(self):
        self.loss = None
        self._saved = (torch.Tensor.backward, torch.autograd.backward)
        cap = self

        def record(tensors, *args, **kwargs):
            if isinstance(tensors, (tuple, list)):
                if len(tensors) != 1:
                    raise UnsupportedOpError(
                        "spmd_torch.compile: backward() of several tensors")
                tensors = tensors[0]
            if cap.loss is not None:
                raise UnsupportedOpError(
                    "spmd_torch.compile: the step calls backward() twice; "
                    "sum its losses and call it once")
            if tensors.dim() != 0:
                raise UnsupportedOpError(
                    "spmd_torch.compile: backward() of a non-scalar tensor "
                    f"(shape {tuple(tensors.shape)})")
            cap.loss = tensors

        torch.Tensor.backward = record
        torch.autograd.backward = record
        return self

    def __exit__(self, *exc):
        torch.Tensor.backward, torch.autograd.backward = self._saved
        return False


class _OptimizerStandIn:
    """The step's optimizer while it is traced: step() and zero_grad() do
    nothing (the update is traced in the optimizer's functional form);
    everything else is the real optimizer's."""

    def __init__(self, opt):
        self._opt = opt

    def step(self, closure=None):
        if closure is not None:
            raise UnsupportedOpError(
                "spmd_torch.compile: optimizer.step(closure) is not supported")

    def zero_grad(self, set_to_none=True):
        pass

    def __getattr__(self, name):
        if self._opt is None:
            raise AttributeError(name)
        return getattr(self._opt, name)


_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")


def _choose_comm(comm):
    """inproc or mpi; auto is mpi in an mpirun job. torchrun's processes
    (WORLD_SIZE > 1 without MPI) have no communicator here yet."""
    in_mpi = any(k in os.environ for k in _MPI_ENV)
    if comm == "auto":
        if in_mpi:
            return "mpi"
        world = int(os.environ.get("WORLD_SIZE", "1") or "1")
        if world > 1:
            raise RuntimeError(
                f"spmd_torch.compile: WORLD_SIZE={world} (torchrun?): spmd's "
                "processes communicate through MPI; launch with `mpirun -np "
                "N python ...`, or run one process whose ranks are threads")
        return "inproc"
    if comm not in ("inproc", "mpi"):
        raise ValueError(f"spmd_torch.compile: comm must be auto, inproc or "
                         f"mpi, not '{comm}'")
    if comm == "mpi" and not in_mpi:
        raise RuntimeError("spmd_torch.compile: comm='mpi' outside an "
                           "mpirun job")
    return comm


def _start_mpi(rt):
    """MPI for this process; an uncaught exception then stops the whole job
    with its message (MPI_Abort) instead of leaving the other processes
    waiting in a collective."""
    import atexit
    import traceback
    rt.mpi_init()
    atexit.register(rt.mpi_finalize)
    previous = sys.excepthook

    def abort_job(kind, value, tb):
        previous(kind, value, tb)
        rank = os.environ.get("OMPI_COMM_WORLD_RANK", "?")
        last = traceback.format_exception_only(kind, value)[-1].strip()
        rt.mpi_abort(f"process {rank}: {last}")
    sys.excepthook = abort_job


def _to_numpy(t):
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.contiguous().numpy()


def _to_torch(a, dtype):
    t = torch.from_numpy(a)
    return t.to(dtype) if t.dtype != dtype else t


def _torch_dtype(name):
    return getattr(torch, name)


class _Program:
    """One compiled program and its session: the ranks' state."""

    def __init__(self, exported, path, options):
        rt = runtime()
        self.exported = exported
        self.path = path
        try:
            self.program = rt.Program(path)
        except RuntimeError as e:
            raise UnsupportedOpError(f"spmd could not compile {path}: {e}") \
                from e
        want = options["ranks"]
        if want is not None and want != self.program.num_ranks:
            raise ValueError(f"ranks={want} but the mesh has "
                             f"{self.program.num_ranks} devices")
        if options["comm"] == "mpi" and not rt.mpi_active():
            _start_mpi(rt)
        try:
            self.session = rt.Session(self.program, options["timeout"],
                                      options["comm"], options["backend"])
        except RuntimeError as e:
            raise RuntimeError(f"spmd_torch.compile: {path}: {e}") from e
        if options["trace"] and not self.session.set_trace(True):
            raise ValueError("spmd_torch.compile: trace=True: the "
                             f"{options['backend']} backend does not record "
                             "steps yet")
        self.args = exported.args
        self.index = {a.name: i for i, a in enumerate(self.args)}
        # What the ranks hold between calls: every argument but the batch
        # (a training step updates each: result i is the new argument i).
        self.held = [i for i, a in enumerate(self.args) if a.kind != "batch"]
        self.feed = len(self.held) if exported.mode == "train" else 0
        if self.feed and (self.held != list(range(self.feed)) or any(
                self.args[i].updated_by != i for i in self.held)):
            raise AssertionError("the exported step is not in feedback order")
        if self.program.feedable < self.feed:
            raise UnsupportedOpError(
                f"{path}: result {self.program.feedable} does not match "
                "argument of the same index; the step's state cannot stay in "
                "the ranks")
        self.batch = [i for i, a in enumerate(self.args)
                      if a.kind == "batch"]
        kinds = [r.kind for r in exported.results]
        self.loss = kinds.index("loss") if "loss" in kinds else None
        self.outputs = [i for i, k in enumerate(kinds) if k == "output"]

    def set(self, i, value):
        # (np.require keeps 0-d arrays 0-d, ascontiguousarray does not.)
        self.session.set_arg(i, _to_numpy(value) if isinstance(
            value, torch.Tensor) else np.require(value, requirements="C"))

    def get(self, i):
        a = self.args[i]
        return _to_torch(self.session.get_arg(i), _torch_dtype(a.dtype))

    def result(self, i):
        r = self.exported.results[i]
        return _to_torch(self.session.get_result(i), _torch_dtype(r.dtype))

    def state_values(self):
        return {self.args[i].name: self.get(i) for i in self.held}

    def load_values(self, values, what):
        for i in self.held:
            name = self.args[i].name
            if name not in values:
                raise KeyError(f"{what} has no value for '{name}'")
            v = values[name]
            want = tuple(self.args[i].shape)
            if tuple(v.shape) != want:
                raise ValueError(f"{what}: '{name}' has shape "
                                 f"{tuple(v.shape)}, the step needs {want}")
            self.set(i, v)


class _Compiled:
    """What a compiled step and a compiled module share: programs by the
    shapes of their tensors, one of them current (holding the state)."""

    def __init__(self, options):
        self.options = options
        self.programs = {}
        self.current = None
        self.calls = 0
        self._tmp = None
        self._pending = None  # a checkpoint loaded before the first call

    def _path(self, kind):
        d = self.options["workdir"]
        if d is None:
            if self._tmp is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="spmd_torch_")
            d = self._tmp.name
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, f"{kind}_{len(self.programs)}.mlir")

    def _switch(self, key, make):
        """The program for `key`, made on first use; the state moves to it
        from the current one."""
        prog = self.programs.get(key)
        if prog is None:
            prog = make()
            self.programs[key] = prog
            if self.current is None:
                self._initialize(prog)
                if self._pending is not None:
                    values, where = self._pending
                    prog.load_values(values, where)
                    self._pending = None
        if prog is not self.current:
            if self.current is not None:
                prog.load_values(self.current.state_values(),
                                 "the previous program's state")
            self.current = prog
        return prog

    def _load(self, exported, kind):
        """The exported program written to the work folder and loaded."""
        path = self._path(kind)
        with open(path, "w") as f:
            f.write(exported.text)
        return _Program(exported, path, self.options)

    def _run(self, key, make, flat):
        """One call: the program for `key` (made on first use), the batch
        in, one run with the state fed back."""
        prog = self._switch(key, make)
        for i, t in zip(prog.batch, flat):
            prog.set(i, t)
        prog.session.run(prog.feed)
        self.calls += 1
        return prog

    def _initialize(self, prog):
        """A first program's state: the values the export traced with."""
        for i in prog.held:
            prog.set(i, prog.exported.inputs[i])

    def _require(self):
        if self.current is None:
            raise RuntimeError("nothing compiled yet: call the compiled "
                               "object once first")
        return self.current

    # -- state ---------------------------------------------------------
    def state_dict(self):
        """The model's parameters and buffers as global tensors, under every
        name the model's own state_dict() uses (tied weights under each)."""
        prog = self._require()
        out = {}
        for i in prog.held:
            a = prog.args[i]
            if a.kind in ("param", "buffer"):
                t = prog.get(i)
                for name in self.aliases.get(a.name, [a.name]):
                    out[name] = t
        return out

    def load_state_dict(self, state_dict):
        """Sets parameters and buffers from a state dict of global
        tensors (the model's or state_dict()'s)."""
        prog = self._require()
        for i in prog.held:
            a = prog.args[i]
            if a.kind not in ("param", "buffer"):
                continue
            names = self.aliases.get(a.name, [a.name])
            name = next((n for n in names if n in state_dict), None)
            if name is None:
                raise KeyError(f"load_state_dict: no value for '{a.name}'")
            t = state_dict[name]
            if tuple(t.shape) != tuple(a.shape):
                raise ValueError(f"load_state_dict: '{name}' has shape "
                                 f"{tuple(t.shape)}, the model {tuple(a.shape)}")
            prog.set(i, t)

    def save(self, directory):
        """Writes the training state (parameters, buffers, optimizer state,
        step counter, random stream) as global tensors: DIR/<name>.npy each
        (NumPy's format; bfloat16 as float32) and DIR/manifest.json."""
        prog = self._require()
        # Under MPI every process gathers, the one holding rank 0 writes.
        writer = 0 in prog.session.ranks
        if writer:
            os.makedirs(directory, exist_ok=True)
        tensors = []
        for i in prog.held:
            a = prog.args[i]
            value = prog.session.get_arg(i)
            file = a.name + ".npy"
            if writer:
                np.save(os.path.join(directory, file), value)
            tensors.append({"name": a.name, "kind": a.kind, "file": file,
                            "dtype": a.dtype, "shape": list(a.shape)})
        if writer:
            manifest = {"format": _CHECKPOINT_FORMAT, "version": 1,
                        "calls": self.calls, "tensors": tensors}
            with open(os.path.join(directory, "manifest.json"), "w") as f:
                json.dump(manifest, f, indent=1)
        prog.session.barrier()  # the files are complete for every process

    def load(self, directory):
        """Restores what save() wrote; the next call goes on from there
        (before the first call: the first call's program starts from it)."""
        path = os.path.join(directory, "manifest.json")
        try:
            with open(path) as f:
                manifest = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"{path}: not a checkpoint ({e})") from e
        if manifest.get("format") != _CHECKPOINT_FORMAT:
            raise ValueError(f"{path}: not an {_CHECKPOINT_FORMAT}")
        values = {}
        for t in manifest["tensors"]:
            file = os.path.join(directory, t["file"])
            try:
                values[t["name"]] = np.load(file, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise ValueError(f"{file}: cannot read it ({e})") from e
        if self.current is None:
            self._pending = (values, directory)
        else:
            self.current.load_values(values, directory)
        self.calls = int(manifest.get("calls", 0))

    # -- timelines -----------------------------------------------------
    def write_trace(self, path):
        """A Chrome trace (opens in Perfetto) of every step recorded since
        the first call (compile(..., trace=True)): a track per rank (under
        MPI each process writes PATH.rank<R>)."""
        session = self._require().session
        if self.options["comm"] == "mpi":
            path = f"{path}.rank{session.ranks[0]}"
        session.write_trace(path)

    def profile(self, rank=None):
        """Time by step kind and the costliest kernels of a rank (default:
        the first this process holds)."""
        session = self._require().session
        return session.profile(session.ranks[0] if rank is None else rank)

    def memory(self):
        """Bytes each rank holds: its arena (intermediates, by the memory
        plan) and its blocks of the arguments."""
        return self._require().session.memory()

    def plan(self):
        """The current program's schedule, a line per step."""
        return self._require().program.plan_text()


class CompiledStep(_Compiled):
    def __init__(self, fn, options):
        super().__init__(options)
        self.fn = fn
        self.model = None
        self.optimizer = None
        self.aliases = {}

    def _split(self, args):
        """(model, optimizer, tensors, how to rebuild the call's
        arguments)."""
        model = opt = None
        spec, flat = [], []
        for a in args:
            if isinstance(a, torch.nn.Module) and model is None:
                model = a
                spec.append(("model",))
            elif isinstance(a, torch.optim.Optimizer) and opt is None:
                opt = a
                spec.append(("optimizer",))
            else:
                leaves, tree = pytree.tree_flatten(a)
                for x in leaves:
                    if not isinstance(x, torch.Tensor):
                        raise TypeError(
                            "spmd_torch.compile: a step's arguments are a "
                            "module, an optimizer and tensors (or tuples, "
                            f"lists, dicts of them), not {type(x).__name__}")
                spec.append(("tensors", tree, len(leaves)))
                flat.extend(leaves)
        if model is None:
            raise TypeError("spmd_torch.compile: the step takes no nn.Module")
        return model, opt, flat, spec

    def _step_fn(self, spec, opt):
        fn, stand_in = self.fn, _OptimizerStandIn(opt)

        def step(model, *flat):
            it = iter(flat)
            call = []
            for s in spec:
                if s[0] == "model":
                    call.append(model)
                elif s[0] == "optimizer":
                    call.append(stand_in)
                else:
                    call.append(pytree.tree_unflatten(
                        [next(it) for _ in range(s[2])], s[1]))
            with _BackwardCapture() as cap:
                fn(*call)
            if cap.loss is None:
                raise UnsupportedOpError(
                    f"spmd_torch.compile: {getattr(fn, '__name__', 'the step')}"
                    " never calls backward() on its loss")
            return cap.loss
        return step

    def __call__(self, *args):
        model, opt, flat, spec = self._split(args)
        if self.model is None:
            self.model, self.optimizer = model, opt
            if opt is not None:
                from_torch(opt)  # an unsupported optimizer fails here
            named = list(model.named_parameters()) + \
                list(model.named_buffers())
            self.aliases = _aliases(model, named)
        elif model is not self.model or opt is not self.optimizer:
            raise ValueError("spmd_torch.compile: the step was compiled for "
                             "another model or optimizer; compile one per "
                             "model")
        key = tuple((tuple(t.shape), t.dtype) for t in flat) + tuple(
            (s[0], str(s[1]) if len(s) > 1 else None) for s in spec)

        def make():
            o = self.options
            exported = export_train_step(
                model, tuple(flat), optimizer=opt, mesh=o["mesh"],
                plan=o["plan"], data_parallel=o["data_parallel"],
                fsdp=o["fsdp"], dp_axis=o["dp_axis"], tp_axis=o["tp_axis"],
                feedback_order=True, capture=o["capture"],
                rng_seed=o["rng_seed"], step_fn=self._step_fn(spec, opt))
            return self._load(exported, "step")

        prog = self._run(key, make, flat)
        return prog.result(prog.loss)

    def sync(self):
        """Writes the ranks' state back into the model (parameters and
        buffers, in place) and the torch optimizer's state (so that eager
        training or torch.save can go on from it)."""
        prog = self._require()
        values = prog.state_values()
        params = dict(self.model.named_parameters())
        buffers = dict(self.model.named_buffers())
        with torch.no_grad():
            for name, t in values.items():
                target = params.get(name, buffers.get(name))
                if target is not None:
                    target.copy_(t)
        opt = self.optimizer
        if opt is None:
            return
        fopt = from_torch(opt)
        step = values.get("step")
        for name, p in params.items():
            st = {}
            for s in fopt.state_names:
                key = f"{name}.{s}"
                if key in values:
                    st[s] = values[key].clone()
            if step is not None:
                st["step"] = step.clone()
            if st:
                opt.state[p] = st


class CompiledModule(_Compiled):
    """A module's forward (no gradients) on the ranks: called like the
    module, returns its outputs (a tensor, or a tuple of them)."""

    def __init__(self, model, options):
        super().__init__(options)
        self.model = model
        named = list(model.named_parameters()) + list(model.named_buffers())
        self.aliases = _aliases(model, named)

    def __call__(self, *inputs):
        flat, tree = pytree.tree_flatten(inputs)
        if not all(isinstance(x, torch.Tensor) for x in flat):
            raise TypeError("spmd_torch.compile: a module's inputs must be "
                            "tensors")
        key = tuple((tuple(t.shape), t.dtype) for t in flat) + (str(tree),)

        def make():
            o = self.options
            exported = export_forward(
                self.model, tuple(inputs), mesh=o["mesh"], plan=o["plan"],
                data_parallel=o["data_parallel"], dp_axis=o["dp_axis"],
                tp_axis=o["tp_axis"], fsdp=o["fsdp"], capture=o["capture"],
                rng_seed=o["rng_seed"])
            return self._load(exported, "forward")

        prog = self._run(key, make, flat)
        outs = [prog.result(i) for i in prog.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)
