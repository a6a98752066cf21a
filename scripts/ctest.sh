#!/usr/bin/env bash
# Runs one build folder's tests and fails unless every expected suite is among them: each gtest suite that
# src/*/*_test.cc defines, and each test named here. ctest alone passes when a folder was configured without tests.
#   scripts/ctest.sh DIR [TEST...] [-- CTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:?usage: scripts/ctest.sh DIR [TEST...] [-- CTEST_ARGS...]}"
shift
named=()
while (($#)) && [ "$1" != "--" ]; do
  named+=("$1")
  shift
done
(($#)) && shift
listed="$(ctest --test-dir "$dir" -N "$@" | sed -n 's/^ *Test *#[0-9]*: //p')"
missing=()
suites=0
for suite in $(grep -ohE '^(TEST|TEST_F|TEST_P)\([A-Za-z0-9_]+' "$root"/src/*/*_test.cc | sed 's/.*(//' | sort -u); do
  suites=$((suites + 1))
  grep -qE "(^|/)$suite\." <<<"$listed" || missing+=("$suite")
done
for t in "${named[@]}"; do
  grep -qx "$t" <<<"$listed" || missing+=("$t")
done
if ((${#missing[@]})); then
  shown="${missing[*]:0:5}"
  ((${#missing[@]} > 5)) && shown+=" ..."
  echo "ctest: $dir lacks ${#missing[@]} expected suite(s) ($shown); build it with scripts/build.sh (COLDSTART_TESTS=ON)" >&2
  exit 1
fi
count="$(grep -c . <<<"$listed")"
echo "ctest: $dir: $count tests, $suites C++ suites${named[*]:+ and ${named[*]}}"
ctest --test-dir "$dir" --output-on-failure --no-tests=error "$@"
echo "ctest: $dir: $count tests passed"
