#!/usr/bin/env bash
# The NCCL patch (nccl/series) measured on a GPU node, in steps that fit the node's per-command limit (the node keeps
# /tmp between calls only while it stays warm). Run from the checkout's root:
#   OUT=DIR nccl/gpu/measure_patch.sh BUILD_DIR NCCL_TARBALL STEP[,STEP...]
# Results collect in /tmp/measure-patch and come back as $OUT/measure-patch.tgz, packed as each step starts and at the
# end (a call cut short brings back the steps before the one it cut). PATCHED_LIB and STOCK_LIB name the libraries
# where build did not make them (the wheel step's cache: ~/.cache/coldstart/nccl/2.30.7+peer-regions/build/patched/lib/
# and 2.30.7+stock/build/stock/lib/). The torch steps take coldstart's Python package from COLDSTART_PYTHONPATH, by
# default this checkout's python/. Each step's own variables are told above its code. The steps:
# - building: build (stock and patched from one source, scripts/build_nccl.sh), unpack (libraries built elsewhere),
#   wheel (coldstart's wheel, WHEEL, installed with pip and `coldstart nccl build --which both --src` run from it),
#   build-diag (the diagnostic library, nccl/diag/, from that build's tree), build-ptx (a library for sm_80, whose PTX
#   an sm_90 GPU compiles), build-next (the candidates of nccl/next/ on the patched tree), build-289 and build-next-289
#   (the 2.28.9 series and its candidates, beside);
# - correctness: sanity (one check of each library), check (the whole sweep; ONLY picks scenarios), check-289 (the
#   2.28.9 sweep, and its first collective with the reservation on and off), mixed (a job of stock and patched ranks,
#   both assignments, at MIXED_RANKS ranks on GPU 0), nccl-tests (NVIDIA's nccl-tests on stock and patched, alone and
#   mixed), safety (communicators in turn with their memory, fds and threads; an abort in a first all_reduce;
#   communicators connecting at once), ddp (DDP training steps on each library), wheel-run (the wheel's load lines, a
#   torchrun job under the printed LD_PRELOAD, `coldstart bench` with no flags);
# - timing, NCCL level: micro (the go/no-go microbenchmark), quick (the patched library's switch off and on), bench
#   (2, 4, 8 ranks: first collective, ready, init, memory, busbw), trace (the driver calls of the first collective),
#   busbw (1 GiB), diag (the connect's time by part), reserve (the fd-table reservation, nccl/*/0004, on and off),
#   fdtable (the kernel's fd-table growth: its wait, when the ranks cross it, the table grown before main), growth (2
#   to 64 ranks on one GPU, each phase's growth), nodes (the job over "nodes" of namespaces at two link latencies),
#   logcost (what NCCL's log costs each phase), scale (the patched first collective at 16 and 32 ranks, by cause),
#   next (the candidates, or the series, against the patched library and stock), casebook (the JIT at init, the fd
#   limit, /dev/shm's size);
# - timing, torch level: torch (the probe with each library preloaded), torch-switch, fdtable-torch, torch-reserve;
# - two GPUs, one rank each: gpu2 (the patched library, its switch off and cuMem off, with and without the grown fd
#   table; trace; the sweep; busbw), gpu2-stock (stock and patched, interleaved, and traced), gpu2-torch (DDP steps,
#   and the first barrier with the switch and the grown table).
set -uo pipefail
build="${1:?usage: measure_patch.sh BUILD_DIR NCCL_TARBALL STEPS}"
tarball="${2:?usage: measure_patch.sh BUILD_DIR NCCL_TARBALL STEPS}"
steps=",${3:?usage: measure_patch.sh BUILD_DIR NCCL_TARBALL STEPS},"
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on a shared node
export COLDSTART_PYTHONPATH="${COLDSTART_PYTHONPATH:-$PWD/python}"
out="${OUT:?set OUT}"
work=/tmp/measure-patch
nccl=/tmp/nccl-build
S=${STOCK_LIB:-$nccl/stock/lib/libnccl.so.2}
P=${PATCHED_LIB:-$nccl/patched/lib/libnccl.so.2} # coldstart nccl build's: ~/.cache/coldstart/nccl/NAME/build/patched/lib/
cs="$build/coldstart"
mkdir -p "$work"
[ -f "$work/nvidia-smi.txt" ] || nvidia-smi >"$work/nvidia-smi.txt" 2>&1
status=0
step() { [[ "$steps" == *",$1,"* ]]; }
# The results so far as $out/measure-patch.tgz (bench runs without their trials' folders): as each step starts, at
# the end, and on TERM (which this shell takes once the step's command ends), so that a call cut short by its limit
# still brings back every step that finished before.
pack() {
  local skip=() d
  for d in bench busbw torch quick diag fdtable reserve torch-reserve growth logcost scale nodes next; do
    skip+=(--exclude="./$d-*/trials")
  done
  tar -C "$work" -czf "$out/measure-patch.tgz" "${skip[@]}" --exclude='./gpu2*/trials' --exclude='./nodes-*/*/trials' \
    --exclude='./onegpu/coldstart-out/*/trials' . 2>/dev/null
}
trap 'note "cut short (status $status)"; pack; exit 124' TERM INT
fd_bin() { (cd "${FD_BIN:?set FD_BIN to the folder of fd_growth and fd_table_preload.so}" && pwd); }
note() {
  echo "== $1 $(date +%T)" | tee -a "$work/steps.log"
  pack
}
# The patched library's INFO line saying what its fd-table reservation did, from every rank log of a bench folder
fd_lines() {
  grep -rhoE "fd table [0-9]+ -> [0-9]+ entries in [0-9.]+ ms \(NCCL_FD_TABLE_RESERVE=[0-9]+\)" "$work/$1" \
    >"$work/$1.fdlines" 2>/dev/null
  echo "$1: $(wc -l <"$work/$1.fdlines") reservation lines; $(sort "$work/$1.fdlines" | cut -d' ' -f3-5 | uniq -c |
    sort -rn | head -n 3 | tr -s ' ' | paste -sd';')"
}
# One bench run of a step with a deadline (growth, logcost), which a call cut short leaves for the next: nothing
# when it is done, `bench --resume` when begun, else bench with the flags given; at most until DEADLINE (SECONDS).
resumable() { # NAME DEADLINE then bench flags (not --out)
  local name=$1 deadline=$2
  shift 2
  local dir="$work/$name" left=$((deadline - SECONDS)) rc
  [ -f "$dir/done" ] && return 0
  ((left > 20)) || { echo "$name: not started, the step's time is spent"; status=1; return 0; }
  if [ -d "$dir" ]; then
    timeout "$left" "$cs" bench --resume "$dir" >>"$work/$name.txt" 2>>"$work/$name.log"
  else
    timeout "$left" "$cs" bench --out "$dir" "$@" >"$work/$name.txt" 2>"$work/$name.log"
  fi
  rc=$?
  if ((rc == 0)); then touch "$dir/done"; else status=1; fi
  echo "$name: exit $rc, $((deadline - SECONDS)) s of the step left"
}
# One bench run, NAME: its results in $work/NAME, its table in NAME.txt, its progress in NAME.log; a failure, or a run
# past LIMIT seconds, counts in the call's status.
bench_run() { # NAME LIMIT LIBS then bench flags (not --out)
  local name=$1 limit=$2 libs=$3
  shift 3
  timeout "$limit" "$cs" bench --nccl-lib "$libs" --out "$work/$name" "$@" >"$work/$name.txt" 2>"$work/$name.log" ||
    status=1
}
# A bench run's table: each configuration's phases
table() { sed -n '/^config/,/^$/p' "$work/$1.txt" | cut -c1-200 | head -n 14; }
# bench_run within 560 s on stock and patched, interleaved (patched alone where stock was not built), and its table
bench() { # NAME then bench flags
  local name=$1 libs="$P"
  shift
  [ -f "$S" ] && libs="$S,$P"
  bench_run "$name" 560 "$libs" "$@"
  table "$name"
}
if step micro; then
  note micro
  OUT="$work/micro" TRIALS=5 nccl/gpu/run_cumem_share_bench.sh "$build" >/dev/null 2>&1 || status=1
  tail -n 11 "$work/micro/cumem_1gpu.txt"
