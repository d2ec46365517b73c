#!/usr/bin/env python3
"""Mutated test programs through spmd-opt's pipelines and spmd-run --check.

The corpus is every .mlir file under test/ and examples/ (split at
`// -----`), kept where `spmd-opt` parses and verifies it. Each mutant is
one corpus program with 1 to 3 random mutations:

  int      an integer literal replaced by a boundary value (0, -1, 2^31,
           2^32, 2^63-1, 2^63, 2^64, 10^30, ...)
  dim      a dim of a tensor/memref type made 0, 1, huge, `?` or negative
  elem     an element type changed (f32 -> i1, i64, f16, bf16, index, ...)
  rank     a dim added to or dropped from a shaped type
  line     a line deleted, duplicated, or swapped with another
  ident    an SSA value or @symbol replaced by another of the program
  opname   an op name replaced by another op name of the corpus
  layout   a placement of a #spmd.layout changed (S(d) with any d, R,
           P(kind) with any kind, a placement added or dropped)
  mesh     a mesh axis renamed, resized, added or dropped; a mesh ref
           changed
  attr     an attribute value changed (dims/permutations, bools, strings)
  splice   a line of another corpus program inserted
  trunc    the program truncated at a random character
  chars    a random span deleted, or punctuation inserted

Every mutant runs through each tool (default: `spmd-opt` with no pass,
`--spmd-propagate`, `--spmd-partition-pipeline`, `--spmd-compile`, and
`spmd-run --seed 1 --check --timeout 10`) and each run is classified:

  ok          exit 0 (spmd-run: and, with --check, `check passed` or no
              comparison to make);
  error       a clean error: non-zero exit, a diagnostic, no signal;
  CRASH       a signal, `LLVM ERROR`, an assertion, a stack dump, `PLEASE
              submit a bug report`, an uncaught C++ exception, or a
              non-zero exit without any message;
  HANG        past --timeout (the harness kills it) having used less than
              a tenth of it in CPU time (blocked: a deadlock, a lost
              collective; spmd-run's own collective timeout is 10 s);
  slow        past --timeout while computing (CPU time at least a tenth
              of it, on a loaded machine: a large program replicated on
              many ranks): reported, not a failure;
  MISCOMPILE  spmd-run --check compared and found a mismatch, unless
              every mismatching result may hold a tensor.empty's undefined
              contents (read through any ops, or an `outs` not
              overwritten): that counts as `undefined`; or the same
              program in f64 (every float type made f64) passes the
              check: the f32 results differ by summation order only
              (long contractions split across ranks), `rounding`.

The tools after `opt` are skipped for a mutant that `opt` (parse and
verify, the first step of every tool) rejects cleanly, unless --all-tools.
CRASH, HANG and MISCOMPILE are failures: the mutant, the command and the
output go to --keep DIR, and the exit status is 1. Deterministic for a
given --seed and --count (and corpus), whatever --jobs.

    bench/fuzz/mutate.py [--count N] [--seed S] [--jobs J] [--keep DIR]
                         [--bin DIR] [--tools opt,propagate,...]
"""
import argparse
import concurrent.futures
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

INTS = [0, 1, -1, 2, 3, 7, 64, 65536, 2**31 - 1, 2**31, -2**31, 2**32,
        2**62, 2**63 - 1, 2**63, -2**63, 2**64, 10**30]
DIMS = ["0", "1", "?", "2147483648", "4294967296", "9223372036854775807",
        "1000000000000", "65536", "3", "-1"]
ELEMS = ["f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index",
         "complex<f32>", "f8E4M3FN", "ui32"]
KINDS = ["sum", "avg", "max", "min", "prod", "xor", ""]
BOOLS = ["true", "false"]

CRASH_MARKS = ("LLVM ERROR", "Assertion", "Stack dump", "PLEASE submit",
               "Segmentation fault", "Aborted", "terminate called",
               "UNREACHABLE", "AddressSanitizer", "core dumped",
               "Illegal instruction", "Floating point exception")

