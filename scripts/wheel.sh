#!/usr/bin/env bash
# Builds the wheel (pyproject.toml: scikit-build-core driving CMake) and gives it the platform tag its binaries earn:
# auditwheel reads the glibc symbol versions they need and retags linux_x86_64 as manylinux_2_N.
#   scripts/wheel.sh OUT_DIR
set -euo pipefail
out="${1:?usage: scripts/wheel.sh OUT_DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
python3 -m pip wheel "$root" --no-deps -q -w "$raw" \
  --config-settings=cmake.define.CUDAToolkit_ROOT="$cuda_root"
mkdir -p "$out"
python3 -m auditwheel repair -w "$out" "$raw"/coldstart-*.whl
