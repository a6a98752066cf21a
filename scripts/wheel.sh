#!/usr/bin/env bash
# Builds the wheel (pyproject.toml: scikit-build-core driving CMake) and gives it the platform tag its binaries earn:
# auditwheel reads the glibc symbol versions they need and retags linux_x86_64 as manylinux_2_N. The binaries are
# compiled by zig's clang and libc++ (scripts/zig-cxx.sh, zig from PyPI: python/requirements-test.txt) against glibc
# 2.28's symbols, so the wheel is manylinux_2_28 whatever glibc this machine has. Debian's packages are found in their
# multiarch folders (fmt's CMake files), which only gcc names.
#   scripts/wheel.sh OUT_DIR
set -euo pipefail
out="${1:?usage: scripts/wheel.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if ! COLDSTART_ZIG="$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')"
then
  echo "wheel: zig is missing; install it with python3 -m pip install ziglang (scripts/setup.sh does)" >&2
  exit 1
fi
export COLDSTART_ZIG
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
python3 -m pip wheel "$root" --no-deps -q -w "$raw" \
  --config-settings=cmake.define.CUDAToolkit_ROOT="$cuda_root" \
  --config-settings=cmake.define.CMAKE_CXX_COMPILER="$root/scripts/zig-cxx.sh" \
  --config-settings=cmake.define.CMAKE_LIBRARY_ARCHITECTURE="$(gcc -print-multiarch)"
mkdir -p "$out"
python3 -m auditwheel repair -w "$out" "$raw"/coldstart-*.whl
