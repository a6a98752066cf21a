#!/bin/bash
# Session 4 on 2x H200, batch 2, from the installed wheel: Ray actors (the wheel's Ray launcher; Ray 2.52 carried as
# a site folder) with the same 32 GiB of weights copied from pageable memory in 16 MiB pieces; and the NCCL level
# with 4 GiB in 16 MiB pieces (start-up work longer than the warm-up).
set -u
export NCCL_NVLS_ENABLE=0
O=$OUT
T=/tmp/cs-wheel
[ -x $T/bin/coldstart ] || python3 -m pip install -q --no-index --no-deps --target $T $PWD/.whl/coldstart-*.whl
[ -d /tmp/raysite/site ] || { mkdir -p /tmp/raysite && tar -C /tmp/raysite -xJf .device/ray-site-py312.tar.xz; }
chmod +x /tmp/raysite/site/ray/core/src/ray/gcs/gcs_server /tmp/raysite/site/ray/core/src/ray/raylet/raylet 2>/dev/null
find /tmp/raysite/site -path "*/bin/*" -type f -exec chmod +x {} + 2>/dev/null
export PATH=$T/bin:$PATH PYTHONPATH=$T
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
cd /tmp
coldstart bench --modes isolated --startup h2d:4GiB/16MiB --fix none,prewarm,cumem-off --trials 6 --seed 54 \
  --timeout 60s --nccl-lib $TN/libnccl.so.2 --out /tmp/s4-nccl4 > $O/tables-2.txt 2> $O/progress-2.log
echo "exit $?" >> $O/tables-2.txt; cp /tmp/s4-nccl4/results.json $O/fixes-nccl-pieces-4gib.json
PYTHONPATH=/tmp/raysite/site:$T coldstart bench --worker torch --launcher ray --modes ray --startup h2d:32GiB/16MiB \
  --fix none,prewarm,cumem-off --size 64MiB --iters 10 --trials 5 --seed 55 --timeout 120s --nccl-log off \
  --out /tmp/s4-ray >> $O/tables-2.txt 2>> $O/progress-2.log
echo "exit $?" >> $O/tables-2.txt; cp /tmp/s4-ray/results.json $O/fixes-torch-ray-pieces.json
tail -3 $O/progress-2.log; grep -A8 "^fixes for" $O/tables-2.txt; grep "^exit" $O/tables-2.txt
