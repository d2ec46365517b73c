#!/usr/bin/env bash
# spmd's one entry point: takes a fresh Debian 12 machine to a built tree and
# runs what is asked. Idempotent: installed packages and a configured build
# are reused.
#
#   ./setup.sh          install dependencies and build
#   ./setup.sh run      ... then run the main example
#   ./setup.sh test     ... then run every test (lit + GoogleTest) via ctest
#
# SPMD_BUILD_DIR picks the build folder (default: ./build); SPMD_VENV the
# Python virtual environment with PyTorch 2.x for the frontend (default:
# ./.venv, from frontend/torch/requirements.txt).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${SPMD_BUILD_DIR:-$root/build}
jobs=${SPMD_JOBS:-$(nproc)}
venv=${SPMD_VENV:-$root/.venv}

# Debian packages the build and the tests need.
packages=(
  cmake ninja-build g++ python3 git
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libgtest-dev
  libopenblas-dev libopenmpi-dev openmpi-bin nlohmann-json3-dev
  coinor-libcbc-dev
  python3-numpy python3-venv python3-dev pybind11-dev
)

install_deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
    --no-install-recommends "${missing[@]}"
}

# PyTorch 2.x and the frontend's other Python packages, from PyPI into a
# virtual environment of Debian's python3. Reinstalled only when
# requirements.txt changes.
install_python() {
  local req="$root/frontend/torch/requirements.txt" stamp="$venv/.spmd-requirements"
  if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; then
    return 0
  fi
  echo "setup: installing Python packages into $venv"
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  cp "$req" "$stamp"
}

configure_and_build() {
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSPMD_PYTHON="$venv/bin/python"
  else
    cmake "$build" -DSPMD_PYTHON="$venv/bin/python" >/dev/null
  fi
  cmake --build "$build" -j "$jobs"
}

# The main example: a global Megatron MLP training step, partitioned and run
# on 4 simulated ranks for 3 steps, checked against one device.
run_main() {
  "$build/bin/spmd-run" "$root/examples/megatron_mlp_train.mlir" --ranks 4 \
    --seed 1 --steps 3 --check --print-plan | grep -E '^(collectives|result|check)'
}

run_tests() {
  ctest --test-dir "$build" --output-on-failure -j "$jobs"
}

install_deps
install_python
configure_and_build
case "${1:-build}" in
build) ;;
run) run_main ;;
test) run_tests ;;
*)
  echo "usage: $0 [build|run|test]" >&2
  exit 2
  ;;
esac
