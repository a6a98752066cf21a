#!/bin/bash
# Session 4 on 2x H200, batch 4, from the installed wheel: the torch level with the same 32 GiB copied from pageable
# memory in 256 MiB and in 16 MiB pieces, in one interleaved run each (the earlier 256 MiB torch-level numbers came
# from another lease): the lab's isolated model and Ray actors, baseline and prewarm.
set -u
export NCCL_NVLS_ENABLE=0
O=$OUT
T=/tmp/cs-wheel
[ -x $T/bin/coldstart ] || python3 -m pip install -q --no-index --no-deps --target $T $PWD/.whl/coldstart-*.whl
[ -d /tmp/raysite/site ] || { mkdir -p /tmp/raysite && tar -C /tmp/raysite -xJf .device/ray-site-py312.tar.xz; }
chmod +x /tmp/raysite/site/ray/core/src/ray/gcs/gcs_server /tmp/raysite/site/ray/core/src/ray/raylet/raylet 2>/dev/null
find /tmp/raysite/site -path "*/bin/*" -type f -exec chmod +x {} + 2>/dev/null
export PATH=$T/bin:$PATH PYTHONPATH=$T
cd /tmp
PYTHONPATH=/tmp/raysite/site:$T coldstart bench --worker torch --launcher ray --modes ray \
  --startup h2d:32GiB,h2d:32GiB/16MiB --fix none,prewarm --size 64MiB --iters 10 --trials 5 --seed 61 --timeout 120s \
  --nccl-log off --out /tmp/s4-ray-both > $O/tables-4.txt 2> $O/progress-4.log
echo "exit $?" >> $O/tables-4.txt; cp /tmp/s4-ray-both/results.json $O/fixes-torch-ray-both.json
coldstart bench --worker torch --modes isolated --startup h2d:32GiB,h2d:32GiB/16MiB --fix none,prewarm --size 64MiB \
  --iters 10 --trials 5 --seed 62 --timeout 120s --nccl-log off --out /tmp/s4-iso-both >> $O/tables-4.txt 2>> $O/progress-4.log
echo "exit $?" >> $O/tables-4.txt; cp /tmp/s4-iso-both/results.json $O/fixes-torch-isolated-both.json
tail -2 $O/progress-4.log; grep -A3 "^fixes for" $O/tables-4.txt; grep "^exit" $O/tables-4.txt
