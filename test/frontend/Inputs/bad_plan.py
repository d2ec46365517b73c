from spmd_torch import ColwiseParallel

# Parameters are not modules: this key matches nothing.
plan = {"fc*.weight": ColwiseParallel()}
