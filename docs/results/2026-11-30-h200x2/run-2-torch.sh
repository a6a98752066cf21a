#!/bin/bash
# Session 3, batch 2 on 2x H200: the fixes against host-to-device copies at the NCCL level, and at the PyTorch level
# (torch 2.11, its NCCL 2.28.9) with 32 GiB of weights copied as the start-up work, under the lab's isolated model
# (torchrun's per-rank view) and as Ray actors. Ray 2.52.0 and its dependencies come in .device/ray-site-py312.tar.xz.
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
[ -d /tmp/raysite/site ] || { mkdir -p /tmp/raysite && tar -C /tmp/raysite -xJf .device/ray-site-py312.tar.xz; }
chmod +x /tmp/raysite/site/ray/core/src/ray/gcs/gcs_server /tmp/raysite/site/ray/core/src/ray/raylet/raylet 2>/dev/null
find /tmp/raysite/site -path "*/bin/*" -type f -exec chmod +x {} + 2>/dev/null

# 4. NCCL level, isolated: 4 GiB of host-to-device copies as the start-up work.
$B bench --modes isolated --startup h2d:4GiB --fix none,prewarm,cumem-off --trials 5 --seed 33 --timeout 60s \
  --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-fix-h2d > $O/tables-2.txt 2> $O/progress-2.log
echo "exit $?" >> $O/tables-2.txt
cp /tmp/s3-fix-h2d/results.json $O/fixes-nccl-h2d.json

# 5. torch level, the lab's isolated model: 32 GiB of weights; baseline lazy init (PyTorch's default).
$B bench --worker torch --modes isolated --startup h2d:32GiB --fix none,prewarm,cumem-off --coverage --size 64MiB \
  --iters 10 --trials 5 --seed 34 --timeout 120s --nccl-log off --out /tmp/s3-torch-lab >> $O/tables-2.txt 2>> $O/progress-2.log
echo "exit $?" >> $O/tables-2.txt
cp /tmp/s3-torch-lab/results.json $O/fixes-torch-isolated.json

# 6. torch level, Ray actors with num_gpus=1 (masked by Ray).
PYTHONPATH=/tmp/raysite/site $B bench --worker torch --launcher ray --modes ray --startup h2d:32GiB \
  --fix none,prewarm,cumem-off --coverage --size 64MiB --iters 10 --trials 5 --seed 35 --timeout 120s --nccl-log off \
  --out /tmp/s3-torch-ray >> $O/tables-2.txt 2>> $O/progress-2.log
echo "exit $?" >> $O/tables-2.txt
cp /tmp/s3-torch-ray/results.json $O/fixes-torch-ray.json
tail -5 $O/progress-2.log; tail -80 $O/tables-2.txt
