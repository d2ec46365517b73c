"""Issue #17's mid-size training steps: spmd-run against PyTorch eager,
DTensor / DDP on 4 gloo processes and JAX on 4 host CPU devices, in one run.

    .venv/bin/python bench/step/gpt_step.py [--bin build/bin]
        [--models gpt,llama] [--impls eager,dtensor,jax,spmd]
        [--plans unpartitioned,TP,TP+SP,DP] [--threads 1]
        [--warmup 2] [--iters 5] [--tiny] [--no-check] [--json FILE]

Models (test/frontend/Inputs/models.py), batch 8, seq 128:
  gpt    GPT(vocab 2048, dim 512, 8 heads, 4 layers, seq 128)
  llama  Llama(vocab 2048, dim 512, 8 heads, 4 layers, SwiGLU hidden 1376)
(--tiny: vocab 64, dim 32, 4 heads, 2 layers, seq 16, hidden 96: a smoke
test.) The step: forward, mean cross-entropy, backward, Adam (lr 1e-3,
betas 0.9/0.999, eps 1e-8, no weight decay) in f32, from the same initial
values and batch in every implementation (what `spmd_torch export` makes:
torch.manual_seed(0), the constructor, models.example_batch; checked
against the export's arg<i>.npy).

Plans, the same plan files for spmd and DTensor:
  unpartitioned  spmd-run on 1 rank; PyTorch eager; JAX on 1 device
  TP     tp=4: tp_plan.py (GPT), llama3_tp_plan.py (Llama)
  TP+SP  tp=4: sp_plan.py (GPT), llama_sp_plan.py (Llama)
  DP     dp=4: spmd --mesh dp=4; DDP; JAX with the batch sharded
Implementations (peer_torch.py, peer_jax.py):
  eager    PyTorch eager, one process (the unpartitioned step)
  dtensor  TP / TP+SP: parallelize_module on 4 gloo processes; DP: DDP
  jax      jitted on 4 host CPU devices (XLA_FLAGS=
           --xla_force_host_platform_device_count=4), NamedSharding
  spmd     spmd_torch export, then spmd-run on 4 simulated ranks (threads)
Threads: every process gets OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=
MKL_NUM_THREADS=--threads (PyTorch: torch.set_num_threads of it; XLA:
intra_op_parallelism_threads, and Eigen single-threaded when 1; spmd-run:
--threads-per-rank): each rank computes with that many threads, spmd-run's
rank threads and the gloo processes alike.

Timing: --warmup steps, then --iters timed steps; the median ms/step of the
timed ones. spmd-run runs warmup+iters steps with --trace; a step's time is
rank 0's, from the start of its first plan step to the start of the next
step's (feeding the results back included); compilation is outside. JAX
compiles before its steps. spmd-run's own mean over all steps (first step
included) is printed too. Correctness: every plan is first run with
`spmd-run --check --steps 1` (the 4 ranks' results against the
unpartitioned program), which also gives spmd's step-1 loss; the step-1
losses of every implementation are printed side by side, and the last
step's.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(HERE))
inputs = os.path.join(root, "test", "frontend", "Inputs")
sys.path.insert(0, inputs)
JAX_VENV_PY = os.path.join(root, "bench", "peers", ".venv-jax", "bin", "python")

SIZES = {
    "full": {"batch": 8, "seq": 128,
             "gpt": {"vocab": 2048, "dim": 512, "heads": 8, "layers": 4,
                     "seq": 128},
             "llama": {"vocab": 2048, "dim": 512, "heads": 8, "layers": 4,
                       "hidden": 1376}},
    "tiny": {"batch": 8, "seq": 16,
             "gpt": {"vocab": 64, "dim": 32, "heads": 4, "layers": 2,
                     "seq": 16},
             "llama": {"vocab": 64, "dim": 32, "heads": 4, "layers": 2,
                       "hidden": 96}},
}
CLASSES = {"gpt": "GPT", "llama": "Llama"}
PLAN_FILES = {
    "gpt": {"TP": "tp_plan.py", "TP+SP": "sp_plan.py"},
    "llama": {"TP": "llama3_tp_plan.py", "TP+SP": "llama_sp_plan.py"},
}
PLANS = ["unpartitioned", "TP", "TP+SP", "DP"]
IMPLS = ["eager", "dtensor", "jax", "spmd"]
LR = 1e-3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def spmd_plan_args(model, plan):
    if plan == "unpartitioned":
        return []
    if plan == "DP":
        return ["--mesh", "dp=4"]
    return ["--plan", os.path.join(inputs, PLAN_FILES[model][plan]),
            "--mesh", "tp=4"]


class Failure(Exception):
    pass


def run(cmd, env, failures, what, **kw):
    """Runs cmd; on failure records the command and its error's last lines."""
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, **kw)
    except OSError as e:
        failures.append({"what": what, "rc": None, "command": cmd[0],
                         "error": str(e)})
        raise Failure(str(e))
    if r.returncode:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-6:]
        failures.append({"what": what, "rc": r.returncode,
                         "command": " ".join(shlex.quote(c) for c in cmd),
                         "error": "\n".join(tail)})
        raise Failure(tail[-1] if tail else f"exit {r.returncode}")
    return r


