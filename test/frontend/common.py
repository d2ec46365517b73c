"""Shared helpers for the frontend tests (run by SPMD_PYTHON: PyTorch 2.x)."""
import copy
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "frontend", "torch"))
sys.path.insert(0, os.path.join(HERE, "Inputs"))

from spmd_torch import mlir_exec  # noqa: E402


def spmd_opt():
    return mlir_exec.find_spmd_opt()


def verify(test, text, *extra):
    """spmd-opt must parse and verify the program."""
    p = subprocess.run([spmd_opt(), "-", *extra], input=text,
                       capture_output=True, text=True)
    test.assertEqual(p.returncode, 0, f"spmd-opt rejected the program:\n{p.stderr[:3000]}")
    return p.stdout


_SIG = re.compile(r"func\.func @\w+\((.*?)\) -> \((.*?)\) \{", re.S)


def signature_layouts(text):
    """([arg layout placements str or None], [result ...]) from the func line."""
    m = _SIG.search(text)
    args, res = m.group(1), m.group(2)

    def split(s):
        out, depth, cur = [], 0, ""
        for ch in s:
            if ch in "<[{(":
                depth += 1
            elif ch in ">]})":
                depth -= 1
            if ch == "," and depth == 0:
                out.append(cur)
                cur = ""
            else:
                cur += ch
        if cur.strip():
            out.append(cur)
        return out

    def lay(x):
        m = re.search(r"#spmd\.layout<@\w+, (\[.*?\])>", x)
        return m.group(1) if m else None
    return [lay(a) for a in split(args)], [lay(r) for r in split(res)]


def arg_index(prog, name):
    for i, a in enumerate(prog.args):
        if a.name == name:
            return i
    raise KeyError(name)


def run_steps(prog, steps):
    """Run the program `steps` times, feeding updated values back."""
    inputs = list(prog.inputs)
    outs = None
    for _ in range(steps):
        outs = mlir_exec.run_program(prog, inputs)
        for i, a in enumerate(prog.args):
            if a.updated_by is not None:
                inputs[i] = outs[a.updated_by]
    return outs


def torch_reference(model, batch, loss_fn, make_opt, steps):
    """PyTorch's own single-device training: (losses, model, optimizer)."""
    ref = copy.deepcopy(model)
    opt = make_opt(ref.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        if loss_fn is None:
            loss = ref(*batch)
        else:
            loss = loss_fn(ref(*batch[:-1]), batch[-1])
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, ref, opt
