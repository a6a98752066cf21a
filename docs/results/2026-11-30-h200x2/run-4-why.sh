#!/bin/bash
# Session 3, batch 4 on 2x H200: why the eager init on a thread is slow while weights are copied, and what can be
# hidden. coldstart trace of the masked torchrun job (prewarm beside 32 GiB of pageable copies, prewarm alone, the
# lazy baseline, prewarm beside pinned copies); the same job with pinned host memory and with 16 MiB copies, with and
# without prewarm; and at the NCCL level 2 GiB of copies (about 300 ms) as the start-up.
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
export PYTHONPATH=$PWD/python
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
for v in "prewarm-h2d:--weights-gib 32" "prewarm-alone:--weights-gib 0" "lazy-h2d:--weights-gib 32 --no-prewarm" \
         "prewarm-pinned:--weights-gib 32 --pinned"; do
  name=${v%%:*}; args=${v#*:}
  $B trace --out /tmp/s3-trace-$name -- torchrun --standalone --nproc-per-node 2 examples/prewarm_torchrun.py \
    --mask $args > /tmp/s3-trace-$name.txt 2>&1 || true
done
tar -C /tmp -czf $O/traces.tar.gz s3-trace-prewarm-h2d s3-trace-prewarm-alone s3-trace-lazy-h2d s3-trace-prewarm-pinned \
  s3-trace-prewarm-h2d.txt s3-trace-prewarm-alone.txt s3-trace-lazy-h2d.txt s3-trace-prewarm-pinned.txt
run() { torchrun --standalone --nproc-per-node 2 examples/prewarm_torchrun.py "$@" 2>>$O/progress-4.log; }
for i in 1 2 3; do
  for load in "--pinned" "--chunk-mib 16"; do
    for pw in "" --no-prewarm; do
      run --weights-gib 32 --mask $load $pw | sed "s/{/\n{\"launch\": $i, /g" | grep . >> $O/torchrun-loads.jsonl
    done
  done
done
$B bench --modes isolated --startup h2d:2GiB --fix none,prewarm --trials 6 --seed 36 --timeout 60s \
  --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-fix-h2d2 > $O/tables-4.txt 2>> $O/progress-4.log
echo "exit $?" >> $O/tables-4.txt
cp /tmp/s3-fix-h2d2/results.json $O/fixes-nccl-h2d-2gib.json
tail -3 $O/progress-4.log; cat $O/torchrun-loads.jsonl; tail -30 $O/tables-4.txt; grep -v "^ " /tmp/s3-trace-*.txt | head -40
