#!/usr/bin/env bash
# Builds the wheel (pyproject.toml: scikit-build-core driving CMake) and gives it the platform tag its binaries earn:
# auditwheel reads the glibc symbol versions they need and retags linux_x86_64 as manylinux_2_N. The binaries are
# those of scripts/build.sh's portable build (zig's clang and libc++, glibc 2.28's symbols: scripts/zig-cxx.sh), so
# the wheel is manylinux_2_28 whatever glibc this machine has.
#   scripts/wheel.sh OUT_DIR [BUILD_DIR]
# With BUILD_DIR (a folder scripts/build.sh configured: scripts/test.sh passes the one its tests ran), the wheel is
# made from that folder as it is configured, compiling nothing it has built: the binary it ships is the binary those
# tests ran. Without, pyproject.toml's own folder (build-wheel/) and settings: the binary alone, in batches.
set -euo pipefail
out="${1:?usage: scripts/wheel.sh OUT_DIR [BUILD_DIR]}"
build_dir="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/zig.sh
. "$root/scripts/zig.sh"
find_zig  # pip builds in an environment of its own, whose Python has no ziglang
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
settings=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$root/scripts/zig-cxx.sh"
          --config-settings=cmake.define.CMAKE_LIBRARY_ARCHITECTURE="$(gcc -print-multiarch)"
          --config-settings=cmake.define.CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-/usr/local/cuda}")
if [ -n "$build_dir" ]; then
  cache="$build_dir/CMakeCache.txt"
  [ -f "$cache" ] || { echo "wheel: $build_dir is not a configured build folder; run scripts/build.sh $build_dir" >&2; exit 1; }
  # Every setting pyproject.toml would change is given the folder's own value: nothing to compile again.
  value() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
  python3 -c 'import scikit_build_core' 2>/dev/null ||
    { echo "wheel: scikit-build-core is missing; python3 -m pip install -r python/requirements-test.txt" >&2; exit 1; }
  # Without build isolation: scikit-build-core clears a folder's CMake cache and objects when its own path changes,
  # and an isolated build environment has a new path each time.
  # Its record of the last wheel build goes too: the folder is scripts/build.sh's, and its cache is the truth.
  settings+=(--no-build-isolation --config-settings=build-dir="$(cd "$build_dir" && pwd)")
  rm -f "$build_dir/.skbuild-info.json"
  before="$(sha256sum "$build_dir/coldstart")"
  for name in COLDSTART_TESTS COLDSTART_BENCHMARKS CMAKE_UNITY_BUILD CMAKE_UNITY_BUILD_BATCH_SIZE COLDSTART_WERROR; do
    settings+=(--config-settings=cmake.define.$name="$(value "$name")")
  done
  settings+=(--config-settings=cmake.build-type="$(value CMAKE_BUILD_TYPE)")
fi
python3 -m pip wheel "$root" --no-deps -q -w "$raw" "${settings[@]}"
if [ -n "$build_dir" ] && [ "$(sha256sum "$build_dir/coldstart")" != "$before" ]; then
  echo "wheel: building the wheel linked $build_dir/coldstart again: the folder's settings are not the ones" \
    "scripts/build.sh gave it (the wheel does not ship the binary its tests ran)" >&2
  exit 1
fi
mkdir -p "$out"
python3 -m auditwheel repair -w "$out" "$raw"/coldstart-*.whl
