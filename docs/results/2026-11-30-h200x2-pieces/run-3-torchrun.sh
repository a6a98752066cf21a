#!/bin/bash
# Session 4 on 2x H200, batch 3, from the installed wheel: real torchrun with per-rank visibility (--mask), 32 GiB of
# weights copied from pageable memory in 16 MiB pieces (examples/prewarm_torchrun.py), the baseline, cuMem off and
# coldstart.prewarm, interleaved over 4 launches each.
set -u
export NCCL_NVLS_ENABLE=0
O=$OUT
T=/tmp/cs-wheel
[ -x $T/bin/coldstart ] || python3 -m pip install -q --no-index --no-deps --target $T $PWD/.whl/coldstart-*.whl
export PATH=$T/bin:$PATH PYTHONPATH=$T
mkdir -p /tmp/cs-work && cp examples/prewarm_torchrun.py /tmp/cs-work/ && cd /tmp/cs-work
run() {  # $1 fix, $2 launch, then env and script flags
  local fix=$1 i=$2; shift 2
  env "$@" torchrun --standalone --nproc-per-node 2 prewarm_torchrun.py --mask --weights-gib 32 --chunk-mib 16 \
    $( [ $fix = prewarm ] || echo --no-prewarm ) 2>>$O/progress-3.log | sed "s/^{/{\"fix\": \"$fix\", \"launch\": $i, /" \
    >> $O/torchrun-pieces.jsonl
}
for i in 1 2 3 4; do
  run none $i -u NCCL_CUMEM_ENABLE
  run prewarm $i -u NCCL_CUMEM_ENABLE
  run cumem-off $i NCCL_CUMEM_ENABLE=0
done
python3 - $O/torchrun-pieces.jsonl <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for fix in ("none", "prewarm", "cumem-off"):
    per = {}
    for r in rows:
        if r["fix"] == fix:
            per.setdefault(r["launch"], []).append(r["ready_ms"])
    slowest = [max(v) for v in per.values()]
    print(fix, "launches", len(slowest), "ready median", round(statistics.median(slowest)), "all", [round(x) for x in slowest])
PY
