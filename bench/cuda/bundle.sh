#!/bin/sh
# Packs this build for a GPU machine that has the NVIDIA driver, CUDA 13's
# NVRTC/cuBLASLt/NCCL and Python (PyTorch, numpy) but no LLVM/MLIR: the
# spmd binaries, FileCheck/not/count, LLVM's lit, and every shared library
# they load that is not glibc, libstdc++ or CUDA's, xz-compressed into one
# file (~50 MB) that bench/cuda/gpu_session.sh unpacks and runs.
#
# libLLVM links Z3 (the static analyzer's solver) and libxml2 (Windows
# manifests; with ICU behind it, 55 MB together), neither of which spmd ever
# calls: they are replaced by stubs that define the same (versioned)
# symbols and abort if called, so that the bundle fits a 64 MiB transfer.
#
# Usage (repository root): bench/cuda/bundle.sh [build-dir] [out-dir]
#   -> out-dir/spmd-gpu.tar.xz (default out-dir: .gpu)
set -eu
build=${1:-build}
out=${2:-.gpu}
llvm=/usr/lib/llvm-22
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/llvm-bin" "$out"

cp "$build"/bin/spmd-* "$stage/bin/"
for t in FileCheck not count; do cp "$llvm/bin/$t" "$stage/llvm-bin/"; done
cp -r "$llvm/utils/lit/lit" "$stage/"
# The fake driver of the unit tests, which load it by its build path.
fake=$(cd "$build" && pwd)/test/unit/libspmd-fake-libcuda.so
if [ -f "$fake" ]; then
  mkdir -p "$stage/fake"
  cp "$fake" "$stage/fake/"
  echo "$fake" > "$stage/fake/path"
fi
find "$stage/lit" -name __pycache__ -prune -exec rm -rf {} +

# Libraries: the union of what the binaries load, less the C/C++ runtime
# (newer on the target, backward compatible) and CUDA's (the target's own).
for f in "$stage"/bin/* "$stage"/llvm-bin/*; do ldd "$f"; done |
  awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|librt|libdl)\.so|/usr/local/cuda|lib(z3|xml2|icu[a-z]*)\.so' |
  while read -r l; do cp -L "$l" "$stage/lib/"; done

# Stubs for Z3 and libxml2, with the symbol versions libLLVM asks for.
libllvm=$(ldd "$stage/bin/spmd-run" | awk '$1 ~ /^libLLVM/ {print $3}')
stub() { # name soname pattern
  objdump -T "$libllvm" | awk -v pat="$3" '$0 ~ /\*UND\*/ && $NF ~ pat {
      ver = $(NF - 1); gsub(/[()]/, "", ver); print $(NF - 3), ver, $NF }' > "$stage/$1.syms"
  awk '{ if ($1 == "DO") printf "void *%s = 0;\n", $3;
         else printf "void %s(void) { abort(); }\n", $3 }
       BEGIN { print "#include <stdlib.h>" }' "$stage/$1.syms" > "$stage/$1.c"
  awk '$2 != "Base" { v[$2] = v[$2] " " $3 ";" }
       END { for (k in v) printf "%s {%s };\n", k, v[k] }' "$stage/$1.syms" > "$stage/$1.map"
  flags=""
  [ -s "$stage/$1.map" ] && flags="-Wl,--version-script=$stage/$1.map"
  cc -shared -fPIC -o "$stage/lib/$2" -Wl,-soname,$2 $flags "$stage/$1.c"
}
stub z3 libz3.so.4 '^Z3_'
stub xml2 libxml2.so.2 '^xml'

tar -C "$stage" -cf - $(cd "$stage" && ls -d bin lib llvm-bin lit fake 2>/dev/null) | xz -9 -T2 > "$out/spmd-gpu.tar.xz"
ls -la "$out/spmd-gpu.tar.xz"
