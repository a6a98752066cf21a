#!/usr/bin/env bash
# C++ formatting (clang-format, .clang-format) and the Python linter (ruff, pyproject.toml).
#   scripts/format.sh          rewrite C++ files in place and apply ruff's safe fixes
#   scripts/format.sh --check  change nothing; fail naming each file that is off (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t cxx < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${cxx[@]}"
  python3 -m ruff check python examples tests/net tests/engines tests/docs tests/data/refused bench/net_bench.py nccl/checks nccl/gpu
  python3 -m ruff format --check python examples tests/net tests/engines tests/docs tests/data/refused bench/net_bench.py nccl/checks nccl/gpu
  echo "format: ${#cxx[@]} C++ files and the Python package, examples, network lab, engine tests and nccl/ scripts are clean"
else
  clang-format -i "${cxx[@]}"
  python3 -m ruff check --fix python examples tests/net tests/engines tests/docs tests/data/refused bench/net_bench.py nccl/checks nccl/gpu
  python3 -m ruff format python examples tests/net tests/engines tests/docs tests/data/refused bench/net_bench.py nccl/checks nccl/gpu
fi
