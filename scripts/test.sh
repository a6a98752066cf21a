#!/usr/bin/env bash
# Checks formatting (clang-format) and the Python linter (ruff), builds coldstart twice (plain with warnings as
# errors, and with ASan+UBSan), runs every test in the first and every C++ test in the second (scripts/ctest.sh: it
# fails when a suite is missing, and says how many ran), builds the wheel and tests it installed in a fresh virtual
# environment, then runs each libFuzzer target for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's wall time, printed as the step ends and all together at the end: where CI's time goes.
times=()
step() {
  local t0=$SECONDS
  "$@"
  times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$*")")
  echo "test: $((SECONDS - t0)) s: $*"
}
step scripts/setup.sh
step scripts/format.sh --check
step scripts/test_build_nccl.sh
step scripts/build.sh build -DCOLDSTART_WERROR=ON -DCMAKE_BUILD_TYPE=Release
# scripts/ctest.sh fails unless every C++ suite and the named tests are there, and prints how many ran.
step scripts/ctest.sh build python_tests report_html_in_chromium net_lab_tests -- -j2
step scripts/perf_check.sh build  # the report's and the NCCL log parser's own costs against docs/performance.md
step scripts/wheel_test.sh
# One translation unit per batch of sources (unity) halves the sanitizer build on a small machine; the plain build
# above compiles each file alone, which is what catches a missing include.
# The product's sources go 24 to a batch (the tests 8: CMakeLists.txt), so nlohmann/json and fmt are parsed fewer times.
step scripts/build.sh build-asan -DCOLDSTART_SANITIZE=ON -DCOLDSTART_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE=-O1 -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=24
# The Python suite and the Chromium check exercise Ray and the browser more than coldstart's memory: plain build only.
# The network lab runs the sanitized binary too (netlab passes ASAN_OPTIONS and UBSAN_OPTIONS into its namespaces).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 step scripts/ctest.sh build-asan net_lab_tests -- -j2 \
  -E 'python_tests|report_html_in_chromium'
step scripts/fuzz.sh 15
printf 'test: %s\n' "${times[@]}"
echo "test: $SECONDS s in all"
