#!/bin/bash
# Session 3, batch 6 on 2x H200: the fixes not yet measured where they apply: split-share for four split groups
# (NCCL level), eager-connect and channels:8 at the torch level (32 GiB of pinned copies, the lab's isolated model).
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
$B bench --modes isolated --groups split:4 --fix none,split-share --trials 5 --seed 40 --timeout 60s \
  --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-split > $O/tables-6.txt 2> $O/progress-6.log
echo "exit $?" >> $O/tables-6.txt
cp /tmp/s3-split/results.json $O/fixes-nccl-split.json
$B bench --worker torch --modes isolated --startup h2d-pinned:32GiB --fix none,eager-connect,channels:8 --size 64MiB \
  --iters 10 --trials 4 --seed 41 --timeout 120s --nccl-log off --out /tmp/s3-torch-more >> $O/tables-6.txt 2>> $O/progress-6.log
echo "exit $?" >> $O/tables-6.txt
cp /tmp/s3-torch-more/results.json $O/fixes-torch-isolated-more.json
tail -3 $O/progress-6.log; grep -B2 -A14 "^fixes for" $O/tables-6.txt | grep -v "^  fix:\|advice\|warn\|rank 0"
