#!/usr/bin/env bash
# cuMem sharing on a GPU node (docs/bench-micro.md): per buffer (NCCL's pattern) vs one merged region vs exports made
# at allocation, on GPUs 0 and 1 with 2 ranks (when the node has 2 GPUs) and on GPU 0 with 2, 4 and 8 ranks.
#   OUT=/tmp/out nccl/gpu/run_cumem_share_bench.sh [BUILD_DIR]      (BUILD_DIR defaults to build; TRIALS to 5)
# Writes cumem_2gpu.{json,txt}, cumem_1gpu.{json,txt} and nvidia-smi.txt into $OUT; exits non-zero if a run failed.
set -uo pipefail
build="${1:-build}"
out="${OUT:?set OUT to the folder for the results}"
trials="${TRIALS:-5}"
bin="$build/cumem_share_bench"
mkdir -p "$out"
[ -x "$bin" ] || { echo "run_cumem_share_bench.sh: $bin is missing: build the cumem_share_bench target" >&2; exit 2; }
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
status=0
if [ "$gpus" -ge 2 ]; then
  timeout 240 "$bin" --gpus 0,1 --ranks 2 --trials "$trials" --out "$out/cumem_2gpu.json" 2>&1 | tee "$out/cumem_2gpu.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "one GPU on this node: no 2-GPU run" | tee "$out/cumem_2gpu.txt"
fi
timeout 300 "$bin" --gpus 0 --ranks 2,4,8 --trials "$trials" --out "$out/cumem_1gpu.json" 2>&1 | tee "$out/cumem_1gpu.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1
exit $status
