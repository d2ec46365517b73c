"""Training-step benchmark: spmd-run (Megatron TP on 4 simulated ranks)
against PyTorch eager (the unpartitioned step) and against hand-written
Megatron TP in PyTorch on 4 gloo processes. See bench/step/README.md.

  python3 bench/step/run.py --bin build/bin [--models mlp,block] [--tiny]

For each model it
1. exports the training step (AdamW, MSE loss) with the frontend
   (`python3 -m spmd_torch export`, plan bench/step/*_plan.py, mesh tp=4),
   saving the initial values (arg<i>.npy) and the metadata;
2. reorders the program's results so that result i is the new value of
   argument i (the export returns the loss first), so `spmd-run --steps K`
   feeds every parameter and optimizer state back to itself;
3. runs `spmd-run --check --steps K` (every result of K steps on 4 ranks
   against the unpartitioned program) and reads the losses of steps 1 and K;
   the same for a diagnostic variant: the local program from the partition
   pipeline without spmd-fold-reshapes (`--reference` the global program);
4. --reps times, interleaved: times each spmd-run variant with a pair of
   runs, --steps 1 and --steps 1+n (the steady step is
   (T(1+n) - T(1)) / n, so the first step's page faults stay out; the JIT
   is outside spmd-run's timer anyway), and runs torch_step.py eager
   (1 and 2 threads) and gloo (warm-up steps, then timed steps);
5. reports the median wall and CPU time per step of each, their ratios, and
   the losses of spmd-run, eager and gloo side by side.

Every process runs with OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1 (spmd-run:
4 rank threads, 1 BLAS thread each; gloo: 4 processes of 1 thread; eager: 1
thread, and also 2 threads, the machine's core count). Prints a markdown
section on stdout; progress on stderr.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PY = sys.executable
MODELS_PY = os.path.join(ROOT, "test", "frontend", "Inputs", "models.py")

# Sizes: a step takes tens of ms on one core of this machine.
CONFIGS = {
    "mlp": {
        "class": "MLP",
        "model_args": {"dim": 1024, "hidden": 4096, "out": 1024},
        "input": [32, 1024], "target": [32, 1024],
        "plan": os.path.join(HERE, "mlp_plan.py"),
        "desc": "models.MLP: Linear(1024, 4096) + ReLU + Linear(4096, 1024), "
                "batch 32",
    },
    "block": {
        "class": "Block",
        "model_args": {"dim": 256, "heads": 8},
        "input": [4, 128, 256], "target": [4, 128, 256],
        "plan": os.path.join(HERE, "block_plan.py"),
        "desc": "models.Block: pre-LN transformer block (LayerNorm, causal "
                "attention with 8 heads, LayerNorm, GELU MLP 256-1024-256), "
                "dim 256, batch 4, seq 128",
    },
}
# --tiny: a smoke test of the script itself (seconds, not a benchmark).
TINY = {
    "mlp": {"model_args": {"dim": 16, "hidden": 32, "out": 8},
            "input": [8, 16], "target": [8, 8]},
    "block": {"model_args": {"dim": 32, "heads": 4},
              "input": [2, 8, 32], "target": [2, 8, 32]},
}
HPARAMS = {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def env1(threads=1):
    e = dict(os.environ)
    e["OMP_NUM_THREADS"] = str(threads)
    e["OPENBLAS_NUM_THREADS"] = str(threads)
    e["MKL_NUM_THREADS"] = str(threads)
    e["PYTHONPATH"] = os.path.join(ROOT, "frontend", "torch")
    return e


def split_top(text):
    """Splits at commas outside <>, (), [], {}."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def feed_back_order(text, meta):
    """Permutes the entry's results so that result i updates argument i.

    The export returns (loss, params..., states..., step); its arguments are
    (params..., states..., step, batch...). The updated arguments must form a
    prefix; the results that update nothing (the loss) go after them, where
    the argument (a batch tensor) has another shape and is not fed."""
    upd = [a.get("updated_by") for a in meta["args"]]
    n = 0
    while n < len(upd) and upd[n] is not None:
        n += 1
    if any(u is not None for u in upd[n:]):
        sys.exit("run.py: the updated arguments are not a prefix")
    perm = upd[:n] + [i for i in range(len(meta["results"])) if i not in upd[:n]]
    # The signature: func.func @name(args) -> (results) {
    m = re.search(r"(func\.func @\w+\()(.*?)(\) -> \()(.*?)(\) \{\n)", text)
    if not m:
        sys.exit("run.py: cannot find the entry's signature")
    res = split_top(m.group(4))
    if len(res) != len(perm):
        sys.exit(f"run.py: {len(res)} results in the program, {len(perm)} in the metadata")
    sig = m.group(1) + m.group(2) + m.group(3) + ", ".join(res[i] for i in perm) + m.group(5)
    text = text[:m.start()] + sig + text[m.end():]
    # The entry's return (the last one in the file).
    r = list(re.finditer(r"^(\s*)return (.*) : (.*)$", text, re.M))[-1]
    vals, types = split_top(r.group(2)), split_top(r.group(3))
    ret = (f"{r.group(1)}return {', '.join(vals[i] for i in perm)} : "
           f"{', '.join(types[i] for i in perm)}")
    return text[:r.start()] + ret + text[r.end():], perm.index(0)


