#!/bin/bash
# Session 4 on 2x H200, from the installed wheel (as in ../2026-11-30-h200x2-wheel): the fixes against start-up work
# whose host-to-device copies come from pageable memory in small pieces (16 MiB, as a loader that copies tensor by
# tensor) beside the same bytes in 256 MiB pieces; NCCL level (2 GiB) and torch level (32 GiB, the lab's isolated
# model), interleaved with the baseline and cuMem off; then the torch level with pinned copies again, more trials.
set -u
export NCCL_NVLS_ENABLE=0
O=$OUT
T=/tmp/cs-wheel
[ -x $T/bin/coldstart ] || python3 -m pip install -q --no-index --no-deps --target $T $PWD/.whl/coldstart-*.whl
export PATH=$T/bin:$PATH PYTHONPATH=$T
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
cd /tmp
coldstart bench --modes isolated --startup h2d:2GiB,h2d:2GiB/16MiB --fix none,prewarm,cumem-off --trials 6 \
  --seed 51 --timeout 60s --nccl-lib $TN/libnccl.so.2 --out /tmp/s4-nccl > $O/tables.txt 2> $O/progress.log
echo "exit $?" >> $O/tables.txt; cp /tmp/s4-nccl/results.json $O/fixes-nccl-pieces.json
coldstart bench --worker torch --modes isolated --startup h2d:32GiB/16MiB --fix none,prewarm,cumem-off --size 64MiB \
  --iters 10 --trials 5 --seed 52 --timeout 120s --nccl-log off --out /tmp/s4-torch >> $O/tables.txt 2>> $O/progress.log
echo "exit $?" >> $O/tables.txt; cp /tmp/s4-torch/results.json $O/fixes-torch-isolated-pieces.json
coldstart bench --worker torch --modes isolated --startup h2d-pinned:32GiB --fix none,prewarm,cumem-off --size 64MiB \
  --iters 10 --trials 7 --seed 53 --timeout 120s --nccl-log off --out /tmp/s4-pinned >> $O/tables.txt 2>> $O/progress.log
echo "exit $?" >> $O/tables.txt; cp /tmp/s4-pinned/results.json $O/fixes-torch-isolated-pinned.json
tail -3 $O/progress.log; grep -A12 "^fixes for" $O/tables.txt; grep "^exit" $O/tables.txt
