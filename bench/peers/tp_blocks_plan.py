"""Megatron TP of the GPT blocks only: the embedding and the output layer
replicated, the plan JAX runs at the count size (jit cannot shard a
vocabulary of 97 on 4 devices). The blocks' entries are the frontend
tests' tp_plan.py's, read from it so the two cannot drift apart."""
import importlib.util
import os

_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                     "test", "frontend", "Inputs", "tp_plan.py")
_spec = importlib.util.spec_from_file_location("_spmd_tp_plan", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

plan = {name: style for name, style in _module.plan.items()
        if name.startswith("layers.")}
