#!/usr/bin/env bash
# Compile time of propagation + partitioning on generated matmul+add chains:
# spmd-opt (spmd-propagate, spmd-partition) against upstream mlir-opt
# (sharding-propagation, shard-partition) on the same program, same run.
#
#   bench/compile_time/run.sh [LAYERS...]      (default: 2000 5000 10000 20000)
#
# Prints a markdown table: seconds (best of 3) and peak RSS per tool, and the
# ratio upstream/spmd. A tool that fails (crash, error) is reported as such.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
spmd_opt=${SPMD_OPT:-$root/build/bin/spmd-opt}
mlir_opt=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
layers=("$@")
[ ${#layers[@]} -eq 0 ] && layers=(2000 5000 10000 20000)

# best-of-3 wall seconds and peak KB of "$@", or "fail(rc)".
measure() {
  local best="" mem="" rc
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" -o /dev/null 2>"$work/err"
    rc=$?
    if [ $rc -ne 0 ]; then echo "fail(rc=$rc)"; return; fi
    read -r t m <"$work/time"
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; mem=$m; fi
  done
  echo "$best ${mem}"
}

mb() { [[ ${1:-} =~ ^[0-9]+$ ]] && echo $(($1 / 1024)) || echo "-"; }

echo "| mode | layers | spmd-opt s | spmd-opt MB | mlir-opt s | mlir-opt MB | mlir-opt / spmd-opt |"
echo "|---|---|---|---|---|---|---|"
for mode in tp dp; do
  for n in "${layers[@]}"; do
    python3 "$here/gen.py" --layers "$n" --dialect spmd --mode "$mode" -o "$work/spmd.mlir"
    python3 "$here/gen.py" --layers "$n" --dialect shard --mode "$mode" -o "$work/shard.mlir"
    ours=$(measure "$spmd_opt" "$work/spmd.mlir" \
      --pass-pipeline='builtin.module(spmd-propagate,spmd-partition)')
    theirs=$(measure "$mlir_opt" "$work/shard.mlir" \
      --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))')
    read -r ot om <<<"$ours"
    read -r tt tm <<<"$theirs"
    ratio="-"
    if [[ $ot =~ ^[0-9.]+$ && $tt =~ ^[0-9.]+$ ]]; then
      ratio=$(awk "BEGIN{printf \"%.2f\", $tt / ($ot > 0 ? $ot : 0.01)}")
    fi
    echo "| $mode | $n | $ot | $(mb "${om:-}") | $tt | $(mb "${tm:-}") | $ratio |"
  done
done
