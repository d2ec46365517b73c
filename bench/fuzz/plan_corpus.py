#!/usr/bin/env python3
"""Seed corpus of plans for tools/spmd-fuzz/spmd-plan-fuzzer.

Every `// -----` chunk of the .mlir files under test/ and examples/ that is
a plan already (has spmd.plan_version; invalid ones included: they reach
the loader's checks), and every other chunk that `spmd-opt --spmd-compile`
(partition=auto, and partition=off) compiles, written to OUT as one file
per distinct plan:

    python3 bench/fuzz/plan_corpus.py --bindir build/bin corpus-plan/
"""

import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate  # noqa: E402  (corpus_files, strip_comments)


def chunks():
    for path in mutate.corpus_files():
        with open(path, errors="replace") as f:
            text = f.read()
        for chunk in re.split(r"^// -----.*$", text, flags=re.M):
            chunk = mutate.strip_comments(chunk)
            if chunk.strip():
                yield chunk


def compile_chunk(bindir, chunk, partition):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as f:
        f.write(chunk)
        f.flush()
        try:
            r = subprocess.run(
                [os.path.join(bindir, "spmd-opt"), f.name,
                 f"--spmd-compile=partition={partition}"],
                capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return None
    return r.stdout if r.returncode == 0 and r.stdout.strip() else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--bindir", default="build/bin")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    plans, jobs = [], []
    for chunk in chunks():
        if "spmd.plan_version" in chunk:
            plans.append(chunk)
        elif "expected-error" not in chunk:
            jobs += [(chunk, "auto"), (chunk, "off")]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for plan in pool.map(lambda j: compile_chunk(args.bindir, *j), jobs):
            if plan:
                plans.append(plan)
    seen = set()
    for plan in plans:
        digest = hashlib.sha1(plan.encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        with open(os.path.join(args.out, digest[:16] + ".mlir"), "w") as f:
            f.write(plan)
    print(f"{len(seen)} plans in {args.out} ({len(jobs)} compilations)")


if __name__ == "__main__":
    main()
