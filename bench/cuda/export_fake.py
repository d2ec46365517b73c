"""`python3 -m spmd_torch export ...` with make_fx's fake-tensor tracing.

The CLI traces with real tensors (fake only for float16), which at
bench/cuda/step.py's default size runs the forward and backward once on the
CPU (minutes in bf16, ~10-20 GB). Fake tensors give the same program text
(step.py --dry-run checks it for every program it exports) in seconds; the
initial values (--save-inputs) are the model's real parameters either way.

  python3 bench/cuda/export_fake.py export model.py:GPT [export options]
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "frontend", "torch"))

from spmd_torch import export as _export  # noqa: E402
from spmd_torch.__main__ import main  # noqa: E402

_export._tracing_mode = lambda tensors, mode: mode or "fake"

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
