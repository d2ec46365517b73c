#!/usr/bin/env bash
# Runs the MPI test driver with an injected fault and checks that mpirun
# stops every rank (non-zero exit, well before the hang limit) and prints
# the expected message.
#   mpi-fault.sh MPIEXEC DRIVER MODE EXPECTED-TEXT
set -u
mpiexec=$1 driver=$2 mode=$3 expected=$4
start=$SECONDS
out=$(timeout -k 5 60 "$mpiexec" --allow-run-as-root --oversubscribe -np 4 \
  "$driver" --fault="$mode" 2>&1)
rc=$?
elapsed=$((SECONDS - start))
echo "$out"
echo "mpirun exit code $rc after ${elapsed}s"
if [ "$rc" -eq 0 ]; then
  echo "FAIL: mpirun exited 0 although a rank failed"
  exit 1
fi
if [ "$elapsed" -ge 55 ]; then
  echo "FAIL: the job hung until the outer timeout"
  exit 1
fi
if ! grep -qF -- "$expected" <<<"$out"; then
  echo "FAIL: the output lacks: $expected"
  exit 1
fi
echo "PASS"