fi
# unpack: libraries built elsewhere; LIBS=a tarball (.tar.xz, .tar.gz) of stock/, patched/ or diag/ lib folders
if step unpack; then
  note unpack
  mkdir -p "$nccl" && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "${LIBS:?set LIBS to the tarball of the libraries}" "$nccl" || status=1
  ls "$nccl"/*/lib/libnccl.so.2
fi
# nccl-tests: NVIDIA's nccl-tests on stock and patched, nccl/checks/nccl_tests.sh run with NCCL_TESTS_PLAN (default
# "alone mixed"); NCCL_TESTS is a tarball of the folder nccl_tests.sh build made, MPI_WHEEL Open MPI's wheel;
# NCCL_TESTS_NAME names the run (nccl-tests-NAME).
if step nccl-tests; then
  note nccl-tests
  tests_dir=/tmp/nccl-tests
  if [ ! -x "$tests_dir/build/all_reduce_perf" ]; then
    mkdir -p "$tests_dir" && tar -xf "${NCCL_TESTS:?set NCCL_TESTS to a tarball of the folder nccl_tests.sh build made}" \
      -C "$tests_dir" || status=1
  fi
  # shellcheck disable=SC2086
  MPI="${MPI_WHEEL:?set MPI_WHEEL to the Open MPI wheel}" nccl/checks/nccl_tests.sh run "$tests_dir" "$S" "$P" \
    "$work/nccl-tests-${NCCL_TESTS_NAME:-run}" ${NCCL_TESTS_PLAN:-alone mixed} \
    >"$work/nccl-tests-${NCCL_TESTS_NAME:-run}.txt" 2>&1 || status=1
  tail -n 45 "$work/nccl-tests-${NCCL_TESTS_NAME:-run}.txt"
fi
# safety: nccl_check on each library: SAFETY_REPEAT communicators in turn (default 200 patched, SAFETY_REPEAT_STOCK 50
# stock) with GPU memory, fds and threads after each and their slopes; an abort from another thread in a first
# all_reduce; SAFETY_CONCURRENT communicators connecting at once (default 4); each rank's NCCL warnings kept. A rank stuck
# in one step counts as hung after SAFETY_STEP_TIMEOUT seconds (nccl_check --timeout, default 60): keep it well under
# SAFETY_SECONDS, the whole run's limit, or a hang is killed before nccl_check reports it.
if step safety; then
  note safety
  for lib in patched stock; do
    L=$P repeat=${SAFETY_REPEAT:-200}
    [ $lib = stock ] && L=$S repeat=${SAFETY_REPEAT_STOCK:-50}
    mkdir -p "$work/safety-$lib"
    NCCL_DEBUG=WARN NCCL_DEBUG_FILE="$work/safety-$lib/nccl.%p.log" timeout "${SAFETY_SECONDS:-560}" \
      "$build/nccl_check" --nccl-lib "$L" --gpus 0 --ranks "${SAFETY_RANKS:-2}" --collectives all_reduce \
      --sizes 4,1MiB --repeat "$repeat" --abort-first --concurrent "${SAFETY_CONCURRENT:-4}" \
      --timeout "${SAFETY_STEP_TIMEOUT:-60}" \
      --out "$work/safety-$lib.json" >"$work/safety-$lib.txt" 2>&1 || status=1
    echo "-- $lib"
    grep -v "^PASS all_reduce" "$work/safety-$lib.txt" | tail -n 12
    grep -h "WARN" "$work/safety-$lib"/nccl.*.log 2>/dev/null | sed -E 's/^[^ ]+ //' | sort | uniq -c | sort -rn | head -n 6
  done
fi
if step build; then # WHICH=stock|patched|both (default both); a cut-short build resumes on the next call
  note build
  scripts/build_nccl.sh --src "$tarball" --out "$nccl" --which "${WHICH:-both}" --jobs "$(nproc)" \
    --stop-after "${BUILD_SECONDS:-480}" >>"$work/build.txt" 2>&1 || status=1
  tail -n 3 "$work/build.txt"
fi
# wheel: coldstart as a user gets it: its wheel (WHEEL) installed with pip, then `coldstart nccl build --which both
# --src` the tarball into its cache (~/.cache/coldstart/nccl): the patched library, then the stock one started from
# its objects, on every core. Resumes on the next call when cut short.
if step wheel; then
  note wheel
  python3 -m pip install --no-deps --no-index --force-reinstall "${WHEEL:?set WHEEL to the coldstart wheel}" \
    >"$work/wheel-install.txt" 2>&1 || status=1
  csw="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/coldstart"
  # NCCL_RELEASE, not NCCL_VERSION: NVIDIA's images set that to their own NCCL (2.28.3-1 on our node).
  # --version: PyTorch's own NCCL (what it would detect) is 2.28.9 on our nodes, whose several ranks a GPU need 2.30+
  start=$SECONDS
  timeout "${BUILD_SECONDS:-480}" "$csw" nccl build --version "${NCCL_RELEASE:-2.30.7}" --src "$tarball" \
    --which "${WHICH:-both}" --jobs "$(nproc)" >>"$work/wheel-build.txt" 2>&1 || status=1
  echo "wheel: nccl build --which ${WHICH:-both} returned after $((SECONDS - start)) s" | tee -a "$work/wheel-build.txt"
  grep -h "^Seeded\|^Compiling" "$HOME"/.cache/coldstart/nccl/*+stock/build/stock.log 2>/dev/null |
    sed 's/ \+/ /g' >"$work/wheel-stock-make.txt" || true
  tail -n 16 "$work/wheel-build.txt"
fi
# A library built beside a finished patched build (FROM: build_nccl.sh's --out folder, /tmp/nccl-build after the build
# step, or coldstart nccl build's cache entry): its tree and objects copied to $nccl/src-NAME and $nccl/NAME, the
# patches given applied in turn, and make run, which compiles again only the files they touch; $work/build-NAME.txt.
build_beside() { # NAME FROM PATCH...
  local name=${1:?} from=$2 p ok=1
  shift 2
  rm -rf "${nccl:?}/src-$name" "${nccl:?}/$name"
  if ! mkdir -p "$nccl" || ! cp -a "$from/src-patched" "$nccl/src-$name" || ! cp -a "$from/patched" "$nccl/$name"; then
    ok=0
  fi
  : >"$work/build-$name.txt"
  for p in "$@"; do
    if ((ok)) && ! patch -d "$nccl/src-$name" -p1 <"$p" >>"$work/build-$name.txt" 2>&1; then ok=0; fi
  done
  if ((ok)) && ! timeout 400 make -C "$nccl/src-$name" -j"$(nproc)" src.build BUILDDIR="$nccl/$name" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >>"$work/build-$name.txt" 2>&1; then
    ok=0
  fi
  ((ok)) || status=1
  echo "build-$name: compiled $(grep -c '^Compiling' "$work/build-$name.txt") files; $(ls -l "$nccl/$name/lib/libnccl.so.2" 2>&1)"
}
# The candidates of nccl/next/RELEASE/ in order (VARIABLE names others instead); none is an error, naming the fix.
candidates() { # RELEASE VARIABLE
  local found=() p
  for p in nccl/next/"$1"/*.patch; do [ -f "$p" ] && found+=("$p"); done
  if ((${#found[@]} == 0)); then
    echo "nccl/next/$1/ holds no candidate: give $2 the patch files to build beside the series" >&2
    return 1
  fi
  printf '%s\n' "${found[@]}"
}
# A library of candidates built beside a finished patched build: the files VARIABLE names, or nccl/next/RELEASE/'s.
build_candidates() { # NAME FROM RELEASE VARIABLE
  local patches=${!4:-}
  if [ -z "$patches" ] && ! patches=$(candidates "$3" "$4"); then
    status=1
    return
  fi
  # shellcheck disable=SC2086 # a list of files
  build_beside "$1" "$2" $patches
}
# build-diag: the diagnostic library (nccl/diag/: the timers) built beside
# a finished patched build (DIAG_FROM; default coldstart nccl build's cache entry)
if step build-diag; then
  note build-diag
  build_beside diag "${DIAG_FROM:-$HOME/.cache/coldstart/nccl/2.30.7+peer-regions/build}" \
    nccl/diag/nccl-diag-timers.patch
fi
# build-next: the candidates of nccl/next/ (patches that join the series once measured: nccl/next/README.md), in
# order (NEXT_PATCHES, default all of nccl/next/v2.30.7/; none there is an error), built beside a finished patched build (NEXT_FROM; default
# coldstart nccl build's cache entry): $nccl/next/lib/libnccl.so.2.
if step build-next; then
  note build-next
  build_candidates next "${NEXT_FROM:-$HOME/.cache/coldstart/nccl/2.30.7+peer-regions/build}" v2.30.7 NEXT_PATCHES
fi
# next: the candidates (build-next's library, N; NEXT_LIB names another, e.g. the series' own build) against the
# patched library they build on (and NCCL's own, S, with
# NEXT_STOCK=1: the issue's four configurations; NEXT_LIBS names the libraries instead), interleaved in one bench a rank count: NEXT_RANKS (default "16 32")
# ranks on the GPU, NEXT_AXES its --env axes at 16 (default cuMem as NCCL sets it and off, cuMem off the issue's
# reference) and NEXT_AXES_32 above 16 (default none given, so bench's own axis: the same two; where cuMem off's
# buffers outgrow the GPU, as 80 GB at 32 ranks, its trials fail on their own, or wait out NEXT_TIMEOUT where some ranks
# fail and the rest wait for them: `--env NCCL_CUMEM_ENABLE=` runs cuMem on alone), NEXT_TRIALS trials (default 3),
# NEXT_TIMEOUT bench's limit a trial (default 300s); NEXT_TAG follows each run's name (next-K$NEXT_TAG), so that two
# runs at one rank count keep both; then the sweep on N (every collective and size, data checked) at
# NEXT_CHECK_RANKS ranks (default 4; NEXT_CHECK_ONLY its scenarios, default isolated-full; NEXT_CHECK_MAX its largest
# size, default 1GiB; NEXT_CHECK_COLLECTIVES its collectives, default all); and with NEXT_TRACE_RANKS, one traced
# trial of stock and N at that many ranks (bench --trace on: each rank's cuda_context, comm_init and first
# collective in CUDA calls, in its results.json; the per-process call files stay on the node), with NEXT_TRACE_AXES
# its axes (default none given: cuMem on and off). A mixed job of stock and N ranks: the mixed step with PATCHED_LIB=N.
if step next; then
  note next
  N=${NEXT_LIB:-$nccl/next/lib/libnccl.so.2}
  libs="$P,$N"
  [ -z "${NEXT_STOCK:-}" ] || libs="$S,$libs"
  libs=${NEXT_LIBS:-$libs}
  limit=${NEXT_TIMEOUT:-300s} tag=${NEXT_TAG:-}
  for k in ${NEXT_RANKS:-16 32}; do
    axes=${NEXT_AXES---env NCCL_CUMEM_ENABLE=,0}
    ((k <= 16)) || axes=${NEXT_AXES_32:-}
    # shellcheck disable=SC2086 # the axes: --env flags, split on spaces
    bench_run "next-$k$tag" "${NEXT_SECONDS:-300}" "$libs" --gpus 1 --ranks-per-gpu "$k" --modes isolated $axes \
      --trials "${NEXT_TRIALS:-3}" --seed $((320 + k)) --timeout "$limit" --size 0
    table "next-$k$tag"
  done
  for k in ${NEXT_CHECK_RANKS:-4}; do
    OUT="$work/next-check-$k" RANKS=$k MAX_SIZE=${NEXT_CHECK_MAX:-1GiB} ONLY=${NEXT_CHECK_ONLY:-isolated-full} \
      COLLECTIVES=${NEXT_CHECK_COLLECTIVES:-} nccl/checks/run_nccl_check.sh "$build" "$N" || status=1
  done
  for k in ${NEXT_TRACE_RANKS:-}; do
    # shellcheck disable=SC2086 # the axes: --env flags, split on spaces
    bench_run "next-trace-$k$tag" "${NEXT_SECONDS:-300}" "$S,$N" --gpus 1 --ranks-per-gpu "$k" --modes isolated \
      ${NEXT_TRACE_AXES:-} --trace on --trials 1 --seed $((930 + k)) --timeout "$limit" --size 0
    grep ": cuda_context\|: comm_init\|: first collective" "$work/next-trace-$k$tag.txt" | cut -c1-200
  done
fi
if step diag; then # where the patched first collective's connect spends its time (nccl/diag/nccl-diag-timers.patch)
  note diag
  for k in ${DIAG_RANKS:-2 4 8}; do # DIAG_ENV: the --env axes (default: the regions off and on); DIAG_SECONDS a run's
    # limit (default 300): set it inside the call's, or a run cut by the call leaves no lines (its trials are not kept)
    # shellcheck disable=SC2086
    bench_run "diag-$k" "${DIAG_SECONDS:-300}" "$nccl/diag/lib/libnccl.so.2" --gpus 1 --ranks-per-gpu "$k" \
      --modes isolated ${DIAG_ENV:---env NCCL_P2P_PEER_REGION=0,1} --trials 3 --seed $((240 + k)) --timeout 90s \
      --size 64MiB --nccl-log light
    grep -r "csdiag" "$work/diag-$k" --include="*.log" | sed "s|^$work/||" >"$work/diag-$k.lines" || status=1 # trials/NNNN: results.json says which configuration
    wc -l <"$work/diag-$k.lines"
  done
fi
if step quick; then # the patched library alone, its switch off and on, at 2, 4 and 8 ranks: a first look
  note quick
  for k in 2 4 8; do
    bench_run "quick-$k" 200 "$P" --gpus 1 --ranks-per-gpu "$k" --modes isolated --env NCCL_P2P_PEER_REGION=0,1 \
      --trials 3 --seed $((250 + k)) --timeout 60s --size 64MiB
    table "quick-$k"
  done
fi
if step sanity; then
  note sanity
  OUT="$work/sanity" MAX_SIZE=1GiB ONLY=isolated-full nccl/checks/run_nccl_check.sh "$build" "$S" "$P" || status=1
fi
# check: the whole sweep (nccl/checks/run_nccl_check.sh) on each library built; ONLY picks its scenarios.
if step check; then
  note check
  libs=()
  for lib in "$S" "$P"; do [ -f "$lib" ] && libs+=("$lib"); done
  OUT="$work/check" nccl/checks/run_nccl_check.sh "$build" "${libs[@]}" || status=1
  cat "$work/check/summary.txt"
fi
# bench: stock and patched interleaved at 2, 4 and 8 ranks on one GPU, cuMem on and off, BENCH_TRIALS trials (default
# 5), seed BENCH_SEED+K (default 220+K): first collective, ready, init, memory, busbw at 64 MiB.
if step bench; then
  note bench
  for k in 2 4 8; do
    bench "bench-$k" --gpus 1 --ranks-per-gpu $k --modes isolated --env NCCL_CUMEM_ENABLE=,0 --trials "${BENCH_TRIALS:-5}" \
      --seed $((${BENCH_SEED:-220} + k)) --timeout 90s --size 64MiB
  done
fi
if step trace; then
  note trace
  # shellcheck disable=SC2086 # TRACE_ENV: more --env axes, e.g. --env NCCL_CUMEM_ENABLE=,0
  bench trace-2 --gpus 1 --ranks-per-gpu 2 --modes isolated --trace on --trials 2 --seed 230 --timeout 90s --size 0 \
    ${TRACE_ENV:-}
fi
if step busbw; then
  note busbw
  bench busbw-2 --gpus 1 --ranks-per-gpu 2 --modes isolated --trials 3 --seed 231 --timeout 120s --size 1GiB \
    --coverage
fi
if step ddp; then
  note ddp
  for lib in "$S" "$P"; do
    [ -f "$lib" ] || continue
    timeout 300 python3 nccl/checks/ddp_steps.py "$lib" 2 1 >>"$work/ddp.txt" 2>&1 || status=1
  done
  grep -E "PASS|FAIL|passed" "$work/ddp.txt"
fi
if step torch-switch; then
  note torch-switch
  bench torch-switch-2 --worker torch --gpus 1 --ranks-per-gpu 2 --modes isolated --env NCCL_P2P_PEER_REGION=0,1 \
    --env NCCL_CUMEM_ENABLE=,0 --trials 4 --seed 233 --timeout 120s --size 64MiB --iters 10 --nccl-log light
fi
# fdtable: the kernel's fd-table growth: its wait on the node (fd_growth), when each rank's highest fd crosses 64, 128,
# 256, ... at FD_RANKS ranks (default "2 8"), and stock and patched with the table grown before main and not at
# FD_BENCH_RANKS ranks (default "2 4 8"), FD_TRIALS trials; FD_BIN holds fd_growth and fd_table_preload.so, built from
# nccl/gpu/.
if step fdtable; then
  note fdtable
  fdbin="$(fd_bin)"
  uname -srv >"$work/uname.txt"
  { "$fdbin/fd_growth" 1 && "$fdbin/fd_growth" 2; } >"$work/fd_growth.txt" 2>&1 || status=1
  cat "$work/fd_growth.txt"
  for k in ${FD_RANKS:-2 8}; do # when each rank's highest fd crosses 64, 128, 256, ... (stock path and patched)
    python3 nccl/gpu/fd_watch.py "$work/fdwatch-$k.jsonl" -- timeout 200 "$cs" bench --nccl-lib "$P" \
      --out "$work/fdwatch-$k" --gpus 1 --ranks-per-gpu "$k" --modes isolated --env NCCL_P2P_PEER_REGION=0,1 \
      --trials 2 --seed $((260 + k)) --timeout 60s --size 64MiB >"$work/fdwatch-$k.txt" 2>&1 || status=1
  done
  for k in ${FD_BENCH_RANKS:-2 4 8}; do
    bench "fdtable-$k" --gpus 1 --ranks-per-gpu "$k" --modes isolated --env NCCL_CUMEM_ENABLE=,0 \
      --env "LD_PRELOAD=,$fdbin/fd_table_preload.so" --trials "${FD_TRIALS:-5}" --seed $((270 + k)) --timeout 90s \
      --size 64MiB
  done
fi
if step fdtable-torch; then # the same at the torch level: the probe grows its table when COLDSTART_FD_TABLE is set
  note fdtable-torch
  [ -n "${FD_SKIP_WATCH:-}" ] || python3 nccl/gpu/fd_watch.py "$work/fdwatch-torch-2.jsonl" -- timeout 200 "$cs" \
    bench --worker torch --nccl-lib "$P" --out "$work/fdwatch-torch-2" --gpus 1 --ranks-per-gpu 2 --modes isolated \
    --env COLDSTART_FD_TABLE=,1024 --trials 2 --seed 279 --timeout 120s --size 64MiB --iters 10 --nccl-log off \
    >"$work/fdwatch-torch-2.txt" 2>&1 || status=1
  for k in ${FD_BENCH_RANKS:-2 4}; do
    bench "fdtable-torch-$k" --worker torch --gpus 1 --ranks-per-gpu "$k" --modes isolated \
      --env COLDSTART_FD_TABLE=,1024 --trials "${FD_TRIALS:-5}" --seed $((280 + k)) --timeout 120s --size 64MiB \
      --iters 10 --nccl-log off
  done
fi
if step gpu2; then # two GPUs, one rank each (a 2-GPU node): the patched library, its switch off (the stock path)
  note gpu2 # and cuMem off, each with the fd table grown before main and not; the driver calls; the sweep; busbw
  fdbin="$(fd_bin)"
  bench gpu2 --gpus 2 --modes isolated --env NCCL_P2P_PEER_REGION=,0 --env NCCL_CUMEM_ENABLE=,0 \
    --env "LD_PRELOAD=,$fdbin/fd_table_preload.so" --trials "${GPU2_TRIALS:-5}" --seed 290 --timeout 60s --size 64MiB
  bench gpu2-trace --gpus 2 --modes isolated --env NCCL_P2P_PEER_REGION=,0 --trace on --trials 2 --seed 291 \
    --timeout 60s --size 0
  OUT="$work/gpu2-check" MAX_SIZE=1GiB timeout 200 nccl/checks/run_nccl_check.sh "$build" "$P" >/dev/null 2>&1 ||
    status=1
  cat "$work/gpu2-check/summary.txt"
  bench gpu2-busbw --gpus 2 --modes isolated --env NCCL_P2P_PEER_REGION=,0 --trials 3 --seed 292 --timeout 60s \
    --size 1GiB
fi
if step gpu2-stock; then # two GPUs: stock (step build, WHICH=stock) and patched built from one source, interleaved
  note gpu2-stock
  bench gpu2-stock --gpus 2 --modes isolated --env NCCL_CUMEM_ENABLE=,0 --trials "${GPU2_TRIALS:-5}" --seed 294 \
    --timeout 60s --size 64MiB
  bench gpu2-stock-trace --gpus 2 --modes isolated --trace on --trials 2 --seed 295 --timeout 60s --size 0
fi
if step gpu2-torch; then # two GPUs at the torch level: DDP steps on the patched library, then the first barrier of
  note gpu2-torch # the patched library and its switch off, each with the table grown by the probe and not
  timeout 150 python3 nccl/checks/ddp_steps.py "$P" 2 2 >"$work/gpu2-ddp.txt" 2>&1 || status=1
  tail -n 1 "$work/gpu2-ddp.txt"
  bench gpu2-torch --worker torch --gpus 2 --modes isolated --env NCCL_P2P_PEER_REGION=,0 \
    --env COLDSTART_FD_TABLE=,1024 --trials "${GPU2_TRIALS:-4}" --seed 293 --timeout 120s --size 64MiB --iters 10 \
    --nccl-log off
fi
# reserve: the patched library's own fd-table reservation (nccl/*/0004) on and off, with cuMem on and off, at
# RESERVE_RANKS ranks a GPU (default "2 4 8") on RESERVE_GPUS GPUs (default 1), RESERVE_TRIALS trials; then the INFO
# lines saying what it grew.
if step reserve; then
  note reserve
  for k in ${RESERVE_RANKS:-2 4 8}; do
    bench "reserve-$k" --gpus "${RESERVE_GPUS:-1}" --ranks-per-gpu "$k" --modes isolated \
      --env NCCL_FD_TABLE_RESERVE=,0 --env NCCL_CUMEM_ENABLE=,0 --trials "${RESERVE_TRIALS:-6}" --seed $((300 + k)) \
      --timeout 90s --size 64MiB
    fd_lines "reserve-$k"
  done
