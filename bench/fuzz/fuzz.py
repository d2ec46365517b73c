#!/usr/bin/env python3
"""Random GLOBAL programs through the whole pipeline under `spmd-run --check`.

Each program is a random DAG of rank-2 ops (elementwise arith/math,
matmuls, transposes, row and column sums broadcast back, spmd.constrain to
a random layout mid-program) on random shapes (sizes that do not divide
the mesh, unit dims), with random layouts on its arguments and results
(replicated, sharded, two axes on one dim) on a random 1-D or 2-D mesh.
spmd-run partitions it, compiles it, runs every rank and compares each
result with the program run unpartitioned (--check), for two steps when a
result can feed an argument back.

Every run ends in one of:
  passed    the check passed;
  rejected  a clean error (non-zero exit, a message, no signal): counted,
            printed with the message's first line;
  FAILED    a wrong number (the check failed), a crash (a signal, an LLVM
            ERROR, an assertion, a stack dump) or a hang (past --timeout):
            the program is kept in --keep and the exit status is 1.

    bench/fuzz/fuzz.py [--count N] [--seed S] [--keep DIR] [--spmd-run BIN]
                       [--pipelines]

--pipelines also runs each program through spmd-opt's --spmd-propagate,
--spmd-partition-pipeline and --spmd-compile (a crash or hang there is a
FAILED program too).
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

MESHES = [[("x", 2)], [("x", 3)], [("x", 4)], [("x", 2), ("y", 2)],
          [("x", 2), ("y", 3)], [("x", 5)]]
SIZES = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 33]


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.mesh = rng.choice(MESHES)
        self.args, self.body, self.pool = [], [], []
        self.n = 0

    def name(self):
        self.n += 1
        return f"%v{self.n}"

    def layout(self, partial=False):
        axes = []
        for _ in self.mesh:
            kinds = ["R", "R", "S(0)", "S(1)"] + (["P(sum)"] if partial else [])
            axes.append(self.rng.choice(kinds))
        return "#spmd.layout<@mesh, [" + ", ".join(axes) + "]>"

    def arg(self, shape):
        name = f"%a{len(self.args)}"
        self.args.append((name, shape, self.layout(partial=True)))
        self.pool.append((name, shape))
        return name

    def value(self, shape=None):
        """A pooled value of `shape` (or any), else a new argument."""
        cands = [v for v in self.pool if shape is None or v[1] == shape]
        if cands and self.rng.random() < 0.8:
            return self.rng.choice(cands)
        if shape is None:
            shape = (self.rng.choice(SIZES), self.rng.choice(SIZES))
        return self.arg(shape), shape

    @staticmethod
    def ty(shape):
        return "tensor<" + "x".join(map(str, shape)) + "xf32>"

    def emit(self, line, shape):
        name = self.name()
        self.body.append(f"  {name} = {line}")
        self.pool.append((name, shape))
        return name

    def empty(self, shape, fill=False):
        e = self.name()
        self.body.append(f"  {e} = tensor.empty() : {self.ty(shape)}")
        if not fill:
            return e
        f = self.name()
        self.body.append(f"  {f} = linalg.fill ins(%zero : f32) outs({e} : "
                         f"{self.ty(shape)}) -> {self.ty(shape)}")
        return f

    def op(self):
        kind = self.rng.choice(["binary", "binary", "unary", "matmul",
                                "matmul", "transpose", "reduce", "constrain",
                                "slice", "concat", "reshape"])
        if kind == "slice":
            a, (m, n) = self.value()
            r0, r1 = self.rng.randint(0, m - 1), self.rng.randint(0, n - 1)
            sm, sn = self.rng.randint(1, m - r0), self.rng.randint(1, n - r1)
            return self.emit(
                f"tensor.extract_slice {a}[{r0}, {r1}] [{sm}, {sn}] [1, 1] : "
                f"{self.ty((m, n))} to {self.ty((sm, sn))}", (sm, sn))
        if kind == "concat":
            a, (m, n) = self.value()
            dim = self.rng.choice([0, 1])
            other = (self.rng.choice(SIZES), n) if dim == 0 else \
                (m, self.rng.choice(SIZES))
            b, _ = self.value(other)
            out = (m + other[0], n) if dim == 0 else (m, n + other[1])
            return self.emit(
                f"tensor.concat dim({dim}) {a}, {b} : ({self.ty((m, n))}, "
                f"{self.ty(other)}) -> {self.ty(out)}", out)
        if kind == "reshape":
            a, (m, n) = self.value()
            total = m * n
            divisors = [d for d in range(1, total + 1) if total % d == 0]
            p = self.rng.choice(divisors)
            flat = self.name()
            self.body.append(f"  {flat} = tensor.collapse_shape {a} [[0, 1]] : "
                             f"{self.ty((m, n))} into tensor<{total}xf32>")
            return self.emit(
                f"tensor.expand_shape {flat} [[0, 1]] output_shape [{p}, "
                f"{total // p}] : tensor<{total}xf32> into "
                f"{self.ty((p, total // p))}", (p, total // p))
        if kind == "binary":
            a, shape = self.value()
            b, _ = self.value(shape)
            op = self.rng.choice(["arith.addf", "arith.mulf", "arith.subf",
                                  "arith.maximumf"])
            return self.emit(f"{op} {a}, {b} : {self.ty(shape)}", shape)
        if kind == "unary":
            a, shape = self.value()
            op = self.rng.choice(["arith.negf", "math.tanh", "math.absf"])
            return self.emit(f"{op} {a} : {self.ty(shape)}", shape)
        if kind == "matmul":
            a, (m, k) = self.value()
            n = self.rng.choice(SIZES)
            b, _ = self.value((k, n))
            out = self.empty((m, n), fill=True)
            return self.emit(
                f"linalg.matmul ins({a}, {b} : {self.ty((m, k))}, "
                f"{self.ty((k, n))}) outs({out} : {self.ty((m, n))}) -> "
                f"{self.ty((m, n))}", (m, n))
        if kind == "transpose":
            a, (m, n) = self.value()
            out = self.empty((n, m))
            return self.emit(
                f"linalg.transpose ins({a} : {self.ty((m, n))}) outs({out} : "
                f"{self.ty((n, m))}) permutation = [1, 0]", (n, m))
        if kind == "reduce":
            # A row or column sum, broadcast back to the operand's shape
            # (a softmax-like normalization: x - sum).
            a, (m, n) = self.value()
            dim = self.rng.choice([0, 1])
            rshape = (m,) if dim == 1 else (n,)
            acc = self.empty(rshape, fill=True)
            r = self.name()
            self.body.append(
                f"  {r} = linalg.reduce ins({a} : {self.ty((m, n))}) outs({acc} : "
                f"tensor<{rshape[0]}xf32>) dimensions = [{dim}]\n"
                f"    (%x: f32, %y: f32) {{\n"
                f"      %s = arith.addf %x, %y : f32\n"
                f"      linalg.yield %s : f32\n    }}")
            out = self.empty((m, n))
            bmap = "(d0, d1) -> (d0)" if dim == 1 else "(d0, d1) -> (d1)"
            return self.emit(
                f"linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> "
                f"(d0, d1)>, affine_map<{bmap}>, affine_map<(d0, d1) -> "
                f"(d0, d1)>], iterator_types = [\"parallel\", \"parallel\"]}} "
                f"ins({a}, {r} : {self.ty((m, n))}, tensor<{rshape[0]}xf32>) "
                f"outs({out} : {self.ty((m, n))}) {{\n"
                f"    ^bb0(%p: f32, %q: f32, %o: f32):\n"
                f"      %d = arith.subf %p, %q : f32\n"
                f"      linalg.yield %d : f32\n  }} -> {self.ty((m, n))}",
                (m, n))
        a, shape = self.value()
        return self.emit(f"spmd.constrain {a} to {self.layout()} : "
                         f"{self.ty(shape)}", shape)

    def program(self):
        for _ in range(self.rng.randint(3, 24)):
            self.op()
        computed = [v for v in self.pool if v[0].startswith("%v")]
        results = self.rng.sample(computed, min(len(computed),
                                                self.rng.randint(1, 3)))
        mesh = ", ".join(f'"{a}"={k}' for a, k in self.mesh)
        args = ",\n    ".join(f"{n}: {self.ty(s)} {{spmd.layout = {l}}}"
                              for n, s, l in self.args)
        res_layouts = [self.layout() for _ in results]
        rets = ", ".join(f"{self.ty(s)} {{spmd.layout = {l}}}"
                         for (n, s), l in zip(results, res_layouts))
        lines = [f"spmd.mesh @mesh [{mesh}]",
                 f"func.func @main(\n    {args})\n    -> ({rets}) {{",
                 "  %zero = arith.constant 0.0 : f32", *self.body,
                 "  return " + ", ".join(n for n, _ in results) + " : " +
                 ", ".join(self.ty(s) for _, s in results), "}"]
        return "\n".join(lines) + "\n"


CRASH = ("LLVM ERROR", "Assertion", "Stack dump", "PLEASE submit",
         "Segmentation", "Aborted", "terminate called")


PIPELINES = ["--spmd-propagate", "--spmd-partition-pipeline",
             "--spmd-compile"]


def classify(proc, timed_out):
    out = proc.stdout + proc.stderr if proc else ""
    if timed_out:
        return "FAILED", "hang"
    if proc.returncode < 0 or any(c in out for c in CRASH):
        return "FAILED", f"crash (status {proc.returncode})"
    if proc.returncode == 0 and "check passed" in out:
        return "passed", ""
    if "MISMATCH" in out or "check FAILED" in out or "mismatch" in out:
        return "FAILED", "wrong numbers: " + out.strip().splitlines()[-1]
    msg = next((l for l in out.splitlines() if "error" in l.lower()),
               out.strip().splitlines()[-1] if out.strip() else "no output")
    if proc.returncode == 0:
        return "FAILED", "exit 0 without 'check passed'"
    return "rejected", msg[:200]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write every failing program here")
    ap.add_argument("--spmd-run", default=os.path.join(
        os.environ.get("SPMD_BUILD_DIR", os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")),
        "bin", "spmd-run"))
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--pipelines", action="store_true",
                    help="also run each program through spmd-opt with "
                    + ", ".join(PIPELINES))
    args = ap.parse_args()
    counts = {"passed": 0, "rejected": 0, "FAILED": 0}
    opt_runs = [0]
    opt_errors = dict.fromkeys(PIPELINES, 0)
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.count):
            seed = args.seed * 100003 + i
            text = Gen(random.Random(seed)).program()
            path = os.path.join(tmp, f"p{seed}.mlir")
            with open(path, "w") as f:
                f.write(text)
            cmd = [args.spmd_run, path, "--seed", str(seed), "--check",
                   "--timeout", "30"]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True,
                                      timeout=args.timeout)
                verdict, why = classify(proc, False)
            except subprocess.TimeoutExpired:
                verdict, why = classify(None, True)
            if verdict != "FAILED" and args.pipelines:
                # The same program through spmd-opt's pipelines: each must
                # pass or fail cleanly (no crash, no hang).
                for pipeline in PIPELINES:
                    opt = [args.spmd_run.replace("spmd-run", "spmd-opt"),
                           path, pipeline, "-o", "/dev/null"]
                    try:
                        p = subprocess.run(opt, capture_output=True,
                                           text=True, timeout=args.timeout)
                        out = p.stdout + p.stderr
                        if p.returncode < 0 or any(c in out for c in CRASH):
                            verdict, why = "FAILED", \
                                f"spmd-opt {pipeline}: crash ({p.returncode})"
                        elif p.returncode != 0:
                            opt_errors[pipeline] += 1
                    except subprocess.TimeoutExpired:
                        verdict, why = "FAILED", f"spmd-opt {pipeline}: hang"
                    opt_runs[0] += 1
            counts[verdict] += 1
            if verdict != "passed" or args.verbose:
                print(f"program {seed}: {verdict} {why}")
            if verdict == "FAILED" and args.keep:
                os.makedirs(args.keep, exist_ok=True)
                with open(os.path.join(args.keep, f"p{seed}.mlir"), "w") as f:
                    f.write(text)
    print(f"{args.count} programs: {counts['passed']} passed, "
          f"{counts['rejected']} rejected with a clean error, "
          f"{counts['FAILED']} FAILED")
    if args.pipelines:
        print(f"spmd-opt: {opt_runs[0]} runs, clean errors: " +
              ", ".join(f"{p} {n}" for p, n in opt_errors.items()))
    return 1 if counts["FAILED"] else 0


if __name__ == "__main__":
    sys.exit(main())
