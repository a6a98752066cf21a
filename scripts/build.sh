#!/usr/bin/env bash
# Configures and builds one build folder.
#   scripts/build.sh DIR [cmake options...]             the portable build: what the wheel ships, with its tests
#   scripts/build.sh --sanitize DIR [cmake options...]  ASan+UBSan with libFuzzer's coverage: the tests and fuzzers
# The portable build compiles with zig's clang and libc++ against glibc 2.28 (scripts/zig-cxx.sh): the binary that
# the tests run is the one the wheel ships (scripts/wheel.sh DIR reuses the folder) and the one carried to GPU nodes.
# The sanitized build is Debian's clang with libstdc++ (the C++ library Debian's compilers use), its sources compiled
# 24 to a batch at -O1, with the libFuzzer targets (fuzz/) linked from the same objects.
# Every option is set on each configure (the options given here override these), so a folder never keeps one from an
# earlier configure: CMake's cache would, and a folder once configured without tests would stay so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kind=portable
if [ "${1:-}" = "--sanitize" ]; then
  kind=sanitize
  shift
fi
dir="${1:?usage: scripts/build.sh [--sanitize] DIR [cmake options...]}"
shift
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
# shellcheck source=scripts/zig.sh
. "$root/scripts/zig.sh"
if [ "$kind" = portable ]; then
  find_zig
  # Debian's packages' CMake files are in their multiarch folder, which only gcc names to CMake.
  kind_options=(-DCMAKE_CXX_COMPILER="$root/scripts/zig-cxx.sh" -DCMAKE_LIBRARY_ARCHITECTURE="$(gcc -print-multiarch)"
                -DCOLDSTART_SANITIZE=OFF -DCOLDSTART_FUZZ=OFF -DCOLDSTART_BENCHMARKS=ON
                -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=OFF)
else
  kind_options=(-DCMAKE_CXX_COMPILER=clang++ -DCOLDSTART_SANITIZE=ON -DCOLDSTART_FUZZ=ON -DCOLDSTART_BENCHMARKS=OFF
                -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only"
                -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=24)
fi
cmake -S "$root" -B "$dir" -G Ninja -DCUDAToolkit_ROOT="$cuda_root" -DPython3_EXECUTABLE="$(command -v python3)" \
  -DCOLDSTART_WERROR=OFF -DCOLDSTART_TESTS=ON "${kind_options[@]}" "$@" >/dev/null
cmake --build "$dir"
