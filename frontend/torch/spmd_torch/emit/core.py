"""The shared core of the aten-to-MLIR translation.

Holds the handler registry (`handles`, keyed by aten overload name), the
binding of a node's arguments against its op's schema (`Args`), reading
PyTorch's shape/dtype metadata off graph nodes (`tensor_meta`), and the
`Emitter`: it walks a make_fx graph, names arguments (`%argN`), dispatches
each call_function node to its handler (in-place variants of a handled op
included, on fresh non-view values only), checks every result against
PyTorch's shape and dtype, and prints the func.func. Value naming and type
printing live in the Builder (`..builder`); the handlers themselves are in
the category modules of this package.
"""

import operator

import torch

from ..builder import Builder, UnsupportedOpError, Value, tensor_type


_HANDLERS = {}


def handles(*names):
    """Register the decorated function as the handler of the aten overloads
    `names` ("add.Tensor" for aten.add.Tensor). A handler is called as
    fn(E, node, a): E the Emitter (E.b its Builder, E.out() the node's
    shape and dtype), node the fx node, a its Args; it returns a Value, or a
    tuple of them for a multi-result op."""
    def deco(fn):
        for n in names:
            key = "aten." + n
            if key in _HANDLERS:
                raise ValueError(f"two handlers for {key}")
            _HANDLERS[key] = fn
        return fn
    return deco


def has_handler(name):
    """Whether aten overload `name` ("aten.add.Tensor") has a handler."""
    return name in _HANDLERS


class Args:
    """Named arguments of one node, bound against the op's schema."""

    def __init__(self, op, args, kwargs):
        self._values = {}
        schema = op._schema
        for i, a in enumerate(schema.arguments):
            if i < len(args) and not a.kwarg_only:
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            self._values[a.name] = v

    def __getattr__(self, name):
        # Overloads of one op differ in their arguments (sum.default has no
        # dim): an argument the overload lacks reads as None.
        if name.startswith("__"):
            raise AttributeError(name)
        return self._values.get(name)

    def get(self, name, default=None):
        v = self._values.get(name, default)
        return default if v is None else v


class _Meta:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _from_val(v):
    if isinstance(v, torch.Tensor):
        return _Meta(v.shape, v.dtype)
    if isinstance(v, (list, tuple)):
        return tuple(_from_val(x) for x in v)
    return None


def tensor_meta(node):
    """The shape/dtype metadata make_fx recorded on a node (a tuple of them
    for a multi-result node)."""
    m = node.meta.get("tensor_meta")
    if m is None and "val" in node.meta:  # fake-tensor tracing
        m = _from_val(node.meta["val"])
    if m is None:
        raise UnsupportedOpError(
            f"graph node '{node.name}' ({node.target}) has no tensor metadata")
    return m


def _shape_dtype(node, index=None):
    m = tensor_meta(node)
    if index is not None:
        m = m[index]
    return tuple(m.shape), m.dtype


