#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time (default 15 s) from its seed corpus.
# A crash fails the script; the input that caused it is left in build-fuzz/ for a regression test.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLDSTART_FUZZ=ON \
  -DCUDAToolkit_ROOT="$cuda_root" >/dev/null
cmake --build build-fuzz
for target in nccllog wire devices results inputs; do
  work="build-fuzz/corpus-$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  if ! (cd build-fuzz && ./"${target}_fuzz" -max_total_time="$seconds" -max_len=65536 \
         "corpus-$target" "../fuzz/corpus/$target" >"fuzz-$target.log" 2>&1); then
    tail -30 "build-fuzz/fuzz-$target.log" >&2
    echo "fuzz: $target found a failing input (build-fuzz/crash-*); make it a regression test" >&2
    exit 1
  fi
  grep -E "^Done [0-9]+ runs" "build-fuzz/fuzz-$target.log" | sed "s/^/fuzz: $target: /"
done
echo "fuzz: no findings"
