"""Where a spmd-run step spends its time: a sampling profile by plan step.

spmd-run has no per-step profiler, so this attaches gdb to a running
`spmd-run PROGRAM --steps K` every --interval seconds and records the
innermost recognisable frame of every rank thread: a JIT kernel
(`<entry>_kernel_N`; MLIR's ExecutionEngine registers the JIT code with
gdb, so the names resolve), the BLAS (a plan_gemm), a collective (the
in-process communicator, waiting included) or a copy. Kernels are
classified from the plan (`spmd-opt PROGRAM --spmd-compile`): contraction
(a linalg.generic with a reduction loop and a multiply-add body),
reduction, transpose/copy, elementwise; with their largest buffer shape.

  python3 bench/step/profile_step.py --bin build/bin PROGRAM --input-dir DIR \\
      [--steps K] [--samples N] [--interval S] [-- extra spmd-run options]

Prints a markdown table: share of the rank-thread samples per class and the
top kernels. A sample stops the process for the time gdb takes, which does
not bias the shares (samples are taken at wall-clock instants).
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import time


def classify_kernels(opt, program):
    plan = subprocess.run([opt, program, "--spmd-compile"], capture_output=True,
                          text=True, check=True).stdout
    kinds = {}
    for m in re.finditer(r"func\.func @(\w+)\(([^\n]*?)\) attributes \{spmd\.plan_kernel\}"
                         r"(.*?)\n  \}", plan, re.S):
        name, sig, body = m.group(1), m.group(2), m.group(3)
        shapes = [x.rstrip("x") for x in
                  re.findall(r"memref<((?:[0-9?]+x)*)f32", sig)]

        def size(shape):
            n = 1
            for d in shape.split("x") if shape else []:
                n *= int(d) if d != "?" else 1
            return n
        big = max(shapes, key=size, default="")
        iters = re.search(r"iterator_types = \[(.*?)\]", body)
        copy = re.search(r"\^bb0\(%(\w+): f32, %\w+: f32\):\s*linalg\.yield %(\w+) ", body)
        if ("linalg.transpose" in body or "linalg.copy" in body or
                (copy and copy.group(1) == copy.group(2))):
            kind = "transpose/copy"
        elif iters and "reduction" in iters.group(1):
            ops = re.findall(r"= (arith|math)\.(\w+)", body)
            names = {o[1] for o in ops if o[0] == "arith"}
            kind = ("contraction" if names == {"mulf", "addf"} and len(ops) == 2
                    else "reduction")
        else:
            kind = "elementwise"
        kinds[name] = (kind, big)
    return kinds


def sample(pid):
    out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex",
                          "thread apply all bt 12"], capture_output=True,
                         text=True).stdout
    threads = re.split(r"\nThread (\d+) ", "\n" + out)[1:]
    res = []
    # gdb's thread 1 is the main thread (compiling, or joining the ranks).
    for num, t in zip(threads[0::2], threads[1::2]):
        if num == "1" or '"spmd-run"' not in t.split("\n")[0]:
            continue
        frames = [l for l in t.split("\n") if l.startswith("#")]
        what = None
        for f in frames:
            m = re.search(r" in (\w+_kernel_\d+) \(", f)
            if m:
                what = m.group(1).replace("_mlir_ciface_", "")
                break
            if re.search(r"sgemm|dgemm|cblas_|gemm_", f):
                what = "BLAS (plan_gemm)"
                break
            if re.search(r"InProcessComm|Runner::arrive|Communicator::", f):
                what = "collective (incl. waiting)"
                break
            if re.search(r"memmove|memcpy|memset", f):
                what = "memcpy/memset (copies, feeding results back)"
                break
        if what is None:
            m = re.search(r" in ([\w:~<>]+)", frames[0]) if frames else None
            what = "other: " + (m.group(1) if m else "?")
        res.append(what)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("program")
    ap.add_argument("--input-dir", required=True)
    ap.add_argument("--ranks", default="4")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--interval", type=float, default=0.5)
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
    bindir = os.path.abspath(args.bin)
    kinds = classify_kernels(f"{bindir}/spmd-opt", args.program)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([f"{bindir}/spmd-run", args.program, "--ranks",
                             args.ranks, "--input-dir", args.input_dir,
                             "--steps", str(args.steps), *args.extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)
    counts = collections.Counter()
    taken = 0
    while proc.poll() is None and taken < args.samples:
        time.sleep(args.interval)
        s = sample(proc.pid)
        if not s:  # still compiling: no rank threads yet
            continue
        counts.update(s)
        taken += 1
    proc.kill()
    proc.wait()
    total = sum(counts.values())
    if not total:
        sys.exit("profile.py: no rank-thread samples (the run ended too soon?)")
    by_class = collections.Counter()
    for what, n in counts.items():
        by_class[kinds[what][0] + " kernels" if what in kinds else what] += n
    print(f"{taken} samples x rank threads = {total} rank-thread samples of "
          f"`spmd-run {os.path.basename(args.program)} --steps {args.steps}`\n")
    print("| where | share |\n|---|---|")
    for what, n in by_class.most_common():
        print(f"| {what} | {100 * n / total:.0f}% |")
    print("\n| top kernels | kind | largest buffer | share |\n|---|---|---|---|")
    for what, n in [(w, n) for w, n in counts.most_common() if w in kinds][:8]:
        print(f"| {what} | {kinds[what][0]} | {kinds[what][1]} | "
              f"{100 * n / total:.0f}% |")


if __name__ == "__main__":
    main()