fi
if step torch-reserve; then
  note torch-reserve
  bench torch-reserve-2 --worker torch --gpus "${RESERVE_GPUS:-1}" --ranks-per-gpu "${TORCH_RANKS:-2}" \
    --modes isolated --env NCCL_FD_TABLE_RESERVE=,0 --trials "${RESERVE_TRIALS:-8}" --seed 310 --timeout 120s \
    --size 64MiB --iters 10
  fd_lines torch-reserve-2
fi
if step build-289; then # the 2.28.9 series (patched only), beside the 2.30.7 libraries; resumes like build
  note build-289
  scripts/build_nccl.sh --src "${TARBALL_289:?set TARBALL_289 to a git archive of NCCL v2.28.9-1}" --version 2.28.9 \
    --out /tmp/nccl-build-289 --which patched --jobs "$(nproc)" --stop-after "${BUILD_SECONDS:-480}" \
    >>"$work/build-289.txt" 2>&1 || status=1
  tail -n 3 "$work/build-289.txt"
fi
# build-next-289: the candidates' 2.28.9 port (NEXT_PATCHES_289, default nccl/next/v2.28.9/) beside build-289's patched build:
# $nccl/next-289/lib/libnccl.so.2, which check-289 takes with LIB_289 (NCCL 2.28 runs one rank a GPU: its P2P paths
# need two GPUs)
if step build-next-289; then
  note build-next-289
  build_candidates next-289 "${NEXT_FROM_289:-/tmp/nccl-build-289}" v2.28.9 NEXT_PATCHES_289
