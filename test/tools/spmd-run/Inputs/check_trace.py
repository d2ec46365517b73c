"""Checks a --trace file: valid JSON trace events, one named track per rank,
every executed step of every rank as a complete ("X") event with a start
and a non-negative duration, steps in order within a rank, GEMMs with their
m/n/k and collectives with their axes and bytes.

  check_trace.py TRACE RANKS PRINT_PLAN_OUTPUT RUNS

(the step count of a run comes from --print-plan's "schedule ... N steps")
"""
import json
import re
import sys

path, ranks, plan, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open(plan) as f:
    per_run = int(re.search(r"^schedule .* (\d+) steps$", f.read(), re.M).group(1))
with open(path) as f:
    events = json.load(f)["traceEvents"]
tracks = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M"}
assert tracks == {r: f"rank {r}" for r in range(ranks)}, tracks
for r in range(ranks):
    mine = [e for e in events if e["ph"] == "X" and e["tid"] == r]
    assert len(mine) == per_run * runs, (r, len(mine))
    assert all(e["dur"] >= 0 for e in mine)
    assert all(a["ts"] <= b["ts"] for a, b in zip(mine, mine[1:]))
    assert [e["args"]["step"] for e in mine] == list(range(per_run)) * runs
    for e in mine:
        if e["cat"] == "gemm":
            assert e["args"]["detail"].startswith("m="), e
        if e["cat"] == "collective":
            assert "bytes" in e["args"]["detail"], e
cats = sorted({e["cat"] for e in events if e["ph"] == "X"})
print(f"trace ok: {ranks} ranks, {per_run} steps x {runs} runs, kinds {cats}")
