#!/usr/bin/env bash
# Configures and builds one build folder: scripts/build.sh DIR [cmake options...]
# Every option is set on each configure (the options given here override these), so a folder never keeps one from an
# earlier configure: CMake's cache would, and a folder once configured without tests would stay so.
set -euo pipefail
dir="$1"
shift
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
cmake -S "$(dirname "$0")/.." -B "$dir" -G Ninja -DCUDAToolkit_ROOT="$cuda_root" \
  -DPython3_EXECUTABLE="$(command -v python3)" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLDSTART_WERROR=OFF \
  -DCOLDSTART_SANITIZE=OFF -DCOLDSTART_TESTS=ON -DCOLDSTART_BENCHMARKS=ON -DCOLDSTART_FUZZ=OFF \
  -DCMAKE_UNITY_BUILD=OFF -DCOLDSTART_NET_ONLY= "$@" >/dev/null
cmake --build "$dir"
