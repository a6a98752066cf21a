#!/usr/bin/env bash
# The main job: builds coldstart, then runs bench's default matrix where NVIDIA GPUs exist. Without a GPU it shows the
# plan instead (bench --dry-run: every rank started with the environment it would get) and says why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DCOLDSTART_TESTS=OFF -DCOLDSTART_BENCHMARKS=OFF
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"  # never sweep NVLink multicast on shared machines
if build/coldstart bench --dry-run --gpus 1 --trials 1 --out "$(mktemp -d)/probe" >/dev/null 2>&1 &&
   command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  exec build/coldstart bench "$@"
fi
echo "run: no NVIDIA GPU here; showing the default plan with bench --dry-run (2 ranks) instead" >&2
exec build/coldstart bench --dry-run --trials 1 "$@"
