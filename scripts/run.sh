#!/usr/bin/env bash
# The main job: builds coldstart in build-run/ (its own folder; build/ is scripts/test.sh's, with the tests and
# benchmarks), then runs bench's default matrix where NVIDIA GPUs exist. Without a GPU it runs doctor instead (the
# node and process checks that need none) and says why.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh build-run -DCOLDSTART_TESTS=OFF -DCOLDSTART_BENCHMARKS=OFF
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"  # never sweep NVLink multicast on shared machines
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  exec build-run/coldstart bench "$@"
fi
echo "run: no NVIDIA GPU here, so no bench; running coldstart doctor (add --ranks 2 --mode isolated for a job plan)" >&2
exec build-run/coldstart doctor "$@"
