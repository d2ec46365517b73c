"""GPU training-step benchmark: step time and MFU of the toy GPT's training
step (test/frontend/Inputs/models.py:GPT, or its Llama with --models llama;
AdamW) on 1..8 NVIDIA GPUs under
TP, TP+SP, DP and FSDP, spmd (spmd_torch export + spmd-run --backend cuda)
against PyTorch eager (DTensor TP/SP, DDP, FSDP; step_torch.py).
See bench/cuda/README.md.

  python3 bench/cuda/step.py --bin build/bin [--gpus 1,2,4,8]
        [--parallelisms tp,sp,dp,fsdp] [--precisions f32,tf32,bf16]
  python3 bench/cuda/step.py --bin build/bin --dry-run     # no GPU needed

For each precision, GPU count N and parallelism it
1. exports the step with the frontend (`python3 -m spmd_torch export ...
   --mesh tp=N --plan ... --feedback-order`, initial values and batch saved
   as arg<i>.npy);
2. times `spmd-run --backend cuda --comm nccl --steps B+K --warmup B`
   (the mean of the last K steps; B = 1, or 2 with --cuda-graph, whose
   second step is the capture) after a run of `--steps B` that writes the
   results the loss comparison reads;
3. times step_torch.py on N processes from the same initial values (W
   warm-up steps, then K steps);
4. repeats 2-3 --reps times, interleaved, and reports medians, the ratio
   torch / spmd, achieved TFLOP/s and MFU against the GPU's dense peak.

One GPU: the four parallelisms are the same program, measured once (row
"1 GPU": spmd on a mesh of 1, torch without a wrapper).

--dry-run needs no GPU: tiny sizes, 4 simulated ranks. Every parallelism is
exported, partitioned and run through `spmd-run --backend cpu --check --steps
2` (the 4-rank results against the unpartitioned program), the timing pair
runs once on the CPU backend, and step_torch.py runs on 4 CPU processes with
gloo where this torch has the API, its losses compared with spmd-run's. It
ends with the GPU commands it would run and `no GPU: ...` (or the GPUs it
found).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
INPUTS = os.path.join(ROOT, "test", "frontend", "Inputs")
MODELS_PY = os.path.join(INPUTS, "models.py")
PY = sys.executable  # the frontend needs PyTorch 2.x: run with .venv/bin/python

# The models (test/frontend/Inputs/models.py): class and constructor
# arguments (a size also has seq and batch: the batch shape).
MODELS = {
    "gpt": ("GPT", ("vocab", "dim", "heads", "layers", "seq")),
    "llama": ("Llama", ("vocab", "dim", "heads", "layers", "hidden")),
}
# Sizes. gpt: ~235M parameters, 8192 tokens per replica and step, ~11.5
# TFLOP per replica and step (about 40 ms at 300 TFLOP/s). llama: the same
# attention, a SwiGLU MLP of width 5632 (~8/3 dim, a multiple of 256),
# RMSNorm, no biases or positions, ~12.5 TFLOP per step. The default size
# is the model's; tiny and tiny-llama are the dry run's.
SIZES = {
    "gpt": dict(vocab=8192, dim=2048, heads=16, layers=4, seq=1024, batch=8),
    "llama": dict(vocab=8192, dim=2048, heads=16, layers=4, hidden=5632,
                  seq=1024, batch=8),
    "tiny": dict(vocab=64, dim=32, heads=4, layers=2, seq=16, batch=4),
    "tiny-llama": dict(vocab=64, dim=32, heads=4, layers=2, hidden=64, seq=16,
                       batch=4),
}
HPARAMS = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}
PARALLELISMS = {
    # name: (label, export arguments for a mesh of n, batch multiplier)
    "tp": ("TP", lambda n: ["--mesh", f"tp={n}", "--plan",
                            os.path.join(INPUTS, "tp_plan.py")], False),
    "sp": ("TP+SP", lambda n: ["--mesh", f"tp={n}", "--plan",
                               os.path.join(INPUTS, "sp_plan.py")], False),
    "dp": ("DP", lambda n: ["--mesh", f"dp={n}"], True),
    "fsdp": ("FSDP", lambda n: ["--mesh", f"dp={n}", "--fsdp"], True),
    "single": ("1 GPU", lambda n: ["--mesh", "dp=1"], False),
}
TORCH_LABEL = {"tp": "DTensor TP", "sp": "DTensor TP+SP", "dp": "DDP",
               "fsdp": "FSDP", "single": "plain module"}
PRECISIONS = {
    # name: (export dtype, spmd-run flags, step_torch flags, peak column)
    "f32": ("float32", [], [], "fp32"),
    "tf32": ("float32", ["--tf32"], ["--tf32"], "tf32"),
    "bf16": ("bfloat16", [], ["--dtype", "bfloat16"], "bf16"),
}
# Dense (no structured sparsity) tensor-core peaks in TFLOP/s from NVIDIA's
# datasheets (the figures given "with sparsity" halved); fp32 is the
# non-tensor-core rate. First matching substring of the device name wins.
PEAKS = [
    ("H200 NVL", {"bf16": 835.5, "tf32": 417.5, "fp32": 60.0}),
    ("H200", {"bf16": 989.5, "tf32": 494.5, "fp32": 67.0}),
    ("H100 NVL", {"bf16": 835.5, "tf32": 417.5, "fp32": 60.0}),
    ("H100 PCIe", {"bf16": 756.0, "tf32": 378.0, "fp32": 51.0}),
    ("H100", {"bf16": 989.5, "tf32": 494.5, "fp32": 67.0}),   # SXM5
    ("A100", {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5}),   # SXM4 and PCIe
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "frontend", "torch")
    return e


def quote(cmd, work=None):
    s = " ".join(shlex.quote(str(a)) for a in cmd)
    if work:  # before the root: the working folder may lie inside it
        s = s.replace(os.path.abspath(work), "WORK")
    return s.replace(ROOT + "/", "").replace(PY + " ", "python3 ")


def step_flops(s, batch, model="gpt"):
    """GEMM FLOPs of one training step, counted from the shapes: per layer
    q, k, v, o (4 x 2 N d^2), the MLP (GPT: 2 x 2 N d 4d; Llama's SwiGLU:
    3 x 2 N d h), the scores q k^T and att v (2 x 2 b T^2 d, the full
    T x T: both implementations compute the masked half too); the output
    projection 2 N d V; backward = 2 x forward. N = b T tokens. For the GPT
    this equals 6 P N + 12 L T^2 d b with P the matmul parameters
    (12 L d^2 + d V). Not counted: the embedding (a lookup in PyTorch;
    spmd's one-hot contraction does 4 N V d more), norms, softmax, the
    activation, loss, optimizer."""
    d, L, T, V = s["dim"], s["layers"], s["seq"], s["vocab"]
    n = batch * T
    mlp = 6 * n * d * s["hidden"] if model == "llama" else 16 * n * d * d
    fwd = L * (8 * n * d * d + mlp + 4 * batch * T * T * d) + 2 * n * d * V
    return 3 * fwd


def gpu_info():
    """(count, name, how): torch's view, else nvidia-smi's."""
    try:
        out = subprocess.run([PY, "-c", "import torch; n = torch.cuda.device_count(); "
                              "print(n); print(torch.cuda.get_device_name(0) if n else '')"],
                             capture_output=True, text=True, timeout=120)
        lines = out.stdout.splitlines()
        if out.returncode == 0 and lines and int(lines[0]) > 0:
            return int(lines[0]), lines[1], "torch.cuda"
        torch_says = (f"torch.cuda.device_count() is {lines[0]}" if lines
                      else "torch does not import")
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        torch_says = f"torch: {e}"
    smi = shutil.which("nvidia-smi")
    if smi:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True)
        names = [l.strip() for l in out.stdout.splitlines() if l.strip()]
        if out.returncode == 0 and names:
            return len(names), names[0], "nvidia-smi"
        return 0, "", f"{torch_says}; nvidia-smi lists none ({out.stderr.strip()[:200]})"
    return 0, "", f"{torch_says}; no nvidia-smi"


def peak_for(name):
    for key, peaks in PEAKS:
        if key.lower() in name.lower():
            return key, peaks
    return None, None


class Runner:
    def __init__(self, args):
        self.args = args
        self.bindir = os.path.abspath(args.bin)
        self.run_bin = os.path.join(self.bindir, "spmd-run")
        if not os.access(self.run_bin, os.X_OK):
            sys.exit(f"step.py: no spmd-run in {args.bin} (pass --bin)")
        self.work = os.path.abspath(args.work) if args.work else \
            tempfile.mkdtemp(prefix="spmd-cuda-step-")
        os.makedirs(self.work, exist_ok=True)
        self.help = subprocess.run([self.run_bin, "--help-hidden"],
                                   capture_output=True, text=True).stdout

    def has_option(self, opt):
        return re.search(rf"--{re.escape(opt)}\b", self.help) is not None

    def export_cmd(self, tracing, rest):
        """The frontend's CLI (real tracing) or export_fake.py (the same
        CLI with fake-tensor tracing)."""
        if tracing == "fake":
            return [PY, os.path.join(HERE, "export_fake.py"), "export"] + rest
        return [PY, "-m", "spmd_torch", "export"] + rest

    def export(self, tag, size, par, n, prec, compare_tracing=False):
        """Exports into WORK/tag; compare_tracing: also with the other
        tracing mode (no inputs saved), which must give the same text."""
        folder = os.path.join(self.work, tag)
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.makedirs(folder)
        _, mesh_args, scaled = PARALLELISMS[par]
        batch = size["batch"] * (n if scaled else 1)
        cls, keys = MODELS[self.args.models]
        model_args = {k: size[k] for k in keys}
        rest = [f"{MODELS_PY}:{cls}", "--model-args", json.dumps(model_args), *mesh_args(n),
               "--batch-shape", f"{batch},{size['seq']}",
               "--optimizer", "adamw", "--lr", str(HPARAMS["lr"]),
               "--betas", ",".join(map(str, HPARAMS["betas"])),
               "--eps", str(HPARAMS["eps"]),
               "--weight-decay", str(HPARAMS["weight_decay"]),
               "--dtype", PRECISIONS[prec][0], "--feedback-order"]
        cmd = self.export_cmd(self.args.tracing, rest + [
            "-o", f"{folder}/step.mlir", "--save-inputs", f"{folder}/in",
            "--metadata", f"{folder}/meta.json"])
        out = subprocess.run(cmd, capture_output=True, text=True, env=env(), cwd=ROOT)
        if out.returncode != 0:
            sys.exit(f"step.py: export failed:\n{quote(cmd)}\n{out.stdout}{out.stderr}")
        if compare_tracing:
            other = "real" if self.args.tracing == "fake" else "fake"
            c2 = self.export_cmd(other, rest + ["-o", f"{folder}/step.{other}.mlir"])
            out = subprocess.run(c2, capture_output=True, text=True, env=env(), cwd=ROOT)
            if out.returncode != 0:
                sys.exit(f"step.py: export failed:\n{quote(c2)}\n{out.stdout}{out.stderr}")
            if open(f"{folder}/step.mlir").read() != open(f"{folder}/step.{other}.mlir").read():
                sys.exit(f"step.py: {tag}: the export with {other} tracing differs "
                         f"from the one with {self.args.tracing} tracing "
                         f"({folder}/step.mlir, step.{other}.mlir)")
        with open(f"{folder}/hparams.json", "w") as f:
            json.dump(dict(HPARAMS, model=self.args.models, model_args=model_args,
                           seq=size["seq"]), f)
        meta = json.load(open(f"{folder}/meta.json"))
        loss_index = [r["kind"] for r in meta["results"]].index("loss")
        return folder, cmd, batch, loss_index

    def comm(self, backend):
        """--comm: nccl on GPUs unless told, the threads' inproc otherwise."""
        if self.args.comm:
            return self.args.comm
        return "nccl" if backend == "cuda" else "inproc"

    def spmd_cmd(self, folder, n, backend, extra, steps):
        comm = self.comm(backend)
        cmd = [self.run_bin, f"{folder}/step.mlir", "--backend", backend,
               "--input-dir", f"{folder}/in", "--steps", str(steps), *extra]
        if comm == "mpi":
            # The CPU test runs more ranks than this machine has cores.
            over = ["--oversubscribe"] if backend != "cuda" else []
            return (shlex.split(self.args.mpirun) + over + ["-np", str(n)] + cmd +
                    ["--comm", "mpi"])
        return cmd + (["--comm", comm] if comm != "inproc" else [])

    def spmd_run(self, cmd):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, env=env())
        except OSError as e:
            return None, f"{quote(cmd)}: {e}"
        text = out.stdout + out.stderr
        if out.returncode != 0:
            return None, text
        m = re.findall(r"([0-9.]+) ms/step", text)
        if not m:
            return None, f"no 'ms/step' in the output of {quote(cmd)}:\n{text}"
        return float(m[-1]), text

    def base_steps(self):
        """Steps the shorter run of a pair makes: 1, or 2 with --cuda-graph
        (spmd-run captures the second step and replays it after)."""
        return 2 if self.args.cuda_graph else 1

    def spmd_pair(self, folder, n, backend, extra, out_dir=None):
        """Steady ms per step: --steps B writes its results to out_dir (the
        loss of step B), then --steps B+K --warmup B times the last K steps
        (B = base_steps(): the first steps pay for set-up, which varies
        between processes by more than K steps' noise)."""
        k, b = self.args.steps, self.base_steps()
        first = extra + (["--output-dir", out_dir] if out_dir else [])
        t1, err = self.spmd_run(self.spmd_cmd(folder, n, backend, first, b))
        if t1 is None:
            return None, err
        tk, err = self.spmd_run(self.spmd_cmd(
            folder, n, backend, extra + ["--warmup", str(b)], b + k))
        if tk is None:
            return None, err
        return tk, None

    def torch_cmd(self, par, n, folder, device, prec_flags):
        return [self.args.torch_python, os.path.join(HERE, "step_torch.py"), par,
                str(n), folder,
                "--warmup", str(self.args.warmup), "--steps", str(self.args.steps),
                "--device", device, *prec_flags]

    def torch_run(self, cmd):
        out = subprocess.run(cmd, capture_output=True, text=True, env=env())
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if not lines:
            return {"status": "failed",
                    "reason": f"exit {out.returncode}: {out.stderr.strip()[-2000:]}"}
        r = json.loads(lines[-1])
        if r["status"] == "failed":
            r["reason"] += "\n" + out.stderr.strip()[-2000:]
        return r


