"""One end-to-end case of the frontend matrix: export a training step with
`python -m spmd_torch export` (PyTorch's own training of the same model for
1 and 3 steps saved alongside), run it with `spmd-run` for 1 and 3 steps on
the simulated ranks with --check (every rank against the unpartitioned
program), and compare every result with PyTorch's (compare_npy.py).

  e2e_case.py NAME WORKDIR RANKS [TOL] -- EXPORT ARGS...

TOL (default 1e-4) bounds the comparison with PyTorch; one above 1e-3 (a
bf16 model, whose f32 loss inherits bf16 rounding) is also spmd-run's
--atol/--rtol.

Prints the plan's collectives and one line per stage:

  NAME: exported (N args, M results)
  NAME: collectives: ...
  NAME: 1 step: spmd-run check passed, PyTorch comparison passed
  NAME: 3 steps: spmd-run check passed, PyTorch comparison passed

and on a failure the failing tool's output, exiting 1.
"""
import json
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sep = sys.argv.index("--")
name, work, ranks = sys.argv[1], sys.argv[2], sys.argv[3]
tol = sys.argv[4] if sep > 4 else "1e-4"
export_args = sys.argv[sep + 1:]
d = os.path.join(work, name)
os.makedirs(d, exist_ok=True)


def run(cmd, what):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{name}: {what} FAILED (exit {r.returncode})")
        print(r.stdout[-4000:])
        print(r.stderr[-4000:])
        sys.exit(1)
    return r.stdout


run([sys.executable, "-m", "spmd_torch", "export", *export_args,
     "--feedback-order", "-o", f"{d}/step.mlir", "--metadata", f"{d}/meta.json",
     "--save-inputs", f"{d}/in", "--save-outputs", f"{d}/torch", "--steps", "1,3"],
    "export")
with open(f"{d}/meta.json") as f:
    meta = json.load(f)
print(f"{name}: exported ({len(meta['args'])} args, {len(meta['results'])} results)")
for steps in (1, 3):
    tols = ["--atol", tol, "--rtol", tol] if float(tol) > 1e-3 else []
    out = run(["spmd-run", f"{d}/step.mlir", "--ranks", ranks, "--input-dir",
               f"{d}/in", "--output-dir", f"{d}/out{steps}", "--check",
               "--steps", str(steps), "--print-plan", *tols],
              f"spmd-run --steps {steps}")
    if steps == 1:
        for line in out.splitlines():
            if line.startswith("collectives:"):
                print(f"{name}: {line}")
    if f"check passed ({ranks} ranks, {steps} step(s))" not in out:
        print(f"{name}: spmd-run --steps {steps} did not pass its check\n{out}")
        sys.exit(1)
    run([sys.executable, f"{here}/compare_npy.py", f"{d}/out{steps}",
         f"{d}/torch/step{steps}", tol, "--meta", f"{d}/meta.json"],
        f"comparison with PyTorch after {steps} step(s)")
    print(f"{name}: {steps} step{'s' if steps > 1 else ''}: spmd-run check "
          "passed, PyTorch comparison passed")