TOOLS = {
    "opt": lambda b, p: [b + "/spmd-opt", p, "-o", "/dev/null"],
    "propagate": lambda b, p: [b + "/spmd-opt", p, "--spmd-propagate",
                               "-o", "/dev/null"],
    "partition": lambda b, p: [b + "/spmd-opt", p,
                               "--spmd-partition-pipeline", "-o", "/dev/null"],
    "compile": lambda b, p: [b + "/spmd-opt", p, "--spmd-compile",
                             "-o", "/dev/null"],
    "autoshard": lambda b, p: [b + "/spmd-opt", p, "--spmd-auto-shard",
                               "-o", "/dev/null"],
    "run": lambda b, p: [b + "/spmd-run", p, "--seed", "1", "--check",
                         "--timeout", "10"],
}
DEFAULT_TOOLS = "opt,propagate,partition,compile,run"


# ---------------------------------------------------------------- corpus

def strip_comments(text):
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("//"):
            continue
        out.append(line)
    return "\n".join(out).strip() + "\n"


def corpus_files():
    files = []
    for top in ("test", "examples"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith(".mlir"):
                    files.append(os.path.join(dirpath, n))
    return sorted(files)


def load_corpus(bindir, tmp):
    """Every `// -----` chunk of the corpus files that spmd-opt accepts."""
    chunks = []
    for path in corpus_files():
        with open(path, errors="replace") as f:
            text = f.read()
        for i, chunk in enumerate(re.split(r"^// -----.*$", text,
                                           flags=re.M)):
            chunk = strip_comments(chunk)
            if "expected-error" in chunk or not chunk.strip():
                continue
            chunks.append((os.path.relpath(path, ROOT) + f"#{i}", chunk))
    good = []
    for name, chunk in chunks:
        p = os.path.join(tmp, "corpus.mlir")
        with open(p, "w") as f:
            f.write(chunk)
        r = subprocess.run([bindir + "/spmd-opt", p, "-o", "/dev/null"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            good.append((name, chunk))
    return good


# ------------------------------------------------------------- mutations

INT_RE = re.compile(r"(?<![\w.#%@$^<-])-?\d+(?![\w.])")
SHAPED_RE = re.compile(r"\b(tensor|memref|vector)<([^<>]*?)>")
ELEM_RE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i16|i32|i64|index)\b")
SSA_RE = re.compile(r"%[A-Za-z_0-9.$-]+")
SYM_RE = re.compile(r"@[A-Za-z_][A-Za-z_0-9.$-]*")
OP_RE = re.compile(r"\b([a-z_]+\.[a-z_][a-z_0-9.]*)\b")
PLACEMENT_RE = re.compile(r"\b(S\(-?\d+\)|R|P\(\w*\))")
LAYOUT_RE = re.compile(r"#spmd\.layout<(@[\w.$-]+),\s*\[([^\]]*)\]>")
MESH_RE = re.compile(r"spmd\.mesh\s+(@[\w.$-]+)\s*\[([^\]]*)\]")
AXIS_RE = re.compile(r"\"(\w+)\"\s*=\s*(\d+)")
LIST_RE = re.compile(r"(dimensions|permutation|dims|axes|static_offsets|"
                     r"static_sizes|static_strides)\s*=\s*\[([^\]]*)\]")


def pick_match(rng, regex, text):
    ms = list(regex.finditer(text))
    return rng.choice(ms) if ms else None


def splice_at(text, m, group, new):
    return text[:m.start(group)] + new + text[m.end(group):]


class Mutator:
    def __init__(self, rng, corpus):
        self.rng = rng
        self.corpus = corpus

    def m_int(self, t):
        m = pick_match(self.rng, INT_RE, t)
        if not m:
            return None
        return splice_at(t, m, 0, str(self.rng.choice(INTS)))

    def retype(self, t, m, inner):
        """Replaces the shaped type at `m` by one with `inner`: mostly
        everywhere it occurs (the program stays consistent and reaches the
        passes), else only there."""
        new = f"{m.group(1)}<{inner}>"
        if self.rng.random() < 0.7:
            return t.replace(m.group(0), new)
        return splice_at(t, m, 0, new)

    def m_dim(self, t):
        m = pick_match(self.rng, SHAPED_RE, t)
        if not m:
            return None
        parts = m.group(2).split("x")
        if len(parts) < 2:
            return None
        i = self.rng.randrange(len(parts) - 1)
        parts[i] = self.rng.choice(DIMS)
        return self.retype(t, m, "x".join(parts))

    def m_elem(self, t):
        m = pick_match(self.rng, ELEM_RE, t)
        if not m:
            return None
        new = self.rng.choice(ELEMS)
        if self.rng.random() < 0.5:
            return re.sub(r"\b" + m.group(0) + r"\b", new, t)
        return splice_at(t, m, 0, new)

    def m_rank(self, t):
        m = pick_match(self.rng, SHAPED_RE, t)
        if not m:
            return None
        parts = m.group(2).split("x")
        if len(parts) > 1 and self.rng.random() < 0.5:
            del parts[self.rng.randrange(len(parts) - 1)]
        else:
            parts.insert(self.rng.randrange(len(parts)),
                         self.rng.choice(["1", "2", "4", "7", "?"]))
        return self.retype(t, m, "x".join(parts))

    def m_line(self, t):
        lines = t.splitlines()
        if len(lines) < 2:
            return None
        i = self.rng.randrange(len(lines))
        op = self.rng.choice(["del", "dup", "swap", "move"])
        if op == "del":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = self.rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            line = lines.pop(i)
            lines.insert(self.rng.randrange(len(lines) + 1), line)
        return "\n".join(lines) + "\n"

    def m_ident(self, t):
        regex = SSA_RE if self.rng.random() < 0.7 else SYM_RE
        ms = list(regex.finditer(t))
        if len(ms) < 2:
            return None
        m = self.rng.choice(ms)
        other = self.rng.choice(ms).group(0)
        return splice_at(t, m, 0, other)

    def m_opname(self, t):
        m = pick_match(self.rng, OP_RE, t)
        if not m:
            return None
        _, other = self.rng.choice(self.corpus)
        o = pick_match(self.rng, OP_RE, other)
        if not o:
            return None
        return splice_at(t, m, 1, o.group(1))

    def m_layout(self, t):
        m = pick_match(self.rng, LAYOUT_RE, t)
        if not m:
            return None
        ps = [p.strip() for p in m.group(2).split(",") if p.strip()]
        choice = self.rng.random()
        new = self.rng.choice(
            ["R", f"S({self.rng.choice([0, 1, 2, 3, -1, 2**31, 2**63 - 1])})",
             f"P({self.rng.choice(KINDS)})"])
        if choice < 0.6 and ps:
            ps[self.rng.randrange(len(ps))] = new
        elif choice < 0.8:
            ps.insert(self.rng.randrange(len(ps) + 1), new)
        elif ps:
            del ps[self.rng.randrange(len(ps))]
        if self.rng.random() < 0.1:
            return splice_at(t, m, 1, self.rng.choice(["@nope", "@mesh2",
                                                       "@main"]))
        return splice_at(t, m, 2, ", ".join(ps))

    def m_mesh(self, t):
        m = pick_match(self.rng, MESH_RE, t)
        if not m:
            return None
        axes = AXIS_RE.findall(m.group(2))
        choice = self.rng.random()
        if choice < 0.4 and axes:
            i = self.rng.randrange(len(axes))
            axes[i] = (axes[i][0], str(self.rng.choice(
                [0, 1, 3, 7, 64, 1024, 2**31, 2**32, 2**63 - 1, -1])))
        elif choice < 0.6 and axes:
            i = self.rng.randrange(len(axes))
            axes[i] = (self.rng.choice(["x", "y", "tp", "dp", axes[0][0]]),
                       axes[i][1])
        elif choice < 0.8:
            axes.insert(self.rng.randrange(len(axes) + 1),
                        (self.rng.choice(["z", "w", "x"]),
                         str(self.rng.choice([1, 2, 3]))))
        elif axes:
            del axes[self.rng.randrange(len(axes))]
        return splice_at(t, m, 2, ", ".join(f'"{a}"={n}' for a, n in axes))

    def m_attr(self, t):
        r = self.rng.random()
        if r < 0.5:
            m = pick_match(self.rng, LIST_RE, t)
            if not m:
                return None
            vals = [v.strip() for v in m.group(2).split(",") if v.strip()]
            op = self.rng.random()
            if op < 0.3 and vals:
                vals[self.rng.randrange(len(vals))] = str(self.rng.choice(INTS))
            elif op < 0.6 and len(vals) > 1:
                self.rng.shuffle(vals)
                vals = vals[:self.rng.randint(0, len(vals))]
            else:
                vals.append(str(self.rng.choice([0, 1, 2, -1])))
            return splice_at(t, m, 2, ", ".join(vals))
        if r < 0.7:
            m = pick_match(self.rng, re.compile(r"\b(true|false)\b"), t)
            if not m:
                return None
            return splice_at(t, m, 0, self.rng.choice(BOOLS))
        m = pick_match(self.rng, re.compile(r"\"([^\"\n]*)\""), t)
        if not m:
            return None
        return splice_at(t, m, 1, self.rng.choice(
            ["", "x", "parallel", "reduction", "sum", "bernoulli", "normal",
             "uniform", "dp", "tp", "a" * 300]))

    def m_splice(self, t):
        _, other = self.rng.choice(self.corpus)
        olines = [l for l in other.splitlines() if l.strip()]
        lines = t.splitlines()
        if not olines or not lines:
            return None
        lines.insert(self.rng.randrange(len(lines) + 1),
                     self.rng.choice(olines))
        return "\n".join(lines) + "\n"

    def m_trunc(self, t):
        if len(t) < 2:
            return None
        return t[:self.rng.randrange(1, len(t))]

    def m_chars(self, t):
        if len(t) < 2:
            return None
        i = self.rng.randrange(len(t))
        if self.rng.random() < 0.5:
            return t[:i] + t[i + self.rng.randint(1, 8):]
        return t[:i] + self.rng.choice(["(", ")", "[", "]", "{", "}", "<", ">",
                                        ",", ":", "x", "?", "-", "\"", "%",
                                        "@", "#", "0", "\x00", "\xff"]) + t[i:]

    # Weights: the mutations that keep a program parseable (types,
    # layouts, meshes, values) more often than the ones that mostly make
    # a parse error.
    KINDS = (["int"] * 3 + ["dim"] * 3 + ["rank"] * 2 + ["elem"] * 2 +
             ["layout"] * 3 + ["mesh"] * 2 + ["attr"] * 2 +
             ["ident", "opname", "line", "splice", "trunc", "chars"])

    def mutate(self, text):
        names = []
        for _ in range(self.rng.choice([1, 1, 1, 2, 2, 3])):
            for _attempt in range(10):
                kind = self.rng.choice(self.KINDS)
                new = getattr(self, "m_" + kind)(text)
                if new is not None and new != text:
                    text = new
                    names.append(kind)
                    break
        return text, names


# --------------------------------------------------------------- running

def limit_memory(gib):
    """Bounds the address space of this process and so of every tool it
    starts: a huge allocation fails inside the tool (a clean error, or a
    crash it must not have) instead of taking the machine down. Set here
    rather than in a preexec_fn, which is not safe with threads."""
    limit = gib << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def cpu_seconds(pid):
    """User + system CPU time of process `pid` (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def run_tool(cmd, timeout):
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            busy = cpu_seconds(proc.pid)
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            # Computing all along (a big replicated matmul on 64 ranks) is
            # slow, not hung: a hang waits (a deadlock, a lost collective).
            return ("slow" if busy >= 0.1 * timeout else None,
                    out.decode(errors="replace"))
        return proc.returncode, out.decode(errors="replace")
    except OSError as e:
        return -999, str(e)


def classify(tool, rc, out):
    if rc is None:
        return "HANG", "past the timeout"
    if rc == "slow":
        return "slow", "past the timeout, computing (CPU busy)"
    mark = next((m for m in CRASH_MARKS if m in out), None)
    if rc < 0 or rc >= 128 or mark:
        sig = f"signal {-rc}" if rc < 0 else f"exit {rc}"
        return "CRASH", f"{sig}: {crash_line(out, mark)}"
    if tool == "run" and ("check FAILED" in out or "MISMATCH" in out):
        return "MISCOMPILE", next((l for l in out.splitlines()
                                   if "MISMATCH" in l or "FAILED" in l), "")
    if rc == 0:
        return "ok", ""
    if not out.strip():
        return "CRASH", f"exit {rc} without a message"
    msg = next((l for l in out.splitlines() if "error" in l.lower()),
               out.strip().splitlines()[-1])
    return "error", msg


# Ops that read their `outs` (accumulate into it); other destination-style
# ops (fill, transpose, elementwise named ops) overwrite it.
ACCUMULATE_OPS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matvec",
                  "linalg.vecmat", "linalg.dot", "linalg.reduce",
                  "linalg.contract", "linalg.batch_reduce_matmul",
                  "tensor.insert_slice", "tensor.insert")
NAME_RE = re.compile(r"%[\w.$-]+")


def undefined_values(text):
    """The SSA values of `text` whose contents may be undefined: a
    tensor.empty (or memref.alloc), an op reading one, and an op whose
    `outs` is one unless it overwrites it (fill, transpose, broadcast, a
    linalg.generic/map whose body does not read its out argument). A
    textual over-approximation over the ops at function level."""
    ops, depth, cur = [], 0, None
    for line in text.splitlines():
        m = re.match(r"\s*(%[\w.$-]+)(?::\d+)?\s*=\s*([\w.]+)", line)
        r = re.match(r"\s*(?:func\.)?return\b", line)
        if depth == 1 and (m or r):
            cur = [m.group(1) if m else None, m.group(2) if m else "return",
                   line]
            ops.append(cur)
        elif cur is not None and depth >= 1:
            cur[2] += "\n" + line
        depth += line.count("{") - line.count("}")
    tainted = set()
    for name, op, body in ops:
        uses = [u.split("#")[0] for u in NAME_RE.findall(body)]
        outs = re.search(r"outs\(([^:)]*)", body)
        out_names = set(NAME_RE.findall(outs.group(1))) if outs else set()
        # Every other operand (an `ins` may name the `outs` value too).
        rest = body[:outs.start()] + body[outs.end():] if outs else body
        others = [u.split("#")[0] for u in NAME_RE.findall(rest)
                  if u.split("#")[0] != name]
        bad = op in ("tensor.empty", "memref.alloc") or \
            any(u in tainted for u in others)
        if not bad and out_names & tainted:
            bb = re.search(r"\^bb0\(([^)]*)\)", body)
            if op in ("linalg.generic", "linalg.map") and bb:
                args = NAME_RE.findall(bb.group(1))
                outs_args = args[len(args) - len(out_names):]
                rest = body[bb.end():]
                bad = any(re.search(re.escape(a) + r"\b", rest)
                          for a in outs_args)
            else:
                bad = op in ACCUMULATE_OPS or op.startswith(
                    ("linalg.conv", "linalg.pooling", "linalg.depthwise"))
        if bad and name:
            tainted.add(name)
        if op == "return":
            return tainted, [u for u in uses]
    return tainted, []


def reads_empty(text, result):
    """Whether returned value `result` may hold undefined contents (a
    tensor.empty's, through any ops): a mismatch there is no miscompile
    (the partitioned program's arena holds other values than the
    reference's fresh buffer)."""
    tainted, returned = undefined_values(text)
    return result < len(returned) and returned[result] in tainted


def crash_line(out, mark):
    lines = out.splitlines()
    for l in lines:
        if mark and mark in l:
            return l.strip()[:200]
    for l in lines:
        if "error" in l.lower():
            return l.strip()[:200]
    return (lines[-1].strip()[:200] if lines else "no output")


def passes_in_f64(args, text, cmd, path):
    """Whether the mutant, every f16/bf16/f32 made f64, passes spmd-run's
    check (hex float literals then fail to parse: no)."""
    # After a non-letter, or the `x` of a shape (`4x16xf32`).
    wide = re.sub(r"(?<![A-Za-wyz_])(?:bf16|f16|f32)\b", "f64", text)
    if wide == text:
        return False
    wide_path = path[:-len(".mlir")] + "-f64.mlir"
    with open(wide_path, "w", errors="replace") as f:
        f.write(wide)
    try:
        rc, out = run_tool([wide_path if c == path else c for c in cmd],
                           args.timeout)
    finally:
        os.unlink(wide_path)
    return rc == 0 and "check passed" in out


def run_mutant(args, corpus, index, tmp):
    rng = random.Random(args.seed * 1000003 + index)
    name, base = rng.choice(corpus)
    text, kinds = Mutator(rng, corpus).mutate(base)
    path = os.path.join(tmp, f"m{index}.mlir")
    with open(path, "w", errors="replace") as f:
        f.write(text)
    results = []
    rejected = None
    for tool in args.tools:
        cmd = TOOLS[tool](args.bin, path)
        if rejected is not None and not args.all_tools:
            # Every tool parses and verifies the input the same way first
            # (same registry, same core/ParseHazards check): a mutant that
            # `opt` rejected cleanly is rejected by the others identically.
            results.append((tool, "skipped", rejected, cmd, "", 0.0))
            continue
        t0 = time.time()
        rc, out = run_tool(cmd, args.timeout)
        verdict, why = classify(tool, rc, out)
        if verdict == "MISCOMPILE":
            bad = [int(i) for i in re.findall(r"result(\d+):[^\n]*MISMATCH",
                                               out)]
            if bad and all(reads_empty(text, i) for i in bad):
                verdict = "undefined"
                why = "a result reads a tensor.empty's undefined contents: " + why
            elif passes_in_f64(args, text, cmd, path):
                verdict = "rounding"
                why = "passes in f64 (summation order): " + why
        results.append((tool, verdict, why, cmd, out, time.time() - t0))
        if tool == "opt" and verdict == "error":
            rejected = why
    os.unlink(path)
    return index, name, kinds, text, results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--keep", help="write every failing mutant here")
    ap.add_argument("--bin", default=os.path.join(
        os.environ.get("SPMD_BUILD_DIR", os.path.join(ROOT, "build")), "bin"))
    ap.add_argument("--tools", default=DEFAULT_TOOLS,
                    help="comma-separated, of: " + ",".join(TOOLS))
    ap.add_argument("--timeout", type=float, default=60,
                    help="seconds per tool run before it counts as a hang")
    ap.add_argument("--all-tools", action="store_true",
                    help="run every tool even on a mutant that `opt` (parse "
                    "and verify) rejected with a clean error")
    ap.add_argument("--memory-gib", type=int, default=8,
                    help="address-space limit of every tool run")
    ap.add_argument("--start", type=int, default=0,
                    help="first mutant index (to resume or reproduce one)")
    ap.add_argument("--progress", type=int, default=0, metavar="N",
                    help="print the running totals every N mutants")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every run, not only the failures")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.tools = args.tools.split(",")
    for t in args.tools:
        if t not in TOOLS:
            ap.error(f"unknown tool {t}")
    limit_memory(args.memory_gib)
    verdicts = ["ok", "error", "skipped", "undefined", "rounding", "slow",
                "CRASH", "HANG", "MISCOMPILE"]
    counts = {t: dict.fromkeys(verdicts, 0) for t in args.tools}
    signatures = {}
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = load_corpus(args.bin, tmp)
        print(f"corpus: {len(corpus)} programs that parse; seed {args.seed}, "
              f"mutants {args.start}..{args.start + args.count - 1}, "
              f"tools {','.join(args.tools)}", flush=True)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futs = [pool.submit(run_mutant, args, corpus, i, tmp)
                    for i in range(args.start, args.start + args.count)]
            for done, fut in enumerate(futs, 1):
                index, name, kinds, text, results = fut.result()
                for tool, verdict, why, cmd, out, secs in results:
                    counts[tool][verdict] += 1
                    bad = verdict in ("CRASH", "HANG", "MISCOMPILE")
                    if bad or args.verbose:
                        print(f"mutant {index} ({name}; {'+'.join(kinds)}) "
                              f"{tool}: {verdict} {why[:200]}", flush=True)
                    if bad:
                        sig = (tool, verdict, re.sub(r"\d+", "N", why)[:120])
                        signatures.setdefault(sig, []).append(index)
                    if bad and args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        stem = os.path.join(args.keep, f"m{index}-{tool}")
                        with open(stem + ".mlir", "w", errors="replace") as f:
                            f.write(text)
                        with open(stem + ".txt", "w", errors="replace") as f:
                            f.write(f"# from {name}, mutations "
                                    f"{'+'.join(kinds)}\n# "
                                    + " ".join(cmd) + "\n" + out)
                if args.progress and done % args.progress == 0:
                    tally = {v: sum(counts[t][v] for t in args.tools)
                             for v in verdicts}
                    print(f"progress: {done} mutants, {time.time() - t0:.0f}"
                          f" s: " + ", ".join(f"{n} {v}" for v, n in
                                              tally.items()), flush=True)
    secs = time.time() - t0
    print(f"{args.count} mutants in {secs:.0f} s "
          f"({args.count / max(secs, 1e-9):.2f}/s)")
    total = dict.fromkeys(verdicts, 0)
    for tool in args.tools:
        c = counts[tool]
        for v in verdicts:
            total[v] += c[v]
        print(f"  {tool}: {c['ok']} ok, {c['undefined']} ok but undefined "
              f"(a tensor.empty returned), {c['rounding']} ok in f64 "
              f"(summation order), {c['slow']} slow, "
              f"{c['error']} clean errors, "
              f"{c['skipped']} skipped (rejected by opt), {c['CRASH']} crashes, {c['HANG']} hangs, "
              f"{c['MISCOMPILE']} miscompiles")
    print(f"total runs: {sum(total.values())}: {total['ok']} ok, "
          f"{total['undefined']} undefined, {total['rounding']} rounding, "
          f"{total['slow']} slow, "
          f"{total['error']} clean errors, {total['skipped']} skipped, "
          f"{total['CRASH']} crashes, "
          f"{total['HANG']} hangs, {total['MISCOMPILE']} miscompiles")
    for (tool, verdict, why), idx in sorted(signatures.items(),
                                            key=lambda kv: -len(kv[1])):
        print(f"  class {tool} {verdict} x{len(idx)} (e.g. mutant {idx[0]}): "
              f"{why}")
    return 1 if total["CRASH"] + total["HANG"] + total["MISCOMPILE"] else 0


if __name__ == "__main__":
    sys.exit(main())