fi
if step check-289; then
  note check-289
  P289=${LIB_289:-/tmp/nccl-build-289/patched/lib/libnccl.so.2}
  OUT="$work/check-289" ONLY=isolated-full,patch-off,fd-reserve-off,runtime-connect-0 MAX_SIZE=64MiB \
    nccl/checks/run_nccl_check.sh "$build" "$P289" || status=1
  bench_run reserve-289 300 "$P289" --gpus "${RESERVE_GPUS:-1}" --ranks-per-gpu "${RANKS_289:-1}" --modes isolated \
    --env NCCL_FD_TABLE_RESERVE=,0 --trials 3 --seed 320 --timeout 90s --size 64MiB
  fd_lines reserve-289
fi
if step mixed; then # a job mixing stock and patched ranks: both assignments and each library alone, every collective
  note mixed        # and element checked, at MIXED_RANKS ranks on GPU 0, each rank's NCCL INFO lines kept
  for k in ${MIXED_RANKS:-2 4}; do
    for pair in "stock-patched|$S,$P" "patched-stock|$P,$S" "stock|$S" "patched|$P"; do
      name="mixed-${pair%%|*}-$k"
      mkdir -p "$work/$name"
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P NCCL_DEBUG_FILE="$work/$name/nccl.%p.log" timeout 300 \
        "$build/nccl_check" --nccl-lib "${pair#*|}" --gpus 0 --ranks "$k" --max-size "${MIXED_MAX_SIZE:-64MiB}" \
        --out "$work/$name.json" >"$work/$name.txt" 2>&1 || status=1
      echo "$name: $(tail -n 1 "$work/$name.txt")"
      grep -h "P2P peer regions\|peer region.*imported\|Cuda failure\|WARN" "$work/$name"/nccl.*.log 2>/dev/null |
        sed 's/^[^ ]* [^ ]* //' | sort | uniq -c | sort -rn | head -n 4
    done
  done