def last_json(text):
    return json.loads(text.strip().splitlines()[-1])


def write_init(model, size, path):
    """The initial values and batch as spmd_torch export makes them."""
    import numpy as np
    import torch
    import models
    torch.manual_seed(0)
    m = getattr(models, CLASSES[model])(**SIZES[size][model])
    x, y = models.example_batch(m, (SIZES[size]["batch"], SIZES[size]["seq"]))
    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    np.savez(path, tokens=x.numpy(), targets=y.numpy(), **sd)
    return sd, x.numpy(), y.numpy()


def same_inputs(meta, folder, sd, x, y):
    """Largest |difference| between the export's inputs and the init."""
    import numpy as np
    worst = 0.0
    for i, a in enumerate(meta["args"]):
        ref = sd.get(a["name"])
        if ref is None and a["kind"] == "batch":
            ref = {"batch.0": x, "batch.1": y}.get(a["name"])
        if ref is None:
            continue
        got = np.load(os.path.join(folder, f"arg{i}.npy"))
        if got.shape != ref.shape:
            return float("inf")
        worst = max(worst, float(np.abs(got.astype(np.float64) - ref).max()))
    return worst


def trace_steps(path, warmup):
    """Rank 0's training steps in a spmd-run --trace: ms of each step after
    `warmup` (start of a step's first plan step to the next one's)."""
    events = [e for e in json.load(open(path))["traceEvents"]
              if e.get("ph") == "X" and e.get("tid") == 0]
    events.sort(key=lambda e: e["ts"])
    starts, prev, end = [], None, 0.0
    for e in events:
        if prev is None or e["args"]["step"] <= prev:
            starts.append(e["ts"])
        prev = e["args"]["step"]
        end = max(end, e["ts"] + e["dur"])
    bounds = starts + [end]
    ms = [(bounds[i + 1] - bounds[i]) / 1e3 for i in range(len(starts))]
    return ms[warmup:]


def spmd(model, plan, size, args, work, env, failures, init):
    """Export, --check --steps 1, then the timed run."""
    import numpy as np
    name = model + "_" + re.sub(r"\W+", "_", plan)
    prog = os.path.join(work, name + ".mlir")
    meta_path = os.path.join(work, name + ".json")
    folder = os.path.join(work, name + "_in")
    s = SIZES[size]
    res = {}
    export = [sys.executable, "-m", "spmd_torch", "export",
              f"{inputs}/models.py:{CLASSES[model]}", "--model-args",
              json.dumps(s[model]), "--batch-shape", f"{s['batch']},{s['seq']}",
              "--optimizer", "adam", "--lr", str(LR), "--feedback-order",
              "-o", prog, "--metadata", meta_path, "--save-inputs", folder,
              *spmd_plan_args(model, plan)]
    xenv = dict(env, PYTHONPATH=os.path.join(root, "frontend", "torch"))
    run(export, xenv, failures, f"spmd export {model} {plan}")
    meta = json.load(open(meta_path))
    loss_at = [i for i, r in enumerate(meta["results"]) if r["kind"] == "loss"]
    res["inputs_diff"] = same_inputs(meta, folder, *init)
    binary = os.path.join(args.bin, "spmd-run")
    if not args.no_check:
        out1 = os.path.join(work, name + "_out1")
        cmd = [binary, prog, "--input-dir", folder, "--steps", "1", "--check",
               "--output-dir", out1, "--threads-per-rank", str(args.threads)]
        r = run(cmd, env, failures, f"spmd-run --check {model} {plan}")
        res["check"] = "passed" if "check passed" in r.stdout else "FAILED"
        if res["check"] != "passed":
            failures.append({"what": f"spmd-run --check {model} {plan}",
                             "command": " ".join(cmd),
                             "error": r.stdout[-600:]})
        if loss_at:
            res["loss1"] = float(np.load(os.path.join(
                out1, f"result{loss_at[0]}.npy")))
    steps = args.warmup + args.iters
    trace = os.path.join(work, name + "_trace.json")
    outk = os.path.join(work, name + "_outk")
    cmd = [binary, prog, "--input-dir", folder, "--steps", str(steps),
           "--trace", trace, "--output-dir", outk,
           "--threads-per-rank", str(args.threads)]
    r = run(cmd, env, failures, f"spmd-run {model} {plan}")
    res["mean_ms"] = float(re.search(r"([0-9.]+) ms/step", r.stderr).group(1))
    res["times_ms"] = trace_steps(trace, args.warmup)
    res["ms"] = statistics.median(res["times_ms"])
    if loss_at:
        res["loss_last"] = float(np.load(os.path.join(
            outk, f"result{loss_at[0]}.npy")))
    res["ranks"] = 1 if plan == "unpartitioned" else 4
    res["command"] = " ".join(shlex.quote(c) for c in cmd)
    os.remove(trace)
    return res


