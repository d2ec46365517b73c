"""spmd.random gives the same global tensor under every layout.

  random_layouts.py OUTDIR

For several shapes and meshes (uneven shards, empty shards, two axes on one
dim, 2-D meshes) and every layout of a small set, a GLOBAL program draws a
uniform, a normal and a bernoulli tensor with its result in that layout;
spmd-run runs it partitioned with --check (exact: --atol 0 --rtol 0 against
the unpartitioned program) and writes the assembled global results, which
must equal, bit for bit, those of the program on one device. Then:

* statistics over 2^20 samples (uniform mean/variance, normal mean/variance,
  Bernoulli rate) within 5 standard errors,
* two ops of one program and two steps of one op draw different values.

Prints one line per case and 'N passed, M failed'.
"""
import os
import subprocess
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
passed = failed = 0


def report(name, ok, detail=""):
    global passed, failed
    passed += ok
    failed += not ok
    print(f"{name}: {'ok' if ok else 'FAILED ' + detail}")


def program(mesh, shape, layout):
    ty = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    mesh_decl = ", ".join(f'"{n}"={s}' for n, s in mesh)
    lay = f"#spmd.layout<@mesh, [{layout}]>"
    rep = "#spmd.layout<@mesh, [" + ", ".join("R" for _ in mesh) + "]>"
    return f"""spmd.mesh @mesh [{mesh_decl}]
func.func @draw(%seed: tensor<i64> {{spmd.layout = {rep}}},
                %step: tensor<i64> {{spmd.layout = {rep}}})
    -> ({ty} {{spmd.layout = {lay}}}, {ty} {{spmd.layout = {lay}}},
        {ty} {{spmd.layout = {lay}}}) {{
  %u = spmd.random "uniform"(-1.0, 3.0) seed %seed step %step : {ty}
  %n = spmd.random "normal"(0.5, 2.0) seed %seed step %step : {ty}
  %b = spmd.random "bernoulli"(0.3, 0.0) seed %seed step %step : {ty}
  return %u, %n, %b : {ty}, {ty}, {ty}
}}
"""


def run(path, outdir, ranks_check=True, inputs=None, extra=()):
    cmd = ["spmd-run", path, "--output-dir", outdir, *extra]
    if inputs:
        cmd += ["--input-dir", inputs]
    else:
        cmd += ["--seed", "11"]
    if ranks_check:
        cmd += ["--check", "--atol", "0", "--rtol", "0"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0, (r.stderr.strip().splitlines() or [""])[0]


def results(outdir, n=3):
    return [np.load(os.path.join(outdir, f"result{i}.npy")) for i in range(n)]


cases = [
    ([("x", 4)], (5, 8), ["S(0)", "S(1)", "R"]),             # 2,2,1,0 rows
    ([("x", 4)], (3, 2), ["S(0)", "S(1)"]),                  # empty shards
    ([("x", 2), ("y", 3)], (7, 5),
     ["S(0), S(1)", "S(1), S(0)", "S(0), S(0)", "R, S(1)", "S(1), S(1)"]),
    ([("x", 2), ("y", 2), ("z", 2)], (3, 9, 4),
     ["S(0), S(2), S(1)", "S(1), S(1), R", "R, S(2), S(2)"]),
]
for mesh, shape, layouts in cases:
    tag = "x".join(map(str, shape)) + "_" + "x".join(str(s) for _, s in mesh)
    # The reference: the same draws on one device (all replicated).
    rep = ", ".join("R" for _ in mesh)
    ref_path = os.path.join(out, f"{tag}_ref.mlir")
    with open(ref_path, "w") as f:
        f.write(program(mesh, shape, rep))
    ok, err = run(ref_path, os.path.join(out, f"{tag}_ref"), ranks_check=False,
                  extra=("--partition", "off"))
    if not ok:
        report(f"{tag} reference", False, err)
        continue
    want = results(os.path.join(out, f"{tag}_ref"))
    for layout in layouts:
        name = f"{tag} [{layout}]"
        path = os.path.join(out, f"{tag}_{layout}.mlir".replace(" ", "")
                            .replace("(", "").replace(")", "").replace(",", "_"))
        with open(path, "w") as f:
            f.write(program(mesh, shape, layout))
        d = path[:-5]
        ok, err = run(path, d)
        if not ok:
            report(name, False, err)
            continue
        got = results(d)
        same = all(np.array_equal(g, w) for g, w in zip(got, want))
        report(name, same, "" if same else "global values differ from one device")

# Statistics: 2^20 samples of each distribution, on 4 ranks (1024 rows).
stats_path = os.path.join(out, "stats.mlir")
with open(stats_path, "w") as f:
    f.write(program([("x", 4)], (1024, 1024), "S(0)"))
ok, err = run(stats_path, os.path.join(out, "stats"))
if not ok:
    report("statistics", False, err)
else:
    u, n, b = results(os.path.join(out, "stats"))
    count = u.size
    # uniform on [-1, 3): mean 1, variance 16/12; normal: mean 0.5, var 4;
    # bernoulli(0.3): rate 0.3. 5 standard errors.
    checks = [
        ("uniform mean", u.mean(), 1.0, np.sqrt(16 / 12 / count)),
        ("uniform variance", u.var(), 16 / 12, 16 / 12 * np.sqrt(0.8 / count)),
        ("uniform range", float(u.min() >= -1 and u.max() < 3), 1.0, 0.0),
        ("normal mean", n.mean(), 0.5, 2.0 / np.sqrt(count)),
        ("normal variance", n.var(), 4.0, 4.0 * np.sqrt(2.0 / count)),
        ("bernoulli rate", b.mean(), 0.3, np.sqrt(0.3 * 0.7 / count)),
        ("bernoulli values", float(set(np.unique(b)) <= {0.0, 1.0}), 1.0, 0.0),
    ]
    for what, got, want, se in checks:
        good = abs(got - want) <= 5 * se + 1e-12
        report(f"statistics {what}", good, f"{got} vs {want} (se {se:.2g})")
    # Distinct ops draw different values: uniform and bernoulli come from
    # the same words only if the offsets overlapped.
    u01 = (u + 1) / 4
    report("distinct ops", not np.array_equal(u01 < 0.3, b == 1))

# Distinct steps: the same op with step 0 and step 1.
small = os.path.join(out, "steps.mlir")
with open(small, "w") as f:
    f.write(program([("x", 2)], (4, 4), "S(0)"))
draws = []
for step in (0, 1):
    ind = os.path.join(out, f"steps_in{step}")
    os.makedirs(ind, exist_ok=True)
    np.save(os.path.join(ind, "arg0.npy"), np.array(7, dtype=np.int64))
    np.save(os.path.join(ind, "arg1.npy"), np.array(step, dtype=np.int64))
    ok, err = run(small, os.path.join(out, f"steps{step}"), inputs=ind)
    if not ok:
        report(f"step {step}", False, err)
        break
    draws.append(results(os.path.join(out, f"steps{step}"))[0])
if len(draws) == 2:
    report("distinct steps", not np.array_equal(draws[0], draws[1]))

print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
