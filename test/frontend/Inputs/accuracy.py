"""Parameters after training, judged against exact arithmetic.

Adam divides each gradient by its own running magnitude, so an element whose
gradient is mostly rounding noise moves by up to the learning rate whatever
the order of the sums: a fixed tolerance on parameters after a few Adam
steps is either too loose for most elements or too tight for those. The
reference here is the same training in float64; spmd's float32 result must
be as close to it as PyTorch's own float32 result is, up to `factor` (and a
floor for elements both get exactly). The factor is 8: spmd's CPU kernels
compute exp, log, tanh and erf as MLIR's polynomial approximations (a few
ULP against libm's one), which alone makes its error 4-5x PyTorch's on every
parameter of the toy GPT, on one rank as on four; a partitioning bug shows
as errors orders of magnitude larger.
"""


def worst_vs_exact(got, ref32, ref64, factor=8.0, floor=1e-6):
    """Per tensor name: max |got - ref64| against factor * max |ref32 -
    ref64| + floor. Returns (ratio, name, spmd error, PyTorch error) of the
    worst tensor; ratio <= 1 passes."""
    worst = None
    for name, exact in ref64.items():
        ours = (got[name].double() - exact).abs().max().item()
        torch32 = (ref32[name].double() - exact).abs().max().item()
        ratio = ours / (factor * torch32 + floor)
        if worst is None or ratio > worst[0]:
            worst = (ratio, name, ours, torch32)
    return worst
