#!/usr/bin/env bash
# nccl_check over the scenarios of a stock-vs-patched comparison (docs/bench-micro.md), for each NCCL library given,
# on the GPUs this node has: 2 ranks on GPUs 0 and 1, or RANKS (default 4) ranks on GPU 0 when it has one GPU.
#   OUT=/tmp/out nccl/checks/run_nccl_check.sh BUILD_DIR LIBNCCL [LIBNCCL...]
# The full sweep goes to MAX_SIZE (default 1GiB), the other scenarios to 64MiB. Writes <lib>-<scenario>.{json,txt}
# and summary.txt into $OUT; exits non-zero if any check failed. ONLY=name,name runs those scenarios alone;
# COLLECTIVES=a,b checks those collectives alone (nccl_check --collectives; e.g. without all_to_all, whose buffers
# for every peer outgrow an 80 GB GPU at 32 ranks).
# The sanitizer scenario runs every rank under compute-sanitizer's memcheck (2 ranks, to 64 KiB), where the node has it.
set -uo pipefail
build="${1:?usage: nccl/checks/run_nccl_check.sh BUILD_DIR LIBNCCL [LIBNCCL...]}"
shift
[ $# -ge 1 ] || { echo "run_nccl_check.sh: give at least one NCCL library" >&2; exit 2; }
out="${OUT:?set OUT to the folder for the results}"
bin="$build/nccl_check"
[ -x "$bin" ] || { echo "run_nccl_check.sh: $bin is missing: build the nccl_check target" >&2; exit 2; }
mkdir -p "$out"
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ]; then
  place=(--gpus "0,1" --ranks 2)
else
  place=(--gpus 0 --ranks "${RANKS:-4}")
fi
max="${MAX_SIZE:-1GiB}"
collectives=()
[ -z "${COLLECTIVES:-}" ] || collectives=(--collectives "$COLLECTIVES")
sanitizer=$(command -v compute-sanitizer || { [ -x /usr/local/cuda/bin/compute-sanitizer ] &&
  echo /usr/local/cuda/bin/compute-sanitizer; } || true)
status=0
index=0
for lib in "$@"; do
  index=$((index + 1))
  label="lib$index"
  echo "$label: $lib" >>"$out/summary.txt"
  # name | environment | options | the tool it runs under (compute-sanitizer: 2 ranks, small sizes)
  while IFS='|' read -r name env options tool; do
    [ -z "${ONLY:-}" ] || [[ ",$ONLY," == *",$name,"* ]] || continue
    where=("${place[@]}")
    wrap=()
    if [ "$tool" = sanitizer ]; then
      if [ -z "$sanitizer" ]; then
        echo "$label $name: skipped (no compute-sanitizer on PATH or in /usr/local/cuda/bin)" | tee -a "$out/summary.txt"
        continue
      fi
      [ "${place[1]}" = "0,1" ] || where=(--gpus 0 --ranks 2)
      # memcheck's memory errors only: an sm_90-only build answers NCCL's probe of its other kernels with
      # cudaErrorNoKernelImageForDevice, which NCCL expects and handles (an API error, reported otherwise)
      wrap=("$sanitizer" --tool memcheck --report-api-errors no --target-processes all --error-exitcode 9)
    fi
    # shellcheck disable=SC2086  # the environment and options are word lists
    env $env "${wrap[@]}" "$bin" --nccl-lib "$lib" "${where[@]}" "${collectives[@]}" $options --timeout 120 \
      --out "$out/$label-$name.json" >"$out/$label-$name.txt" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    result=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$out/$label-$name.txt" || tail -n 1 "$out/$label-$name.txt")
    echo "$label $name: $result (exit $rc)" |
      tee -a "$out/summary.txt"
  done <<SCENARIOS
isolated-full||--mode isolated --max-size $max
shared||--mode shared --max-size 64MiB
remap||--mode remap --max-size 64MiB
runtime-connect-0|NCCL_RUNTIME_CONNECT=0|--mode isolated --max-size 64MiB
runtime-connect-1|NCCL_RUNTIME_CONNECT=1|--mode isolated --max-size 64MiB
p2p-read|NCCL_P2P_READ_ENABLE=1|--mode isolated --max-size 64MiB
p2p-cuda-memcpy|NCCL_P2P_USE_CUDA_MEMCPY=1|--mode isolated --max-size 64MiB
cumem-off|NCCL_CUMEM_ENABLE=0|--mode isolated --max-size 64MiB
split|| --mode isolated --max-size 64MiB --split 0,1
repeat||--mode isolated --max-size 1MiB --repeat 5
abort||--mode isolated --max-size 1MiB --abort
suspend||--mode isolated --max-size 64MiB --suspend
patch-off|NCCL_P2P_PEER_REGION=0 NCCL_FD_TABLE_RESERVE=0|--mode isolated --max-size 64MiB
fd-reserve-off|NCCL_FD_TABLE_RESERVE=0|--mode isolated --max-size 64MiB
sanitizer||--mode isolated --max-size 64KiB|sanitizer
SCENARIOS
done
exit $status
