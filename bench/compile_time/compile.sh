#!/usr/bin/env bash
# Wall time and peak RSS of the whole `spmd-opt --spmd-compile` pipeline
# (partition, fusion, bufferization, outlining, memory plan) on long chains
# from gen_compile.py, partitioned over a 1-D mesh of 4, and the pass that
# takes longest (-mlir-timing).
#
#   bench/compile_time/compile.sh [MODE:N ...]
#       (default: ew:1000 ew:10000 ew:100000 mm:1000 mm:10000 mm:100000)
#
# Prints a markdown table; best of REPS runs (default 1), a run stopped after
# TIMEOUT seconds (default 600) as ">TIMEOUT".
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
spmd_opt=${SPMD_OPT:-$root/build/bin/spmd-opt}
reps=${REPS:-1}
limit=${TIMEOUT:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cases=("$@")
[ ${#cases[@]} -eq 0 ] &&
  cases=(ew:1000 ew:10000 ew:100000 mm:1000 mm:10000 mm:100000)

echo "| chain | ops | s | MB | slowest pass (s) |"
echo "|---|---|---|---|---|"
for c in "${cases[@]}"; do
  mode=${c%%:*} n=${c#*:}
  python3 "$here/gen_compile.py" "$mode" "$n" >"$work/in.mlir"
  best="" mem="" slow=""
  for _ in $(seq "$reps"); do
    /usr/bin/time -f "%e %M" -o "$work/time" timeout "$limit" "$spmd_opt" \
      "$work/in.mlir" --spmd-compile -mlir-timing -o /dev/null 2>"$work/err"
    rc=$?
    if [ $rc -eq 124 ]; then best=">$limit"; break; fi
    if [ $rc -ne 0 ]; then best="fail(rc=$rc)"; break; fi
    read -r t m <"$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then
      best=$t mem=$((m / 1024))
      # The longest pass (pipelines and the partition step's wrapper
      # excluded: their time is their passes').
      slow=$(grep -E '^ +[0-9.]+ +\( *[0-9.]+%\) +[A-Za-z]' "$work/err" |
        grep -vE "Total|Pipeline|CompilePartitionStep|Rest" |
        sort -k1 -rn | head -1 | awk '{printf "%s %s", $4, $1}')
    fi
  done
  echo "| $mode | $n | $best | ${mem:--} | ${slow:--} |"
done
