#!/bin/bash
# Session 4 on 2x H200: the wheel (scripts/wheel.sh .whl at this commit), installed with pip --no-index into a fresh
# target folder, run from the installed files only (outside the repository; the example script copied out):
# version, doctor, the Python API, a short bench, bench --worker torch, coldstart trace -- torchrun, and a torchrun
# script that calls coldstart.prewarm. Everything it printed is in transcript.txt.
set -u
export NCCL_NVLS_ENABLE=0
O=$OUT
T=/tmp/cs-wheel            # the fresh target folder
W=/tmp/cs-work             # where the commands run: no repository, no build tree
rm -rf $T $W; mkdir -p $W
cp examples/prewarm_torchrun.py $W/
WHEEL=$(ls $PWD/.whl/coldstart-*.whl)
cd $W
step() { echo; echo "\$ $*"; "$@"; echo "[exit $?]"; }
{
  date -u; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  step python3 -m pip install --no-index --no-deps --target $T "$WHEEL"
  export PATH=$T/bin:$PATH PYTHONPATH=$T
  step which coldstart
  step coldstart --version
  step python3 -c "import coldstart, coldstart.binary as b; print(coldstart.__file__); print(b.binary())"
  step coldstart doctor
  step coldstart doctor --json
  step python3 -m coldstart --help
  step coldstart bench --gpus 2 --trials 2 --seed 41 --timeout 60s --out $W/bench
  step coldstart bench --worker torch --gpus 2 --modes isolated --fix none,prewarm --startup h2d-pinned:8GiB \
    --trials 2 --seed 42 --timeout 120s --nccl-log off --out $W/bench-torch
  step python3 - $W/bench/results.json $W/bench-torch/results.json <<'PY'
import sys
import coldstart
for path in sys.argv[1:]:
    run = coldstart.load(path)
    print(run)
    for row in run.trial_rows():
        print(row)
d = coldstart.doctor()
print("doctor():", d["schema"], [(f["severity"], f["id"]) for f in d["findings"]])
PY
  step coldstart trace --out $W/trace -- torchrun --standalone --nproc-per-node 2 prewarm_torchrun.py --mask \
    --weights-gib 8 --pinned
  for pw in "" --no-prewarm; do
    step torchrun --standalone --nproc-per-node 2 prewarm_torchrun.py --mask --weights-gib 8 --pinned $pw
  done
} > $O/transcript.txt 2>&1
cp $W/bench/results.json $O/bench.json; cp $W/bench-torch/results.json $O/bench-torch.json
cp $W/trace/budget.json $O/trace-budget.json 2>/dev/null
ls -la $T $T/coldstart $T/coldstart/_bin >> $O/transcript.txt 2>&1
grep -E "^\\$|^\[exit" $O/transcript.txt
tail -40 $O/transcript.txt
