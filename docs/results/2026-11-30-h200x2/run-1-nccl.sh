#!/bin/bash
# Session 3, batch 1 on 2x H200 (NCCL level): the default matrix in schema /2; comm_init of the lab held against a
# minimal probe (bench/init_probe.cc), interleaved; the fixes against the job's start-up work.
# .device/ holds this commit's build: coldstart, libcoldstart_cupti.so, init_probe.
set -u
export NCCL_NVLS_ENABLE=0
B=$PWD/.device/coldstart
P=$PWD/.device/init_probe
O=$OUT
# PyTorch's NCCL (2.28.9); the loader's default libnccl.so.2 is 2.28.3.
TN=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0] + '/lib')")
{ date -u; uname -a; nvidia-smi; nvidia-smi topo -m; python3 -c "import torch; print('torch', torch.__version__, 'nccl', torch.cuda.nccl.version())"; echo "torch's NCCL: $TN"; ls -l $TN; } > $O/node.txt 2>&1

# 1. The README's default matrix (loader's NCCL, light log), schema /2 with ready.
$B bench --trials 5 --seed 31 --timeout 60s --out /tmp/s3-default > $O/tables.txt 2> $O/progress.log
echo "exit $?" >> $O/tables.txt
cp /tmp/s3-default/results.json $O/default.json

# 2. comm_init: the lab's worker (log off, log light) against the minimal probe (linked, dlopen, + the worker's
#    pre-init CUDA calls), isolated, cuMem on, NCCL 2.28.9; 8 rounds, each in a shuffled order.
lab() {  # $1 variant, $2 round, then bench flags
  local v=$1 r=$2; shift 2
  $B bench --modes isolated --env NCCL_CUMEM_ENABLE= --trials 1 --size 0 --timeout 60s --seed $r \
    --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-ci-$v-$r "$@" >/dev/null 2>>$O/progress.log
  python3 - /tmp/s3-ci-$v-$r/results.json $v <<'PY' >> $O/comminit.jsonl
import json, sys
r = json.load(open(sys.argv[1]))
for t in r["trials"]:
    for k in t["ranks"]:
        ph = {p["name"]: p["dur_ms"] for p in k["phases"]}
        print(json.dumps({"variant": sys.argv[2], "rank": k["rank"], "context_ms": ph.get("cuda_context"),
                          "init_ms": ph.get("comm_init"), "first_ms": ph.get("first_enqueue", 0) + ph.get("first_wait", 0),
                          "status": t["status"]}))
PY
}
probe() {  # $1 variant, $2 round, then probe flags
  local v=$1 r=$2; shift 2
  local d=/tmp/s3-probe-$v-$r; rm -rf $d; mkdir -p $d
  for rank in 0 1; do
    CUDA_VISIBLE_DEVICES=$rank LD_LIBRARY_PATH=$TN $P --rank $rank --nranks 2 --device 0 --dir $d "$@" \
      > $d/out.$rank 2>>$O/progress.log &
  done
  wait
  cat $d/out.* | sed "s/\"variant\": \"[^\"]*\"/\"variant\": \"$v\"/" >> $O/comminit.jsonl
}
for r in 1 2 3 4 5 6 7 8; do
  for v in $(printf "lab-off\nlab-light\nprobe-linked\nprobe-dlopen\nprobe-precalls\n" | shuf --random-source=<(yes $r)); do
    case $v in
      lab-off) lab $v $r --nccl-log off ;;
      lab-light) lab $v $r --nccl-log light ;;
      probe-linked) probe $v $r ;;
      probe-dlopen) probe $v $r --dlopen --nccl-lib $TN/libnccl.so.2 ;;
      probe-precalls) probe $v $r --pre-calls ;;
    esac
  done
done

# 3. The fixes at the NCCL level (NCCL 2.28.9), against 300 ms of CPU work, shared and isolated, with coverage.
$B bench --modes shared,isolated --startup cpu:300ms --fix none,prewarm,cumem-off,eager-connect,channels:8 \
  --coverage --trials 5 --seed 32 --timeout 60s --nccl-lib $TN/libnccl.so.2 --out /tmp/s3-fix-cpu \
  >> $O/tables.txt 2>> $O/progress.log
echo "exit $?" >> $O/tables.txt
cp /tmp/s3-fix-cpu/results.json $O/fixes-nccl-cpu.json
tail -5 $O/progress.log; cat $O/tables.txt | tail -60