fi
# wheel-run: what the wheel's user does next, on the build step wheel made: the load lines of `coldstart nccl env`,
# then a torchrun job with the printed LD_PRELOAD (its NCCL log kept: the version and peer regions lines), and
# `coldstart bench` with no flags on this node (one GPU: 2 ranks, on the cache's library when the default is older)
if step wheel-run; then
  note wheel-run
  csw="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/coldstart"
  "$csw" nccl list >"$work/wheel-list.txt" 2>&1 || status=1
  "$csw" nccl env >"$work/wheel-env.txt" 2>&1 || status=1
  "$csw" nccl env --json >"$work/wheel-env.json" 2>&1 || status=1
  cat "$work/wheel-list.txt" "$work/wheel-env.txt"
  lib="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["env"]["LD_PRELOAD"])' "$work/wheel-env.json")"
  mkdir -p "$work/torchrun"
  for preload in "$lib" ""; do # the patched library, then PyTorch's own as the control
    name=patched
    [ -z "$preload" ] && name=own
    torchrun=(torchrun)
    command -v torchrun >/dev/null || torchrun=(python3 -m torch.distributed.run)
    echo "+ LD_PRELOAD=$preload ${torchrun[*]} --nproc-per-node 2 nccl/checks/torchrun_first_collective.py" \
      >"$work/torchrun/$name.txt"
    LD_PRELOAD="$preload" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P \
      NCCL_DEBUG_FILE="$work/torchrun/$name.%h.%p.log" timeout 180 "${torchrun[@]}" --nproc-per-node 2 \
      nccl/checks/torchrun_first_collective.py >>"$work/torchrun/$name.txt" 2>&1 || status=1
    grep "^rank" "$work/torchrun/$name.txt"
    grep -h "NCCL version\|P2P peer regions" "$work/torchrun/$name".*.log 2>/dev/null | sed 's/^[^ ]* [^ ]* //' |
      sort | uniq -c
  done
  mkdir -p "$work/onegpu" # no flags at all: its output goes to ./coldstart-out/
  (cd "$work/onegpu" && timeout 300 "$csw" bench >"$work/onegpu.txt" 2>"$work/onegpu.log") || status=1
  head -n 30 "$work/onegpu.log" "$work/onegpu.txt"
