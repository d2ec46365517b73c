"""One end-to-end case of the frontend matrix: export a training step with
`python -m spmd_torch export` (PyTorch's own training of the same model for
1 and 3 steps saved alongside), run it with `spmd-run` for 1 and 3 steps on
the simulated ranks with --check (every rank against the unpartitioned
program), and compare every result with PyTorch's (compare_npy.py).

  e2e_case.py NAME WORKDIR RANKS [TOL] -- EXPORT ARGS...

TOL (default 1e-4) bounds the comparison with PyTorch; one above 1e-3 (a
bf16 model, whose f32 loss inherits bf16 rounding) is also spmd-run's
--atol/--rtol. TOL `none` skips PyTorch (a model with dropout: spmd's
random stream is its own, so the check is against the unpartitioned
program only). With SPMD_E2E_MPI=1 the 3-step run is also made under
`mpirun -np RANKS --comm mpi` and its results must equal the in-process
run's up to the rounding of the reduction order (rtol 1e-5, atol 1e-6; MPI
sums in its own order).

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
torch_ref = tol != "none"
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
     "--save-inputs", f"{d}/in"] +
    (["--save-outputs", f"{d}/torch", "--steps", "1,3"] if torch_ref else []),
    "export")
with open(f"{d}/meta.json") as f:
    meta = json.load(f)
print(f"{name}: exported ({len(meta['args'])} args, {len(meta['results'])} results)")
for steps in (1, 3):
    tols = ["--atol", tol, "--rtol", tol] if torch_ref and float(tol) > 1e-3 \
        else []
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
    label = f"{name}: {steps} step{'s' if steps > 1 else ''}: spmd-run check passed"
    if not torch_ref:
        print(label)
        continue
    run([sys.executable, f"{here}/compare_npy.py", f"{d}/out{steps}",
         f"{d}/torch/step{steps}", tol, "--meta", f"{d}/meta.json"],
        f"comparison with PyTorch after {steps} step(s)")
    print(f"{label}, PyTorch comparison passed")

if os.environ.get("SPMD_E2E_MPI") == "1":
    import numpy as np
    out = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", ranks,
               "spmd-run", f"{d}/step.mlir", "--comm", "mpi", "--input-dir",
               f"{d}/in", "--output-dir", f"{d}/mpi3", "--check", "--steps", "3"],
              "mpirun spmd-run --steps 3")
    if f"check passed ({ranks} ranks, 3 step(s))" not in out:
        print(f"{name}: mpirun did not pass its check\n{out}")
        sys.exit(1)
    for i in range(len(meta["results"])):
        a = np.load(f"{d}/mpi3/result{i}.npy")
        b = np.load(f"{d}/out3/result{i}.npy")
        if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
            print(f"{name}: mpirun result {i} differs from the in-process run's")
            sys.exit(1)
    print(f"{name}: mpirun: 3 steps, check passed, results match the in-process run's")