def export(name, cfg, work):
    os.makedirs(work, exist_ok=True)
    cmd = [PY, "-m", "spmd_torch", "export", f"{MODELS_PY}:{cfg['class']}",
           "--model-args", json.dumps(cfg["model_args"]),
           "--input-shape", ",".join(map(str, cfg["input"])),
           "--target-shape", ",".join(map(str, cfg["target"])),
           "--target-dtype", "float32", "--loss", "mse",
           "--mesh", "tp=4", "--plan", cfg["plan"],
           "--optimizer", "adamw", "--lr", str(HPARAMS["lr"]),
           "--betas", ",".join(map(str, HPARAMS["betas"])),
           "--eps", str(HPARAMS["eps"]),
           "--weight-decay", str(HPARAMS["weight_decay"]),
           "-o", f"{work}/step.mlir", "--save-inputs", f"{work}/in",
           "--metadata", f"{work}/meta.json"]
    subprocess.run(cmd, check=True, env=env1(), cwd=ROOT)
    meta = json.load(open(f"{work}/meta.json"))
    text, loss_index = feed_back_order(open(f"{work}/step.mlir").read(), meta)
    with open(f"{work}/step_fed.mlir", "w") as f:
        f.write(text)
    with open(f"{work}/hparams.json", "w") as f:
        json.dump(dict(HPARAMS, model=name, model_args=cfg["model_args"]), f)
    return cmd, loss_index


def spmd_run(binary, args):
    out = subprocess.run([binary] + args, capture_output=True, text=True,
                         env=env1())
    if out.returncode != 0:
        sys.exit(f"run.py: spmd-run {' '.join(args)} failed:\n{out.stdout}{out.stderr}")
    return out


def ms_per_step(out):
    return float(re.search(r"([0-9.]+) ms/step", out.stderr).group(1))


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def spmd_pair(binary, base, n):
    """Runs --steps 1 and --steps 1+n; the steady wall and CPU ms per step."""
    c0 = child_cpu()
    t1 = ms_per_step(spmd_run(binary, base + ["--steps", "1"]))
    c1 = child_cpu()
    tn = ms_per_step(spmd_run(binary, base + ["--steps", str(1 + n)]))
    c2 = child_cpu()
    return (tn * (1 + n) - t1) / n, ((c2 - c1) - (c1 - c0)) / n * 1e3, t1


