#!/bin/bash
# Session 2, batch 1 on the 2-GPU node: the tracer's own cost (A/B in one run, interleaved) and a provoked hang.
export NCCL_NVLS_ENABLE=0
B=./.device/coldstart
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,persistence_mode --format=csv > $OUT/node.txt 2>&1
$B bench --out /tmp/s2-ab --modes shared,isolated --trace off,on \
  --env COLDSTART_TRACE_CALLS=all,none,no-kernel-loading --trials 12 --seed 21 --size 0 \
  > $OUT/tables-trace-cost.txt 2> $OUT/progress-ab.log
echo "exit $?" >> $OUT/tables-trace-cost.txt
cp /tmp/s2-ab/results.json $OUT/trace-cost.json
# A real hang: rank 1 is stopped (SIGSTOP) 0.45 s after it starts, inside NCCL's init; the watchdog (15 s) ends
# the trial and reports each rank's phase and threads.
( for i in $(seq 200); do p=$(pgrep -f 'coldstart worker --rank 1 ' | head -1); [ -n "$p" ] && break; sleep 0.01; done
  sleep 0.45; kill -STOP $p; echo "stopped pid $p" ) > $OUT/hang-stopper.txt 2>&1 &
$B bench --out /tmp/s2-hang --modes isolated --trials 1 --seed 22 --timeout 15 --nccl-log light \
  > $OUT/hang.txt 2>&1
echo "exit $?" >> $OUT/hang.txt
wait
cp /tmp/s2-hang/results.json $OUT/hang.json
tail -5 $OUT/progress-ab.log; cat $OUT/hang-stopper.txt $OUT/hang.txt
