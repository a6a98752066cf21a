#!/bin/bash
# Session 3, batch 3 on 2x H200: real torchrun with examples/prewarm_torchrun.py (32 GiB of weights as start-up),
# classic and per-rank visibility (--mask), with coldstart.prewarm and without; then coldstart trace of the masked
# job (prewarm with weights, prewarm alone, the lazy baseline) to see why the eager init on a thread is slow.
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
export PYTHONPATH=$PWD/python
run() { torchrun --standalone --nproc-per-node 2 examples/prewarm_torchrun.py "$@" 2>>$O/progress-3.log; }
for i in 1 2 3 4; do
  for mask in "" --mask; do
    for pw in "" --no-prewarm; do
      run --weights-gib 32 $mask $pw | sed "s/^{/{\"launch\": $i, /" >> $O/torchrun.jsonl
    done
  done
done
for v in "prewarm-h2d:--weights-gib 32" "prewarm-alone:--weights-gib 0" "lazy-h2d:--weights-gib 32 --no-prewarm"; do
  name=${v%%:*}; args=${v#*:}
  $B trace --out /tmp/s3-trace-$name -- torchrun --standalone --nproc-per-node 2 examples/prewarm_torchrun.py \
    --mask $args > /tmp/s3-trace-$name/../s3-trace-$name.txt 2>&1 || true
done
tar -C /tmp -czf $O/traces.tar.gz s3-trace-prewarm-h2d s3-trace-prewarm-alone s3-trace-lazy-h2d \
  s3-trace-prewarm-h2d.txt s3-trace-prewarm-alone.txt s3-trace-lazy-h2d.txt
tail -3 $O/progress-3.log; cat $O/torchrun.jsonl; cat /tmp/s3-trace-*.txt | grep -v "^ " | head -60
