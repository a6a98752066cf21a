#!/usr/bin/env bash
# The main job: builds coldstart, then runs bench's default matrix where NVIDIA GPUs exist. Without a GPU it runs
# doctor instead (the node and process checks that need none) and says why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build -DCOLDSTART_TESTS=OFF -DCOLDSTART_BENCHMARKS=OFF
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"  # never sweep NVLink multicast on shared machines
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  exec build/coldstart bench "$@"
fi
echo "run: no NVIDIA GPU here, so no bench; running coldstart doctor (add --ranks 2 --mode isolated for a job plan)" >&2
exec build/coldstart doctor "$@"
