#!/usr/bin/env bash
# Checks formatting (clang-format) and the Python linter (ruff), builds coldstart twice and runs every test in each:
#   build/       the portable build (zig's clang and libc++, glibc 2.28: scripts/build.sh), warnings as errors, with
#                the tests and the benchmarks; every test (scripts/ctest.sh: it fails when a suite is missing, and says
#                how many ran), the cost budgets, then the wheel made from this folder (it ships the binary these
#                tests ran; scripts/wheel.sh fails if it compiled anything) and tested installed in a fresh venv;
#   build-asan/  Debian's clang and libstdc++ with ASan+UBSan (scripts/build.sh --sanitize): every C++ test and the
#                network lab, then each libFuzzer target, linked from the same objects, for a bounded time.
# Both build their sources in batches (unity builds: a 2-core machine builds both in the time one build of each file
# alone took); a developer's default build (scripts/build.sh DIR) compiles each file alone, which is what catches a
# missing include.
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
step scripts/build.sh build -DCOLDSTART_WERROR=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=24
step scripts/ctest.sh build python_tests report_html_in_chromium net_lab_tests engine_tests doc_commands -- -j2
step scripts/perf_check.sh build  # the report's and the NCCL log parser's own costs against docs/performance.md
step scripts/wheel_test.sh build
step scripts/build.sh --sanitize build-asan -DCOLDSTART_WERROR=ON
# The Python suite, the Chromium check, the docs' commands and the real launchers (tests/engines) exercise Ray, the
# browser, the docs and the launchers more than coldstart's memory: build/ only.
# The network lab runs the sanitized binary too (netlab passes ASAN_OPTIONS and UBSAN_OPTIONS into its namespaces).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 step scripts/ctest.sh build-asan net_lab_tests -- -j2 \
  -E 'python_tests|report_html_in_chromium|doc_commands|engine_tests'
step scripts/fuzz.sh 15 build-asan
printf 'test: %s\n' "${times[@]}"
echo "test: $SECONDS s in all"