def fmt(x, spec=".1f"):
    return "—" if x is None else format(x, spec)


def dry_run(args, r):
    """CPU: export, partition and check every parallelism on 4 ranks; the
    timing path on the CPU backend; the torch side on gloo."""
    size = dict(SIZES["tiny-llama" if args.models == "llama" else "tiny"])
    n = args.dry_run_ranks
    pars = [p for p in args.parallelisms.split(",")]
    print(f"## Dry run on the CPU ({n} simulated ranks, tiny "
          f"{MODELS[args.models][0]} "
          f"{json.dumps(size)}), not a benchmark\n")
    print("| parallelism | collectives (spmd-run --print-plan) | spmd --check | "
          "spmd-run cpu ms/step | torch (gloo) | loss step 2 spmd / torch |")
    print("|---|---|---|---|---|---|")
    failures, gpu_cmds = 0, []
    for prec in args.precisions.split(","):
        for par in pars:
            tag = f"dry-{prec}-{par}{n}"
            log(f"[{tag}] export")
            folder, cmd, batch, li = r.export(tag, size, par, n, prec,
                                              compare_tracing=args.tracing == "fake")
            log(f"[{tag}] spmd-run --check --steps 2")
            chk = subprocess.run([r.run_bin, f"{folder}/step.mlir", "--ranks", str(n),
                                  "--input-dir", f"{folder}/in", "--output-dir",
                                  f"{folder}/out", "--check", "--steps", "2",
                                  "--print-plan"], capture_output=True, text=True)
            text = chk.stdout + chk.stderr
            ok = chk.returncode == 0 and f"check passed ({n} ranks, 2 step(s))" in text
            colls = "; ".join(re.findall(r"collectives: (.*)", text)) or "none"
            checks = [f"cpu {'passed' if ok else 'FAILED'}"]
            # The GPU executor emulated on the CPU (spmd-run --backend
            # cuda-emu), with the GPU flags of this precision.
            for be in [b for b in args.dry_run_backends.split(",") if b != "cpu"]:
                extra = PRECISIONS[prec][1] + (["--cuda-graph"] if args.cuda_graph else [])
                steps = 1 + r.base_steps()
                log(f"[{tag}] spmd-run --backend {be} --check --steps {steps}")
                c2 = subprocess.run(r.spmd_cmd(folder, n, be, extra + ["--check"], steps),
                                    capture_output=True, text=True)
                t2 = c2.stdout + c2.stderr
                ok2 = c2.returncode == 0 and f"check passed ({n} ranks, {steps} step(s))" in t2
                checks.append(f"{be} {'passed' if ok2 else 'FAILED'}")
                if not ok2:
                    failures += 1
                    log(f"[{tag}] spmd-run --backend {be} --check failed:\n{t2[-3000:]}")
            spmd_loss = None
            if ok:
                spmd_loss = float(np.load(f"{folder}/out/result{li}.npy").astype(np.float64))
            else:
                failures += 1
                log(f"[{tag}] spmd-run --check failed:\n{text[-3000:]}")
            ms, err = r.spmd_pair(folder, n, "cpu", [])
            ms_cell = fmt(ms)
            if ms is None:
                failures += 1
                log(f"[{tag}] spmd-run timing failed:\n{err[-3000:]}")
            log(f"[{tag}] step_torch.py {par} {n} --device cpu")
            tr = r.torch_run(r.torch_cmd(par, n, folder, "cpu", PRECISIONS[prec][2]))
            if tr["status"] == "failed":
                # The peer, not spmd: PyTorch's gloo ranks have aborted under
                # load ("terminate called without an active exception" in
                # one of 4 processes, once in a CI run); one more try.
                log(f"[{tag}] step_torch.py failed ({tr['reason']}); retrying once")
                tr = r.torch_run(r.torch_cmd(par, n, folder, "cpu", PRECISIONS[prec][2]))
            if tr["status"] == "ok":
                tl = tr["losses"][1]
                rel = abs(tl - spmd_loss) / abs(tl) if spmd_loss is not None else None
                tol = 1e-4 if prec != "bf16" else 3e-2
                agree = rel is not None and rel <= tol
                if not agree:
                    failures += 1
                torch_col = f"ok, {tr['ms_per_step']:.1f} ms/step"
                loss_col = (f"{fmt(spmd_loss, '.6g')} / {tl:.6g} (rel diff "
                            f"{fmt(rel, '.1e')}, {'agree' if agree else 'DIFFER'})")
            elif tr["status"] == "skipped":
                torch_col, loss_col = f"skipped: {tr['reason']}", f"{fmt(spmd_loss, '.6g')} / —"
            else:
                failures += 1
                torch_col, loss_col = "FAILED", f"{fmt(spmd_loss, '.6g')} / —"
                log(f"[{tag}] step_torch.py failed: {tr['reason']}")
            print(f"| {prec} {PARALLELISMS[par][0]} | {colls} | "
                  f"{', '.join(checks)} | {ms_cell} | {torch_col} | {loss_col} |")
            gpu_extra = PRECISIONS[prec][1] + (["--cuda-graph"] if args.cuda_graph else [])
            gpu_cmds.append(quote(r.spmd_cmd(
                folder, n, "cuda", gpu_extra + ["--warmup", str(r.base_steps())],
                r.base_steps() + args.steps), r.work))
            gpu_cmds.append(quote(r.torch_cmd(par, n, folder, "cuda", PRECISIONS[prec][2]),
                                  r.work))
            if not args.keep_inputs:
                shutil.rmtree(f"{folder}/in", ignore_errors=True)
    print("\nThe GPU runs would be (WORK = the working folder):\n")
    for c in gpu_cmds:
        print(f"    {c}")
    count, name, how = gpu_info()
    print()
    if count == 0:
        print(f"no GPU: {how}; the GPU measurement was skipped (dry run)")
    else:
        print(f"{count} GPU(s) found ({name}, {how}); the GPU measurement was "
              "skipped (dry run): run without --dry-run")
    print(f"dry run: {failures} failure(s)")
    return 1 if failures else 0