def peer(impl, model, plan, size, args, env, failures, npz):
    s = SIZES[size]
    common = ["--model", model, "--model-args", json.dumps(s[model]),
              "--plan", plan, "--warmup", str(args.warmup), "--iters",
              str(args.iters), "--lr", str(LR)]
    if impl == "jax":
        cmd = [JAX_VENV_PY, os.path.join(HERE, "peer_jax.py"), *common,
               "--npz", npz]
    else:
        cmd = [sys.executable, os.path.join(HERE, "peer_torch.py"), *common,
               "--batch", str(s["batch"]), "--seq", str(s["seq"])]
        if plan in ("TP", "TP+SP"):
            cmd += ["--plan-file", os.path.join(inputs,
                                                PLAN_FILES[model][plan])]
    r = run(cmd, env, failures, f"{impl} {model} {plan}")
    res = last_json(r.stdout)
    res["ms"] = statistics.median(res["times_ms"])
    res["loss1"] = res["losses"][0]
    res["loss_last"] = res["losses"][-1]
    return res


def ensure_jax():
    if os.path.exists(JAX_VENV_PY):
        return
    sys.path.insert(0, os.path.join(root, "bench", "peers"))
    import run as peers_run  # creates bench/peers/.venv-jax (jax from PyPI)
    peers_run.ensure_jax()


def fmt_ms(r):
    if r is None:
        return "-"
    if "error" in r:
        return "fails"
    return f"{r['ms']:.0f}" if r["ms"] >= 10 else f"{r['ms']:.2f}"


def ratio(a, b):
    if not a or not b or "error" in a or "error" in b:
        return "-"
    return f"{a['ms'] / b['ms']:.2f}"


