#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time (default 15 s) from its seed corpus.
# A crash fails the script; the input that caused it is left in build-fuzz/ for a regression test.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-15}"
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
# -O1 with line tables only: what a finding's stack needs (181 s to build on 2 cores, against 200 s at -O2 -g).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -gline-tables-only" -DCOLDSTART_FUZZ=ON -DCUDAToolkit_ROOT="$cuda_root" >/dev/null
cmake --build build-fuzz
# One target: SECONDS of one core each (libFuzzer is single-threaded), from its corpus; 0 when nothing was found.
fuzz_one() {
  local target="$1" seconds="$2"
  mkdir -p "build-fuzz/corpus-$target"
  echo "fuzz: $target for ${seconds}s"
  if ! (cd build-fuzz && ./"${target}_fuzz" -max_total_time="$seconds" -max_len=65536 \
         "corpus-$target" "../fuzz/corpus/$target" >"fuzz-$target.log" 2>&1); then
    tail -30 "build-fuzz/fuzz-$target.log" >&2
    echo "fuzz: $target found a failing input (build-fuzz/crash-*); make it a regression test" >&2
    return 1
  fi
  grep -E "^Done [0-9]+ runs" "build-fuzz/fuzz-$target.log" | sed "s/^/fuzz: $target: /"
}
export -f fuzz_one
# As many at once as there are cores: each keeps a whole core for its SECONDS, the wall time divides. ($1 and $2 are
# the inner shell's, hence the single quotes.)
# shellcheck disable=SC2016
printf '%s\n' nccllog wire devices results inputs |
  xargs -P "$(nproc)" -I{} bash -c 'fuzz_one "$1" "$2"' _ {} "$seconds"
echo "fuzz: no findings"
