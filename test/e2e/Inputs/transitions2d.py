"""Layout transitions on a 2-D mesh between layouts that shard two dims,
nest two axes on one dim, or are partial, as an spmd.constrain in a small
GLOBAL program (constrain, then x + x) through `spmd-run --check`
(partitioned vs. unpartitioned on one device). With ROWS x COLS that do not
divide the mesh, local shapes differ per rank on both dims, so every
collective of the plan has rank-dependent sizes.

  transitions2d.py OUTDIR ROWS COLS X Y

Prints 'A -> B: ok' per transition (or the failure) and 'N passed, M failed'.
"""
import os
import subprocess
import sys

out, rows, cols, nx, ny = sys.argv[1], *map(int, sys.argv[2:6])
layouts = ["R, R", "S(0), S(1)", "S(1), S(0)", "S(0), S(0)", "S(1), S(1)",
           "P(sum), S(1)", "S(0), P(sum)", "R, S(0)", "S(1), R"]
ty = f"tensor<{rows}x{cols}xf32>"
passed = failed = 0
for a in layouts:
    for b in layouts:
        if a == b:
            continue
        name = f"{a}-{b}".replace("(", "").replace(")", "").replace(", ", "_")
        path = os.path.join(out, name + ".mlir")
        with open(path, "w") as f:
            f.write(f"""spmd.mesh @mesh ["x"={nx}, "y"={ny}]
func.func @transition(%a: {ty} {{spmd.layout = #spmd.layout<@mesh, [{a}]>}})
    -> ({ty} {{spmd.layout = #spmd.layout<@mesh, [{b}]>}}) {{
  %b = spmd.constrain %a to #spmd.layout<@mesh, [{b}]> : {ty}
  %c = arith.addf %b, %b : {ty}
  return %c : {ty}
}}
""")
        run = subprocess.run(["spmd-run", path, "--seed", "3", "--check"],
                             capture_output=True, text=True)
        good = run.returncode == 0 and "check passed" in run.stdout
        if good:
            passed += 1
            print(f"[{a}] -> [{b}]: ok")
        else:
            failed += 1
            err = (run.stderr.strip().splitlines() or ["no output"])[0]
            print(f"[{a}] -> [{b}]: FAILED: {err}")
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
