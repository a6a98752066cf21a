#!/bin/bash
# Session 2, batch 3 on the 2-GPU node: Ray actors at the NCCL and torch levels, doctor --launcher ray, and the
# tracer when CUPTI is already taken. Ray 2.52.0 and its dependencies come in .device/ray-site-py312.tar.xz.
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
O=$OUT
[ -d /tmp/raysite/site ] || { mkdir -p /tmp/raysite && tar -C /tmp/raysite -xJf .device/ray-site-py312.tar.xz; }
# The wheel was unpacked without file modes: its executables need theirs back.
chmod +x /tmp/raysite/site/ray/core/src/ray/gcs/gcs_server /tmp/raysite/site/ray/core/src/ray/raylet/raylet
find /tmp/raysite/site -path "*/bin/*" -type f -exec chmod +x {} +
export PYTHONPATH=/tmp/raysite/site
python3 -c "import ray; print('ray', ray.__version__)" > $O/ray.txt 2>&1
$B bench --launcher ray --modes ray,ray-noset --trials 5 --seed 43 --size 0 --nccl-log off --out /tmp/s2-nccl-ray-$$ \
  > $O/tables-ray.txt 2> $O/progress-ray.log; echo "exit $?" >> $O/tables-ray.txt
cp /tmp/s2-nccl-ray-$$/results.json $O/nccl-ray.json
$B bench --launcher ray --worker torch --modes ray --env NCCL_CUMEM_ENABLE=,0 --env COLDSTART_TORCH_INIT=lazy,eager \
  --trials 5 --seed 44 --size 0 --nccl-log off --out /tmp/s2-torch-ray-$$ >> $O/tables-ray.txt 2>> $O/progress-ray.log
echo "exit $?" >> $O/tables-ray.txt
cp /tmp/s2-torch-ray-$$/results.json $O/torch-ray.json
tail -3 $O/progress-ray.log; cat $O/ray.txt $O/tables-ray.txt
