"""Runs every 1-D layout transition between R, S(0), S(1) and P(sum) as an
spmd.constrain in a small GLOBAL program (constrain, then x + x) through
`spmd-run --check` (partitioned on the mesh vs. unpartitioned on one device).

  transitions.py OUTDIR ROWS COLS RANKS

For each transition prints 'A -> B:' followed by the plan's collective
summary (kind and axes) and spmd-run's check line; exits 1 when a run fails.
"""
import os
import subprocess
import sys

out, rows, cols, ranks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
placements = ["R", "S(0)", "S(1)", "P(sum)"]
ty = f"tensor<{rows}x{cols}xf32>"
ok = True
for a in placements:
    for b in placements:
        if a == b:
            continue
        name = f"{a}-{b}".replace("(", "").replace(")", "")
        path = os.path.join(out, name + ".mlir")
        with open(path, "w") as f:
            f.write(f"""spmd.mesh @mesh ["x"={ranks}]
func.func @transition(%a: {ty} {{spmd.layout = #spmd.layout<@mesh, [{a}]>}})
    -> ({ty} {{spmd.layout = #spmd.layout<@mesh, [{b}]>}}) {{
  %b = spmd.constrain %a to #spmd.layout<@mesh, [{b}]> : {ty}
  %c = arith.addf %b, %b : {ty}
  return %c : {ty}
}}
""")
        run = subprocess.run(["spmd-run", path, "--seed", "3", "--check", "--print-plan"],
                             capture_output=True, text=True)
        colls = sorted(l.split(":", 1)[1].split(",")[0].strip()
                       for l in run.stdout.splitlines() if l.startswith("collectives:"))
        checks = [l for l in run.stdout.splitlines() if l.startswith("check ")]
        print(f"{a} -> {b}: [{'; '.join(colls)}] {checks[0] if checks else 'NO CHECK'}")
        if run.returncode != 0:
            ok = False
            print(run.stdout + run.stderr)
sys.exit(0 if ok else 1)
