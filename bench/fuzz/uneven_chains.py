"""Random constrain chains on 3-D tensors over 2-D and 3-D meshes through
`spmd-run --check`: layouts uneven on several dims at once (two axes on one
dim, partial on several axes, shards of size-1 dims), so the collectives'
results have rank-dependent sizes on several dims (issue #18).

  python3 bench/fuzz/uneven_chains.py --count 150 --seed 5
"""
import argparse
import os
import random
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
PLACEMENTS = ["R", "S(0)", "S(1)", "S(2)"]
MESHES = [('["x"=2, "y"=3]', 2), ('["x"=2, "y"=2, "z"=2]', 3),
          ('["x"=3, "y"=2]', 2)]


def program(rng):
    mesh, axes = rng.choice(MESHES)
    shape = [rng.choice([1, 2, 3, 5, 7]) for _ in range(3)]
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"

    def layout(extra=()):
        return ("#spmd.layout<@mesh, [" + ", ".join(
            rng.choice(PLACEMENTS + list(extra)) for _ in range(axes)) + "]>")

    return f"""spmd.mesh @mesh {mesh}
func.func @main(%a: {t} {{spmd.layout = {layout(["P(sum)"])}}}) -> ({t} {{spmd.layout = {layout()}}}, {t} {{spmd.layout = {layout()}}}) {{
  %b = arith.negf %a : {t}
  %c = spmd.constrain %b to {layout()} : {t}
  %d = arith.mulf %c, %c : {t}
  %e = spmd.constrain %d to {layout()} : {t}
  %f = arith.addf %e, %b : {t}
  return %f, %c : {t}, {t}
}}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--spmd-run", default=os.path.join(ROOT, "build", "bin",
                                                       "spmd-run"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    passed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.count):
            path = os.path.join(tmp, f"chain{i}.mlir")
            with open(path, "w") as f:
                f.write(program(rng))
            r = subprocess.run([args.spmd_run, path, "--seed", "1", "--check"],
                               capture_output=True, text=True, timeout=120)
            if r.returncode == 0 and "check passed" in r.stdout:
                passed += 1
            else:
                print(f"program {i} FAILED:\n{open(path).read()}"
                      + (r.stdout + r.stderr)[-2000:])
    print(f"{args.count} programs: {passed} passed, "
          f"{args.count - passed} failed")


if __name__ == "__main__":
    main()