fi
if step torch; then
  note torch
  bench torch-2 --worker torch --gpus 1 --ranks-per-gpu 2 --modes isolated --env NCCL_CUMEM_ENABLE=,0 --trials 5 \
    --seed 232 --timeout 120s --size 64MiB --iters 10 --nccl-log off
fi
# growth: how each phase grows with the ranks (issue 43). GROWTH_RANKS ranks on one GPU (default 2 4 8 16 32 64), the
# patched library with its switch off (NCCL's own path) and on, each with cuMem on and off, GROWTH_TRIALS trials each
# (default 3), the smallest job first so that a call cut short leaves the small ones done; the whole step stops after
# GROWTH_SECONDS (default 540) and the next call finishes a cut-short run with bench --resume. GROWTH_CUMEM (default
# ",0") is NCCL_CUMEM_ENABLE's axis: "" leaves cuMem as NCCL sets it (at 64 ranks, cuMem off's legacy buffers need
# more than a GPU's memory: at 32 they took more than 80 GB).
if step growth; then
  note growth
  deadline=$((SECONDS + ${GROWTH_SECONDS:-540}))
  cumem=${GROWTH_CUMEM-,0}
  cumem_axis=()
  [ -n "$cumem" ] && cumem_axis=(--env "NCCL_CUMEM_ENABLE=$cumem")
  for k in ${GROWTH_RANKS:-2 4 8 16 32 64}; do
    resumable "growth-$k" "$deadline" --nccl-lib "$P" --gpus 1 --ranks-per-gpu "$k" --modes isolated \
      --env NCCL_P2P_PEER_REGION=0,1 "${cumem_axis[@]}" --trials "${GROWTH_TRIALS:-3}" --seed $((260 + k)) \
      --timeout 300s --size 0
    sed -n '/^config/,/^$/p' "$work/growth-$k.txt" | head -8
  done
fi
# nodes: the job across "nodes" of network and UTS namespaces on one GPU (issue 43): a series of NODES_RANKS ranks
# (default 4,8,16) each over NODES_COUNTS nodes (default 1,2,4; one configuration each, interleaved), so that the job
# also grows by nodes of the same ranks (4 ranks on 1 node, 8 on 2, 16 on 4), on the bridge as it is ("none") and at
# each latency of NODES_LINKS (default "none 1ms"; netem, or coldstart's delay line where the kernel has none), NCCL's
# own path (the patch switched off), NODES_TRIALS trials each (default 3), NCCL's log light (its Init timings). The
# lab needs no tool on the node (rtnetlink), only root.
if step nodes; then
  note nodes
  for link in ${NODES_LINKS:-none 1ms}; do
    link_flag=(--link "$link")
    [ "$link" = none ] && link_flag=()
    bench_run "nodes-$link" "${NODES_SECONDS:-280}" "$P" --gpus 1 --ranks-per-gpu "${NODES_RANKS:-4,8,16}" \
      --modes isolated --nodes "${NODES_COUNTS:-1,2,4}" "${link_flag[@]}" --env NCCL_P2P_PEER_REGION=0 \
      --trials "${NODES_TRIALS:-3}" --seed 270 --timeout 120s --size 0
    tail -n 30 "$work/nodes-$link.txt"
  done
