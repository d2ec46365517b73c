"""Megatron TP + sequence parallelism: the tests' sp_plan.py plus SwiGLU's
gate (see with_gate.py)."""
import os
import runpy

plan = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                   "with_gate.py"))["extend"]("sp_plan.py")
