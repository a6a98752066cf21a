#!/bin/bash
# Session 3, batch 5 on 2x H200: the fixes against start-up work that leaves the driver free: host-to-device copies
# from page-locked (pinned) memory. NCCL level (8 GiB, about 300 ms) and torch level (32 GiB, about 1 s; the lab's
# isolated model and Ray actors), interleaved against the baseline and cuMem off.
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
[ -d /tmp/raysite/site ] || { mkdir -p /tmp/raysite && tar -C /tmp/raysite -xJf .device/ray-site-py312.tar.xz; }
chmod +x /tmp/raysite/site/ray/core/src/ray/gcs/gcs_server /tmp/raysite/site/ray/core/src/ray/raylet/raylet 2>/dev/null
find /tmp/raysite/site -path "*/bin/*" -type f -exec chmod +x {} + 2>/dev/null
$B bench --modes isolated --startup h2d-pinned:8GiB --fix none,prewarm,cumem-off --trials 6 --seed 37 --timeout 60s \
  --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-pin-nccl > $O/tables-5.txt 2> $O/progress-5.log
echo "exit $?" >> $O/tables-5.txt
cp /tmp/s3-pin-nccl/results.json $O/fixes-nccl-pinned.json
$B bench --worker torch --modes isolated --startup h2d-pinned:32GiB --fix none,prewarm,cumem-off --size 64MiB \
  --iters 10 --trials 5 --seed 38 --timeout 120s --nccl-log off --out /tmp/s3-pin-torch >> $O/tables-5.txt 2>> $O/progress-5.log
echo "exit $?" >> $O/tables-5.txt
cp /tmp/s3-pin-torch/results.json $O/fixes-torch-isolated-pinned.json
PYTHONPATH=/tmp/raysite/site $B bench --worker torch --launcher ray --modes ray --startup h2d-pinned:32GiB \
  --fix none,prewarm,cumem-off --size 64MiB --iters 10 --trials 5 --seed 39 --timeout 120s --nccl-log off \
  --out /tmp/s3-pin-ray >> $O/tables-5.txt 2>> $O/progress-5.log
echo "exit $?" >> $O/tables-5.txt
cp /tmp/s3-pin-ray/results.json $O/fixes-torch-ray-pinned.json
tail -3 $O/progress-5.log; grep -A12 "^fixes for" $O/tables-5.txt