fi
# build-ptx: the JIT at init (issue 44, the casebook): the patched tree (its switch off is NCCL's own path) built for
# an older GPU, SASS sm_80 and PTX compute_80, as a library built before a GPU existed reaches it (NVIDIA/nccl#1646):
# on sm_90 the driver compiles the PTX when the kernels load. (PTX alone, code=compute_90, cannot be built in
# reasonable time: NCCL's device link, one nvcc -dlink, then compiles every kernel to SASS on one core; it ran past
# 600 s on the node.) Resumes when cut short.
if step build-ptx; then
  note build-ptx
  [ -d "$nccl/src-ptx" ] || cp -a "$nccl/src-patched" "$nccl/src-ptx" || status=1
  timeout "${BUILD_SECONDS:-400}" make -C "$nccl/src-ptx" -j"$(nproc)" src.build BUILDDIR="$nccl/ptx" \
    NVCC_GENCODE="-gencode=arch=compute_80,code=[sm_80,compute_80]" >>"$work/build-ptx.txt" 2>&1 || status=1
  echo "build-ptx: $(ls -l "$nccl/ptx/lib/libnccl.so.2" 2>&1)"
fi
# casebook: causes of a slow or failed start reproduced (issue 44), its parts CASEBOOK_PARTS (default "jit fd").
# jit: the libraries at hand (JIT_LIBS, commas; default the sm_80 build where build-ptx made it, the loader's default
# libnccl.so.2 and PyTorch's), what each carries (cuobjdump: SASS and PTX by architecture) and what doctor says of each
# under CUDA_FORCE_PTX_JIT=1; then one rank a library, JIT_ENV its --env axes (default: the driver's JIT forced,
# CUDA_FORCE_PTX_JIT=1, the SASS ignored and the PTX compiled at load as on a GPU newer than the library's SASS, and
# not; CUDA_CACHE_DISABLE=,1 compares the JIT cache on and off), interleaved, JIT_TRIALS trials each (default 2), with
# CUDA's JIT cache in a fresh folder of JIT_CACHE_MAXSIZE bytes (default 4 GiB): the first start of a library that
# compiles fills it, the next find it. Resumable: a call cut short leaves the rest to the next (JIT_SECONDS, default
# 330). A library without PTX the GPU can compile loads no kernel when forced, which one rank never notices (entry 4:
# measured 2026-12-06). fd: the fd limit, soft and hard, at FD_LIMIT (default 64) for a job of 16 ranks, each of which
# holds about 80 (a soft limit of 256 was enough; NCCL raises the soft limit to the hard one only in its bootstrap
# root's process). shm: /dev/shm of each of SHM_SIZES (default "16m 1g") in a mount namespace of its own, for a job
# of SHM_RANKS ranks (default 2) each on a namespace node of its own (--nodes: NCCL's proxy then keeps its ops pool in
# /dev/shm; ranks sharing one GPU on one node connect by P2P and put nothing there, NCCL_P2P_DISABLE=1 included, as
# the 2026-12-05 run found), on SHM_LIB (default the patched library).
if step casebook; then
  note casebook
  parts=" ${CASEBOOK_PARTS:-jit fd} "
  if [[ "$parts" == *" jit "* ]]; then
    IFS=, read -r -a jit_libs <<<"${JIT_LIBS:-}"
    if ((${#jit_libs[@]} == 0)); then
      [ ! -f "$nccl/ptx/lib/libnccl.so.2" ] || jit_libs+=("$nccl/ptx/lib/libnccl.so.2")
      jit_libs+=("$(ldconfig -p | sed -n 's/.*libnccl\.so\.2 .*=> //p' | head -n 1)")
      jit_libs+=("$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0] + "/lib/libnccl.so.2")' 2>/dev/null)")
    fi
    for lib in "${jit_libs[@]}"; do
      echo "== $lib"
      echo "SASS:"; cuobjdump --list-elf "$lib" 2>&1 | grep -o 'sm_[0-9]*[af]\?' | sort | uniq -c
      echo "PTX:"; cuobjdump --list-ptx "$lib" 2>&1 | grep -o 'sm_[0-9]*[af]\?\|compute_[0-9]*[af]\?' | sort | uniq -c
      CUDA_FORCE_PTX_JIT=1 LD_LIBRARY_PATH="$(dirname "$lib")" "$cs" doctor 2>&1 | grep -i -A3 "nccl-no-\|jit" | head -n 12
    done >"$work/casebook-libs.txt" 2>&1
    cat "$work/casebook-libs.txt"
    [ -d "$work/casebook-jit" ] || rm -rf "$work/jit-cache"
    # shellcheck disable=SC2086 # JIT_ENV: --env axes, split on spaces
    resumable casebook-jit $((SECONDS + ${JIT_SECONDS:-330})) --nccl-lib "$(IFS=,; echo "${jit_libs[*]}")" --gpus 1 \
      --ranks-per-gpu 1 --modes isolated ${JIT_ENV:---env CUDA_FORCE_PTX_JIT=,1} --env "CUDA_CACHE_PATH=$work/jit-cache" \
      --env "CUDA_CACHE_MAXSIZE=${JIT_CACHE_MAXSIZE:-4294967296}" --trials "${JIT_TRIALS:-2}" --seed 280 --timeout 300s \
      --size 0
    sed -n '/^config/,/^$/p' "$work/casebook-jit.txt"
    grep -i "error\|fail" "$work/casebook-jit.log" | head -n 6
    du -sh "$work/jit-cache" 2>&1
  fi
  if [[ "$parts" == *" fd "* ]]; then
    rm -rf "$work/casebook-fd"
    (
      ulimit -n "${FD_LIMIT:-64}"
      timeout 150 "$cs" bench --nccl-lib "$P" --out "$work/casebook-fd" --gpus 1 --ranks-per-gpu 16 --modes isolated \
        --env NCCL_P2P_PEER_REGION=0 --trials 1 --seed 282 --timeout 60s --size 0
    ) >"$work/casebook-fd.txt" 2>"$work/casebook-fd.log"
    echo "casebook-fd: exit $?"
    tail -n 8 "$work/casebook-fd.txt"
  fi
  if [[ "$parts" == *" shm "* ]]; then
    for size in ${SHM_SIZES:-16m 1g}; do
      rm -rf "$work/casebook-shm-$size"
      # shellcheck disable=SC2016 # expanded by the namespace's shell
      timeout 200 unshare --mount --propagation private sh -c 'mount -t tmpfs -o "size=$1" tmpfs /dev/shm &&
        df -h /dev/shm && shift && exec "$@"' sh "$size" "$cs" bench --nccl-lib "${SHM_LIB:-$P}" \
        --out "$work/casebook-shm-$size" --gpus 1 --ranks-per-gpu "${SHM_RANKS:-2}" --nodes "${SHM_RANKS:-2}" \
        --modes isolated --trials 1 --seed 284 --timeout 90s --size 0 >"$work/casebook-shm-$size.txt" \
        2>"$work/casebook-shm-$size.log"
      echo "casebook-shm-$size: exit $?"
      tail -n 6 "$work/casebook-shm-$size.txt"
      grep -rh "shm\|No space\|fallocate\|WARN\|error" "$work/casebook-shm-$size.log" \
        "$work/casebook-shm-$size"/trials/*/rank-*.log 2>/dev/null | sort | uniq -c | sort -rn | head -n 8
    done
  fi
fi
# logcost: what NCCL's log costs what the lab measures (issue 47), on NCCL's own path of the 2.30.7 tree (the patched
# library with its switch off) and the stock library where it was built: at each of LOGCOST_RANKS ranks on the GPU
# (default "2 8"), one interleaved run each of --nccl-log off,light (bench ends with the log's shift per phase against
# off) with cuMem unset and off ("ab"), and light with one of its settings changed, each against off: its subsystems
# narrowed ("subsys": INIT alone, COLL alone), no INFO timestamps ("stamps"), the log files on /dev/shm ("file"); an
# axis names its values (an --env axis's unset value would drop light's own), and with the log off these variables do
# nothing, so each light configuration has its twin with the log off. LOGCOST_TRIALS trials each (default 6). The
# step stops after LOGCOST_SECONDS (default 560); the next call resumes a run cut short and starts those not begun.
# LOGCOST_VARIANTS picks among them (default all four), LOGCOST_LIBS the libraries (commas; default stock and patched),
# LOGCOST_CUMEM the ab variant's NCCL_CUMEM_ENABLE axis (default ",0"; cuMem off's buffers outgrow a GPU at 32 ranks).
# NCCL 2.28 runs one rank a GPU and refuses two on one ("Duplicate GPU detected"): LOGCOST_NODES=1 puts each rank on
# a namespace node of its own (--nodes K), where 2.28 sees K hosts and connects them by its socket transport (not the
# P2P path of one node, but a 2.28 job with connections); LOGCOST_NAME tells such runs apart (logcost-NAME-K-VARIANT).
if step logcost; then
  note logcost
  deadline=$((SECONDS + ${LOGCOST_SECONDS:-560}))
  log_libs="$P"
  [ -f "$S" ] && log_libs="$S,$P"
  log_libs=${LOGCOST_LIBS:-$log_libs}
  for k in ${LOGCOST_RANKS:-2 8}; do
    for variant in ${LOGCOST_VARIANTS:-ab subsys stamps file}; do
      case $variant in
      ab) axis=(--env "NCCL_CUMEM_ENABLE=${LOGCOST_CUMEM-,0}") ;;
      subsys) axis=(--env "NCCL_DEBUG_SUBSYS=INIT,COLL") ;;
      stamps) axis=(--env NCCL_DEBUG_TIMESTAMP_LEVELS=WARN) ;;
      file) axis=(--env "NCCL_DEBUG_FILE=/dev/shm/coldstart-logcost.%h.%p.log") ;;
      esac
      name="logcost-${LOGCOST_NAME:+$LOGCOST_NAME-}$k-$variant"
      nodes=()
      [ -z "${LOGCOST_NODES:-}" ] || nodes=(--nodes "$k")
      resumable "$name" "$deadline" --nccl-lib "$log_libs" --gpus 1 --ranks-per-gpu "$k" "${nodes[@]}" --modes isolated \
        --env NCCL_P2P_PEER_REGION=0 "${axis[@]}" --nccl-log off,light --trials "${LOGCOST_TRIALS:-6}" \
        --seed $((290 + k)) --timeout 120s --size 0
      sed -n "/^the NCCL log's own cost/,/^report:/p" "$work/$name.txt" | grep -v '^report:'
    done
  done
  rm -f /dev/shm/coldstart-logcost.*
fi
# scale: where the patched first collective's time goes as the ranks on the GPU grow (issue 45), told apart by cause.
# bench on the patched library at SCALE_RANKS (default "16 32") ranks, interleaved, SCALE_AXES its --env axes (default:
# cuMem as NCCL sets it and off; the ranks' CUDA schedule as CUDA picks it, spinning below one context a core, and
# blocking, COLDSTART_CUDA_SCHEDULE: whether ranks that spin take the cores their peers connect on; with and without
# the ring's all-rank exchange of its connection flags, NCCL_LOCAL_REGISTER=0 NCCL_GRAPH_REGISTER=0: the only step of
# the first collective over all ranks), SCALE_TRIALS trials each (default 3). With SCALE_MICRO_RANKS (e.g. 2,8,16,32),
# first the driver alone: cumem_share_bench, each rank importing one merged region and 64 buffers one at a time from
# both neighbours, every rank at once. (Its waits that sleep instead of spinning, once a diagnostic switch, are the
# series' 0007 now: docs/results/2026-12-06-h100x1-quiet.) The diag step with DIAG_RANKS="16 32" and
# DIAG_ENV="--env NCCL_P2P_PEER_REGION=1" times the connect's parts.
if step scale; then
  note scale
  if [ -n "${SCALE_MICRO_RANKS:-}" ]; then
    timeout 280 "$build/cumem_share_bench" --gpus 0 --ranks "$SCALE_MICRO_RANKS" --modes per-buffer,merged \
      --buffers 64 --size 2MiB --neighbours both --trials 3 --timeout 120 --out "$work/scale-micro.json" \
      >"$work/scale-micro.txt" 2>&1 || status=1
    tail -n 12 "$work/scale-micro.txt"
  fi
  for k in ${SCALE_RANKS:-16 32}; do
    # shellcheck disable=SC2086 # SCALE_AXES: --env axes, split on spaces
    bench_run "scale-$k" "${SCALE_SECONDS:-330}" "$P" --gpus 1 --ranks-per-gpu "$k" --modes isolated \
      --env NCCL_P2P_PEER_REGION=1 ${SCALE_AXES:---env NCCL_CUMEM_ENABLE=,0 --env COLDSTART_CUDA_SCHEDULE=,blocking \
      --env NCCL_LOCAL_REGISTER+NCCL_GRAPH_REGISTER=,0} --trials "${SCALE_TRIALS:-3}" --seed $((300 + k)) \
      --timeout 300s --size 0
    table "scale-$k"
  done
fi
note "done (status $status)"
pack
exit $status