def torch_run(mode, work, name, warmup, steps, threads=1):
    out = subprocess.run([PY, os.path.join(HERE, "torch_step.py"), mode, work,
                          name, str(warmup), str(steps)],
                         capture_output=True, text=True, env=env1(threads))
    if out.returncode != 0:
        sys.exit(f"run.py: torch_step.py {mode} failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_run(binary, program, work, k, tag, extra=()):
    """spmd-run --check --steps k on 4 ranks; the log, the loss, the plan."""
    out = spmd_run(binary, [program, "--ranks", "4", "--input-dir", f"{work}/in",
                            "--output-dir", f"{work}/out_{tag}", "--check",
                            "--steps", str(k), "--print-plan", *extra])
    text = out.stdout + out.stderr
    with open(f"{work}/check_{tag}.log", "w") as f:
        f.write(text)
    if f"check passed (4 ranks, {k} step(s))" not in text:
        sys.exit(f"run.py: spmd-run --check did not pass ({tag}):\n{text}")
    coll = re.search(r"collectives: (.*)", text).group(1)
    kinds = [l.split()[0] for l in text.splitlines()
             if re.match(r"  [a-z_]+ ", l)]
    counts = {x: kinds.count(x) for x in sorted(set(kinds))}
    worst = max(float(x) for x in re.findall(r"max rel err ([0-9.e+-]+)", text))
    return coll, counts, worst


VARIANTS = {
    "spmd": "spmd-run, 4 simulated ranks",
    "nofold": "spmd-run, 4 ranks, partitioned without spmd-fold-reshapes",
    "eager1": "PyTorch eager, unpartitioned, 1 thread",
    "eager2": "PyTorch eager, unpartitioned, 2 threads",
    "gloo": "PyTorch gloo, hand-written Megatron TP, 4 processes x 1 thread",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin",
                    help="folder with spmd-opt and spmd-run (default build/bin)")
    ap.add_argument("--models", default="mlp,block")
    ap.add_argument("--work", help="working folder (default: a temporary one)")
    ap.add_argument("--reps", type=int, default=5,
                    help="repetitions, interleaved: one spmd-run pair per "
                         "variant, one eager and one gloo run each (default 5)")
    ap.add_argument("--steps", type=int, default=10,
                    help="timed steps per run, at most (default 10; spmd-run "
                         "runs fewer when one run would take over "
                         "--run-seconds)")
    ap.add_argument("--run-seconds", type=float, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--check-steps", type=int, default=3,
                    help="steps of the --check run whose loss is compared")
    ap.add_argument("--tiny", action="store_true",
                    help="tiny sizes: a quick test of this script")
    ap.add_argument("--no-nofold", action="store_true",
                    help="skip the diagnostic variant without spmd-fold-reshapes")
    args = ap.parse_args()
    bindir = os.path.abspath(args.bin)
    run_bin, opt_bin = f"{bindir}/spmd-run", f"{bindir}/spmd-opt"
    for b in (run_bin, opt_bin):
        if not os.access(b, os.X_OK):
            sys.exit(f"run.py: no {os.path.basename(b)} in {args.bin} (pass --bin)")
    work_root = args.work or tempfile.mkdtemp(prefix="spmd-step-")
    import torch
    reports = []
    for name in args.models.split(","):
        cfg = dict(CONFIGS[name], **(TINY[name] if args.tiny else {}))
        if args.tiny:
            cfg["desc"] = (f"{cfg['class']} (--tiny) {json.dumps(cfg['model_args'])}, "
                           f"input {cfg['input']}")
        work = os.path.join(work_root, name)
        log(f"[{name}] export")
        export_cmd, loss_index = export(name, cfg, work)
        programs = {"spmd": (f"{work}/step_fed.mlir", [])}
        if not args.no_nofold:
            # The partition pipeline without its first pass (diagnostic: the
            # matmuls stay linalg.matmul and become BLAS calls).
            subprocess.run([opt_bin, f"{work}/step_fed.mlir", "--pass-pipeline=" +
                            "builtin.module(spmd-propagate,spmd-partition,"
                            "func.func(spmd-dedup-collectives))",
                            "-o", f"{work}/nofold.mlir"], check=True)
            programs["nofold"] = (f"{work}/nofold.mlir",
                                  ["--reference", f"{work}/step_fed.mlir"])

        k = args.check_steps
        info = {}
        for tag, (prog, extra) in programs.items():
            log(f"[{name}] {tag}: spmd-run --check --steps {k}")
            info[tag] = check_run(run_bin, prog, work, k, tag, extra)
        loss_k = float(np.load(f"{work}/out_spmd/result{loss_index}.npy"))
        # Step 1's loss, and the step count of a timing run.
        spmd_run(run_bin, [programs["spmd"][0], "--ranks", "4",
                                 "--input-dir", f"{work}/in", "--output-dir",
                                 f"{work}/out_1", "--steps", "1"])
        loss_1 = float(np.load(f"{work}/out_1/result{loss_index}.npy"))
        nsteps = {}
        for tag, (prog, _) in programs.items():
            t1 = ms_per_step(spmd_run(run_bin, [prog, "--ranks", "4",
                                                "--input-dir", f"{work}/in",
                                                "--steps", "1"]))
            nsteps[tag] = max(2, min(args.steps, int(args.run_seconds * 1e3 / t1)))

        wall = {v: [] for v in VARIANTS}
        cpu = {v: [] for v in VARIANTS}
        losses = {}
        for rep in range(args.reps):
            for tag, (prog, _) in programs.items():
                log(f"[{name}] rep {rep + 1}/{args.reps}: {tag}, pair of "
                    f"--steps 1 / {1 + nsteps[tag]}")
                w, c, _ = spmd_pair(run_bin, [prog, "--ranks", "4", "--input-dir",
                                              f"{work}/in"], nsteps[tag])
                wall[tag].append(w)
                cpu[tag].append(c)
            for tag, mode, threads in (("eager1", "eager", 1),
                                       ("eager2", "eager", 2),
                                       ("gloo", "gloo", 1)):
                log(f"[{name}] rep {rep + 1}/{args.reps}: {tag}")
                r = torch_run(mode, work, name, args.warmup, args.steps, threads)
                wall[tag] += r["times_ms"]
                cpu[tag] += r["cpu_ms"]
                losses[tag] = r["losses"]
        reports.append(dict(name=name, cfg=cfg, export_cmd=export_cmd,
                            info=info, loss_1=loss_1, loss_k=loss_k, k=k,
                            nsteps=nsteps, wall=wall, cpu=cpu, losses=losses))

    p = print
    p("## Training step: spmd-run vs PyTorch eager vs hand-written Megatron TP on gloo\n")
    p(f"Command: `python3 bench/step/run.py --bin build/bin` (--reps {args.reps} "
      f"--steps {args.steps} --warmup {args.warmup} --run-seconds "
      f"{args.run_seconds:g}); {os.cpu_count()} CPUs, PyTorch {torch.__version__}, "
      f"numpy {np.__version__}, OMP_NUM_THREADS and OPENBLAS_NUM_THREADS = 1 "
      f"per process (eager 2 threads: 2). AdamW (lr {HPARAMS['lr']}, weight "
      f"decay {HPARAMS['weight_decay']}), MSE loss, f32, mesh tp=4, Megatron "
      f"plan. Wall: median ms per step; CPU: CPU ms per step summed over all "
      f"threads and processes (median).\n")
    for r in reports:
        p(f"### {r['name']}: {r['cfg']['desc']}\n")
        p("| run | wall ms/step | CPU ms/step | wall / eager 1t | wall / eager 2t "
          "| wall / gloo | CPU / eager 1t | CPU / gloo |")
        p("|---|---|---|---|---|---|---|---|")
        med = {v: statistics.median(x) for v, x in r["wall"].items() if x}
        cmed = {v: statistics.median(x) for v, x in r["cpu"].items() if x}
        for v, label in VARIANTS.items():
            if v not in med:
                continue
            p(f"| {label} | {med[v]:.1f} | {cmed[v]:.1f} | "
              f"{med[v] / med['eager1']:.2f} | {med[v] / med['eager2']:.2f} | "
              f"{med[v] / med['gloo']:.2f} | {cmed[v] / cmed['eager1']:.2f} | "
              f"{cmed[v] / cmed['gloo']:.2f} |")
        p("")
        el, gl = np.array(r["losses"]["eager1"]), np.array(r["losses"]["gloo"])
        k = r["k"]
        for tag, (coll, counts, worst) in r["info"].items():
            p(f"* {VARIANTS[tag]}: {coll}; plan steps per rank: "
              + ", ".join(f"{v} {s}" for s, v in counts.items())
              + f". `--check --steps {k}` passed (worst max rel err {worst:.2g}).")
        p(f"* Loss, spmd-run vs eager: step 1 {r['loss_1']:.7g} / {el[0]:.7g} "
          f"(rel diff {abs(r['loss_1'] - el[0]) / abs(el[0]):.1e}); step {k} "
          f"{r['loss_k']:.7g} / {el[k - 1]:.7g} (rel diff "
          f"{abs(r['loss_k'] - el[k - 1]) / abs(el[k - 1]):.1e}).")
        p(f"* Loss, gloo Megatron vs eager over {len(el)} steps: max rel diff "
          f"{float(np.max(np.abs(gl - el) / np.abs(el))):.1e} (step 1 "
          f"{gl[0]:.7g} / {el[0]:.7g}, step {len(el)} {gl[-1]:.7g} / {el[-1]:.7g}).")
        p("* spmd-run steady step estimates (ms), (T(1+n) - T(1)) / n with "
          + ", ".join(f"n = {n} ({t})" for t, n in r["nsteps"].items()) + ": "
          + "; ".join(f"{t} " + ", ".join(f"{x:.1f}" for x in r["wall"][t])
                      for t in r["nsteps"]) + ".")
        p("")
    p("Export commands (models from test/frontend/Inputs/models.py):\n")
    for r in reports:
        p("    " + " ".join(a if re.match(r"^[\w./:=,-]+$", a) else f"'{a}'"
                           for a in r["export_cmd"]).replace(ROOT + "/", "")
          .replace(work_root, "WORK")
          .replace(PY, "python3") + "\n")


if __name__ == "__main__":
    main()
