"""Meshes and placements in DTensor's vocabulary, printed as spmd attributes.

A layout gives one placement per mesh axis, in mesh-axis order, exactly like
`#spmd.layout<@mesh, [S(0), R]>`.
"""

from dataclasses import dataclass
from typing import Dict, Sequence, Tuple, Union


class Placement:
    def is_shard(self, dim=None):
        return False

    def is_replicate(self):
        return False

    def is_partial(self):
        return False


@dataclass(frozen=True)
class Shard(Placement):
    dim: int

    def is_shard(self, dim=None):
        return dim is None or dim == self.dim

    def normalized(self, rank: int) -> "Shard":
        d = self.dim + rank if self.dim < 0 else self.dim
        if not 0 <= d < max(rank, 1) or rank == 0:
            raise ValueError(
                f"Shard({self.dim}) does not fit a tensor of rank {rank}")
        return Shard(d)

    def mlir(self):
        return f"S({self.dim})"


@dataclass(frozen=True)
class Replicate(Placement):
    def is_replicate(self):
        return True

    def normalized(self, rank):
        return self

    def mlir(self):
        return "R"


_REDUCE_KINDS = ("sum", "avg", "max", "min")


@dataclass(frozen=True)
class Partial(Placement):
    reduce_op: str = "sum"

    def __post_init__(self):
        if self.reduce_op not in _REDUCE_KINDS:
            raise ValueError(f"Partial reduce_op must be one of {_REDUCE_KINDS}")

    def is_partial(self):
        return True

    def normalized(self, rank):
        return self

    def mlir(self):
        return f"P({self.reduce_op})"


class Layout:
    """A full layout: one Placement per mesh axis, in mesh-axis order."""

    def __init__(self, *placements):
        if len(placements) == 1 and isinstance(placements[0], (list, tuple)):
            placements = tuple(placements[0])
        for p in placements:
            if not isinstance(p, Placement):
                raise ValueError(f"not a Placement: {p!r}")
        self.placements = tuple(placements)

    def __eq__(self, other):
        return isinstance(other, Layout) and self.placements == other.placements

    def __hash__(self):
        return hash(self.placements)

    def __repr__(self):
        return "Layout(" + ", ".join(map(repr, self.placements)) + ")"


class Mesh:
    """A named device mesh: Mesh({"dp": 2, "tp": 2}) or Mesh.parse("dp=2,tp=2")."""

    def __init__(self, axes: Union[Dict[str, int], Sequence[Tuple[str, int]]],
                 name: str = "mesh"):
        items = list(axes.items()) if isinstance(axes, dict) else list(axes)
        if not items:
            raise ValueError("a mesh needs at least one axis")
        for axis, size in items:
            if not isinstance(size, int) or size < 1:
                raise ValueError(f"mesh axis '{axis}' has bad size {size!r}")
        if len({a for a, _ in items}) != len(items):
            raise ValueError("mesh axis names must be unique")
        self.axes = items
        self.name = name

    @staticmethod
    def parse(text: str, name: str = "mesh") -> "Mesh":
        items = []
        for part in text.split(","):
            part = part.strip()
            if "=" not in part:
                raise ValueError(f"bad mesh axis '{part}': expected name=size")
            axis, size = part.split("=", 1)
            items.append((axis.strip(), int(size)))
        return Mesh(items, name)

    @property
    def axis_names(self):
        return [a for a, _ in self.axes]

    def size(self, axis):
        return dict(self.axes)[axis]

    def has_axis(self, axis):
        return axis in dict(self.axes)

    def index(self, axis):
        return self.axis_names.index(axis)

    def mlir(self):
        body = ", ".join(f'"{a}"={s}' for a, s in self.axes)
        return f"spmd.mesh @{self.name} [{body}]"

    def __repr__(self):
        return f"Mesh({dict(self.axes)!r})"


def layout_attr(mesh: Mesh, placements: Sequence[Placement], rank: int) -> str:
    """`#spmd.layout<@mesh, [...]>` for a tensor of the given rank."""
    if len(placements) != len(mesh.axes):
        raise ValueError(
            f"layout has {len(placements)} placements for a mesh of "
            f"{len(mesh.axes)} axes")
    norm = [p.normalized(rank) for p in placements]
    return f"#spmd.layout<@{mesh.name}, [{', '.join(p.mlir() for p in norm)}]>"


def placements_str(placements) -> str:
    return "[" + ", ".join(p.mlir() for p in placements) + "]"