def fmt_loss(r, key):
    if not r or "error" in r or key not in r:
        return "-"
    return f"{r[key]:.6f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(root, "build", "bin"))
    ap.add_argument("--models", default="gpt,llama")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--plans", default=",".join(PLANS))
    ap.add_argument("--threads", type=int, default=1,
                    help="OMP/OpenBLAS/MKL threads of every process (rank)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="smoke-test sizes")
    ap.add_argument("--no-check", action="store_true",
                    help="skip spmd-run --check --steps 1")
    ap.add_argument("--work", help="keep the exported programs here")
    ap.add_argument("--json", help="also write every result to this file")
    args = ap.parse_args()
    size = "tiny" if args.tiny else "full"
    models_ = args.models.split(",")
    impls = args.impls.split(",")
    plans = args.plans.split(",")
    for x, known in ((models_, SIZES["full"]), (impls, IMPLS), (plans, PLANS)):
        bad = [v for v in x if v not in known]
        if bad:
            ap.error(f"unknown {bad}")
    if "jax" in impls:
        ensure_jax()
    t = str(args.threads)
    xla = "--xla_force_host_platform_device_count=4"
    xla += (" --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            if args.threads == 1 else f" intra_op_parallelism_threads={t}")
    env = dict(os.environ, OMP_NUM_THREADS=t, OPENBLAS_NUM_THREADS=t,
               MKL_NUM_THREADS=t, XLA_FLAGS=xla)
    work = args.work or tempfile.mkdtemp(prefix="spmd_gpt_step_")
    os.makedirs(work, exist_ok=True)
    import torch
    header = [
        f"date: {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"command: {' '.join(shlex.quote(a) for a in sys.argv)}",
        f"machine: {platform.node()}, {os.cpu_count()} CPUs "
        f"({_cpu_model()}), load average {os.getloadavg()[0]:.2f} at start",
        f"threads: OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS={t}; "
        f"XLA_FLAGS={xla}",
        f"torch {torch.__version__}; size {size}: batch "
        f"{SIZES[size]['batch']}, seq {SIZES[size]['seq']}, "
        + "; ".join(f"{m} {json.dumps(SIZES[size][m])}" for m in models_),
        f"warm-up {args.warmup} steps, median of {args.iters} timed steps",
    ]
    for line in header:
        log(line)
    failures, results = [], {}
    for model in models_:
        npz = os.path.join(work, f"{model}_init.npz")
        init = write_init(model, size, npz)
        for plan in plans:
            row = results.setdefault((model, plan), {})
            for impl in impls:
                if impl == "eager" and plan != "unpartitioned":
                    continue
                if impl == "dtensor" and plan == "unpartitioned":
                    continue
                log(f"{model} {plan} {impl} ...")
                try:
                    if impl == "spmd":
                        row[impl] = spmd(model, plan, size, args, work, env,
                                         failures, init)
                    else:
                        row[impl] = peer(impl, model, plan, size, args, env,
                                         failures, npz)
                    log(f"  {row[impl]['ms']:.1f} ms/step")
                except Failure as e:
                    row[impl] = {"error": str(e)}
                    log(f"  fails: {e}")
    out = []
    out += ["```"] + header + ["```", ""]
    out += ["ms/step, median of the timed steps (spmd-run: rank 0's steps "
            "from its trace; its own mean over all steps in parentheses):",
            "",
            "| model | plan | spmd-run | PyTorch eager (1 proc) | "
            "DTensor / DDP (4 gloo procs) | JAX | spmd / eager | "
            "spmd / DTensor | spmd / JAX |",
            "|---|---|---|---|---|---|---|---|---|"]
    for model in models_:
        eager = results.get((model, "unpartitioned"), {}).get("eager")
        for plan in plans:
            row = results[(model, plan)]
            sp = row.get("spmd")
            cell = fmt_ms(sp)
            if sp and "error" not in sp:
                cell += f" ({sp['mean_ms']:.0f})"
            peer_ = row.get("dtensor")
            dt = fmt_ms(peer_) if plan != "unpartitioned" else "-"
            if plan == "DP" and peer_ and "error" not in peer_:
                dt += " (DDP)"
            ej = row.get("jax")
            jx = fmt_ms(ej)
            if ej and "error" not in ej:
                jx += f" ({ej['devices']} dev)"
            out.append(f"| {model} | {plan} | {cell} | "
                       f"{fmt_ms(eager) if eager else '-'} | {dt} | {jx} | "
                       f"{ratio(sp, eager)} | "
                       f"{ratio(sp, peer_) if plan != 'unpartitioned' else '-'}"
                       f" | {ratio(sp, ej)} |")
    out += ["", f"Losses at step 1 and at step {args.warmup + args.iters} "
            "(the same batch every step); spmd's step 1 from the --check run:",
            "", "| model | plan | eager | DTensor / DDP | JAX | spmd | "
            "spmd --check | spmd inputs = torch init (max abs diff) |",
            "|---|---|---|---|---|---|---|---|"]
    for model in models_:
        for plan in plans:
            row = results[(model, plan)]
            e = results.get((model, "unpartitioned"), {}).get("eager")
            sp = row.get("spmd") or {}
            cells = [f"{fmt_loss(r, 'loss1')} / {fmt_loss(r, 'loss_last')}"
                     for r in (e, row.get("dtensor"), row.get("jax"), sp)]
            chk = sp.get("check", "-") if "error" not in sp else "fails"
            diff = sp.get("inputs_diff")
            out.append(f"| {model} | {plan} | " + " | ".join(cells) +
                       f" | {chk} | {'-' if diff is None else f'{diff:.1e}'} |")
    notes = sorted({r.get("note") for row in results.values()
                    for r in row.values() if isinstance(r, dict) and
                    r.get("note")})
    for n in notes:
        out.append(f"\n* JAX: {n}")
    if failures:
        out += ["", "Failures:", ""]
        for f in failures:
            out += [f"* {f['what']}: `{f['command']}`", "", "  ```"]
            out += ["  " + l for l in f["error"].splitlines()]
            out += ["  ```"]
    print("\n".join(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header, "failures": failures,
                       "results": [{"model": m, "plan": p, **row}
                                   for (m, p), row in results.items()]},
                      f, indent=1)


def _cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


if __name__ == "__main__":
    main()
