"""Megatron MLP: fc1 column-parallel, fc2 row-parallel."""
from spmd_torch import ColwiseParallel, RowwiseParallel

plan = {"fc1": ColwiseParallel(), "fc2": RowwiseParallel()}
