#!/usr/bin/env bash
# Configures and builds one build folder: scripts/build.sh DIR [cmake options...]
set -euo pipefail
dir="$1"
shift
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
cmake -S "$(dirname "$0")/.." -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCUDAToolkit_ROOT="$cuda_root" \
  -DPython3_EXECUTABLE="$(command -v python3)" "$@" >/dev/null
cmake --build "$dir"
