#!/bin/bash
# Session 2, batch 2 on the 2-GPU node: the three launchers at the NCCL level (lab models, real torchrun) and the
# torch level (lab models), each x NCCL_CUMEM_ENABLE default/0, 5 trials.
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv > $O/node.txt 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())" >> $O/node.txt 2>&1
which torchrun >> $O/node.txt 2>&1
$B bench --modes shared,isolated --trials 5 --seed 41 --size 0 --nccl-log off --out /tmp/s2-nccl-lab \
  > $O/tables.txt 2> $O/progress.log; echo "exit $?" >> $O/tables.txt
cp /tmp/s2-nccl-lab/results.json $O/nccl-lab.json
# Real torchrun: classic (every GPU visible, device = local rank) and --mask (each rank only its own GPU).
for cum in unset 0; do for mask in "" --mask; do for i in 1 2 3 4 5; do
  if [ $cum = unset ]; then unset NCCL_CUMEM_ENABLE; else export NCCL_CUMEM_ENABLE=$cum; fi
  torchrun --standalone --nproc-per-node 2 --no-python $B worker --size 0 --out /tmp/s2-torchrun $mask \
    >> $O/torchrun.log 2>&1 || echo "torchrun exit $? (cum=$cum mask=$mask i=$i)" >> $O/torchrun.log
done; done; done
unset NCCL_CUMEM_ENABLE
cp /tmp/s2-torchrun/results.json $O/nccl-torchrun.json
$B report /tmp/s2-torchrun/results.json >> $O/tables.txt 2>&1
$B bench --worker torch --modes shared,isolated --env NCCL_CUMEM_ENABLE=,0 --env COLDSTART_TORCH_INIT=lazy,eager \
  --trials 5 --seed 42 --size 0 --nccl-log off --out /tmp/s2-torch-lab >> $O/tables.txt 2>> $O/progress.log
echo "exit $?" >> $O/tables.txt
cp /tmp/s2-torch-lab/results.json $O/torch-lab.json
tail -3 $O/progress.log; tail -5 $O/torchrun.log; cat $O/tables.txt