class Emitter:
    """Translates one make_fx graph module; run() gives the func.func text."""

    def __init__(self, gm, mark_handler=None, gather_form="onehot",
                 rng_args=None):
        # gather_form: how embedding lookups are written, "onehot" (a
        # reduction generic over the vocabulary, table as an operand) or
        # "extract" (tensor.extract from the table inside the generic).
        if gather_form not in ("onehot", "extract"):
            raise ValueError(f"unknown gather form '{gather_form}'")
        self.gather_form = gather_form
        self.gm = gm
        self.b = Builder()
        self.env = {}
        self.mark_handler = mark_handler
        self.node = None
        # Indices of the placeholders holding the random ops' seed and step
        # (0-d int64 tensors), if the program draws random numbers.
        self.rng_args = rng_args
        self._rng = None

    # -- helpers used by handlers ------------------------------------------
    def rng(self):
        """(seed, step) Values for spmd.random."""
        if self._rng is None:
            raise UnsupportedOpError(
                "a random op, but the program has no rng.seed/rng.step "
                "arguments (export it with export_train_step/export_forward)")
        return self._rng

    def out(self, index=None):
        return _shape_dtype(self.node, index)

    def ew(self, operands, fn, out_dtype=None, compute=None):
        shape, dtype = self.out()
        out_dtype = out_dtype or dtype
        v = self.b.elementwise(operands, out_dtype, fn, compute_dtype=compute)
        if v.shape != shape:
            v = self.b.broadcast_to(v, shape)
        return v

    # -- driver --------------------------------------------------------------
    def resolve(self, a):
        if isinstance(a, torch.fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.resolve(x) for x in a)
        return a

    def run(self, func_name, arg_attrs=None, result_attrs=None, visibility="",
            arg_constrains=None):
        # arg_constrains: {argument index: (layout, loc)}: the argument is
        # used through a spmd.constrain to that layout (FSDP: parameters are
        # stored sharded and gathered before use).
        nodes = list(self.gm.graph.nodes)
        params = []
        for node in nodes:
            if node.op == "placeholder":
                shape, dtype = _shape_dtype(node)
                v = Value(f"%arg{len(params)}", shape, dtype)
                self.env[node] = v
                if arg_constrains and len(params) in arg_constrains:
                    layout, loc = arg_constrains[len(params)]
                    self.b.loc = loc
                    self.env[node] = self.b.constrain(v, layout)
                params.append(v)
        if self.rng_args is not None:
            self._rng = (params[self.rng_args[0]], params[self.rng_args[1]])
        outputs = None
        for node in nodes:
            self.node = node
            if node.op == "placeholder":
                continue
            if node.op == "get_attr":
                t = getattr(self.gm, node.target)
                self.env[node] = self.b.dense(t.detach(), t.dtype)
                if not t.is_floating_point() and t.numel() <= 4096:
                    self.b.known[self.env[node].name] = t.detach().clone()
                continue
            if node.op == "output":
                outputs = self.resolve(node.args[0])
                continue
            self.b.loc = node.name
            if node.op != "call_function":
                raise UnsupportedOpError(
                    f"graph node '{node.name}' of kind {node.op} is not supported")
            self.env[node] = self.call(node)
        flat = _flatten(outputs)
        from .complex import CValue
        for o in flat:
            if isinstance(o, CValue):
                raise UnsupportedOpError(
                    "the traced function returns a complex tensor; return "
                    "torch.view_as_real of it")
            if not isinstance(o, Value):
                raise UnsupportedOpError(
                    f"the traced function returns a non-tensor value {o!r}")
        arg_attrs = arg_attrs or [None] * len(params)
        result_attrs = result_attrs or [None] * len(flat)
        if len(arg_attrs) != len(params) or len(result_attrs) != len(flat):
            raise ValueError("argument/result attribute count mismatch")

        def attr(a):
            return f" {{{a}}}" if a else ""

        sig = ", ".join(f"{p.name}: {p.type}{attr(a)}" for p, a in zip(params, arg_attrs))
        res = ", ".join(f"{o.type}{attr(a)}" for o, a in zip(flat, result_attrs))
        vis = f"{visibility} " if visibility else ""
        lines = [f"func.func {vis}@{func_name}({sig}) -> ({res}) {{"]
        for l in self.b.lines:
            lines.append("  " + l)
        if flat:
            lines.append(f"  return {', '.join(o.name for o in flat)} : "
                         f"{', '.join(o.type for o in flat)}")
        else:
            lines.append("  return")
        lines.append("}")
        return "\n".join(lines), params, flat

    def call(self, node):
        target = node.target
        args = self.resolve(node.args)
        kwargs = self.resolve(node.kwargs)
        if target is operator.getitem:
            return args[0][args[1]]
        name = str(target)
        if name in _CHECKS:
            # Trace-time checks torch.export leaves in the graph (dtype
            # asserts after autocast-style casts): nothing to compute.
            return None
        if name.startswith("spmd.mark"):
            x, tag = args[0], args[1]
            if not self.mark_handler:
                return x
            return self.mark_handler(self.b, x, tag)
        if self._touches_complex(node, args):
            return self._call_complex(node, name, args, kwargs)
        handler = _HANDLERS.get(name)
        inplace = handler is None and _inplace_base(name) in _HANDLERS
        if inplace:
            self._check_inplace(node, name)
            handler = _HANDLERS[_inplace_base(name)]
        if handler is None:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' at graph node "
                f"'{node.name}' ({node.format_node()})")
        try:
            a = Args(target, args, kwargs)
            result = handler(self, node, a)
        except UnsupportedOpError as e:
            if f"'{node.name}'" in str(e):
                raise
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' at graph node "
                f"'{node.name}': {e}") from e
        self._check(node, result)
        if inplace:
            # Later users of the mutated tensor see the new value.
            self.env[node.args[0]] = result
        return result

    def _touches_complex(self, node, args):
        from .complex import CValue, is_complex_dtype
        if any(isinstance(v, CValue) for v in _flatten(list(args))):
            return True
        try:
            m = tensor_meta(node)
        except UnsupportedOpError:
            return False
        metas = (m,) if hasattr(m, "dtype") else m
        return any(getattr(x, "dtype", None) is not None and
                   is_complex_dtype(x.dtype) for x in metas)

    def _call_complex(self, node, name, args, kwargs):
        from . import complex as cplx
        handler = cplx.lookup(name)
        if handler is None:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' on complex tensors "
                f"at graph node '{node.name}' ({node.format_node()})")
        try:
            return handler(self, node, Args(node.target, args, kwargs))
        except UnsupportedOpError as e:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate op '{name}' on complex tensors "
                f"at graph node '{node.name}': {e}") from e

    def _check_inplace(self, node, name):
        base = node.args[0]
        why = None
        if not isinstance(base, torch.fx.Node):
            why = "its operand is not a graph value"
        elif base.op == "placeholder":
            why = "it mutates a function argument"
        elif base.op == "call_function" and _is_view_op(base.target):
            why = f"it mutates a view ('{base.name}')"
        if why:
            raise UnsupportedOpError(
                f"spmd_torch: cannot translate in-place op '{name}' at graph "
                f"node '{node.name}': {why}")

    def _check(self, node, result):
        try:
            meta = tensor_meta(node)
        except UnsupportedOpError:
            return
        if isinstance(result, Value):
            metas, results = [meta], [result]
        else:
            metas, results = list(meta), list(result)
        for m, r in zip(metas, results):
            if r is None or m is None:
                continue
            if tuple(m.shape) != r.shape or m.dtype != r.dtype:
                raise UnsupportedOpError(
                    f"internal error: node '{node.name}' ({node.target}) gives "
                    f"{r.type}, PyTorch says {tensor_type(tuple(m.shape), m.dtype)}")


_CHECKS = {"aten._assert_tensor_metadata.default", "aten._assert_async.msg",
           "aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default"}

_VIEW_OPS = {"view", "_unsafe_view", "_reshape_alias", "reshape", "t",
             "transpose", "permute", "expand", "slice", "select", "alias",
             "detach", "unsqueeze", "squeeze", "as_strided", "split",
             "split_with_sizes", "unbind", "diagonal", "narrow", "flatten"}


def _is_view_op(target):
    name = str(target)
    if not name.startswith("aten."):
        return name == "<built-in function getitem>"
    return name.split(".")[1] in _VIEW_OPS


def _inplace_base(name):
    """aten.add_.Tensor -> aten.add.Tensor (None if not in-place)."""
    parts = name.split(".")
    if len(parts) != 3 or not parts[1].endswith("_") or parts[1].startswith("_"):
        return None
    return f"{parts[0]}.{parts[1][:-1]}.{parts[2]}"


def _flatten(x):
    if isinstance(x, (list, tuple)):
        out = []
        for y in x:
            out.extend(_flatten(y))
        return out
    return [x]