def measure(args, r):
    gpus = [int(g) for g in args.gpus.split(",")]
    cuda = args.device == "cuda"
    gpu_flags = args.device != "cpu"  # --tf32, --cuda-graph: cuda, cuda-emu
    if cuda:
        count, name, how = gpu_info()
        if count == 0:
            print(f"no GPU: {how}; nothing measured (--dry-run checks everything "
                  "else on the CPU)")
            return 1
        for opt in (["cuda-graph"] if args.cuda_graph else []) + \
                (["tf32"] if "tf32" in args.precisions.split(",") else []):
            if not r.has_option(opt):
                sys.exit(f"step.py: {r.run_bin} has no --{opt} option")
    else:
        # A test of this script: the same measurement on the CPU backend or
        # the emulated GPU executor (simulated ranks), torch on gloo.
        count, name, how = max(gpus), "CPU", f"--device {args.device}, simulated ranks"
    key, peaks = peak_for(name)
    size = dict(SIZES[args.size or args.models])
    if args.models == "llama" and "hidden" not in size:
        sys.exit(f"step.py: size '{args.size}' is not a Llama size (llama, "
                 "tiny-llama)")
    for k in ("vocab", "dim", "heads", "layers", "seq", "batch", "hidden"):
        if getattr(args, k) is not None:
            size[k] = getattr(args, k)
    skipped = [g for g in gpus if g > count]
    gpus = [g for g in gpus if g <= count]
    extra_spmd = (["--cuda-graph"] if args.cuda_graph else [])
    backend = args.device
    rows, cmds = [], []
    out_path = args.out or os.path.join(
        HERE if cuda else r.work,
        "results-step-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".md")
    for prec in args.precisions.split(","):
        for n in gpus:
            pars = ["single"] if n == 1 else args.parallelisms.split(",")
            for par in pars:
                tag = f"{prec}-{par}{n}"
                log(f"[{tag}] export")
                folder, ecmd, batch, li = r.export(tag, size, par, n, prec)
                spmd_extra = PRECISIONS[prec][1] + extra_spmd if gpu_flags else []
                tcmd = r.torch_cmd(par, n, folder, "cuda" if cuda else "cpu",
                                   PRECISIONS[prec][2])
                cmds.append((tag, ecmd, r.spmd_cmd(
                    folder, n, backend,
                    spmd_extra + ["--warmup", str(r.base_steps())],
                    r.base_steps() + args.steps), tcmd))
                spmd_ms, torch_ms, torch_res, spmd_err = [], [], None, None
                spmd_loss = None
                for rep in range(args.reps):
                    log(f"[{tag}] rep {rep + 1}/{args.reps}: spmd-run pair")
                    # The shorter run's results give step B's loss.
                    out1 = f"{folder}/out1" if rep == 0 else None
                    ms, err = r.spmd_pair(folder, n, backend, spmd_extra, out1)
                    if ms is None:
                        spmd_err = err
                        log(f"[{tag}] spmd-run failed:\n{err[-3000:]}")
                    else:
                        spmd_ms.append(ms)
                    if out1 and os.path.exists(f"{out1}/result{li}.npy"):
                        spmd_loss = float(np.load(f"{out1}/result{li}.npy")
                                          .astype(np.float64))
                    if out1:
                        shutil.rmtree(out1, ignore_errors=True)
                    log(f"[{tag}] rep {rep + 1}/{args.reps}: torch")
                    tr = r.torch_run(tcmd)
                    torch_res = tr
                    if tr["status"] == "ok":
                        torch_ms.append(tr["ms_per_step"])
                    else:
                        log(f"[{tag}] torch {tr['status']}: {tr['reason'][-3000:]}")
                        if tr["status"] == "skipped":
                            break
                if not args.keep_inputs:
                    shutil.rmtree(f"{folder}/in", ignore_errors=True)
                flops = step_flops(size, batch, args.models)
                rows.append(dict(prec=prec, n=n, par=par, batch=batch, flops=flops,
                                 spmd=statistics.median(spmd_ms) if spmd_ms else None,
                                 torch=statistics.median(torch_ms) if torch_ms else None,
                                 spmd_all=spmd_ms, torch_all=torch_ms,
                                 spmd_err=spmd_err, torch_res=torch_res,
                                 spmd_loss=spmd_loss))
                # After every row: a run stopped at its time limit keeps
                # the rows it finished.
                with open(out_path, "w") as f:
                    write_report(f, args, size, name, how, count, key, peaks,
                                 rows, cmds, skipped, r.work)
    with open(out_path, "w") as f:
        write_report(f, args, size, name, how, count, key, peaks, rows, cmds,
                     skipped, r.work)
    log(f"results in {out_path}")
    print(open(out_path).read())
    return 0


def write_report(f, args, size, name, how, count, key, peaks, rows, cmds,
                 skipped, work):
    p = lambda s="": print(s, file=f)  # noqa: E731
    b = 2 if args.cuda_graph else 1  # the step whose loss is compared
    r_comm = args.comm or ("nccl" if args.device == "cuda" else "inproc")
    torch_v = next((r["torch_res"].get("torch") for r in rows if r["torch_res"]), "?")
    p(f"## Training step on {name}: spmd-run --backend {args.device} vs PyTorch eager\n")
    p(f"Command: `python3 bench/cuda/step.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}`"
      f"; {count} x {name} (found by {how}), PyTorch {torch_v}, spmd-run "
      f"--comm {r_comm}{' --cuda-graph' if args.cuda_graph else ''}. "
      f"Model: models.{MODELS[args.models][0]} "
      f"{json.dumps({k: size[k] for k in MODELS[args.models][1] + ('seq',) if k in size})}, "
      f"AdamW (lr {HPARAMS['lr']}, weight decay {HPARAMS['weight_decay']}), "
      f"cross-entropy; batch {size['batch']} sequences per step for TP/TP+SP "
      f"and per GPU for DP/FSDP. ms/step: median of {args.reps} "
      f"interleaved repetitions; spmd-run --steps B+{args.steps} --warmup B "
      f"(the mean of the last {args.steps} steps) with B = {2 if args.cuda_graph else 1}, torch "
      f"{args.steps} steps after {args.warmup} warm-up steps.\n")
    if peaks:
        p(f"MFU: model FLOPs per step (GEMMs counted from the shapes, see "
          f"step_flops in step.py) / step time / (GPUs x dense peak of "
          f"{key}: bf16 {peaks['bf16']}, tf32 {peaks['tf32']}, fp32 "
          f"{peaks['fp32']} TFLOP/s per GPU; f32 rows use the fp32 peak, tf32 "
          f"rows the TF32 tensor-core peak).\n")
    else:
        p(f"No peak known for '{name}': the table gives achieved TFLOP/s only.\n")
    if skipped:
        p(f"Not run: {', '.join(map(str, skipped))} GPUs (only {count} visible).\n")
    p("| precision | parallelism | GPUs | global batch | GFLOP/step | spmd ms/step | "
      "torch ms/step | torch / spmd | spmd TFLOP/s | torch TFLOP/s | spmd MFU | torch MFU |")
    p("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        tf = lambda ms: None if ms is None else r["flops"] / (ms * 1e-3) / 1e12  # noqa: E731
        col = PRECISIONS[r["prec"]][3]
        mfu = (lambda ms: None if ms is None or not peaks
               else 100 * tf(ms) / (r["n"] * peaks[col]))
        ratio = (r["torch"] / r["spmd"]) if r["spmd"] and r["torch"] else None
        p(f"| {r['prec']} | {PARALLELISMS[r['par']][0]} | {r['n']} | {r['batch']} | "
          f"{r['flops'] / 1e9:.4g} | {fmt(r['spmd'], '.2f')} | {fmt(r['torch'], '.2f')} | "
          f"{fmt(ratio, '.2f')} | {fmt(tf(r['spmd']), '.3g')} | {fmt(tf(r['torch']), '.3g')} | "
          f"{fmt(mfu(r['spmd']), '.1f')}{'%' if mfu(r['spmd']) is not None else ''} | "
          f"{fmt(mfu(r['torch']), '.1f')}{'%' if mfu(r['torch']) is not None else ''} |")
    p()
    for r in rows:
        t = r["torch_res"] or {}
        what = f"{r['prec']} {PARALLELISMS[r['par']][0]} x{r['n']}"
        if r["spmd_err"]:
            why = [l for l in r["spmd_err"].splitlines() if l.strip("- \t")]
            p(f"* {what}: spmd-run failed: `{(why or ['?'])[0][:300]}`")
        if t.get("status") in ("skipped", "failed"):
            p(f"* {what}: torch ({TORCH_LABEL[r['par']]}) {t['status']}: "
              f"{t['reason'].strip().splitlines()[0][:300]}")
        if r["spmd_all"] or r["torch_all"]:
            p(f"* {what}: every repetition (ms): spmd "
              f"{', '.join(f'{x:.2f}' for x in r['spmd_all']) or '—'}; torch "
              f"{', '.join(f'{x:.2f}' for x in r['torch_all']) or '—'}"
              + (f"; torch peak memory {t['max_memory_bytes'] / 2**30:.1f} GiB"
                 if t.get("max_memory_bytes") else "")
              + (f"; loss of step {b} spmd {fmt(r['spmd_loss'], '.6g')}, torch "
                 f"{t['losses'][b - 1]:.6g}" if len(t.get("losses", [])) >= b else ""))
    p("\nPyTorch side (bench/cuda/step_torch.py): TP = parallelize_module with "
      "ColwiseParallel q/k/v/w1, RowwiseParallel wo/w2 and the embedding, the "
      "output ColwiseParallel gathered to Replicate before the loss (spmd's "
      "plan keeps the logits vocabulary-sharded); TP+SP adds SequenceParallel "
      "norms and PrepareModuleInput; DP = DDP; FSDP = FullyShardedDataParallel, "
      "one unit per block. Eager, the attention as models.py writes it (no "
      "fused SDPA). torch.optim.AdamW (foreach default). spmd's "
      "embedding is a one-hot contraction (not in the FLOP count).\n")
    p("Commands (WORK = the working folder; every row: export, spmd-run pair "
      "with --steps B and the one shown, torch):\n")
    for tag, e, s, t in cmds:
        p(f"    # {tag}")
        for c in (e, s, t):
            p("    " + quote(c, work))
        p()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin", help="folder with spmd-run")
    ap.add_argument("--gpus", default="1,2,4,8",
                    help="GPU counts (those above the visible count are skipped)")
    ap.add_argument("--parallelisms", default="tp,sp,dp,fsdp")
    ap.add_argument("--precisions", default="f32",
                    help="f32 (strict), tf32 (f32 storage, TF32 GEMMs), bf16")
    ap.add_argument("--models", default="gpt", choices=list(MODELS),
                    help="the model: models.GPT or models.Llama")
    ap.add_argument("--size", choices=list(SIZES),
                    help="the sizes (default: the model's)")
    for k in ("vocab", "dim", "heads", "layers", "seq", "batch", "hidden"):
        ap.add_argument(f"--{k}", type=int, help=f"override the size's {k}")
    ap.add_argument("--tracing", choices=["fake", "real"], default="fake",
                    help="make_fx tracing of the export: fake (export_fake.py, "
                         "seconds at full size; the dry run checks that it "
                         "gives the real tracing's program) or real (the CLI)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=3, help="torch warm-up steps")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", help="working folder (default: a temporary one)")
    ap.add_argument("--keep-inputs", action="store_true",
                    help="keep each export's arg<i>.npy (GBs at full size)")
    ap.add_argument("--comm", choices=["nccl", "inproc", "mpi"],
                    help="spmd-run's communicator: nccl (one process, a thread "
                         "and a GPU per rank; the default on GPUs), inproc "
                         "(threads, collectives staged through host memory; "
                         "the default on the CPU), mpi (mpirun -np N, NCCL "
                         "over MPI on GPUs)")
    ap.add_argument("--mpirun", default="mpirun --allow-run-as-root",
                    help="the launcher for --comm mpi (-np N follows)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="spmd-run --cuda-graph")
    ap.add_argument("--torch-python", default=PY,
                    help="the Python whose torch runs the PyTorch side "
                         f"(default {PY})")
    ap.add_argument("--out", help="results file (default bench/cuda/"
                                  "results-step-<gpu name>.md)")
    ap.add_argument("--device", choices=["cuda", "cpu", "cuda-emu"], default="cuda",
                    help="cpu / cuda-emu: the measurement on spmd-run's CPU "
                         "backend / its GPU executor emulated on the CPU, torch "
                         "on gloo (a test of this script; use --size tiny)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: tiny sizes on the CPU backend, see above")
    ap.add_argument("--dry-run-ranks", type=int, default=4)
    ap.add_argument("--dry-run-backends", default="cpu",
                    help="spmd-run backends the dry run checks: cpu, and "
                         "cuda-emu (the GPU executor emulated on the CPU, "
                         "~20 s per program)")
    args = ap.parse_args()
    for x in args.precisions.split(","):
        if x not in PRECISIONS:
            sys.exit(f"step.py: unknown precision '{x}' (f32, tf32, bf16)")
    for x in args.parallelisms.split(","):
        if x not in ("tp", "sp", "dp", "fsdp"):
            sys.exit(f"step.py: unknown parallelism '{x}' (tp, sp, dp, fsdp)")
    r = Runner(args)
    sys.exit(dry_run(args, r) if args.dry_run else measure(args, r))


if __name__ == "__main__":
    main()
